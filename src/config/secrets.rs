//! The credentials a configuration holds, for anything that logs: values
//! to replace before a line is written.
//!
//! Invariant: a value is listed when its name says it is a credential (an
//! environment variable, an MCP server's `env` entry or header named
//! `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*AUTH*`, `*APIKEY*`,
//! `*COOKIE*`) or it is a provider's API key or header; `${VAR}`s are
//! resolved as the server will resolve them, and a value with an
//! authorization scheme (`Bearer abc`) is listed with and without it.

use agent_mcp::{McpTransport, interpolate};

use super::AgentConfig;

/// Whether a variable or header name says it holds a credential.
///
/// ```
/// use agent_sdk::config::looks_secret;
/// assert!(looks_secret("OPENAI_API_KEY") && looks_secret("Authorization") && looks_secret("X-Api-Key"));
/// assert!(looks_secret("apikey") && looks_secret("Cookie"));
/// assert!(!looks_secret("HOME") && !looks_secret("Accept"));
/// ```
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    upper.ends_with("_KEY")
        || [
            "TOKEN", "SECRET", "PASSWORD", "AUTH", "API_KEY", "APIKEY", "COOKIE",
        ]
        .iter()
        .any(|word| upper.contains(word))
}

impl AgentConfig {
    /// Every credential this configuration and the process environment
    /// hold (see the module docs), unfiltered: callers drop values too short
    /// to redact safely.
    ///
    /// ```
    /// let text = r#"{"mcpServers": {"gh": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer gh-literal-123"}}}}"#;
    /// let config = agent_sdk::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// let secrets = config.secret_values();
    /// assert!(secrets.contains(&"Bearer gh-literal-123".to_string()));
    /// assert!(secrets.contains(&"gh-literal-123".to_string()));
    /// ```
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = std::env::vars()
            .filter(|(name, _)| looks_secret(name))
            .map(|(_, value)| value)
            .collect();
        for provider in self.providers.providers.values() {
            out.extend(provider.api_key.clone());
            out.extend(provider.headers.values().cloned());
        }
        let lookup = |name: &str| std::env::var(name).ok();
        for server in &self.mcp_servers {
            let named = match &server.transport {
                McpTransport::Stdio(stdio) => &stdio.env,
                McpTransport::Http(remote) | McpTransport::Sse(remote) | McpTransport::WebSocket(remote) => {
                    &remote.headers
                }
                _ => continue,
            };
            out.extend(
                named
                    .iter()
                    .filter(|(name, _)| looks_secret(name))
                    .filter_map(|(_, value)| interpolate(&server.name, value, &lookup).ok()),
            );
        }
        // `Bearer abc` may also be logged as `abc`.
        let bare: Vec<String> = out
            .iter()
            .filter_map(|v| v.split_once(' ').map(|(_, rest)| rest.trim().to_owned()))
            .filter(|rest| !rest.is_empty() && !rest.contains(' '))
            .collect();
        out.extend(bare);
        out.sort();
        out.dedup();
        out
    }
}
