//! [`StoreError`]: what a store operation can fail with, typed by what the
//! caller does about it.
//!
//! Invariant: a failed write wrote nothing (each write is one transaction),
//! whatever the variant; only [`StoreError::Conflict`] means "reload and
//! retry", and only [`StoreError::Unavailable`] means "the database could not
//! be reached, the same call may work later".

use std::error::Error as StdError;

/// A boxed error source.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Why a store operation failed.
///
/// ```
/// use loopwright_store::StoreError;
/// let error = StoreError::conflict("conversation c1", "expected version 2, the store has 3");
/// assert!(error.is_conflict());
/// assert_eq!(error.to_string(), "conflict on conversation c1: expected version 2, the store has 3");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer got there first: the version moved on, the id or the
    /// sequence number exists. Nothing was written; reload and retry.
    #[error("conflict on {what}: {detail}")]
    Conflict {
        /// What was written ("conversation c1", "run r1", "event 7 of run r1").
        what: String,
        /// What was found.
        detail: String,
    },
    /// The database could not be reached (connection refused or lost, no
    /// connection within the pool's timeout, a server shutting down, a
    /// SQLite file locked for longer than the busy timeout). Nothing was
    /// written; the same call may work once it is back.
    #[error("the {backend} store is unavailable: {source}")]
    Unavailable {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A stored value does not decode (truncated JSON, a message of another
    /// shape, an unknown status), or the database file is damaged.
    #[error("corrupt data in {location}: {detail}")]
    Corrupt {
        /// Where: the table and the row's key ("loopwright_runs row r1"), or
        /// the file.
        location: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The store URL names no store this crate can open; says what is wrong.
    #[error("invalid store URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL, its password replaced by `***`.
        url: String,
        /// What is wrong, and what would be right.
        reason: String,
    },
    /// The URL names a back end this build was compiled without (a cargo
    /// feature that is off): nothing was opened.
    ///
    /// ```
    /// let error = loopwright_store::StoreError::BackendNotBuilt { backend: "postgres", feature: "postgres" };
    /// assert_eq!(
    ///     error.to_string(),
    ///     "this build has no postgres back end: turn on the cargo feature `postgres` (of loopwright or loopwright-store)"
    /// );
    /// ```
    #[error(
        "this build has no {backend} back end: turn on the cargo feature {}",
        feature_hint(feature)
    )]
    BackendNotBuilt {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// loopwright-store's cargo feature that builds it.
        feature: &'static str,
    },
    /// The database was set up by a newer loopwright-store (its schema has a
    /// migration this version does not know): it is left as it is.
    #[error(
        "the {backend} database has schema version {found}, newer than the {supported} this loopwright-store \
         knows: use a newer loopwright-store"
    )]
    NewerSchema {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// The newest migration applied to the database.
        found: i64,
        /// The newest migration this crate has.
        supported: i64,
    },
    /// A value the store cannot hold (a sequence number or version beyond
    /// `i64::MAX`, an empty id).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Anything else the database said, with its error.
    #[error("{backend} error: {source}")]
    Backend {
        /// `sqlite`, `postgres` or `memory`.
        backend: &'static str,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
}

impl StoreError {
    /// A [`StoreError::Conflict`].
    pub fn conflict(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Conflict {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// A [`StoreError::Corrupt`] at `location`.
    ///
    /// ```
    /// let error = loopwright_store::StoreError::corrupt("loopwright_runs row r1", "unknown status \"exploded\"");
    /// assert!(error.to_string().contains("loopwright_runs row r1"));
    /// ```
    pub fn corrupt(location: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Corrupt {
            location: location.into(),
            detail: detail.into(),
        }
    }

    /// Whether another writer got there first (reload and retry).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    /// Whether the database could not be reached.
    ///
    /// ```
    /// let error = loopwright_store::StoreError::Unavailable { backend: "postgres", source: "connection refused".into() };
    /// assert!(error.is_unavailable());
    /// ```
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// Whether a stored value did not decode.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Self::Corrupt { .. })
    }
}

/// loopwright-store's `feature`, with the feature of the `loopwright` crate
/// (the facade) that turns it on: SQLite comes with its `store`.
fn feature_hint(feature: &str) -> String {
    match feature {
        "sqlite" => "`store` of loopwright (`sqlite` of loopwright-store)".to_owned(),
        other => format!("`{other}` (of loopwright or loopwright-store)"),
    }
}

/// A number the databases hold as `BIGINT`.
pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Invalid(format!("{what} {value} is beyond {}", i64::MAX)))
}

/// A stored `BIGINT` that must not be negative.
pub(crate) fn to_u64(value: i64, location: impl FnOnce() -> String) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::corrupt(location(), format!("negative number {value}")))
}

/// Refuses an empty id (it could never be loaded by a caller that means
/// something).
pub(crate) fn check_id(id: &str, what: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        Err(StoreError::Invalid(format!("a {what} id must not be empty")))
    } else {
        Ok(())
    }
}

/// Sorts a driver error into the variants above.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn from_sqlx(backend: &'static str, error: sqlx::Error) -> StoreError {
    use sqlx::Error as E;
    let unavailable = match &error {
        E::Io(_) | E::Tls(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed => true,
        E::Database(db) => db.code().is_some_and(|code| unavailable_code(backend, &code)),
        _ => false,
    };
    if unavailable {
        return StoreError::Unavailable {
            backend,
            source: Box::new(error),
        };
    }
    if let E::Database(db) = &error
        && backend == "sqlite"
        && db
            .code()
            .is_some_and(|code| matches!(primary_sqlite_code(&code), Some(11 | 26)))
    {
        return StoreError::corrupt("the SQLite file", db.message().to_owned());
    }
    StoreError::Backend {
        backend,
        source: Box::new(error),
    }
}

/// Error codes that mean the database cannot be used right now.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn unavailable_code(backend: &str, code: &str) -> bool {
    match backend {
        // Class 08: connection exceptions; 57P01-03: the server is shutting
        // down, crashed or starting; 53300: too many connections.
        "postgres" => code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300"),
        // SQLITE_BUSY and SQLITE_LOCKED (after the busy timeout), SQLITE_CANTOPEN.
        "sqlite" => matches!(primary_sqlite_code(code), Some(5 | 6 | 14)),
        _ => false,
    }
}

/// The primary result code of a SQLite (extended) result code.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn primary_sqlite_code(code: &str) -> Option<i64> {
    code.parse::<i64>().ok().map(|code| code & 0xff)
}

/// Whether the driver error is a unique-key violation (a conflict).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .is_some_and(|db| db.is_unique_violation())
}
