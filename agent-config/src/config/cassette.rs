//! A run's MCP servers with a cassette: connected and recorded, or served
//! from the recording with nothing started.
//!
//! Invariant: a strict replay starts and connects no server; a server the
//! cassette has no recording of is a failure of the run's `mcp_connected`
//! event (as a server that did not answer), never a silent absence.

use std::sync::Arc;

use loopwright_core::toolset::{ConnectionReport, SourceFailure};
use loopwright_core::{ToolSource, toolset::SourceOptions, toolset::ToolSetBuilder};
use loopwright_mcp::Connected;
use loopwright_testing::replay::{Cassette, ReplayMode};

use super::{AgentConfig, RunSetupError};

/// The MCP servers of a run as tool sources: connected live (and recorded
/// when a cassette records), or replayed from a cassette.
///
/// A test recorded once against the real provider and MCP server
/// (`RECORD=1 cargo test`), then replayed offline: no key, no network, no
/// server.
///
/// ```no_run
/// # use std::sync::Arc;
/// use loopwright_config::config::AgentConfig;
/// use loopwright_testing::replay::{Cassette, ReplayMode, ReplayModel};
/// use loopwright_core::{Agent, LanguageModel, ToolSet};
/// use loopwright_providers::Providers;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let config = AgentConfig::load("tests/agent.json".as_ref())?; // mcpServers: time
/// let dir = "tests/cassettes/lisbon";
/// let (cassette, model): (Cassette, Arc<dyn LanguageModel>) = if std::env::var_os("RECORD").is_some() {
///     let cassette = Cassette::record(dir)?;
///     let model = cassette.model(Providers::from_env()?.model("openai/gpt-4.1")?);
///     (cassette, model)
/// } else {
///     let cassette = Cassette::replay(dir, ReplayMode::Strict)?;
///     let model = Arc::new(ReplayModel::offline(&cassette, "openai", "gpt-4.1"));
///     (cassette, model)
/// };
/// let servers = config.mcp_sources(&[], Some(&cassette)).await?; // replayed: nothing started
/// let agent = Agent::builder(model).tools(servers.add_to(ToolSet::builder()).build()).build();
/// let answer = agent.run("What time is it in Lisbon?").await?;
/// assert!(answer.text.contains("Lisbon"));
/// servers.connected.close_all().await;
/// # Ok(()) }
/// ```
#[non_exhaustive]
pub struct McpSources {
    /// The servers connected (close them at the end); empty for a strict
    /// replay.
    pub connected: Connected,
    /// The sources, in configuration order.
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// Who is in and who failed, for the run's `mcp_connected` event.
    pub report: ConnectionReport,
    /// How each server joins a tool set (its `toolOverrides`), by name.
    options: Vec<(String, SourceOptions)>,
}

impl std::fmt::Debug for McpSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSources")
            .field("servers", &self.report.servers)
            .field("failed", &self.report.failed)
            .finish()
    }
}

impl McpSources {
    /// Add every source and the report to a tool set builder.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let config = loopwright_config::config::AgentConfig::default();
    /// let servers = config.mcp_sources(&[], None).await.unwrap();
    /// let tools = servers.add_to(loopwright_core::ToolSet::builder()).build();
    /// assert!(tools.connection_report().unwrap().servers.is_empty());
    /// # });
    /// ```
    pub fn add_to(&self, builder: ToolSetBuilder) -> ToolSetBuilder {
        let builder = builder.connection_report(self.report.clone());
        self.sources.iter().fold(builder, |b, source| {
            b.shared_source(source.clone(), self.source_options(source.name()))
        })
    }

    /// How the server `name` joins a tool set: with its `toolOverrides`.
    pub fn source_options(&self, name: &str) -> SourceOptions {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o.clone())
            .unwrap_or_default()
    }
}

/// `connected`'s sources through `cassette` (recorded, or replayed with
/// the live server answering what is missing).
pub(crate) fn wrap(connected: &Connected, cassette: Option<&Cassette>) -> Vec<Arc<dyn ToolSource>> {
    connected
        .sources
        .iter()
        .map(|s| through(cassette, Arc::new(s.clone())))
        .collect()
}

/// `source` through `cassette`, when there is one.
pub(crate) fn through(cassette: Option<&Cassette>, source: Arc<dyn ToolSource>) -> Arc<dyn ToolSource> {
    match cassette {
        Some(c) => c.tool_source(source),
        None => source,
    }
}

/// Whether `cassette` replays without any live server.
pub(crate) fn replays_offline(cassette: Option<&Cassette>) -> bool {
    cassette.is_some_and(|c| c.replay_mode() == Some(ReplayMode::Strict))
}

/// The servers `names` from `cassette` alone: (sources, failures).
pub(crate) fn replayed(
    cassette: &Cassette,
    names: &[String],
) -> (Vec<Arc<dyn ToolSource>>, Vec<SourceFailure>) {
    let mut sources = Vec::new();
    let mut failed = Vec::new();
    for name in names {
        match cassette.replayed_source(name) {
            Some(source) => sources.push(source),
            None => {
                let recorded = cassette.recorded_sources();
                let error = format!(
                    "not recorded in the cassette {} (recorded: {})",
                    cassette.dir().display(),
                    if recorded.is_empty() {
                        "none".to_owned()
                    } else {
                        recorded.join(", ")
                    }
                );
                failed.push(SourceFailure::new(name.clone(), error));
            }
        }
    }
    (sources, failed)
}

impl AgentConfig {
    /// How each configured server joins a tool set (its `toolOverrides`).
    fn server_options(&self) -> Vec<(String, SourceOptions)> {
        self.mcp_servers
            .iter()
            .map(|s| (s.name.clone(), s.source_options()))
            .collect()
    }

    /// How the configured server `name` joins a tool set: with its
    /// `toolOverrides` (the default options for another name).
    ///
    /// ```
    /// let text = r#"{"mcpServers": {"fs": {"command": "fs-mcp", "toolOverrides": {"read_file": {"name": "fs_read"}}}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// assert!(format!("{:?}", config.source_options("fs")).contains("transform: true"));
    /// ```
    pub fn source_options(&self, name: &str) -> SourceOptions {
        self.mcp_servers
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.source_options())
            .unwrap_or_default()
    }

    /// The configured MCP servers (all, or those `only` names) as tool
    /// sources: connected as [`connect_mcp`](Self::connect_mcp) does, and
    /// recorded into `cassette` when it records; with a cassette replaying
    /// in [`ReplayMode::Strict`], served from it and nothing started; in
    /// [`ReplayMode::RecordMissing`], connected and answering only what
    /// the cassette lacks.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use loopwright_testing::replay::{Cassette, ReplayMode};
    /// let text = r#"{"mcpServers": {"time": {"command": "/not/started/in/a/replay"}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    /// let servers = config.mcp_sources(&[], Some(&cassette)).await.unwrap();
    /// assert!(servers.connected.sources.is_empty());
    /// assert!(servers.report.failed[0].error.starts_with("not recorded in the cassette"));
    /// # });
    /// ```
    pub async fn mcp_sources(
        &self,
        only: &[String],
        cassette: Option<&Cassette>,
    ) -> Result<McpSources, RunSetupError> {
        if let Some(cassette) = cassette.filter(|c| replays_offline(Some(c))) {
            self.check_mcp_names(only)?;
            let names: Vec<String> = if only.is_empty() {
                self.mcp_servers
                    .iter()
                    .map(|s| s.name.clone())
                    .chain(self.mcp_failures.iter().map(|f| f.server.clone()))
                    .collect()
            } else {
                only.to_vec()
            };
            let (sources, failed) = replayed(cassette, &names);
            let servers = sources.iter().map(|s| s.name().to_owned()).collect();
            return Ok(McpSources {
                connected: Connected::default(),
                sources,
                report: ConnectionReport::new(servers, failed),
                options: self.server_options(),
            });
        }
        let connected = self.connect_mcp(only).await?;
        Ok(McpSources {
            sources: wrap(&connected, cassette),
            report: connected.report(),
            connected,
            options: self.server_options(),
        })
    }
}
