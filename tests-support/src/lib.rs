//! # loopwright-test-support
//!
//! The test harness the loopwright crates share (never published): a real
//! PostgreSQL server for tests, with a fresh database for each test so tests
//! run in parallel.
//!
//! - [`database`]: a new database on the test run's server. That server is the
//!   one the test command started (`scripts/test.sh` exports its URL as
//!   [`SERVER_ENV`]), or else one this test process starts on first use and
//!   that ends with it.
//! - [`TempPostgres::start`]: a server of the test's own, for tests that stop
//!   and restart it.
//! - [`model_server::ModelServer`]: a fake LLM server speaking every wire
//!   format the providers speak, playing scripted replies and recording the
//!   requests (the model of the agent, CLI, serve and bench tests).
//!
//! Invariant: no server outlives the test process. Each server runs in the
//! foreground as a child of one dedicated thread that lives as long as the
//! process, with a parent-death signal (`SIGQUIT`, PostgreSQL's immediate
//! shutdown), so a test binary that ends in any way (a failed test, a signal,
//! SIGKILL) takes its servers down; a dropped [`TempPostgres`] stops its own.
//! Data directories live under [`base_dir`]; the ones of processes that are
//! gone are deleted the next time a server starts.
//!
//! A machine without PostgreSQL fails the test naming what to install (never a
//! skip): `bash scripts/postgres.sh install` installs Debian's `postgresql`.
//!
//! ```no_run
//! let db = loopwright_test_support::database();
//! println!("{}", db.url()); // postgres://postgres@127.0.0.1:PORT/t_...
//! ```

// A test harness: a server that cannot be had fails the test, with a message
// saying why.
#![allow(clippy::panic)]

pub mod model_server;
pub mod proxy;
pub mod restate;
mod server;
mod spawner;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub use proxy::Balancer;
pub use restate::{RESTATE_SERVER_ENV, RestateServer};
pub use server::TempPostgres;

/// The environment variable holding the URL of a server the test command
/// started (a superuser's URL, e.g. `postgres://postgres@127.0.0.1:5433/postgres`).
pub const SERVER_ENV: &str = "LOOPWRIGHT_TEST_POSTGRES";

/// The environment variable naming PostgreSQL's `bin` directory, when it is
/// not Debian's `/usr/lib/postgresql/<version>/bin`.
pub const BIN_ENV: &str = "PGBIN";

/// The directory holding the data directories of the servers tests start.
///
/// ```
/// assert!(loopwright_test_support::base_dir().ends_with("loopwright-test-postgres"));
/// ```
pub fn base_dir() -> PathBuf {
    std::env::temp_dir().join("loopwright-test-postgres")
}

/// The server of this test run: [`SERVER_ENV`]'s, or one started on first
/// use that ends with the test process.
enum Shared {
    External(String),
    Owned(TempPostgres),
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// A new, empty database on the test run's server, dropped (with its
/// connections) when the value is dropped.
///
/// # Panics
///
/// When no server can be had: PostgreSQL is not installed, or the server
/// did not start (the message says which, with the server's log).
///
/// ```no_run
/// let db = loopwright_test_support::database();
/// assert!(db.url().starts_with("postgres://"));
/// ```
pub fn database() -> TempDatabase {
    let shared = SHARED.get_or_init(|| match std::env::var(SERVER_ENV) {
        Ok(url) if !url.trim().is_empty() => Shared::External(url.trim().to_owned()),
        _ => Shared::Owned(TempPostgres::start()),
    });
    match shared {
        Shared::External(url) => TempDatabase::create(url),
        Shared::Owned(server) => server.database(),
    }
}

/// A database of its own on a test server, dropped with its value.
#[derive(Debug)]
pub struct TempDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TempDatabase {
    /// Creates a database with a name no other test uses on the server at
    /// `admin_url` (a superuser's URL).
    pub(crate) fn create(admin_url: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "t_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        );
        if let Err(error) = psql(admin_url, &format!("CREATE DATABASE \"{name}\"")) {
            panic!("could not create a test database on {admin_url}: {error}");
        }
        let url = with_database(admin_url, &name);
        Self {
            admin_url: admin_url.to_owned(),
            name,
            url,
        }
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The same database with `?connect_timeout=SECONDS` on its URL: how
    /// long the store waits for a connection before it counts as
    /// unavailable (5 s when not given), for tests that stop the server.
    pub fn connect_timeout(mut self, seconds: u64) -> Self {
        self.url = format!("{}?connect_timeout={seconds}", self.url);
        self
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TempDatabase {
    /// Drops the database, closing connections still open to it. A server
    /// that is down already is fine: it goes away with its directory.
    fn drop(&mut self) {
        let _ = psql(
            &self.admin_url,
            &format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name),
        );
    }
}

/// `url` with its database (the path) replaced by `name`, its query kept.
fn with_database(url: &str, name: &str) -> String {
    let (main, query) = match url.split_once('?') {
        Some((main, query)) => (main, Some(query)),
        None => (url, None),
    };
    let after_scheme = main.find("://").map_or(0, |i| i + 3);
    let base = match main[after_scheme..].find('/') {
        Some(slash) => &main[..after_scheme + slash],
        None => main,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// Runs one SQL command with `psql` against `url`.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    let psql = bin_dir().map_or_else(|_| PathBuf::from("psql"), |dir| dir.join("psql"));
    let output = Command::new(&psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .map_err(|e| format!("could not run {}: {e}", psql.display()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{sql}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// PostgreSQL's `bin` directory: [`BIN_ENV`], else the newest
/// `/usr/lib/postgresql/<version>/bin` holding a `postgres`.
///
/// ```no_run
/// let bin = loopwright_test_support::bin_dir().unwrap();
/// assert!(bin.join("initdb").exists());
/// ```
pub fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(BIN_ENV) {
        let dir = PathBuf::from(dir);
        return if dir.join("postgres").is_file() {
            Ok(dir)
        } else {
            Err(format!("{BIN_ENV}={} holds no `postgres`", dir.display()))
        };
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): run `bash scripts/postgres.sh \
         install` (Debian's postgresql package), set PGBIN to its bin directory, or set \
         LOOPWRIGHT_TEST_POSTGRES to a server's URL"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_of_a_url_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(with_database("postgres://u@h:1", "t1"), "postgres://u@h:1/t1");
        assert_eq!(
            with_database("postgresql://u@h/db?sslmode=disable", "t1"),
            "postgresql://u@h/t1?sslmode=disable"
        );
    }
}
