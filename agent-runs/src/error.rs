//! What a request about a run can fail with ([`RunsError`]): each error
//! names what was wrong, so a server answers it as it is (a 404, a 409, a
//! 503 while the store is down) and a client knows what to fix.

use loopwright_store::StoreError;

use crate::Refused;

/// Why a run could not be started, read, decided or cancelled.
///
/// ```
/// # async fn demo(runs: loopwright_runs::Runs) {
/// use loopwright_runs::RunsError;
/// match runs.get("run_0123").await {
///     Ok(record) => println!("{}", record.status),
///     Err(RunsError::NoSuchRun { id }) => println!("no run {id}"),
///     Err(RunsError::Store { source, .. }) if source.is_unavailable() => println!("try again later"),
///     Err(e) => println!("{e}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunsError {
    /// No agent of that name is served.
    #[error("no agent named {name:?} is served here (served: {})", served.join(", "))]
    UnknownAgent {
        /// The name asked for.
        name: String,
        /// The names served.
        served: Vec<String>,
    },
    /// No run has that id.
    #[error("no run with id {id:?}")]
    NoSuchRun {
        /// The id asked for.
        id: String,
    },
    /// The request is not one a run can take (an output schema that does
    /// not compile, a conversation whose calls and results do not pair up,
    /// a call decided twice): the message names what to fix.
    #[error("{message}")]
    Invalid {
        /// What was wrong.
        message: String,
    },
    /// The run is not in a state that allows this (a call that is not
    /// pending or was decided already, a run that ended, a record that
    /// kept changing): the message names the run and the call.
    #[error("{message}")]
    Conflict {
        /// What stands in the way.
        message: String,
    },
    /// The host gave the run no place (its queue is full, it is stopping).
    #[error("{0}")]
    Refused(Refused),
    /// The store failed (unavailable, a conflict, damaged data).
    #[error("{what}: {source}")]
    Store {
        /// What was read or written (`run ID`, `session ID`).
        what: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// A run's record is not one this crate wrote, or is damaged.
    #[error("{message}")]
    Damaged {
        /// What could not be read.
        message: String,
    },
    /// The durable engine (Restate) did not take the request; the message
    /// says what is kept and whether to send it again.
    #[error("{message}")]
    EngineUnavailable {
        /// What was asked and why it failed.
        message: String,
    },
}

impl RunsError {
    /// A store failure on `what`.
    pub(crate) fn store(what: impl Into<String>, source: StoreError) -> Self {
        Self::Store {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
        }
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            message: message.into(),
        }
    }

    pub(crate) fn damaged(message: impl Into<String>) -> Self {
        Self::Damaged {
            message: message.into(),
        }
    }
}
