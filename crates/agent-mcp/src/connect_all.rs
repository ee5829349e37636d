//! [`connect_all`]: every configured server at once; one failing server
//! never stops the others.

use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::source::McpToolSource;

/// A server that could not be connected.
#[derive(Debug)]
#[non_exhaustive]
pub struct ConnectFailure {
    /// The server's name.
    pub server: String,
    /// Why.
    pub error: McpError,
}

/// What [`connect_all`] got: the connected sources (in config order) and
/// the failures.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Connected {
    /// Sources ready to add to a `ToolSet`.
    pub sources: Vec<McpToolSource>,
    /// Servers left out, each with its error (a warning for the run).
    pub failed: Vec<ConnectFailure>,
}

impl Connected {
    /// The names of the connected servers.
    pub fn server_names(&self) -> Vec<&str> {
        self.sources.iter().map(|s| s.config().name.as_str()).collect()
    }

    /// Close every connected source.
    pub async fn close_all(&self) {
        futures::future::join_all(self.sources.iter().map(McpToolSource::close)).await;
    }
}

/// Connect all enabled servers concurrently, each under its own connect
/// timeout. Disabled servers are skipped silently.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let missing = agent_mcp::McpServerConfig::stdio("ghost", "/nonexistent/mcp-server");
/// let off = agent_mcp::McpServerConfig::stdio("off", "x").enabled(false);
/// let got = agent_mcp::connect_all(vec![missing, off]).await;
/// assert!(got.sources.is_empty());
/// assert_eq!(got.failed.len(), 1);
/// assert_eq!(got.failed[0].server, "ghost");
/// # }
/// ```
pub async fn connect_all(configs: impl IntoIterator<Item = McpServerConfig>) -> Connected {
    let attempts = configs
        .into_iter()
        .filter(|c| c.enabled)
        .map(|config| async move {
            let server = config.name.clone();
            McpToolSource::connect(config)
                .await
                .map_err(|error| ConnectFailure { server, error })
        });
    let mut out = Connected::default();
    for result in futures::future::join_all(attempts).await {
        match result {
            Ok(source) => out.sources.push(source),
            Err(failure) => {
                tracing::warn!(server = %failure.server, error = %failure.error, "mcp server left out");
                out.failed.push(failure);
            }
        }
    }
    out
}
