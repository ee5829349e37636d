//! [`SqliteStore`]: the embedded default, one SQLite file (`sqlite:PATH`).
//!
//! Invariant: the file is in WAL mode (readers never wait for the writer)
//! with `synchronous=NORMAL`; every write is one transaction (a single
//! statement, or `BEGIN IMMEDIATE` for a batch), so it is whole or absent and
//! two writers, in this process or another, serialise on SQLite's write lock
//! (waiting up to the busy timeout). Conflicts come from the primary keys
//! `(conversation_id, version)` and `(run_id, seq)` and from compare-and-set
//! updates.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use loopwright_core::Message;
use serde_json::Value;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::builder::StoreBuilder;
use crate::codec::{self, RunJson, chain_too_long, missing_previous, to_json, version_detail};
use crate::error::{BoxError, StoreError, check_id, from_sqlx, is_unique_violation, to_i64, to_u64};
use crate::migrations;
use crate::notify::{EventSubscription, Notifier};
use crate::record::{FIRST_RUN_VERSION, RunRecord, RunStatus, StoredChain, StoredConversation, now_millis};
use crate::sql::{self, Written};
use crate::traits::{ChainStore, ConversationStore, EventLog, RunStore};

const BACKEND: &str = "sqlite";

/// A store in one SQLite file. Open it with [`open`](crate::open)
/// (`sqlite:PATH`) or a [`StoreBuilder`].
///
/// ```no_run
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// let store = loopwright_store::open("sqlite:data/agent.db").await?;
/// # let _ = store; Ok(()) }
/// ```
pub struct SqliteStore {
    path: PathBuf,
    pool: SqlitePool,
    notifier: Notifier,
    poll: Duration,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A driver error with the file it was about.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
struct AtPath {
    path: PathBuf,
    #[source]
    source: BoxError,
}

impl SqliteStore {
    /// Opens (creating it when missing) the file at `path` and brings its
    /// schema up to date.
    pub(crate) async fn open(path: &Path, options: &StoreBuilder) -> Result<Self, StoreError> {
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(options.busy_timeout)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(
                options
                    .max_connections
                    .unwrap_or(options::DEFAULT_MAX_CONNECTIONS),
            )
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(|e| at_path(path, e))?;
        // BEGIN IMMEDIATE: concurrent first opens, in this process or
        // another, wait for each other's migrations (up to the busy timeout).
        let migrated = match pool.acquire().await {
            Ok(mut connection) => {
                migrations::run::<sqlx::Sqlite>(
                    &mut connection,
                    &migrations::SQLITE_DIALECT,
                    migrations::SQLITE,
                )
                .await
            }
            Err(e) => Err(from_sqlx(BACKEND, e)),
        };
        if let Err(error) = migrated {
            pool.close().await;
            return Err(with_path(path, error));
        }
        Ok(Self {
            path: path.to_owned(),
            pool,
            notifier: Notifier::default(),
            poll: options.poll_interval,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, error: sqlx::Error) -> StoreError {
        at_path(&self.path, error)
    }
}

mod options {
    /// Connections to the file (readers run in parallel in WAL mode; writers
    /// take turns).
    pub(super) const DEFAULT_MAX_CONNECTIONS: u32 = 4;
}

fn at_path(path: &Path, error: sqlx::Error) -> StoreError {
    with_path(path, from_sqlx(BACKEND, error))
}

/// `error` naming the file it was about.
fn with_path(path: &Path, error: StoreError) -> StoreError {
    let wrap = |source: BoxError| -> BoxError {
        Box::new(AtPath {
            path: path.to_owned(),
            source,
        })
    };
    match error {
        StoreError::Unavailable { backend, source } => StoreError::Unavailable {
            backend,
            source: wrap(source),
        },
        StoreError::Backend { backend, source } => StoreError::Backend {
            backend,
            source: wrap(source),
        },
        StoreError::Corrupt { location, detail } if location == "the SQLite file" => {
            StoreError::corrupt(format!("the SQLite file {}", path.display()), detail)
        }
        other => other,
    }
}

const RUN_COLUMNS: &str =
    "id, agent, session, status, state, result, error, owner, version, created_at, updated_at";

#[async_trait]
impl ConversationStore for SqliteStore {
    async fn load_conversation(&self, id: &str) -> Result<Option<StoredConversation>, StoreError> {
        let rows = sqlx::query(
            "SELECT version, messages FROM loopwright_conversation_turns WHERE conversation_id = ? ORDER BY version",
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
        // One statement, so one transaction: the version check and the
        // insert see the same database, and the primary key refuses a
        // second writer of the same version.
        let written = sqlx::query(
            "INSERT INTO loopwright_conversation_turns (conversation_id, version, messages, created_at) \
             SELECT ?1, ?2, ?3, ?4 WHERE (SELECT COALESCE(MAX(version), 0) FROM loopwright_conversation_turns \
             WHERE conversation_id = ?1) = ?5",
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
        let done = sqlx::query("DELETE FROM loopwright_conversation_turns WHERE conversation_id = ?")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| self.error(e))?;
        Ok(done.rows_affected() > 0)
    }
}

impl SqliteStore {
    /// The conflict error, with the version the store has now.
    async fn conversation_conflict(&self, id: &str, expected: u64) -> StoreError {
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(version) FROM loopwright_conversation_turns WHERE conversation_id = ?",
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

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        check_id(&run.id, "run")?;
        let json = RunJson::of(run)?;
        let now = now_millis();
        let insert = sqlx::query(
            "INSERT INTO loopwright_runs (agent, session, status, state, result, error, owner, id, version, \
             created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        );
        let written = sql::bind_run(insert, run, &json)
            .bind(&run.id)
            .bind(to_i64(FIRST_RUN_VERSION, "version")?)
            .bind(now)
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
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM loopwright_runs WHERE id = ?"
        )))
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
            "UPDATE loopwright_runs SET agent = ?, session = ?, status = ?, state = ?, result = ?, error = ?, \
             owner = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?",
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
        let found: Option<i64> = sqlx::query_scalar("SELECT version FROM loopwright_runs WHERE id = ?")
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
            Some(status) => sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RUN_COLUMNS} FROM loopwright_runs WHERE status = ? ORDER BY updated_at DESC, id LIMIT ?"
            )))
            .bind(status.as_str())
            .bind(limit)
            .fetch_all(&self.pool)
            .await,
            None => sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {RUN_COLUMNS} FROM loopwright_runs ORDER BY updated_at DESC, id LIMIT ?"
            )))
            .bind(limit)
            .fetch_all(&self.pool)
            .await,
        }
        .map_err(|e| self.error(e))?;
        rows.iter().map(|row| sql::run(row)?.decode()).collect()
    }

    async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.error(e))?;
        sqlx::query("DELETE FROM loopwright_events WHERE run_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        let done = sqlx::query("DELETE FROM loopwright_runs WHERE id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, StoreError> {
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.error(e))?;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM loopwright_runs WHERE status <> 'running' AND updated_at < ? \
             ORDER BY updated_at, id LIMIT ?",
        )
        .bind(cutoff)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| self.error(e))?;
        for id in &ids {
            for statement in [
                "DELETE FROM loopwright_events WHERE run_id = ?",
                "DELETE FROM loopwright_runs WHERE id = ?",
            ] {
                sqlx::query(statement)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.error(e))?;
            }
        }
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(ids.len() as u64)
    }
}

/// The chain of turn `?1` back from it, at most `?2` turns, last first.
const CHAIN_WALK: &str = "WITH RECURSIVE chain(id, previous, depth, messages, n) AS (\
     SELECT id, previous, depth, messages, 1 FROM loopwright_chain_turns WHERE id = ?1 \
     UNION ALL SELECT t.id, t.previous, t.depth, t.messages, c.n + 1 FROM loopwright_chain_turns t \
     JOIN chain c ON t.id = c.previous WHERE c.n < ?2) SELECT id, depth, messages FROM chain ORDER BY n";

/// Deletes every released turn that no turn still held continues, directly
/// or through released ones.
const COLLECT_RELEASED: &str = "WITH RECURSIVE kept(id) AS (\
     SELECT previous FROM loopwright_chain_turns WHERE released = 0 AND previous IS NOT NULL \
     UNION SELECT t.previous FROM loopwright_chain_turns t JOIN kept k ON t.id = k.id \
     WHERE t.previous IS NOT NULL) \
     DELETE FROM loopwright_chain_turns WHERE released = 1 AND id NOT IN (SELECT id FROM kept)";

#[async_trait]
impl ChainStore for SqliteStore {
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
        // One statement: the previous turn read and the row written in one
        // transaction; a previous turn that is not there writes nothing.
        let written: Result<Option<i64>, sqlx::Error> = sqlx::query_scalar(
            "INSERT INTO loopwright_chain_turns (id, previous, depth, messages, created_at) \
             SELECT ?1, ?2, COALESCE((SELECT depth FROM loopwright_chain_turns WHERE id = ?2), 0) + 1, ?3, ?4 \
             WHERE ?2 IS NULL OR EXISTS (SELECT 1 FROM loopwright_chain_turns WHERE id = ?2) RETURNING depth",
        )
        .bind(id)
        .bind(previous)
        .bind(&json)
        .bind(now_millis())
        .fetch_optional(&self.pool)
        .await;
        match written {
            Ok(Some(depth)) => to_u64(depth, || format!("{} row {id:?}", codec::CHAIN_TURNS)),
            Ok(None) => Err(missing_previous(id, previous.unwrap_or_default())),
            Err(e) if is_unique_violation(&e) => {
                Err(StoreError::conflict(format!("turn {id:?}"), "it exists already"))
            }
            Err(e) => Err(self.error(e)),
        }
    }

    async fn load_chain(&self, id: &str, max_turns: u64) -> Result<Option<StoredChain>, StoreError> {
        let depth: Option<i64> =
            sqlx::query_scalar("SELECT depth FROM loopwright_chain_turns WHERE id = ? AND released = 0")
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
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.error(e))?;
        let released =
            sqlx::query("UPDATE loopwright_chain_turns SET released = 1 WHERE id = ? AND released = 0")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.error(e))?;
        // Up the chain while the turn is released and nothing continues it.
        let mut at = id.to_owned();
        loop {
            let row: Option<(Option<String>, i64, i64)> = sqlx::query_as(
                "SELECT previous, released, EXISTS (SELECT 1 FROM loopwright_chain_turns c WHERE c.previous = t.id) \
                 FROM loopwright_chain_turns t WHERE id = ?",
            )
            .bind(&at)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.error(e))?;
            let Some((previous, 1, 0)) = row else {
                break;
            };
            sqlx::query("DELETE FROM loopwright_chain_turns WHERE id = ?")
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
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.error(e))?;
        sqlx::query("UPDATE loopwright_chain_turns SET released = 1 WHERE created_at < ? AND released = 0")
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
impl EventLog for SqliteStore {
    async fn append_events(&self, run_id: &str, events: &[(u64, Value)]) -> Result<(), StoreError> {
        check_id(run_id, "run")?;
        let rows = events
            .iter()
            .map(|(seq, event)| Ok((to_i64(*seq, "sequence number")?, to_json(event, "an event")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        let now = now_millis();
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| self.error(e))?;
        for (seq, event) in &rows {
            let written = sqlx::query(
                "INSERT INTO loopwright_events (run_id, seq, event, created_at) VALUES (?, ?, ?, ?)",
            )
            .bind(run_id)
            .bind(seq)
            .bind(event)
            .bind(now)
            .execute(&mut *tx)
            .await;
            match written {
                Ok(_) => {}
                // Dropping the transaction rolls it back: nothing written.
                Err(e) if is_unique_violation(&e) => {
                    return Err(StoreError::conflict(
                        format!("event {seq} of run {run_id:?}"),
                        "that sequence number is stored already",
                    ));
                }
                Err(e) => return Err(self.error(e)),
            }
        }
        tx.commit().await.map_err(|e| self.error(e))?;
        self.notifier.notify(run_id);
        Ok(())
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
            "SELECT seq, event FROM loopwright_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
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
        // Other processes' appends are not announced: poll.
        Ok(EventSubscription::new(
            self.notifier.subscribe(run_id),
            Some(self.poll),
        ))
    }
}
