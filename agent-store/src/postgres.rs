//! [`PostgresStore`]: PostgreSQL (`postgres://...`), for many processes and
//! machines.
//!
//! Invariant: every write is one statement, so one transaction, whole or
//! absent: a turn is inserted only if the conversation's version is the one
//! the writer loaded (the primary key `(conversation_id, version)` refuses
//! the loser of a race), a run is updated only at the version the writer
//! read, an event batch goes in with one `INSERT ... SELECT FROM UNNEST` and
//! its `pg_notify`, delivered at commit. Readers tailing a log hear every
//! process's appends through one `LISTEN` connection per store; when that
//! connection is lost, every subscriber is woken once it is back (anything
//! may have been missed meanwhile). Turns of chains are deleted (released,
//! expired) under an advisory transaction lock held exclusively, and stored
//! under the same lock held shared: a turn is never deleted while one that
//! continues it is being written, and two deleting transactions take turns.
//! Expired runs are taken `FOR UPDATE SKIP LOCKED`, so two sweeps delete
//! different runs; a run's row is locked before its events, by a sweep as
//! by [`delete_run`](crate::RunStore::delete_run).

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use loopwright_core::Message;
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::builder::{StoreBuilder, redact};
use crate::codec::{self, RunJson, chain_too_long, missing_previous, to_json, version_detail};
use crate::error::{StoreError, check_id, from_sqlx, is_unique_violation, to_i64, to_u64};
use crate::migrations;
use crate::notify::{EventSubscription, Notifier};
use crate::record::{FIRST_RUN_VERSION, RunRecord, RunStatus, StoredChain, StoredConversation, now_millis};
use crate::sql::{self, Written};
use crate::traits::{ChainStore, ConversationStore, EventLog, RunStore};

const BACKEND: &str = "postgres";
/// The channel event appends are announced on; the payload is the run id.
const CHANNEL: &str = "loopwright_events";
/// `NOTIFY` payloads must stay under 8000 bytes: a longer run id is
/// announced as "" (every subscriber wakes).
const MAX_PAYLOAD: usize = 7900;
const DEFAULT_MAX_CONNECTIONS: u32 = 10;
/// How long the listener waits before reconnecting after an error.
const LISTEN_RETRY: Duration = Duration::from_millis(500);
/// Subscribers re-read at least this often, whatever the listener heard.
const SAFETY_POLL: Duration = Duration::from_secs(5);
/// The advisory lock of chains' turns ("lwchains" in ASCII).
const CHAINS_LOCK: i64 = 0x6c77_6368_6169_6e73;

/// A store in a PostgreSQL database. Open it with [`open`](crate::open)
/// (`postgres://...`) or a [`StoreBuilder`].
///
/// ```no_run
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// let store = loopwright_store::open("postgres://app@db.internal/agents").await?;
/// # let _ = store; Ok(()) }
/// ```
pub struct PostgresStore {
    /// The URL, password redacted.
    url: String,
    options: PgConnectOptions,
    pool: PgPool,
    acquire_timeout: Duration,
    notifier: Arc<Notifier>,
    listener: OnceCell<AbortOnDrop>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The listener task, aborted with the store.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl PostgresStore {
    /// Connects and brings the schema up to date.
    pub(crate) async fn open(url: &str, builder: &StoreBuilder) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::InvalidUrl {
                url: redact(url),
                reason: e.to_string(),
            })?
            .application_name("loopwright-store");
        let timeout = builder.acquire_timeout;
        // Migrations on a connection of their own, in one transaction that
        // holds an advisory lock (concurrent first opens wait for each
        // other); the lock ends with the transaction, whatever happens.
        let mut connection = tokio::time::timeout(timeout, options.connect())
            .await
            .map_err(|_| StoreError::Unavailable {
                backend: BACKEND,
                source: format!("no connection to {} within {timeout:?}", redact(url)).into(),
            })?
            .map_err(|e| from_sqlx(BACKEND, e))?;
        let migrated = migrations::run::<sqlx::Postgres>(
            &mut connection,
            &migrations::POSTGRES_DIALECT,
            migrations::POSTGRES,
        )
        .await;
        let _ = connection.close().await;
        migrated?;
        let pool = PgPoolOptions::new()
            .max_connections(builder.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS))
            .acquire_timeout(timeout)
            .connect_lazy_with(options.clone());
        Ok(Self {
            url: redact(url),
            options,
            pool,
            acquire_timeout: timeout,
            notifier: Arc::new(Notifier::default()),
            listener: OnceCell::new(),
        })
    }

    fn error(&self, error: sqlx::Error) -> StoreError {
        from_sqlx(BACKEND, error)
    }

    /// Starts the listener task once (again after a failed start).
    async fn listen(&self) -> Result<(), StoreError> {
        self.listener
            .get_or_try_init(|| async {
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(self.acquire_timeout)
                    .max_lifetime(None)
                    .idle_timeout(None)
                    .connect_lazy_with(self.options.clone());
                let listener = connect_listener(&pool).await.map_err(|e| from_sqlx(BACKEND, e))?;
                let task = tokio::spawn(listen(pool, listener, Arc::downgrade(&self.notifier)));
                Ok::<_, StoreError>(AbortOnDrop(task))
            })
            .await
            .map(|_| ())
    }

    async fn conversation_conflict(&self, id: &str, expected: u64) -> StoreError {
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(version) FROM loopwright_conversation_turns WHERE conversation_id = $1",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await
        .ok()
        .flatten();
        StoreError::conflict(
            format!("conversation {id:?}"),
            version_detail(expected, found.and_then(|v| u64::try_from(v).ok())),
        )
    }
}

async fn connect_listener(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Hands each notification to the notifier until the store is gone; after
/// a lost connection, wakes everyone once it listens again.
async fn listen(pool: PgPool, mut listener: PgListener, notifier: Weak<Notifier>) {
    loop {
        let next = listener.try_recv().await;
        let Some(live) = notifier.upgrade() else {
            return;
        };
        match next {
            Ok(Some(notification)) if notification.payload().is_empty() => live.notify_all(),
            Ok(Some(notification)) => live.notify(notification.payload()),
            // Reconnected (and listening again): anything may have been missed.
            Ok(None) => live.notify_all(),
            Err(error) => {
                tracing::debug!(%error, "loopwright-store: the LISTEN connection failed, reconnecting");
                drop(live);
                loop {
                    tokio::time::sleep(LISTEN_RETRY).await;
                    if notifier.strong_count() == 0 {
                        return;
                    }
                    if let Ok(fresh) = connect_listener(&pool).await {
                        listener = fresh;
                        break;
                    }
                }
                if let Some(live) = notifier.upgrade() {
                    live.notify_all();
                }
            }
        }
    }
}

const SELECT_RUN: &str = "SELECT id, agent, session, status, state::text, result::text, error::text, owner, version, \
                          created_at, updated_at FROM loopwright_runs";

#[async_trait]
impl ConversationStore for PostgresStore {
    async fn load_conversation(&self, id: &str) -> Result<Option<StoredConversation>, StoreError> {
        let rows = sqlx::query(
            "SELECT version, messages::text FROM loopwright_conversation_turns WHERE conversation_id = $1 \
             ORDER BY version",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.error(e))?;
        codec::conversation(id, sql::turns(id, &rows)?)
    }

    async fn append_turn(
        &self,
        id: &str,
        expected_version: u64,
        messages: &[Message],
    ) -> Result<u64, StoreError> {
        check_id(id, "conversation")?;
        let expected = to_i64(expected_version, "version")?;
        let next = to_i64(expected_version + 1, "version")?;
        let json = to_json(messages, "the turn's messages")?;
        let written = sqlx::query(
            "INSERT INTO loopwright_conversation_turns (conversation_id, version, messages, created_at) \
             SELECT $1, $2, $3::json, $4 WHERE (SELECT COALESCE(MAX(version), 0) \
             FROM loopwright_conversation_turns WHERE conversation_id = $1) = $5",
        )
        .bind(id)
        .bind(next)
        .bind(&json)
        .bind(now_millis())
        .bind(expected)
        .execute(&self.pool)
        .await;
        match Written::of(written.map(|done| done.rows_affected())) {
            Written::Done => Ok(expected_version + 1),
            Written::Conflict => Err(self.conversation_conflict(id, expected_version).await),
            Written::Failed(e) => Err(self.error(e)),
        }
    }

    async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM loopwright_conversation_turns WHERE conversation_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        Ok(done.rows_affected() > 0)
    }
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        check_id(&run.id, "run")?;
        let json = RunJson::of(run)?;
        let now = now_millis();
        let insert = sqlx::query(
            "INSERT INTO loopwright_runs (agent, session, status, state, result, error, owner, id, version, \
             created_at, updated_at) VALUES ($1, $2, $3, $4::json, $5::json, $6::json, $7, $8, $9, $10, $10)",
        );
        let written = sql::bind_run(insert, run, &json)
            .bind(&run.id)
            .bind(to_i64(FIRST_RUN_VERSION, "version")?)
            .bind(now)
            .execute(&self.pool)
            .await;
        match Written::of(written.map(|done| done.rows_affected())) {
            Written::Done => Ok(()),
            Written::Conflict => Err(StoreError::conflict(
                format!("run {:?}", run.id),
                "it exists already",
            )),
            Written::Failed(e) => Err(self.error(e)),
        }
    }

    async fn load_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_RUN} WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        row.map(|row| sql::run(&row)?.decode()).transpose()
    }

    async fn update_run(&self, run: &RunRecord, expected_version: u64) -> Result<u64, StoreError> {
        let expected = to_i64(expected_version, "version")?;
        to_i64(expected_version + 1, "version")?;
        let json = RunJson::of(run)?;
        let update = sqlx::query(
            "UPDATE loopwright_runs SET agent = $1, session = $2, status = $3, state = $4::json, \
             result = $5::json, error = $6::json, owner = $7, version = version + 1, updated_at = $8 \
             WHERE id = $9 AND version = $10",
        );
        let done = sql::bind_run(update, run, &json)
            .bind(now_millis())
            .bind(&run.id)
            .bind(expected)
            .execute(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        if done.rows_affected() == 1 {
            return Ok(expected_version + 1);
        }
        let found: Option<i64> = sqlx::query_scalar("SELECT version FROM loopwright_runs WHERE id = $1")
            .bind(&run.id)
            .fetch_optional(&self.pool)
            .await
            .ok()
            .flatten();
        Err(StoreError::conflict(
            format!("run {:?}", run.id),
            version_detail(expected_version, found.and_then(|v| u64::try_from(v).ok())),
        ))
    }

    async fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = match status {
            Some(status) => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{SELECT_RUN} WHERE status = $1 ORDER BY updated_at DESC, id LIMIT $2"
                )))
                .bind(status.as_str())
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
            None => {
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "{SELECT_RUN} ORDER BY updated_at DESC, id LIMIT $1"
                )))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
        }
        .map_err(|e| self.error(e))?;
        rows.iter().map(|row| sql::run(row)?.decode()).collect()
    }

    async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.error(e))?;
        // The run's row first, as a sweep locks it: the two never wait for
        // each other in opposite orders.
        let done = sqlx::query("DELETE FROM loopwright_runs WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        sqlx::query("DELETE FROM loopwright_events WHERE run_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, StoreError> {
        // One statement: the runs taken (and locked) first, then their logs
        // and themselves; a run another sweep holds is left to it.
        let done = sqlx::query(
            "WITH doomed AS (SELECT id FROM loopwright_runs WHERE status <> 'running' AND updated_at < $1 \
             ORDER BY updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED), \
             logs AS (DELETE FROM loopwright_events WHERE run_id IN (SELECT id FROM doomed)) \
             DELETE FROM loopwright_runs WHERE id IN (SELECT id FROM doomed)",
        )
        .bind(cutoff)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .execute(&self.pool)
        .await
        .map_err(|e| self.error(e))?;
        Ok(done.rows_affected())
    }
}

/// The chain of turn `$1` back from it, at most `$2` turns, last first.
const CHAIN_WALK: &str = "WITH RECURSIVE chain(id, previous, depth, messages, n) AS (\
     SELECT id, previous, depth, messages, 1 FROM loopwright_chain_turns WHERE id = $1 \
     UNION ALL SELECT t.id, t.previous, t.depth, t.messages, c.n + 1 FROM loopwright_chain_turns t \
     JOIN chain c ON t.id = c.previous WHERE c.n < $2) SELECT id, depth, messages::text FROM chain ORDER BY n";

/// Deletes every released turn that no turn still held continues, directly
/// or through released ones.
const COLLECT_RELEASED: &str = "WITH RECURSIVE kept(id) AS (\
     SELECT previous FROM loopwright_chain_turns WHERE NOT released AND previous IS NOT NULL \
     UNION SELECT t.previous FROM loopwright_chain_turns t JOIN kept k ON t.id = k.id \
     WHERE t.previous IS NOT NULL) \
     DELETE FROM loopwright_chain_turns WHERE released AND id NOT IN (SELECT id FROM kept)";

impl PostgresStore {
    /// A transaction holding the chains' lock, shared or not.
    async fn chains_transaction(
        &self,
        shared: bool,
    ) -> Result<sqlx::Transaction<'_, sqlx::Postgres>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.error(e))?;
        let lock = if shared {
            "SELECT pg_advisory_xact_lock_shared($1)"
        } else {
            "SELECT pg_advisory_xact_lock($1)"
        };
        sqlx::query(lock)
            .bind(CHAINS_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        Ok(tx)
    }
}

#[async_trait]
impl ChainStore for PostgresStore {
    async fn put_turn(
        &self,
        id: &str,
        previous: Option<&str>,
        messages: &[Message],
    ) -> Result<u64, StoreError> {
        check_id(id, "turn")?;
        if previous == Some(id) {
            return Err(StoreError::Invalid(format!("turn {id:?} cannot continue itself")));
        }
        let json = to_json(messages, "the turn's messages")?;
        let mut tx = self.chains_transaction(true).await?;
        let written: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
            "INSERT INTO loopwright_chain_turns (id, previous, depth, messages, created_at) \
             SELECT $1, $2::text, COALESCE((SELECT depth FROM loopwright_chain_turns WHERE id = $2::text), 0) + 1, \
             $3::json, $4 WHERE $2::text IS NULL OR EXISTS (SELECT 1 FROM loopwright_chain_turns WHERE id = $2::text) \
             RETURNING depth",
        )
        .bind(id)
        .bind(previous)
        .bind(&json)
        .bind(now_millis())
        .fetch_optional(&mut *tx)
        .await;
        let depth = match written {
            Ok(Some(depth)) => to_u64(depth, || format!("{} row {id:?}", codec::CHAIN_TURNS))?,
            Ok(None) => return Err(missing_previous(id, previous.unwrap_or_default())),
            Err(e) if is_unique_violation(&e) => {
                return Err(StoreError::conflict(format!("turn {id:?}"), "it exists already"));
            }
            Err(e) => return Err(self.error(e)),
        };
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(depth)
    }

    async fn load_chain(&self, id: &str, max_turns: u64) -> Result<Option<StoredChain>, StoreError> {
        let depth: Option<i64> =
            sqlx::query_scalar("SELECT depth FROM loopwright_chain_turns WHERE id = $1 AND NOT released")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.error(e))?;
        let Some(depth) = depth else {
            return Ok(None);
        };
        let depth = to_u64(depth, || format!("{} row {id:?}", codec::CHAIN_TURNS))?;
        if depth > max_turns {
            return Err(chain_too_long(id, depth, max_turns));
        }
        let rows = sqlx::query(CHAIN_WALK)
            .bind(id)
            .bind(to_i64(depth, "depth")?)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        if rows.is_empty() {
            // Released and deleted since its depth was read.
            return Ok(None);
        }
        codec::chain(id, depth, sql::chain_rows(id, &rows)?).map(Some)
    }

    async fn release_turn(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.chains_transaction(false).await?;
        let released =
            sqlx::query("UPDATE loopwright_chain_turns SET released = TRUE WHERE id = $1 AND NOT released")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.error(e))?;
        // Up the chain while the turn is released and nothing continues it.
        let mut at = id.to_owned();
        loop {
            let row: Option<(Option<String>, bool, bool)> = sqlx::query_as(
                "SELECT previous, released, EXISTS (SELECT 1 FROM loopwright_chain_turns c WHERE c.previous = t.id) \
                 FROM loopwright_chain_turns t WHERE id = $1",
            )
            .bind(&at)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
            let Some((previous, true, false)) = row else {
                break;
            };
            sqlx::query("DELETE FROM loopwright_chain_turns WHERE id = $1")
                .bind(&at)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.error(e))?;
            match previous {
                Some(previous) => at = previous,
                None => break,
            }
        }
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(released.rows_affected() == 1)
    }

    async fn expire_turns(&self, cutoff: i64) -> Result<u64, StoreError> {
        let mut tx = self.chains_transaction(false).await?;
        sqlx::query(
            "UPDATE loopwright_chain_turns SET released = TRUE WHERE created_at < $1 AND NOT released",
        )
        .bind(cutoff)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.error(e))?;
        let deleted = sqlx::query(COLLECT_RELEASED)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(deleted.rows_affected())
    }
}

#[async_trait]
impl EventLog for PostgresStore {
    async fn append_events(&self, run_id: &str, events: &[(u64, Value)]) -> Result<(), StoreError> {
        check_id(run_id, "run")?;
        if events.is_empty() {
            return Ok(());
        }
        let mut seqs = Vec::with_capacity(events.len());
        let mut texts = Vec::with_capacity(events.len());
        for (seq, event) in events {
            seqs.push(to_i64(*seq, "sequence number")?);
            texts.push(to_json(event, "an event")?);
        }
        let payload = if run_id.len() <= MAX_PAYLOAD { run_id } else { "" };
        // One statement: the rows and the notification (sent at commit) or
        // nothing.
        let written = sqlx::query(
            "WITH inserted AS (INSERT INTO loopwright_events (run_id, seq, event, created_at) \
             SELECT $1, t.seq, t.event::json, $4 FROM UNNEST($2::bigint[], $3::text[]) AS t(seq, event) \
             RETURNING 1) SELECT pg_notify('loopwright_events', $5) FROM (SELECT COUNT(*) FROM inserted) AS n",
        )
        .bind(run_id)
        .bind(&seqs)
        .bind(&texts)
        .bind(now_millis())
        .bind(payload)
        .execute(&self.pool)
        .await;
        match written {
            Ok(_) => {
                // This process's subscribers need not wait for the round trip.
                self.notifier.notify(run_id);
                Ok(())
            }
            Err(e) if is_unique_violation(&e) => {
                let first = events.first().map_or(0, |(seq, _)| *seq);
                let last = events.last().map_or(0, |(seq, _)| *seq);
                Err(StoreError::conflict(
                    format!("events {first}..={last} of run {run_id:?}"),
                    "one of those sequence numbers is stored already",
                ))
            }
            Err(e) => Err(self.error(e)),
        }
    }

    async fn read_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Value)>, StoreError> {
        let after = match after {
            Some(after) => to_i64(after, "sequence number")?,
            None => -1,
        };
        let rows = sqlx::query(
            "SELECT seq, event::text FROM loopwright_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(run_id)
        .bind(after)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.error(e))?;
        sql::events(run_id, &rows)
    }

    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError> {
        // Subscribe first, then make sure the listener runs: a notification
        // that arrives between the two still wakes this subscription.
        let wakes = self.notifier.subscribe(run_id);
        self.listen().await?;
        Ok(EventSubscription::new(wakes, Some(SAFETY_POLL)))
    }
}
