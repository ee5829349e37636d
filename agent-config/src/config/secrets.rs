//! The credentials a configuration holds, for anything that logs: values
//! to replace before a line is written.
//!
//! Invariant: a value is listed when its name says it is a credential (an
//! environment variable, an MCP server's `env` entry or header named
//! `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*AUTH*`, `*APIKEY*`,
//! `*COOKIE*`, see [`looks_secret`]) or it is a provider's API key or header
//! or a `serve.apiKeys` key; `${VAR}`s are
//! resolved as the server will resolve them, and a value with an
//! authorization scheme (`Bearer abc`) is listed with and without it.
//! Credentials carried by URLs (the password of `https://user:pw@host`,
//! query parameters such as `?api_key=`) and by a stdio server's arguments
//! (`--api-key abc`, `--token=abc`, `API_KEY=abc`) are listed too, and so
//! are a server's OAuth client secret and private key and every token in
//! the OAuth token store (`loopwright mcp login`).

use loopwright_mcp::{McpTransport, interpolate, looks_secret, url_secrets};

use super::AgentConfig;

impl AgentConfig {
    /// Every credential this configuration and the process environment
    /// hold (see the module docs), unfiltered: callers drop values too short
    /// to redact safely.
    ///
    /// ```
    /// let text = r#"{"mcpServers": {
    ///     "gh": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer gh-literal-123"}},
    ///     "q": {"url": "https://h/mcp?api_key=in-url-456"}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// let secrets = config.secret_values();
    /// assert!(secrets.contains(&"Bearer gh-literal-123".to_string()));
    /// assert!(secrets.contains(&"gh-literal-123".to_string()));
    /// assert!(secrets.contains(&"in-url-456".to_string()));
    /// ```
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = std::env::vars()
            .filter(|(name, _)| looks_secret(name))
            .map(|(_, value)| value)
            .collect();
        for provider in self.providers.providers.values() {
            out.extend(provider.api_key.clone());
            out.extend(provider.headers.values().cloned());
            out.extend(provider.base_url.as_deref().map(url_secrets).unwrap_or_default());
        }
        let lookup = |name: &str| std::env::var(name).ok();
        for server in &self.mcp_servers {
            out.extend(server.inline_secrets());
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
        // OAuth: a server's client secret and key, and every stored token.
        for server in &self.mcp_servers {
            if let Ok(resolved) = server.resolved()
                && let Some(oauth) = &resolved.oauth
            {
                out.extend(oauth.client_secret.clone());
                out.extend(oauth.private_key.clone());
            }
        }
        if let Ok(store) = loopwright_mcp::oauth::FileTokenStore::default_location() {
            out.extend(store.tokens_for_redaction());
        }
        out.extend(self.serve.api_keys.iter().cloned());
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
