//! From a configuration to a run: its options and its MCP servers, as the
//! `loopwright` command builds them, for applications that read the same file.
//!
//! Invariants: the application's own settings win over the file's
//! defaults; the context budget is computed last, from the final output
//! reservation, for every model of the fallback chain; an MCP server the
//! file could not use (a missing `${VAR}`) is reported among the failures
//! of the run's `mcp_connected` event, like a server that did not answer.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright_core::{accounting::JsonlSink, agent::AgentOptions};
use loopwright_mcp::{ConnectFailure, Connected, McpClientOptions, McpError, connect_all_with};

use super::{AgentConfig, ChosenModel};

/// Why a run could not be set up from a configuration.
///
/// ```
/// let config = loopwright_config::config::AgentConfig::default();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let err = config.connect_mcp(&["fs".to_string()]).await.unwrap_err();
/// assert_eq!(err.to_string(), "no MCP server named fs in the configuration (configured: none)");
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunSetupError {
    /// The accounting file could not be opened for appending.
    #[error("accounting file {}: {source}", path.display())]
    Accounting {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A server asked for by name is not in the configuration.
    #[error("no MCP server named {name} in the configuration (configured: {configured})")]
    UnknownMcpServer {
        /// The name asked for.
        name: String,
        /// The configured names, comma-separated (`none` when there are none).
        configured: String,
    },
}

impl AgentConfig {
    /// The library's defaults with the file's `defaults` applied, its
    /// guardrails included (their judges choose their models from this
    /// configuration when first asked).
    ///
    /// ```
    /// let config = loopwright_config::config::AgentConfig::default();
    /// assert!(config.base_options().guardrails.is_none());
    /// ```
    pub fn base_options(&self) -> AgentOptions {
        let mut options = self.defaults.apply(AgentOptions::default());
        if let Some(rails) = &self.defaults.guardrails {
            let rails = rails.build(self);
            options.guardrails = (!rails.is_empty()).then(|| Arc::new(rails));
        }
        options
    }

    /// The run options this file describes for `chosen`: its defaults, then
    /// `adjust` (the application's own settings, which win), then its
    /// accounting file unless `adjust` set a sink, then the context budget
    /// of the chain unless `adjust` set one.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = loopwright_config::config::AgentConfig::load(std::path::Path::new("agent.json"))?;
    /// let chosen = config.choose_model(&[], None).await?;
    /// let options = config.agent_options(&chosen, |mut o| {
    ///     o.max_steps = 5;
    ///     o
    /// })?;
    /// assert_eq!(options.max_steps, 5);
    /// # Ok(()) }
    /// ```
    pub fn agent_options(
        &self,
        chosen: &ChosenModel,
        adjust: impl FnOnce(AgentOptions) -> AgentOptions,
    ) -> Result<AgentOptions, RunSetupError> {
        let mut options = adjust(self.base_options());
        if options.accounting.is_none()
            && let Some(path) = &self.accounting_file
        {
            let sink = JsonlSink::open(path).map_err(|source| RunSetupError::Accounting {
                path: path.clone(),
                source,
            })?;
            options.accounting = Some(Arc::new(sink));
        }
        if options.budget.is_none()
            && let Some(budget) = chosen.budget(
                options.max_output_tokens,
                self.defaults.context_window_buffer_tokens,
            )
        {
            options.budget = Some(budget);
        }
        Ok(options)
    }

    /// Connect the configured MCP servers concurrently: all of them, or
    /// only those `only` names (an unknown name is an error, nothing is
    /// started). Servers the file could not use are among the failures.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let text = r#"{"mcpServers": {"gh": {"command": "${GH_MCP}"}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// let connected = config.connect_mcp(&[]).await.unwrap();
    /// assert_eq!(connected.failed[0].server, "gh");
    /// assert!(connected.failed[0].error.to_string().contains("GH_MCP"));
    /// # });
    /// ```
    pub async fn connect_mcp(&self, only: &[String]) -> Result<Connected, RunSetupError> {
        self.connect_mcp_with(only, McpClientOptions::default()).await
    }

    /// [`connect_mcp`](Self::connect_mcp) offering every server what
    /// `options` offers (roots, sampling and elicitation handlers).
    pub async fn connect_mcp_with(
        &self,
        only: &[String],
        options: McpClientOptions,
    ) -> Result<Connected, RunSetupError> {
        self.check_mcp_names(only)?;
        let wanted = |name: &str| only.is_empty() || only.iter().any(|n| n == name);
        let servers = self.mcp_servers.iter().filter(|s| wanted(&s.name)).cloned();
        let mut connected = connect_all_with(servers, options).await;
        connected
            .failed
            .extend(self.mcp_failures.iter().filter(|f| wanted(&f.server)).map(|f| {
                let error = McpError::Config {
                    server: f.server.clone(),
                    message: f.error.clone(),
                };
                ConnectFailure::new(f.server.clone(), error)
            }));
        Ok(connected)
    }

    /// An error for the first of `only` that names no configured server.
    pub(crate) fn check_mcp_names(&self, only: &[String]) -> Result<(), RunSetupError> {
        let failures = self.mcp_failures.iter().map(|f| f.server.as_str());
        let known: Vec<&str> = self
            .mcp_servers
            .iter()
            .map(|s| s.name.as_str())
            .chain(failures)
            .collect();
        match only.iter().find(|name| !known.contains(&name.as_str())) {
            Some(name) => Err(RunSetupError::UnknownMcpServer {
                name: name.clone(),
                configured: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn config(dir: &std::path::Path) -> AgentConfig {
        let text = r#"{
            "providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}},
            "mcpServers": {"ok": {"command": "/no/such/server"}, "gh": {"command": "${GH_MCP_UNSET}"}},
            "defaults": {"maxSteps": 7, "maxOutputTokens": 100},
            "accounting": {"file": "${DIR}/runs.jsonl"}}"#;
        let dir = dir.to_str().unwrap().to_owned();
        AgentConfig::parse(text, "agent.json", &|name| (name == "DIR").then(|| dir.clone())).unwrap()
    }

    #[tokio::test]
    async fn the_applications_settings_win_and_the_accounting_file_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let chosen = config.choose_model(&["local/m".into()], None).await.unwrap();
        let options = config
            .agent_options(&chosen, |mut o| {
                o.max_output_tokens = Some(50);
                o
            })
            .unwrap();
        assert_eq!((options.max_steps, options.max_output_tokens), (7, Some(50)));
        assert!(options.accounting.is_some());
        assert!(dir.path().join("runs.jsonl").exists());
    }

    #[tokio::test]
    async fn only_the_named_servers_connect_and_unusable_ones_are_failures() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let gh = config.connect_mcp(&["gh".into()]).await.unwrap();
        let failed: Vec<_> = gh.failed.iter().map(|f| f.server.as_str()).collect();
        assert_eq!(failed, ["gh"]);
        assert!(gh.failed[0].error.to_string().contains("GH_MCP_UNSET"));
        let all = config.connect_mcp(&[]).await.unwrap();
        assert_eq!(all.failed.len(), 2);
        let unknown = config.connect_mcp(&["nope".into()]).await.unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "no MCP server named nope in the configuration (configured: ok, gh)"
        );
    }
}
