//! [`connect_all`]: every configured server at once; one failing server
//! never stops the others.

use loopwright_types::ToolSetBuilder;
use loopwright_types::toolset::{ConnectionReport, SourceFailure};

use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::options::McpClientOptions;
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

impl ConnectFailure {
    /// A server left out, and why.
    ///
    /// ```
    /// let e = loopwright_mcp::McpError::MissingVariable { server: "gh".into(), variable: "TOKEN".into() };
    /// let failure = loopwright_mcp::ConnectFailure::new("gh", e);
    /// assert_eq!(failure.server, "gh");
    /// ```
    pub fn new(server: impl Into<String>, error: McpError) -> Self {
        Self {
            server: server.into(),
            error,
        }
    }
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

    /// Who is in and who failed, as loopwright-core's [`ConnectionReport`] (the
    /// `mcp_connected` event of every run).
    pub fn report(&self) -> ConnectionReport {
        ConnectionReport::new(
            self.server_names().into_iter().map(str::to_string).collect(),
            self.failed
                .iter()
                .map(|f| {
                    SourceFailure::new(f.server.clone(), f.error.to_string())
                        .signing_in(f.error.needs_login())
                })
                .collect(),
        )
    }

    /// Add every connected source (namespaced `{server}__{tool}` by default)
    /// and the [`report`](Self::report) to a tool set builder.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let connected = loopwright_mcp::connect_all(vec![loopwright_mcp::McpServerConfig::stdio("ghost", "/nonexistent")]).await;
    /// let tools = connected.add_to(loopwright_types::ToolSet::builder()).build();
    /// assert_eq!(tools.connection_report().unwrap().failed[0].server, "ghost");
    /// # }
    /// ```
    pub fn add_to(&self, builder: ToolSetBuilder) -> ToolSetBuilder {
        let builder = builder.connection_report(self.report());
        self.sources.iter().cloned().fold(builder, |builder, source| {
            let options = source.config().source_options();
            builder.source_with(source, options)
        })
    }

    /// A tool set of the connected servers alone (with the report).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let connected = loopwright_mcp::connect_all(vec![loopwright_mcp::McpServerConfig::stdio("ghost", "/nonexistent")]).await;
    /// assert!(connected.tool_set().connection_report().is_some());
    /// # }
    /// ```
    pub fn tool_set(&self) -> loopwright_types::ToolSet {
        self.add_to(loopwright_types::ToolSet::builder()).build()
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
/// let missing = loopwright_mcp::McpServerConfig::stdio("ghost", "/nonexistent/mcp-server");
/// let off = loopwright_mcp::McpServerConfig::stdio("off", "x").enabled(false);
/// let got = loopwright_mcp::connect_all(vec![missing, off]).await;
/// assert!(got.sources.is_empty());
/// assert_eq!(got.failed.len(), 1);
/// assert_eq!(got.failed[0].server, "ghost");
/// # }
/// ```
pub async fn connect_all(configs: impl IntoIterator<Item = McpServerConfig>) -> Connected {
    connect_all_with(configs, McpClientOptions::default()).await
}

/// [`connect_all`] offering every server what `options` offers (roots,
/// sampling and elicitation handlers).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let options = loopwright_mcp::McpClientOptions::default().root_path("/srv/project");
/// let got = loopwright_mcp::connect_all_with(Vec::new(), options).await;
/// assert!(got.sources.is_empty() && got.failed.is_empty());
/// # }
/// ```
pub async fn connect_all_with(
    configs: impl IntoIterator<Item = McpServerConfig>,
    options: McpClientOptions,
) -> Connected {
    let attempts = configs.into_iter().filter(|c| c.enabled).map(|config| {
        let options = options.clone();
        async move {
            let server = config.name.clone();
            McpToolSource::connect_with(config, options)
                .await
                .map_err(|error| ConnectFailure { server, error })
        }
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
