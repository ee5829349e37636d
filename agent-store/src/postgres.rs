//! [`PostgresStore`]: PostgreSQL (`postgres://...`), for many processes and
//! machines. Here: connecting, and what PostgreSQL does its own way (an
//! event batch and its `NOTIFY` in one statement, a sweep of old runs that
//! skips the ones another sweep holds, one `LISTEN` connection per store);
//! the statements and the rest of the logic are shared with SQLite
//! (the [`crate::backend`] and [`crate::dialect`] modules).
//!
//! Invariant: every write is one transaction, whole or absent: a turn is
//! inserted only if the conversation's version is the one the writer
//! loaded (the primary key `(conversation_id, version)` refuses the loser of
//! a race), a run is updated only at the version the writer read, an event
//! batch goes in with one `INSERT ... SELECT FROM UNNEST` and its
//! `pg_notify`, delivered at commit. Readers tailing a log hear every
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

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions, PgQueryResult};
use sqlx::{ConnectOptions, Connection, PgPool};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::backend::{SqlBackend, sql_store};
use crate::builder::{DEFAULT_ACQUIRE_TIMEOUT, StoreBuilder, redact};
use crate::dialect::{self, Dialect, Statements};
use crate::error::{StoreError, from_sqlx, is_unique_violation};
use crate::migrations;
use crate::notify::{EventSubscription, Notifier};
use crate::record::now_millis;

const BACKEND: &str = dialect::POSTGRES.backend;
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
    statements: Statements,
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
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: redact(url),
            reason,
        };
        let (for_sqlx, connect_timeout) = take_connect_timeout(url).map_err(invalid)?;
        let options = PgConnectOptions::from_str(&for_sqlx)
            .map_err(|e| invalid(e.to_string()))?
            .application_name("loopwright-store");
        let timeout = builder
            .acquire_timeout
            .or(connect_timeout)
            .unwrap_or(DEFAULT_ACQUIRE_TIMEOUT);
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
        let migrated = migrations::run::<sqlx::Postgres>(&mut connection, &dialect::POSTGRES).await;
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
            statements: Statements::new(&dialect::POSTGRES),
            acquire_timeout: timeout,
            notifier: Arc::new(Notifier::default()),
            listener: OnceCell::new(),
        })
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

impl SqlBackend for PostgresStore {
    type DB = sqlx::Postgres;

    const DIALECT: &'static Dialect = &dialect::POSTGRES;

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn statements(&self) -> &Statements {
        &self.statements
    }

    fn error(&self, error: sqlx::Error) -> StoreError {
        from_sqlx(BACKEND, error)
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    async fn append_events(&self, run_id: &str, events: &[(i64, String)]) -> Result<(), StoreError> {
        let (seqs, texts): (Vec<i64>, Vec<&str>) =
            events.iter().map(|(seq, text)| (*seq, text.as_str())).unzip();
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
                let first = seqs.first().copied().unwrap_or(0);
                let last = seqs.last().copied().unwrap_or(0);
                Err(StoreError::conflict(
                    format!("events {first}..={last} of run {run_id:?}"),
                    "one of those sequence numbers is stored already",
                ))
            }
            Err(e) => Err(self.error(e)),
        }
    }

    async fn expire_runs(&self, cutoff: i64, limit: i64) -> Result<u64, StoreError> {
        // One statement: the runs taken (and locked) first, then their logs
        // and themselves; a run another sweep holds is left to it.
        let done = sqlx::query(
            "WITH doomed AS (SELECT id FROM loopwright_runs WHERE status <> 'running' AND updated_at < $1 \
             ORDER BY updated_at, id LIMIT $2 FOR UPDATE SKIP LOCKED), \
             logs AS (DELETE FROM loopwright_events WHERE run_id IN (SELECT id FROM doomed)) \
             DELETE FROM loopwright_runs WHERE id IN (SELECT id FROM doomed)",
        )
        .bind(cutoff)
        .bind(limit)
        .execute(&self.pool)
        .await
        .map_err(|e| self.error(e))?;
        Ok(done.rows_affected())
    }

    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError> {
        // Subscribe first, then make sure the listener runs: a notification
        // that arrives between the two still wakes this subscription.
        let wakes = self.notifier.subscribe(run_id);
        self.listen().await?;
        Ok(EventSubscription::new(wakes, Some(SAFETY_POLL)))
    }
}

sql_store!(PostgresStore);

/// `url` without libpq's `connect_timeout=SECONDS` option (which sqlx does
/// not know), and that option as a duration: how long a call waits for a
/// connection. Whole seconds, at least 1 (libpq's 0, "wait forever", is
/// refused: a store that never answers would hang every call).
fn take_connect_timeout(url: &str) -> Result<(String, Option<Duration>), String> {
    let Some((main, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let mut timeout = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("connect_timeout", value)) => {
                let seconds: u64 = value.trim().parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                    format!("`connect_timeout` is whole seconds, at least 1: got {value:?}")
                })?;
                timeout = Some(Duration::from_secs(seconds));
            }
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        main.to_owned()
    } else {
        format!("{main}?{}", kept.join("&"))
    };
    Ok((url, timeout))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn connect_timeout_is_taken_out_of_the_url_as_seconds() {
        let (url, timeout) =
            take_connect_timeout("postgres://a@h/db?sslmode=disable&connect_timeout=2").unwrap();
        assert_eq!(url, "postgres://a@h/db?sslmode=disable");
        assert_eq!(timeout, Some(Duration::from_secs(2)));
        let (url, timeout) = take_connect_timeout("postgres://a@h/db?connect_timeout=1").unwrap();
        assert_eq!(
            (url.as_str(), timeout),
            ("postgres://a@h/db", Some(Duration::from_secs(1)))
        );
        assert_eq!(
            take_connect_timeout("postgres://a@h/db").unwrap(),
            ("postgres://a@h/db".to_owned(), None)
        );
        for bad in ["0", "soon", "1.5", ""] {
            let error = take_connect_timeout(&format!("postgres://h/db?connect_timeout={bad}")).unwrap_err();
            assert!(error.contains("connect_timeout"), "{error}");
        }
    }
}
