//! The logic both SQL back ends share, written once over sqlx: conversations
//! as append-only versioned turns, runs updated by compare-and-set, event
//! logs by sequence number, chains of turns and their release and expiry.
//! A back end ([`SqliteStore`](crate::SqliteStore),
//! [`PostgresStore`](crate::PostgresStore)) supplies its pool, its
//! [`Dialect`] and the few strategies that are more than a fragment of SQL
//! ([`SqlBackend`]); [`sql_store!`] makes it a [`Store`](crate::Store).
//!
//! Invariants: every write is one transaction, whole or absent (a single
//! statement, or a transaction begun with the dialect's `begin_write`); a
//! conditional write that finds the version moved on, or a key taken,
//! writes nothing and is [`StoreError::Conflict`]; a transaction that writes
//! chains' turns takes the dialect's chains lock first, shared to store a
//! turn and exclusive to delete one.

use loopwright_core::Message;
use serde_json::Value;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Transaction, Type};

use crate::codec::{self, RunJson, chain_too_long, missing_previous, to_json, version_detail};
use crate::dialect::{Dialect, Statements};
use crate::error::{StoreError, check_id, is_unique_violation, to_i64, to_u64};
use crate::notify::EventSubscription;
use crate::record::{
    ConversationSummary, FIRST_RUN_VERSION, RunRecord, RunStatus, StoredChain, StoredConversation, now_millis,
};
use crate::sql::{self, Written};

/// What a SQL back end supplies to the shared logic.
pub(crate) trait SqlBackend: Send + Sync {
    /// The sqlx database.
    type DB: Database;

    /// Its dialect.
    const DIALECT: &'static Dialect;

    /// The connection pool.
    fn pool(&self) -> &Pool<Self::DB>;

    /// The statements, built from [`Self::DIALECT`] once, when opened.
    fn statements(&self) -> &Statements;

    /// A driver error as a [`StoreError`] (SQLite's name the file).
    fn error(&self, error: sqlx::Error) -> StoreError;

    /// The rows a statement changed.
    fn rows_affected(done: &<Self::DB as Database>::QueryResult) -> u64;

    /// Appends a run's events (sequence numbers and JSON texts, at least
    /// one) in one transaction, then wakes the log's subscribers; a sequence
    /// number that is stored already is [`StoreError::Conflict`] and nothing
    /// is written.
    async fn append_events(&self, run_id: &str, events: &[(i64, String)]) -> Result<(), StoreError>;

    /// Deletes at most `limit` runs that are not running and were last
    /// written before `cutoff`, each with its event log, in one transaction;
    /// callers at once delete each run once.
    async fn expire_runs(&self, cutoff: i64, limit: i64) -> Result<u64, StoreError>;

    /// A subscription to appends to `run_id`'s log.
    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError>;
}

/// A query of back end `B`'s database, to bind and run.
type Query<'q, B> = sqlx::query::Query<'q, <B as SqlBackend>::DB, Arguments<B>>;
type Arguments<B> = <<B as SqlBackend>::DB as Database>::Arguments;
type Row<B> = <<B as SqlBackend>::DB as Database>::Row;
type Tx<B> = Transaction<'static, <B as SqlBackend>::DB>;

/// The shared logic on back end `B` (see the module's invariants).
pub(crate) struct Sql<'a, B>(pub(crate) &'a B);

impl<B: SqlBackend> Sql<'_, B>
where
    for<'c> &'c mut <B::DB as Database>::Connection: Executor<'c, Database = B::DB>,
    Arguments<B>: IntoArguments<B::DB>,
    usize: ColumnIndex<Row<B>>,
    i64: Type<B::DB> + for<'q> Encode<'q, B::DB> + for<'r> Decode<'r, B::DB>,
    String: Type<B::DB> + for<'r> Decode<'r, B::DB>,
    for<'a> &'a str: Type<B::DB> + Encode<'a, B::DB>,
    for<'a> Option<&'a str>: Type<B::DB> + Encode<'a, B::DB>,
{
    fn sql(&self) -> &Statements {
        self.0.statements()
    }

    fn error(&self, error: sqlx::Error) -> StoreError {
        self.0.error(error)
    }

    /// Runs `query` on the pool: the rows it changed.
    async fn execute(&self, query: Query<'_, B>) -> Result<u64, StoreError> {
        let done = query.execute(self.0.pool()).await.map_err(|e| self.error(e))?;
        Ok(B::rows_affected(&done))
    }

    /// Runs `query` in `tx`: the rows it changed.
    pub(crate) async fn execute_in(&self, tx: &mut Tx<B>, query: Query<'_, B>) -> Result<u64, StoreError> {
        let done = query.execute(&mut **tx).await.map_err(|e| self.error(e))?;
        Ok(B::rows_affected(&done))
    }

    /// Runs `query` on the pool: its rows.
    async fn fetch_all(&self, query: Query<'_, B>) -> Result<Vec<Row<B>>, StoreError> {
        query.fetch_all(self.0.pool()).await.map_err(|e| self.error(e))
    }

    /// A transaction that writes (the dialect's `begin_write`).
    pub(crate) async fn begin_write(&self) -> Result<Tx<B>, StoreError> {
        let begin = self.0.pool().begin_with(B::DIALECT.begin_write).await;
        begin.map_err(|e| self.error(e))
    }

    /// Commits `tx`.
    pub(crate) async fn commit(&self, tx: Tx<B>) -> Result<(), StoreError> {
        tx.commit().await.map_err(|e| self.error(e))
    }

    /// A transaction that writes chains' turns, holding the chains' lock,
    /// shared or not.
    async fn begin_chains(&self, shared: bool) -> Result<Tx<B>, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Some(lock) = &B::DIALECT.chains_lock {
            let lock = if shared { lock.shared } else { lock.exclusive };
            self.execute_in(&mut tx, sqlx::query(lock)).await?;
        }
        Ok(tx)
    }

    pub(crate) async fn load_conversation(&self, id: &str) -> Result<Option<StoredConversation>, StoreError> {
        let rows = self
            .fetch_all(sqlx::query(self.sql().load_turns.clone()).bind(id))
            .await?;
        codec::conversation(id, sql::turns(id, &rows)?)
    }

    pub(crate) async fn append_turn(
        &self,
        id: &str,
        expected_version: u64,
        messages: &[Message],
    ) -> Result<u64, StoreError> {
        check_id(id, "conversation")?;
        let expected = to_i64(expected_version, "version")?;
        let next = to_i64(expected_version + 1, "version")?;
        let json = to_json(messages, "the turn's messages")?;
        let written = sqlx::query(self.sql().append_turn.clone())
            .bind(id)
            .bind(next)
            .bind(json.as_str())
            .bind(now_millis())
            .bind(expected)
            .execute(self.0.pool())
            .await;
        match Written::of(written.map(|done| B::rows_affected(&done))) {
            Written::Done => Ok(expected_version + 1),
            Written::Conflict => {
                let found = sqlx::query_scalar::<_, Option<i64>>(self.sql().turn_version.clone())
                    .bind(id)
                    .fetch_one(self.0.pool())
                    .await;
                Err(version_conflict(
                    format!("conversation {id:?}"),
                    expected_version,
                    found,
                ))
            }
            Written::Failed(e) => Err(self.error(e)),
        }
    }

    pub(crate) async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        let deleted = self
            .execute(sqlx::query(self.sql().delete_turns.clone()).bind(id))
            .await?;
        Ok(deleted > 0)
    }

    pub(crate) async fn list_conversations(
        &self,
        limit: usize,
    ) -> Result<Vec<ConversationSummary>, StoreError> {
        let query =
            sqlx::query(self.sql().list_conversations.clone()).bind(i64::try_from(limit).unwrap_or(i64::MAX));
        sql::conversations(&self.fetch_all(query).await?)
    }

    pub(crate) async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        check_id(&run.id, "run")?;
        let json = RunJson::of(run)?;
        let insert = sqlx::query(self.sql().create_run.clone());
        let written = sql::bind_run(insert, run, &json)
            .bind(run.id.as_str())
            .bind(to_i64(FIRST_RUN_VERSION, "version")?)
            .bind(now_millis())
            .execute(self.0.pool())
            .await;
        match Written::of(written.map(|done| B::rows_affected(&done))) {
            Written::Done => Ok(()),
            Written::Conflict => Err(StoreError::conflict(
                format!("run {:?}", run.id),
                "it exists already",
            )),
            Written::Failed(e) => Err(self.error(e)),
        }
    }

    pub(crate) async fn load_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let row = sqlx::query(self.sql().load_run.clone())
            .bind(id)
            .fetch_optional(self.0.pool())
            .await
            .map_err(|e| self.error(e))?;
        row.map(|row| sql::run(&row)?.decode()).transpose()
    }

    pub(crate) async fn update_run(&self, run: &RunRecord, expected_version: u64) -> Result<u64, StoreError> {
        let expected = to_i64(expected_version, "version")?;
        to_i64(expected_version + 1, "version")?;
        let json = RunJson::of(run)?;
        let update = sqlx::query(self.sql().update_run.clone());
        let update = sql::bind_run(update, run, &json)
            .bind(now_millis())
            .bind(run.id.as_str())
            .bind(expected);
        if self.execute(update).await? == 1 {
            return Ok(expected_version + 1);
        }
        let found = sqlx::query_scalar::<_, i64>(self.sql().run_version.clone())
            .bind(run.id.as_str())
            .fetch_optional(self.0.pool())
            .await;
        Err(version_conflict(
            format!("run {:?}", run.id),
            expected_version,
            found,
        ))
    }

    pub(crate) async fn list_runs(
        &self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let query = match status {
            Some(status) => sqlx::query(self.sql().list_runs_with_status.clone()).bind(status.as_str()),
            None => sqlx::query(self.sql().list_runs.clone()),
        };
        let rows = self
            .fetch_all(query.bind(i64::try_from(limit).unwrap_or(i64::MAX)))
            .await?;
        rows.iter().map(|row| sql::run(row)?.decode()).collect()
    }

    pub(crate) async fn session_runs(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<RunRecord>, StoreError> {
        let query = sqlx::query(self.sql().session_runs.clone())
            .bind(session)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        let rows = self.fetch_all(query).await?;
        rows.iter().map(|row| sql::run(row)?.decode()).collect()
    }

    pub(crate) async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        // The run's row first, as a sweep locks it (on PostgreSQL): the two
        // never wait for each other in opposite orders.
        let deleted = self
            .execute_in(&mut tx, sqlx::query(self.sql().delete_run.clone()).bind(id))
            .await?;
        self.execute_in(&mut tx, sqlx::query(self.sql().delete_events.clone()).bind(id))
            .await?;
        self.commit(tx).await?;
        Ok(deleted > 0)
    }

    pub(crate) async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, StoreError> {
        self.0
            .expire_runs(cutoff, i64::try_from(limit).unwrap_or(i64::MAX))
            .await
    }

    pub(crate) async fn put_turn(
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
        let mut tx = self.begin_chains(true).await?;
        let written = sqlx::query_scalar::<_, i64>(self.sql().put_turn.clone())
            .bind(id)
            .bind(previous)
            .bind(json.as_str())
            .bind(now_millis())
            .fetch_optional(&mut *tx)
            .await;
        // Dropping the transaction on an error rolls it back.
        let depth = match written {
            Ok(Some(depth)) => to_u64(depth, || format!("{} row {id:?}", codec::CHAIN_TURNS))?,
            Ok(None) => return Err(missing_previous(id, previous.unwrap_or_default())),
            Err(e) if is_unique_violation(&e) => {
                return Err(StoreError::conflict(format!("turn {id:?}"), "it exists already"));
            }
            Err(e) => return Err(self.error(e)),
        };
        self.commit(tx).await?;
        Ok(depth)
    }

    pub(crate) async fn load_chain(
        &self,
        id: &str,
        max_turns: u64,
    ) -> Result<Option<StoredChain>, StoreError> {
        let depth = sqlx::query_scalar::<_, i64>(self.sql().chain_depth.clone())
            .bind(id)
            .fetch_optional(self.0.pool())
            .await
            .map_err(|e| self.error(e))?;
        let Some(depth) = depth else {
            return Ok(None);
        };
        let depth = to_u64(depth, || format!("{} row {id:?}", codec::CHAIN_TURNS))?;
        if depth > max_turns {
            return Err(chain_too_long(id, depth, max_turns));
        }
        let walk = sqlx::query(self.sql().walk_chain.clone())
            .bind(id)
            .bind(to_i64(depth, "depth")?);
        let rows = self.fetch_all(walk).await?;
        if rows.is_empty() {
            // Released and deleted since its depth was read.
            return Ok(None);
        }
        codec::chain(id, depth, sql::chain_rows(id, &rows)?).map(Some)
    }

    pub(crate) async fn release_turn(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin_chains(false).await?;
        let released = self
            .execute_in(&mut tx, sqlx::query(self.sql().release_turn.clone()).bind(id))
            .await?;
        // Up the chain while the turn is released and nothing continues it.
        let mut at = id.to_owned();
        loop {
            let releasable = sqlx::query_scalar::<_, Option<String>>(self.sql().releasable_turn.clone())
                .bind(at.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| self.error(e))?;
            let Some(previous) = releasable else {
                break;
            };
            self.execute_in(
                &mut tx,
                sqlx::query(self.sql().delete_turn.clone()).bind(at.as_str()),
            )
            .await?;
            match previous {
                Some(previous) => at = previous,
                None => break,
            }
        }
        self.commit(tx).await?;
        Ok(released == 1)
    }

    pub(crate) async fn expire_turns(&self, cutoff: i64) -> Result<u64, StoreError> {
        let mut tx = self.begin_chains(false).await?;
        let release = sqlx::query(self.sql().release_turns_before.clone()).bind(cutoff);
        self.execute_in(&mut tx, release).await?;
        let deleted = self
            .execute_in(&mut tx, sqlx::query(self.sql().collect_released.clone()))
            .await?;
        self.commit(tx).await?;
        Ok(deleted)
    }

    pub(crate) async fn append_events(
        &self,
        run_id: &str,
        events: &[(u64, Value)],
    ) -> Result<(), StoreError> {
        check_id(run_id, "run")?;
        let rows = events
            .iter()
            .map(|(seq, event)| Ok((to_i64(*seq, "sequence number")?, to_json(event, "an event")?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        self.0.append_events(run_id, &rows).await
    }

    pub(crate) async fn read_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Value)>, StoreError> {
        let after = match after {
            Some(after) => to_i64(after, "sequence number")?,
            None => -1,
        };
        let read = sqlx::query(self.sql().read_events.clone())
            .bind(run_id)
            .bind(after)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
        sql::events(run_id, &self.fetch_all(read).await?)
    }

    pub(crate) async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError> {
        self.0.subscribe_events(run_id).await
    }
}

/// The conflict of a compare-and-set on `what`, with the version the store
/// has now (if it could be read).
fn version_conflict(what: String, expected: u64, found: Result<Option<i64>, sqlx::Error>) -> StoreError {
    let found = found.ok().flatten().and_then(|v| u64::try_from(v).ok());
    StoreError::conflict(what, version_detail(expected, found))
}

/// Makes a [`SqlBackend`] a [`Store`](crate::Store): each trait method is
/// the shared logic's ([`Sql`]).
macro_rules! sql_store {
    ($store:ty) => {
        $crate::backend::forward!($store, ConversationStore {
            load_conversation(id: &str) -> Option<$crate::record::StoredConversation>;
            append_turn(id: &str, expected_version: u64, messages: &[loopwright_core::Message]) -> u64;
            delete_conversation(id: &str) -> bool;
            list_conversations(limit: usize) -> Vec<$crate::record::ConversationSummary>;
        });
        $crate::backend::forward!($store, RunStore {
            create_run(run: &$crate::record::RunRecord) -> ();
            load_run(id: &str) -> Option<$crate::record::RunRecord>;
            update_run(run: &$crate::record::RunRecord, expected_version: u64) -> u64;
            list_runs(status: Option<$crate::record::RunStatus>, limit: usize) -> Vec<$crate::record::RunRecord>;
            session_runs(session: &str, limit: usize) -> Vec<$crate::record::RunRecord>;
            delete_run(id: &str) -> bool;
            expire_runs(cutoff: i64, limit: usize) -> u64;
        });
        $crate::backend::forward!($store, ChainStore {
            put_turn(id: &str, previous: Option<&str>, messages: &[loopwright_core::Message]) -> u64;
            load_chain(id: &str, max_turns: u64) -> Option<$crate::record::StoredChain>;
            release_turn(id: &str) -> bool;
            expire_turns(cutoff: i64) -> u64;
        });
        $crate::backend::forward!($store, EventLog {
            append_events(run_id: &str, events: &[(u64, serde_json::Value)]) -> ();
            read_events(run_id: &str, after: Option<u64>, limit: usize) -> Vec<(u64, serde_json::Value)>;
            subscribe_events(run_id: &str) -> $crate::notify::EventSubscription;
        });
    };
}

/// Implements store trait `$trait` for `$store`, each method calling the
/// shared logic's method of the same name.
macro_rules! forward {
    ($store:ty, $trait:ident { $($method:ident($($arg:ident: $ty:ty),*) -> $out:ty;)* }) => {
        #[async_trait::async_trait]
        impl $crate::traits::$trait for $store {
            $(
                async fn $method(&self, $($arg: $ty),*) -> Result<$out, $crate::error::StoreError> {
                    $crate::backend::Sql(self).$method($($arg),*).await
                }
            )*
        }
    };
}

pub(crate) use {forward, sql_store};
