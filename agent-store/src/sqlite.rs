//! [`SqliteStore`]: the embedded default, one SQLite file (`sqlite:PATH`).
//! Here: opening the file, errors naming it, and what SQLite does its own
//! way (an event batch inserted row by row under the write lock, old runs
//! swept under it, other processes' appends seen by a poll); the statements
//! and the rest of the logic are shared with PostgreSQL
//! (the [`crate::backend`] and [`crate::dialect`] modules).
//!
//! Invariant: the file is in WAL mode (readers never wait for the writer)
//! with `synchronous=NORMAL`; every write is one transaction (a single
//! statement, or one begun with `BEGIN IMMEDIATE`), so it is whole or absent
//! and two writers, in this process or another, serialise on SQLite's write
//! lock (waiting up to the busy timeout). Conflicts come from the primary
//! keys `(conversation_id, version)`, `(run_id, seq)` and the turns' ids, and
//! from compare-and-set updates.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteQueryResult, SqliteSynchronous,
};

use crate::backend::{Sql, SqlBackend, sql_store};
use crate::builder::{DEFAULT_ACQUIRE_TIMEOUT, StoreBuilder};
use crate::dialect::{self, Dialect, Statements};
use crate::error::{BoxError, StoreError, from_sqlx, is_unique_violation};
use crate::migrations;
use crate::notify::{EventSubscription, Notifier};
use crate::record::now_millis;

const BACKEND: &str = dialect::SQLITE.backend;

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
    statements: Statements,
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
        let pool_options = SqlitePoolOptions::new()
            .max_connections(
                options
                    .max_connections
                    .unwrap_or(options::DEFAULT_MAX_CONNECTIONS),
            )
            .acquire_timeout(options.acquire_timeout.unwrap_or(DEFAULT_ACQUIRE_TIMEOUT));
        let pool = connect_pool(pool_options, connect, options.busy_timeout)
            .await
            .map_err(|e| at_path(path, e))?;
        // BEGIN IMMEDIATE: concurrent first opens, in this process or
        // another, wait for each other's migrations (up to the busy timeout).
        let migrated = match pool.acquire().await {
            Ok(mut connection) => migrations::run::<sqlx::Sqlite>(&mut connection, &dialect::SQLITE).await,
            Err(e) => Err(from_sqlx(BACKEND, e)),
        };
        if let Err(error) = migrated {
            pool.close().await;
            return Err(with_path(path, error));
        }
        Ok(Self {
            path: path.to_owned(),
            pool,
            statements: Statements::new(&dialect::SQLITE),
            notifier: Notifier::default(),
            poll: options.poll_interval,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

mod options {
    /// Connections to the file (readers run in parallel in WAL mode; writers
    /// take turns).
    pub(super) const DEFAULT_MAX_CONNECTIONS: u32 = 4;
}

/// Connect, trying again while another first open of the same new file
/// holds its lock (up to `busy_timeout`): switching a new file to WAL takes
/// it exclusively, and SQLite then answers `SQLITE_BUSY` at once, without
/// waiting in its busy handler (eight opens at once failed so under load).
async fn connect_pool(
    pool: SqlitePoolOptions,
    connect: SqliteConnectOptions,
    busy_timeout: Duration,
) -> Result<SqlitePool, sqlx::Error> {
    let deadline = tokio::time::Instant::now() + busy_timeout;
    let mut pause = Duration::from_millis(10);
    loop {
        match pool.clone().connect_with(connect.clone()).await {
            Err(e) if is_locked(&e) && tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            connected => return connected,
        }
    }
}

/// Whether `error` is SQLite's "database is locked" or "table is locked"
/// (`SQLITE_BUSY`, `SQLITE_LOCKED` and their extended codes).
fn is_locked(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(e) = error else {
        return false;
    };
    e.code()
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| matches!(code & 0xff, 5 | 6))
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

impl SqlBackend for SqliteStore {
    type DB = sqlx::Sqlite;

    const DIALECT: &'static Dialect = &dialect::SQLITE;

    fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    fn statements(&self) -> &Statements {
        &self.statements
    }

    fn error(&self, error: sqlx::Error) -> StoreError {
        at_path(&self.path, error)
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    async fn append_events(&self, run_id: &str, events: &[(i64, String)]) -> Result<(), StoreError> {
        let now = now_millis();
        let mut tx = Sql(self).begin_write().await?;
        for (seq, event) in events {
            let written = sqlx::query(
                "INSERT INTO loopwright_events (run_id, seq, event, created_at) VALUES ($1, $2, $3, $4)",
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
        Sql(self).commit(tx).await?;
        self.notifier.notify(run_id);
        Ok(())
    }

    async fn expire_runs(&self, cutoff: i64, limit: i64) -> Result<u64, StoreError> {
        // Under the write lock: callers at once take turns.
        let sql = Sql(self);
        let mut tx = sql.begin_write().await?;
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM loopwright_runs WHERE status <> 'running' AND updated_at < $1 \
             ORDER BY updated_at, id LIMIT $2",
        )
        .bind(cutoff)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| self.error(e))?;
        for id in &ids {
            for statement in [&self.statements.delete_events, &self.statements.delete_run] {
                sql.execute_in(&mut tx, sqlx::query(statement.clone()).bind(id))
                    .await?;
            }
        }
        sql.commit(tx).await?;
        Ok(ids.len() as u64)
    }

    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError> {
        // Other processes' appends are not announced: poll.
        Ok(EventSubscription::new(
            self.notifier.subscribe(run_id),
            Some(self.poll),
        ))
    }
}

sql_store!(SqliteStore);
