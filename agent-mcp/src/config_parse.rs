//! Parsing a server entry of the config formats users already have into an
//! [`McpServerConfig`] (the shapes are listed on the [`crate::config`]
//! module): each key read once, every wrong type or unknown transport an
//! error naming the server and the key.

use std::path::PathBuf;

use serde_json::{Map, Value};

use loopwright_types::toolset::ToolOverrides;

use crate::config::{McpServerConfig, McpTransport, RemoteConfig, StdioConfig};
use crate::config_fields::{bool_field, duration_field, str_field, string_list, string_map};
use crate::error::McpError;

/// Names of the connect-plus-initialize timeout.
const CONNECT_TIMEOUT_KEYS: &[&str] = &["connectTimeout", "connect_timeout", "startupTimeout"];
/// Names of the per-call timeout.
const CALL_TIMEOUT_KEYS: &[&str] = &["timeout", "callTimeout", "call_timeout"];
/// Names of the stdio close grace ([`McpServerConfig::shutdown_grace`]).
const SHUTDOWN_KEYS: &[&str] = &["shutdownTimeout", "shutdown_timeout"];
/// Names of the task deadline ([`McpServerConfig::task_timeout`]).
const TASK_TIMEOUT_KEYS: &[&str] = &["taskTimeout", "task_timeout"];

/// Every key a server entry may hold; anything else is unknown to this
/// parser (callers may warn about it). `description` is accepted and
/// ignored: people annotate their configs.
///
/// ```
/// assert!(loopwright_mcp::MCP_SERVER_KEYS.contains(&"shutdownTimeout"));
/// ```
pub const MCP_SERVER_KEYS: &[&str] = &[
    "type",
    "transport",
    "command",
    "args",
    "env",
    "environment",
    "cwd",
    "url",
    "serverUrl",
    "headers",
    "enabled",
    "disabled",
    "trust",
    "resources",
    "toolOverrides",
    "timeout",
    "callTimeout",
    "call_timeout",
    "connectTimeout",
    "connect_timeout",
    "startupTimeout",
    "shutdownTimeout",
    "shutdown_timeout",
    "taskTimeout",
    "task_timeout",
    "oauth",
    "description",
];

impl McpServerConfig {
    /// Parse one server entry (any of the accepted shapes, see the module
    /// docs).
    ///
    /// ```
    /// let v = serde_json::json!({"type": "local", "command": ["npx", "-y", "pkg"], "environment": {"K": "${K:-x}"}});
    /// let cfg = loopwright_mcp::McpServerConfig::from_json("p", &v).unwrap();
    /// let loopwright_mcp::McpTransport::Stdio(s) = &cfg.transport else { unreachable!() };
    /// assert_eq!((s.command.as_str(), s.args.len()), ("npx", 2));
    /// assert_eq!(s.env["K"], "${K:-x}");
    /// ```
    pub fn from_json(name: &str, entry: &Value) -> Result<Self, McpError> {
        let err = |message: String| McpError::Config {
            server: name.to_string(),
            message,
        };
        let obj = entry
            .as_object()
            .ok_or_else(|| err("a server entry must be an object".into()))?;
        let kind = str_field(obj, "type")
            .or_else(|| str_field(obj, "transport"))
            .map(str::to_ascii_lowercase);
        let url = str_field(obj, "url").or_else(|| str_field(obj, "serverUrl"));
        let has_command = obj.contains_key("command");

        let transport = match kind.as_deref() {
            Some("stdio" | "local") => McpTransport::Stdio(parse_stdio(obj, &err)?),
            Some("http" | "streamable-http" | "streamable_http" | "streamablehttp") => {
                McpTransport::Http(parse_remote(obj, url, &err)?)
            }
            Some("sse") => McpTransport::Sse(parse_remote(obj, url, &err)?),
            Some("ws" | "websocket") => McpTransport::WebSocket(parse_remote(obj, url, &err)?),
            Some("remote") | None if url.is_some() => {
                let remote = parse_remote(obj, url, &err)?;
                guess_remote(remote)
            }
            None if has_command => McpTransport::Stdio(parse_stdio(obj, &err)?),
            None | Some("remote") => return Err(err("needs a `command` or a `url`".into())),
            Some(other) => return Err(err(format!("unknown type `{other}`"))),
        };

        let enabled = match (obj.get("enabled"), obj.get("disabled")) {
            (Some(Value::Bool(e)), _) => *e,
            (_, Some(Value::Bool(d))) => !*d,
            _ => true,
        };
        let trusted = bool_field(obj, "trust", &err)?;
        let resources = bool_field(obj, "resources", &err)?;
        let tool_overrides = match obj.get("toolOverrides") {
            None | Some(Value::Null) => ToolOverrides::default(),
            Some(value) => ToolOverrides::from_json(value).map_err(|e| err(e.to_string()))?,
        };
        Ok(Self {
            name: name.to_string(),
            transport,
            enabled,
            connect_timeout: duration_field(obj, CONNECT_TIMEOUT_KEYS, &err)?,
            call_timeout: duration_field(obj, CALL_TIMEOUT_KEYS, &err)?,
            shutdown_grace: duration_field(obj, SHUTDOWN_KEYS, &err)?,
            task_timeout: duration_field(obj, TASK_TIMEOUT_KEYS, &err)?,
            #[cfg(feature = "oauth")]
            oauth: match obj.get("oauth") {
                None | Some(Value::Null) => None,
                Some(value) => {
                    Some(crate::oauth::OAuthConfig::from_json(value).map_err(|e| err(oauth_error(&e)))?)
                }
            },
            trusted,
            resources,
            tool_overrides,
        })
    }
}

/// Parse a whole config: an object with `mcpServers` (Claude Desktop,
/// Cursor), `servers` (VS Code) or `mcp` (opencode), or the map of servers
/// itself. Servers come back sorted by name.
///
/// ```
/// let v = serde_json::json!({"mcpServers": {
///     "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
///     "api": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
///     "old": {"url": "https://example.com/sse"}
/// }});
/// let servers = loopwright_mcp::parse_mcp_servers(&v).unwrap();
/// let kinds: Vec<_> = servers.iter().map(|s| (s.name.as_str(), s.transport.kind())).collect();
/// assert_eq!(kinds, [("api", "http"), ("fs", "stdio"), ("old", "sse")]);
/// ```
pub fn parse_mcp_servers(config: &Value) -> Result<Vec<McpServerConfig>, McpError> {
    let map = ["mcpServers", "servers", "mcp"]
        .iter()
        .find_map(|key| config.get(key).and_then(Value::as_object))
        .or_else(|| config.as_object())
        .ok_or_else(|| McpError::Config {
            server: String::new(),
            message: "the MCP config must be a JSON object".into(),
        })?;
    map.iter()
        .map(|(name, entry)| McpServerConfig::from_json(name, entry))
        .collect()
}

fn parse_stdio(obj: &Map<String, Value>, err: &dyn Fn(String) -> McpError) -> Result<StdioConfig, McpError> {
    let (command, mut args) = match obj.get("command") {
        Some(Value::String(c)) => (c.clone(), Vec::new()),
        Some(list @ Value::Array(_)) => {
            let mut parts = string_list(list, "command", err)?.into_iter();
            let first = parts
                .next()
                .ok_or_else(|| err("`command` is an empty array".into()))?;
            (first, parts.collect())
        }
        _ => return Err(err("a stdio server needs a `command`".into())),
    };
    if command.trim().is_empty() {
        return Err(err("`command` is empty".into()));
    }
    if let Some(extra) = obj.get("args") {
        args.extend(string_list(extra, "args", err)?);
    }
    Ok(StdioConfig {
        command,
        args,
        env: string_map(obj, &["env", "environment"], err)?,
        cwd: str_field(obj, "cwd").map(PathBuf::from),
    })
}

fn parse_remote(
    obj: &Map<String, Value>,
    url: Option<&str>,
    err: &dyn Fn(String) -> McpError,
) -> Result<RemoteConfig, McpError> {
    let url = url.ok_or_else(|| err("a remote server needs a `url`".into()))?;
    Ok(RemoteConfig {
        url: url.to_string(),
        headers: string_map(obj, &["headers"], err)?,
    })
}

/// Without an explicit type: `ws(s)://` is WebSocket, a path ending in `/sse`
/// is legacy SSE, anything else streamable HTTP.
fn guess_remote(remote: RemoteConfig) -> McpTransport {
    let lower = remote.url.to_ascii_lowercase();
    if lower.starts_with("ws://") || lower.starts_with("wss://") {
        return McpTransport::WebSocket(remote);
    }
    let path = lower.split(['?', '#']).next().unwrap_or_default();
    if path.trim_end_matches('/').ends_with("/sse") {
        McpTransport::Sse(remote)
    } else {
        McpTransport::Http(remote)
    }
}

/// An `oauth` object's error as the server entry says it: the key path
/// from `oauth`, in backquotes.
fn oauth_error(e: &loopwright_types::util::InvalidValue) -> String {
    if e.path.is_empty() {
        format!("`oauth`: {}", e.message)
    } else {
        format!("`oauth.{}`: {}", e.path, e.message)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::config::DEFAULT_CONNECT_TIMEOUT;

    #[test]
    fn every_timeout_name_is_a_known_key() {
        for key in [
            CONNECT_TIMEOUT_KEYS,
            CALL_TIMEOUT_KEYS,
            SHUTDOWN_KEYS,
            TASK_TIMEOUT_KEYS,
        ]
        .concat()
        {
            assert!(MCP_SERVER_KEYS.contains(&key), "{key}");
        }
    }

    fn one(v: Value) -> McpServerConfig {
        McpServerConfig::from_json("s", &v).unwrap()
    }

    fn stdio(cfg: &McpServerConfig) -> &StdioConfig {
        match &cfg.transport {
            McpTransport::Stdio(s) => s,
            other => panic!("not stdio: {other:?}"),
        }
    }

    #[test]
    fn claude_desktop_stdio_entry() {
        let cfg =
            one(json!({"command": "npx", "args": ["-y", "x"], "env": {"A": "1", "N": 2}, "cwd": "/tmp"}));
        let s = stdio(&cfg);
        assert_eq!(s.command, "npx");
        assert_eq!(s.args, ["-y", "x"]);
        assert_eq!(s.env["A"], "1");
        assert_eq!(s.env["N"], "2");
        assert_eq!(s.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        assert!(cfg.enabled);
        assert_eq!(cfg.effective_connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
    }

    #[test]
    fn typed_and_legacy_forms() {
        let local = one(json!({"type": "local", "command": ["uvx", "mcp-server-time"], "args": ["--x"]}));
        assert_eq!(stdio(&local).command, "uvx");
        assert_eq!(stdio(&local).args, ["mcp-server-time", "--x"]);
        assert_eq!(
            one(json!({"type": "stdio", "command": "a"})).transport.kind(),
            "stdio"
        );
        assert_eq!(
            one(json!({"type": "remote", "url": "https://h/mcp"}))
                .transport
                .kind(),
            "http"
        );
        assert_eq!(
            one(json!({"type": "remote", "url": "https://h/sse"}))
                .transport
                .kind(),
            "sse"
        );
        assert_eq!(
            one(json!({"type": "http", "url": "https://h/sse"}))
                .transport
                .kind(),
            "http"
        );
        assert_eq!(
            one(json!({"type": "sse", "url": "https://h/events"}))
                .transport
                .kind(),
            "sse"
        );
        assert_eq!(
            one(json!({"transport": "websocket", "url": "http://h/ws"}))
                .transport
                .kind(),
            "websocket"
        );
        assert_eq!(
            one(json!({"type": "streamable-http", "url": "https://h/"}))
                .transport
                .kind(),
            "http"
        );
    }

    #[test]
    fn url_without_type_is_guessed() {
        assert_eq!(one(json!({"url": "https://h/mcp"})).transport.kind(), "http");
        assert_eq!(one(json!({"url": "https://h/sse/"})).transport.kind(), "sse");
        assert_eq!(one(json!({"url": "https://h/sse?key=1"})).transport.kind(), "sse");
        assert_eq!(one(json!({"url": "wss://h/mcp"})).transport.kind(), "websocket");
    }

    #[test]
    fn headers_enabled_and_timeouts() {
        let cfg = one(
            json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"},
            "enabled": false, "timeout": 1500, "connectTimeout": 200}),
        );
        let McpTransport::Http(r) = &cfg.transport else {
            panic!()
        };
        assert_eq!(r.headers["Authorization"], "Bearer ${T}");
        assert!(!cfg.enabled);
        assert_eq!(cfg.call_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(cfg.effective_connect_timeout(), Duration::from_millis(200));
        let cfg = one(
            json!({"command": "srv", "timeout": "30s", "connectTimeout": "1.5s", "shutdownTimeout": 3000}),
        );
        assert_eq!(cfg.call_timeout, Some(Duration::from_secs(30)));
        assert_eq!(cfg.shutdown_grace, Some(Duration::from_secs(3)));
        assert_eq!(cfg.connect_timeout, Some(Duration::from_millis(1500)));
        let bad =
            McpServerConfig::from_json("slow", &json!({"command": "srv", "timeout": "soon"})).unwrap_err();
        assert!(
            bad.to_string().contains("`timeout`: expected milliseconds"),
            "{bad}"
        );
        assert!(!one(json!({"command": "a", "disabled": true})).enabled);
    }

    #[test]
    fn bad_entries_are_config_errors_naming_the_server() {
        for bad in [
            json!("npx"),
            json!({}),
            json!({"command": []}),
            json!({"command": ""}),
            json!({"command": "a", "args": "b"}),
            json!({"command": "a", "env": {"K": {}}}),
            json!({"type": "sse"}),
            json!({"type": "carrier-pigeon", "url": "x"}),
        ] {
            match McpServerConfig::from_json("bad1", &bad) {
                Err(e @ McpError::Config { .. }) => assert_eq!(e.server(), "bad1", "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn whole_files_in_each_layout() {
        for v in [
            json!({"mcpServers": {"a": {"command": "x"}}}),
            json!({"servers": {"a": {"type": "stdio", "command": "x"}}}),
            json!({"mcp": {"a": {"type": "local", "command": ["x"]}}}),
            json!({"a": {"command": "x"}}),
        ] {
            let servers = parse_mcp_servers(&v).unwrap();
            assert_eq!(servers.len(), 1, "{v}");
            assert_eq!(servers[0].name, "a");
        }
        assert!(parse_mcp_servers(&json!([1])).is_err());
    }

    #[test]
    fn builders_set_fields() {
        let cfg = McpServerConfig::stdio("t", "srv")
            .args(["a", "b"])
            .env("K", "v")
            .cwd("/tmp")
            .call_timeout(Duration::from_secs(3))
            .enabled(false);
        assert_eq!(stdio(&cfg).args, ["a", "b"]);
        assert_eq!(cfg.call_timeout, Some(Duration::from_secs(3)));
        assert!(!cfg.enabled);
        let http = McpServerConfig::http("h", "http://x").header("X", "1");
        let McpTransport::Http(r) = &http.transport else {
            panic!()
        };
        assert_eq!(r.headers["X"], "1");
        assert!(McpServerConfig::http("h", "http://x").resources(true).resources);
    }

    #[test]
    fn resources_is_an_optional_boolean() {
        assert!(MCP_SERVER_KEYS.contains(&"resources"));
        assert!(!one(json!({"command": "a"})).resources);
        assert!(!one(json!({"command": "a", "resources": null})).resources);
        assert!(one(json!({"command": "a", "resources": true})).resources);
        let bad =
            McpServerConfig::from_json("docs", &json!({"command": "a", "resources": "yes"})).unwrap_err();
        assert_eq!(
            bad.to_string(),
            r#"mcp server docs: invalid config: `resources`: expected true or false, got "yes""#
        );
    }
}
