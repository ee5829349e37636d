//! [`ConnectionReport`]: which external servers a [`ToolSet`](crate::ToolSet)
//! holds and which could not be connected.
//!
//! Connecting is the transport crates' job (loopwright-mcp's `connect_all`); the
//! report only carries the outcome, so every run of an agent can tell the
//! application who is in with an `mcp_connected`
//! event right after `run_started`, followed by one `warning` per failure.

use serde::{Deserialize, Serialize};

/// A server that was configured but is not in the tool set.
///
/// ```
/// let f = loopwright_types::toolset::SourceFailure::new("fs", "connect timed out after 10s");
/// assert_eq!(serde_json::to_value(&f).unwrap(), serde_json::json!({"server": "fs", "error": "connect timed out after 10s"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SourceFailure {
    /// The server's configured name.
    pub server: String,
    /// Why it is left out (names what was wrong).
    pub error: String,
    /// The server asks for a sign-in (OAuth) that nobody made yet: signing
    /// in, not fixing the configuration, brings it in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_sign_in: bool,
}

impl SourceFailure {
    /// A failure of `server`.
    pub fn new(server: impl Into<String>, error: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            error: error.into(),
            needs_sign_in: false,
        }
    }

    /// The same failure, marked as one that a sign-in ends.
    ///
    /// ```
    /// let f = loopwright_types::toolset::SourceFailure::new("linear", "needs login").signing_in(true);
    /// assert!(f.needs_sign_in);
    /// assert_eq!(serde_json::to_value(&f).unwrap()["needs_sign_in"], true);
    /// ```
    pub fn signing_in(mut self, needs: bool) -> Self {
        self.needs_sign_in = needs;
        self
    }
}

/// The outcome of connecting a set of servers: the names of those connected
/// (in config order) and the failures.
///
/// ```
/// use loopwright_types::ToolSet;
/// use loopwright_types::toolset::{ConnectionReport, SourceFailure};
/// let report = ConnectionReport::new(vec!["time".into()], vec![SourceFailure::new("gh", "GITHUB_TOKEN is not set")]);
/// let tools = ToolSet::builder().connection_report(report.clone()).build();
/// assert_eq!(tools.connection_report(), Some(&report));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConnectionReport {
    /// Servers connected.
    pub servers: Vec<String>,
    /// Servers left out, each with its error.
    pub failed: Vec<SourceFailure>,
}

impl ConnectionReport {
    /// A report.
    pub fn new(servers: Vec<String>, failed: Vec<SourceFailure>) -> Self {
        Self { servers, failed }
    }

    /// Add another report's servers and failures to this one.
    ///
    /// ```
    /// use loopwright_types::toolset::ConnectionReport;
    /// let mut a = ConnectionReport::new(vec!["a".into()], vec![]);
    /// a.merge(ConnectionReport::new(vec!["b".into()], vec![]));
    /// assert_eq!(a.servers, ["a", "b"]);
    /// ```
    pub fn merge(&mut self, other: ConnectionReport) {
        self.servers.extend(other.servers);
        self.failed.extend(other.failed);
    }
}
