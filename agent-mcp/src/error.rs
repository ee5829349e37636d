//! [`McpError`]: why a server could not be configured or connected.

use std::time::Duration;

/// Why an MCP server could not be configured, started or connected.
///
/// Every variant names the server, so a warning about one server among many
/// is readable on its own.
///
/// ```
/// let e = loopwright_mcp::McpError::MissingVariable { server: "gh".into(), variable: "GITHUB_TOKEN".into() };
/// assert_eq!(e.to_string(), "mcp server gh: environment variable GITHUB_TOKEN is not set");
/// assert_eq!(e.server(), "gh");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration is malformed.
    #[error("mcp server {server}: invalid config: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// `${VAR}` names a variable that is not set and has no default.
    #[error("mcp server {server}: environment variable {variable} is not set")]
    MissingVariable {
        /// The server's name.
        server: String,
        /// The variable.
        variable: String,
    },
    /// The server's transport is not compiled in or not implemented.
    #[error("mcp server {server}: transport {transport} is not supported by this build")]
    UnsupportedTransport {
        /// The server's name.
        server: String,
        /// The transport's name.
        transport: &'static str,
    },
    /// The server process could not be started.
    #[error("mcp server {server}: cannot start `{command}`: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The command.
        command: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Connecting or the `initialize` handshake failed.
    #[error("mcp server {server}: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// Connect plus initialize did not finish in time.
    #[error("mcp server {server}: no answer to initialize within {after:?}")]
    Timeout {
        /// The server's name.
        server: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The server asks for an OAuth sign-in that is not stored, and nobody
    /// can sign in now (an unattended run): sign in first (the CLI's
    /// `loopwright mcp login NAME`).
    #[error("mcp server {server} needs login: {reason} (sign in with `loopwright mcp login {server}`)")]
    NeedsLogin {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server is disabled in its config.
    #[error("mcp server {server}: disabled")]
    Disabled {
        /// The server's name.
        server: String,
    },
}

impl McpError {
    /// The name of the server the error is about.
    pub fn server(&self) -> &str {
        match self {
            Self::Config { server, .. }
            | Self::MissingVariable { server, .. }
            | Self::UnsupportedTransport { server, .. }
            | Self::Spawn { server, .. }
            | Self::Connect { server, .. }
            | Self::Timeout { server, .. }
            | Self::NeedsLogin { server, .. }
            | Self::Disabled { server } => server,
        }
    }

    /// Whether the server needs an OAuth sign-in first.
    ///
    /// ```
    /// let e = loopwright_mcp::McpError::NeedsLogin { server: "linear".into(), reason: "no sign-in stored".into() };
    /// assert!(e.needs_login());
    /// ```
    pub fn needs_login(&self) -> bool {
        matches!(self, Self::NeedsLogin { .. })
    }

    /// The same error with each of `secrets` replaced in its message.
    pub(crate) fn redacted(self, secrets: &[String]) -> Self {
        match self {
            Self::Connect { server, message } => Self::Connect {
                server,
                message: crate::redact(&message, secrets),
            },
            Self::Config { server, message } => Self::Config {
                server,
                message: crate::redact(&message, secrets),
            },
            other => other,
        }
    }
}
