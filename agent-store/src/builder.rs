//! Opening a store by URL: [`open`] and [`StoreBuilder`].
//!
//! Invariant: a URL names exactly one back end or is refused with
//! [`StoreError::InvalidUrl`] saying what is wrong (its password never
//! shown); a store is returned only once its schema is up to date.

#[cfg(feature = "sqlite")]
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreError;
use crate::memory::MemoryStore;
use crate::notify::FALLBACK_POLL;
use crate::traits::Store;

/// How long a call waits for a connection from the pool before the store
/// counts as unavailable.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a SQLite write waits for another writer's lock.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Opens the store at `url`, running its migrations:
///
/// - `memory:`: in this process's memory;
/// - `sqlite:PATH` or `sqlite://PATH`: one SQLite file, created when missing
///   (`sqlite:///var/lib/app/agent.db` is absolute);
/// - `postgres://...` or `postgresql://...`: a PostgreSQL server (libpq's URL
///   form: user, password, host, port, database, `?sslmode=`, and
///   `?connect_timeout=SECONDS`, how long a call waits for a connection
///   before the store counts as unavailable, 5 s when not given).
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// let store = loopwright_store::open("memory:").await?;
/// let error = loopwright_store::open("mysql://db/agents").await.unwrap_err();
/// assert!(error.to_string().contains("mysql"));
/// # let _ = store; Ok(()) }
/// ```
pub async fn open(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    StoreBuilder::new(url).open().await
}

/// A store's URL with its options.
///
/// ```no_run
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use std::time::Duration;
/// let store = loopwright_store::StoreBuilder::new("postgres://app@db.internal/agents")
///     .max_connections(20)
///     .acquire_timeout(Duration::from_secs(2))
///     .open()
///     .await?;
/// # let _ = store; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct StoreBuilder {
    url: String,
    pub(crate) max_connections: Option<u32>,
    /// Set by [`StoreBuilder::acquire_timeout`]; else a PostgreSQL URL's
    /// `connect_timeout`, else [`DEFAULT_ACQUIRE_TIMEOUT`].
    pub(crate) acquire_timeout: Option<Duration>,
    pub(crate) busy_timeout: Duration,
    pub(crate) poll_interval: Duration,
}

impl StoreBuilder {
    /// Options for the store at `url` (see [`open`]).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: None,
            acquire_timeout: None,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            poll_interval: FALLBACK_POLL,
        }
    }

    /// The most connections the pool opens (SQLite: 4, PostgreSQL: 10).
    pub fn max_connections(mut self, max: u32) -> Self {
        self.max_connections = Some(max.max(1));
        self
    }

    /// How long a call waits for a connection before it fails with
    /// [`StoreError::Unavailable`] (default 5 s; for PostgreSQL, the URL's
    /// `connect_timeout=SECONDS` when this is not called).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = Some(timeout);
        self
    }

    /// SQLite: how long a write waits for another writer (default 10 s).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// SQLite: how often an [`EventSubscription`](crate::EventSubscription)
    /// wakes to see other processes' appends (default 250 ms).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Opens the store and brings its schema up to date.
    pub async fn open(self) -> Result<Arc<dyn Store>, StoreError> {
        match Target::parse(&self.url)? {
            Target::Memory => Ok(Arc::new(MemoryStore::new())),
            #[cfg(feature = "sqlite")]
            Target::Sqlite(path) => Ok(Arc::new(crate::sqlite::SqliteStore::open(&path, &self).await?)),
            #[cfg(feature = "postgres")]
            Target::Postgres(url) => Ok(Arc::new(crate::postgres::PostgresStore::open(&url, &self).await?)),
        }
    }
}

/// The back end a URL names.
#[derive(Debug, PartialEq)]
pub(crate) enum Target {
    Memory,
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Target {
    pub(crate) fn parse(url: &str) -> Result<Self, StoreError> {
        let invalid = |reason: String| StoreError::InvalidUrl {
            url: redact(url),
            reason,
        };
        let trimmed = url.trim();
        if trimmed.is_empty() {
            return Err(invalid(EXPECTED.to_owned()));
        }
        let Some((scheme, rest)) = trimmed.split_once(':') else {
            return Err(invalid(format!("no scheme: {EXPECTED}")));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "memory" => {
                if rest.is_empty() || rest == "//" {
                    Ok(Target::Memory)
                } else {
                    Err(invalid(format!("`memory:` takes nothing after it, got {rest:?}")))
                }
            }
            #[cfg(feature = "sqlite")]
            "sqlite" => sqlite(rest).map_err(invalid),
            #[cfg(not(feature = "sqlite"))]
            "sqlite" => Err(StoreError::BackendNotBuilt {
                backend: "sqlite",
                feature: "sqlite",
            }),
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => postgres(trimmed, rest).map_err(invalid),
            #[cfg(not(feature = "postgres"))]
            "postgres" | "postgresql" => Err(StoreError::BackendNotBuilt {
                backend: "postgres",
                feature: "postgres",
            }),
            other => Err(invalid(format!("unknown scheme {other:?}: {EXPECTED}"))),
        }
    }
}

const EXPECTED: &str = "expected `memory:`, `sqlite:PATH` or `postgres://USER@HOST/DATABASE`";

#[cfg(feature = "sqlite")]
fn sqlite(rest: &str) -> Result<Target, String> {
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err("no file: write `sqlite:PATH`, e.g. `sqlite:data/agent.db`".to_owned());
    }
    if path == ":memory:" {
        return Err("an in-memory SQLite database: use `memory:`".to_owned());
    }
    if path.contains('?') {
        return Err("SQLite URLs take no options after `?`: write `sqlite:PATH`".to_owned());
    }
    Ok(Target::Sqlite(PathBuf::from(path)))
}

#[cfg(feature = "postgres")]
fn postgres(url: &str, rest: &str) -> Result<Target, String> {
    if !rest.starts_with("//") {
        return Err("write `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`".to_owned());
    }
    Ok(Target::Postgres(url.to_owned()))
}

/// `url` with its password (in the user info or a `password=` option)
/// replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let url = redact_user_info(url);
    match url.split_once('?') {
        Some((main, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{main}?{}", query.join("&"))
        }
        None => url,
    }
}

fn redact_user_info(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let authority = &url[start..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let user_info = &authority[..at];
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{}{user}:***{}", &url[..start], &url[start + at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn reason(url: &str) -> String {
        match Target::parse(url) {
            Err(StoreError::InvalidUrl { reason, .. }) => reason,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn urls_name_their_back_end() {
        assert_eq!(Target::parse("memory:").unwrap(), Target::Memory);
        #[cfg(feature = "sqlite")]
        {
            assert_eq!(
                Target::parse("sqlite:data/a.db").unwrap(),
                Target::Sqlite("data/a.db".into())
            );
            assert_eq!(
                Target::parse("sqlite://data/a.db").unwrap(),
                Target::Sqlite("data/a.db".into())
            );
            assert_eq!(
                Target::parse("sqlite:///tmp/a.db").unwrap(),
                Target::Sqlite("/tmp/a.db".into())
            );
        }
        #[cfg(feature = "postgres")]
        assert_eq!(
            Target::parse("postgresql://u@h/db").unwrap(),
            Target::Postgres("postgresql://u@h/db".into())
        );
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        assert!(reason("").contains("expected"));
        assert!(reason("agent.db").contains("no scheme"));
        assert!(reason("mysql://h/db").contains("unknown scheme \"mysql\""));
        assert!(reason("memory:x").contains("takes nothing"));
        #[cfg(feature = "sqlite")]
        {
            assert!(reason("sqlite:").contains("no file"));
            assert!(reason("sqlite::memory:").contains("use `memory:`"));
            assert!(reason("sqlite:a.db?mode=ro").contains("no options"));
        }
        #[cfg(feature = "postgres")]
        assert!(reason("postgres:db").contains("postgres://"));
    }

    /// `cargo test -p loopwright-store --no-default-features --features sqlite --lib`
    #[cfg(not(feature = "postgres"))]
    #[tokio::test]
    async fn a_postgres_url_without_the_postgres_feature_names_it() {
        for url in [
            "postgres://app:s3cret@db/agents",
            "postgresql://db/agents",
            "postgres:db",
        ] {
            match open(url).await {
                Err(
                    error @ StoreError::BackendNotBuilt {
                        backend: "postgres",
                        feature: "postgres",
                    },
                ) => {
                    let message = error.to_string();
                    assert!(
                        message.contains("turn on the cargo feature `postgres`"),
                        "{message}"
                    );
                    assert!(!message.contains("s3cret"), "{message}");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    /// `cargo test -p loopwright-store --no-default-features --features postgres --lib`
    #[cfg(not(feature = "sqlite"))]
    #[tokio::test]
    async fn a_sqlite_url_without_the_sqlite_feature_names_it() {
        match open("sqlite:data/agent.db").await {
            Err(
                error @ StoreError::BackendNotBuilt {
                    backend: "sqlite",
                    feature: "sqlite",
                },
            ) => {
                let message = error.to_string();
                assert!(
                    message
                        .contains("the cargo feature `store` of loopwright (`sqlite` of loopwright-store)"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn passwords_are_never_shown() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/x"),
            "postgres://app:***@db:5432/x"
        );
        assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(
            redact("postgres://db/x?sslmode=require&password=a"),
            "postgres://db/x?sslmode=require&password=***"
        );
        match Target::parse("mysql://app:s3cret@db/x") {
            Err(error) => assert!(!error.to_string().contains("s3cret"), "{error}"),
            Ok(_) => panic!("mysql accepted"),
        }
    }
}
