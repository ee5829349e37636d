//! [`McpServerConfig`] and parsing of the config formats users already have.
//!
//! Accepted shapes, per server entry:
//! - Claude Desktop / Cursor / VS Code: `{command, args, env, cwd}` (stdio) or
//!   `{url, headers, type?}`; no type and a `command` means stdio; a `url`
//!   means streamable HTTP unless `type`/`transport` says `sse` or the URL path
//!   ends in `/sse`; a `ws://` / `wss://` URL means WebSocket.
//! - The richer form `{type: "stdio" | "http" | "sse" | "websocket", ...}`,
//!   with the legacy `local` (stdio) and `remote` (HTTP, or SSE for a `/sse`
//!   URL) types, `command` given as an array (`["npx", "-y", "pkg"]`) and
//!   `environment` as another name for `env`.
//! - `enabled: false` or `disabled: true` switch a server off;
//!   `timeout` (per call), `connectTimeout` and `shutdownTimeout` (how long
//!   a stdio server has to leave after its stdin closes) set timeouts, in
//!   milliseconds or as strings such as `"30s"`.
//! - `trust: true` believes the server's tool annotations; `resources: true`
//!   adds the tools `list_resources` and `read_resource` for the server's
//!   resources (both must be booleans when given).
//! - `toolOverrides` renames tools, rewrites or wraps their descriptions,
//!   gives them provider options or marks them always on, by raw tool name
//!   with `*` wildcards
//!   ([`ToolOverrides::from_json`](loopwright_types::toolset::ToolOverrides::from_json)):
//!   `{"read_file": {"name": "fs_read", "description": "[Filesystem] {description}"}}`.
//! - [`MCP_SERVER_KEYS`](crate::MCP_SERVER_KEYS) lists every key an entry may hold
//!   (parsing is in `config_parse`).
//!
//! `${VAR}` references in `env` and `headers` are kept as written here and
//! resolved at connect time (see [`interpolate`](crate::interpolate)).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use loopwright_types::SourceOptions;
use loopwright_types::toolset::ToolOverrides;

use crate::env::interpolate_map;
use crate::error::McpError;

/// How long connect plus `initialize` may take by default: long enough for
/// `npx` to start a cached package, short enough not to stall a run.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One MCP server: its name, transport and limits.
///
/// ```
/// use loopwright_mcp::{McpServerConfig, McpTransport};
/// let cfg = McpServerConfig::stdio("fs", "npx").arg("-y").arg("@modelcontextprotocol/server-filesystem");
/// assert_eq!(cfg.name, "fs");
/// assert!(matches!(cfg.transport, McpTransport::Stdio(_)));
/// assert!(cfg.enabled);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The server's name (used in namespaced tool names and in errors).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Whether to connect at all.
    pub enabled: bool,
    /// Connect plus initialize timeout; [`DEFAULT_CONNECT_TIMEOUT`] when unset.
    pub connect_timeout: Option<Duration>,
    /// Per-call timeout; the tool context's deadline (the agent's tool
    /// timeout) when unset.
    pub call_timeout: Option<Duration>,
    /// How long a stdio server gets to exit after its stdin closes, before
    /// its group is sent SIGTERM; `STDIN_CLOSE_GRACE` when unset. Longer
    /// for a server that saves state on exit.
    pub shutdown_grace: Option<Duration>,
    /// How long a call the server turns into a task (the Tasks extension)
    /// may run, polling included (`"taskTimeout"`); the call timeout when
    /// unset. A task still running then is cancelled (`tasks/cancel`).
    pub task_timeout: Option<Duration>,
    /// How this client signs in to the server (`"oauth": {...}`); see
    /// [`OAuthConfig`](crate::OAuthConfig). Any HTTP server answering 401
    /// gets OAuth, configured or not: the config only adds a pre-registered
    /// client, scopes, a redirect port or a client metadata document.
    #[cfg(feature = "oauth")]
    pub oauth: Option<crate::oauth::OAuthConfig>,
    /// Whether the server's tool annotations (`readOnlyHint`,
    /// `destructiveHint`, ...) are believed (`"trust": true`). The MCP
    /// specification says a client must treat them as untrusted unless the
    /// server is trusted, and approval tiers rely on them: an untrusted
    /// server's tools carry no annotations, so each asks once per session
    /// under approval and is denied when calls needing approval are denied,
    /// whatever the server claims. Default: false.
    pub trusted: bool,
    /// Whether the model gets this server's resources (`"resources": true`):
    /// two more tools, `list_resources` and `read_resource` (exposed as
    /// `{server}__list_resources` and `{server}__read_resource`), when the
    /// server advertises the `resources` capability; see the crate README.
    /// Default: false.
    pub resources: bool,
    /// Renames, descriptions, provider options and always-on marks for the
    /// server's tools, by raw tool name (`toolOverrides`); the raw name
    /// still goes to the server. Applied when the server joins a tool set
    /// ([`McpServerConfig::source_options`]).
    pub tool_overrides: ToolOverrides,
}

/// The transport of a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking JSON-RPC lines on stdin/stdout.
    Stdio(StdioConfig),
    /// Streamable HTTP (protocol 2025-03-26 and later).
    Http(RemoteConfig),
    /// Legacy HTTP+SSE (protocol 2024-11-05).
    Sse(RemoteConfig),
    /// WebSocket with the `mcp` subprotocol.
    WebSocket(RemoteConfig),
}

impl McpTransport {
    /// A short name of the transport kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio(_) => "stdio",
            Self::Http(_) => "http",
            Self::Sse(_) => "sse",
            Self::WebSocket(_) => "websocket",
        }
    }
}

/// A local server started as a child process.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables given to it (values may hold `${VAR}` references).
    pub env: BTreeMap<String, String>,
    /// Its working directory; the host's when unset.
    pub cwd: Option<PathBuf>,
}

/// A remote server reached by URL.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RemoteConfig {
    /// The endpoint.
    pub url: String,
    /// Extra request headers (values may hold `${VAR}` references).
    pub headers: BTreeMap<String, String>,
}

impl McpServerConfig {
    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            connect_timeout: None,
            call_timeout: None,
            shutdown_grace: None,
            task_timeout: None,
            #[cfg(feature = "oauth")]
            oauth: None,
            trusted: false,
            resources: false,
            tool_overrides: ToolOverrides::default(),
        }
    }

    /// A stdio server running `command`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio(StdioConfig {
                command: command.into(),
                ..StdioConfig::default()
            }),
        )
    }

    /// A streamable HTTP server at `url`.
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::http("api", "http://127.0.0.1:3001/mcp")
    ///     .header("Authorization", "Bearer ${API_TOKEN}");
    /// assert_eq!(cfg.transport.kind(), "http");
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http(RemoteConfig {
                url: url.into(),
                headers: BTreeMap::new(),
            }),
        )
    }

    /// A legacy HTTP+SSE server (protocol 2024-11-05) whose event stream is
    /// at `url`.
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::sse("old", "http://127.0.0.1:3001/sse");
    /// assert_eq!(cfg.transport.kind(), "sse");
    /// ```
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Sse(RemoteConfig {
                url: url.into(),
                headers: BTreeMap::new(),
            }),
        )
    }

    /// A WebSocket server at `url` (`ws://` or `wss://`).
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::websocket("ws", "ws://127.0.0.1:3001/ws");
    /// assert_eq!(cfg.transport.kind(), "websocket");
    /// ```
    pub fn websocket(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::WebSocket(RemoteConfig {
                url: url.into(),
                headers: BTreeMap::new(),
            }),
        )
    }

    /// Add an argument (stdio only; ignored otherwise).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio(s) = &mut self.transport {
            s.args.push(arg.into());
        }
        self
    }

    /// Add arguments (stdio only; ignored otherwise).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let McpTransport::Stdio(s) = &mut self.transport {
            s.args.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Set an environment variable (stdio only; ignored otherwise).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio(s) = &mut self.transport {
            s.env.insert(key.into(), value.into());
        }
        self
    }

    /// Set the working directory (stdio only; ignored otherwise).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio(s) = &mut self.transport {
            s.cwd = Some(dir.into());
        }
        self
    }

    /// Set a request header (remote transports only; ignored otherwise).
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http(r) | McpTransport::Sse(r) | McpTransport::WebSocket(r) = &mut self.transport
        {
            r.headers.insert(key.into(), value.into());
        }
        self
    }

    /// Set the connect plus initialize timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Set the per-call timeout.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// Set how long a call the server turns into a task may run.
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::http("jobs", "https://jobs.example/mcp")
    ///     .task_timeout(std::time::Duration::from_secs(600));
    /// assert_eq!(cfg.task_timeout, Some(std::time::Duration::from_secs(600)));
    /// ```
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = Some(timeout);
        self
    }

    /// Set how long a stdio server gets to exit on its own once its stdin
    /// is closed.
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::stdio("memory", "mcp-server-memory")
    ///     .shutdown_grace(std::time::Duration::from_secs(5));
    /// assert_eq!(cfg.shutdown_grace, Some(std::time::Duration::from_secs(5)));
    /// ```
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = Some(grace);
        self
    }

    /// Set how this client signs in to the server (remote servers).
    ///
    /// ```
    /// let mut oauth = loopwright_mcp::OAuthConfig::default();
    /// oauth.client_id = Some("my-app".into());
    /// let cfg = loopwright_mcp::McpServerConfig::http("linear", "https://mcp.linear.app/mcp").oauth(oauth);
    /// assert_eq!(cfg.oauth.unwrap().client_id.as_deref(), Some("my-app"));
    /// ```
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: crate::oauth::OAuthConfig) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Enable or disable the server.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Believe (or not) the server's tool annotations; see
    /// [`McpServerConfig::trusted`](McpServerConfig#structfield.trusted).
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::stdio("fs", "mcp-server-filesystem").trusted(true);
    /// assert!(cfg.trusted);
    /// ```
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Give the model this server's resources (or not); see
    /// [`McpServerConfig::resources`](McpServerConfig#structfield.resources).
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::stdio("docs", "docs-mcp").resources(true);
    /// assert!(cfg.resources);
    /// ```
    pub fn resources(mut self, resources: bool) -> Self {
        self.resources = resources;
        self
    }

    /// Shape the server's tools with these overrides (see
    /// [`McpServerConfig::tool_overrides`]).
    ///
    /// ```
    /// use loopwright_types::toolset::{ToolOverride, ToolOverrides};
    /// let cfg = loopwright_mcp::McpServerConfig::stdio("fs", "mcp-server-filesystem")
    ///     .tool_overrides(ToolOverrides::default().rule("read_file", ToolOverride::default().name("fs_read")));
    /// assert!(!cfg.tool_overrides.is_empty());
    /// ```
    pub fn tool_overrides(mut self, overrides: ToolOverrides) -> Self {
        self.tool_overrides = overrides;
        self
    }

    /// How the server joins a tool set: its tool overrides, when it has
    /// any.
    pub fn source_options(&self) -> SourceOptions {
        if self.tool_overrides.is_empty() {
            SourceOptions::default()
        } else {
            SourceOptions::default().shared_transform(self.tool_overrides.clone().transform())
        }
    }

    /// The connect timeout in force.
    pub fn effective_connect_timeout(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// The same config with every `${VAR}` in `env` and `headers` resolved
    /// from the process environment (done at connect time).
    pub fn resolved(&self) -> Result<Self, McpError> {
        self.resolved_with(&crate::env::process_lookup)
    }

    /// [`Self::resolved`] with a custom variable lookup.
    ///
    /// ```
    /// let cfg = loopwright_mcp::McpServerConfig::http("api", "http://h/mcp").header("Authorization", "Bearer ${TOKEN}");
    /// let err = cfg.resolved_with(&|_| None).unwrap_err();
    /// assert_eq!(err.to_string(), "mcp server api: environment variable TOKEN is not set");
    /// let ok = cfg.resolved_with(&|_| Some("t".into())).unwrap();
    /// let loopwright_mcp::McpTransport::Http(r) = &ok.transport else { unreachable!() };
    /// assert_eq!(r.headers["Authorization"], "Bearer t");
    /// ```
    pub fn resolved_with(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, McpError> {
        let mut out = self.clone();
        match &mut out.transport {
            McpTransport::Stdio(s) => s.env = interpolate_map(&self.name, &s.env, lookup)?,
            McpTransport::Http(r) | McpTransport::Sse(r) | McpTransport::WebSocket(r) => {
                r.headers = interpolate_map(&self.name, &r.headers, lookup)?;
            }
        }
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            out.oauth = Some(oauth.resolved(&self.name, lookup)?);
        }
        Ok(out)
    }
}
