//! [`McpToolSource`]: one MCP server as an loopwright-core [`ToolSource`].
//!
//! Invariants:
//! - tool names are the server's ORIGINAL names here and on the wire; the
//!   `ToolSet` namespaces them for the model (`{server}__{tool}`);
//! - no lock is held across an `.await` except the reconnect lock, which
//!   only serialises reconnecting, never calls;
//! - a closed transport is reconnected once per call (with a short backoff);
//! - closing is idempotent and also happens on drop (the stdio process
//!   group is killed), so no server process outlives its source;
//! - the resource tools ([`resources`](crate::resources)) are decided with
//!   every tool discovery and listed after the server's own tools.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use loopwright_types::{SourceKind, Tool, ToolAnnotations, ToolDefinition, ToolSource, ToolSourceError};
use rmcp::model::{GetPromptRequestParams, GetPromptResult, Prompt};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::McpServerConfig;
use crate::connect::{Connection, connect};
use crate::discovery::{list_all_prompts, list_all_tools};
use crate::error::McpError;
use crate::handler::Shared;
use crate::options::McpClientOptions;
use crate::resources::Offer;
use crate::tool::McpTool;

/// Pause before reconnecting a closed transport, so a crash loop does not spin.
pub const RECONNECT_BACKOFF: Duration = Duration::from_millis(200);

/// One MCP server's tools.
///
/// ```no_run
/// # async fn demo() -> Result<(), loopwright_mcp::McpError> {
/// use loopwright_types::ToolSource;
/// let source = loopwright_mcp::McpToolSource::connect(
///     loopwright_mcp::McpServerConfig::stdio("everything", "npx").args(["-y", "@modelcontextprotocol/server-everything"]),
/// ).await?;
/// let tools = source.tools().await.map_err(|e| loopwright_mcp::McpError::Connect { server: "everything".into(), message: e.to_string() })?;
/// println!("{} tools", tools.len());
/// source.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpToolSource {
    inner: Arc<SourceInner>,
}

impl std::fmt::Debug for McpToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolSource")
            .field("server", &self.inner.config.name)
            .finish_non_exhaustive()
    }
}

pub(crate) struct SourceInner {
    pub(crate) config: McpServerConfig,
    pub(crate) shared: Arc<Shared>,
    conn: RwLock<Option<Arc<Connection>>>,
    reconnect_lock: tokio::sync::Mutex<()>,
    definitions: Mutex<Vec<(ToolDefinition, String)>>,
    /// Our resource tools on offer, decided with the definitions.
    pub(crate) resources: Mutex<Offer>,
    prompts: Mutex<Vec<Prompt>>,
    instructions: Mutex<Option<String>>,
    closed: AtomicBool,
    /// Cancelled by `close`: a reconnect under way gives up (its new server,
    /// if started, is dropped and so ended).
    closing: tokio_util::sync::CancellationToken,
}

impl McpToolSource {
    /// Connect, initialize and list the server's tools (and its prompts, if
    /// it offers any), all under the server's connect timeout (ending a
    /// server that timed out comes after it), with the
    /// default [`McpClientOptions`] (no roots; sampling and elicitation
    /// declined).
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpError> {
        Self::connect_with(config, McpClientOptions::default()).await
    }

    /// [`Self::connect`] offering the server what `options` offers.
    pub async fn connect_with(config: McpServerConfig, options: McpClientOptions) -> Result<Self, McpError> {
        let shared = Arc::new(Shared::new(&config.name, options));
        let timeout = config.effective_connect_timeout();
        // One budget for connecting, initializing and discovering.
        let deadline = tokio::time::Instant::now() + timeout;
        let mut conn = Arc::new(connect(&config, shared.clone()).await?);
        // A person's sign-in while connecting is not counted (it has its
        // own limit).
        let deadline = deadline + conn.signing_in;
        let inner = Arc::new(SourceInner {
            instructions: Mutex::new(conn.instructions.clone()),
            conn: RwLock::new(Some(conn.clone())),
            config,
            shared,
            reconnect_lock: tokio::sync::Mutex::new(()),
            definitions: Mutex::new(Vec::new()),
            resources: Mutex::new(Offer::default()),
            prompts: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            closing: tokio_util::sync::CancellationToken::new(),
        });
        let discover = async {
            if let Err(e) = inner.refresh_tools(&conn).await {
                if !e.needs_login() {
                    return Err(e);
                }
                // The stored sign-in was refused (revoked, or the server moved
                // to another authorization server): connect once more, which
                // signs in again where it can.
                conn = inner.reconnect(Some(conn.clone())).await?;
                inner.refresh_tools(&conn).await?;
            }
            inner.refresh_prompts(&conn).await;
            Ok::<_, McpError>(())
        };
        match tokio::time::timeout_at(deadline, discover).await {
            Ok(Ok(())) => Ok(Self { inner }),
            Ok(Err(e)) => {
                conn.close().await;
                Err(e)
            }
            Err(_) => {
                conn.close().await;
                Err(McpError::Timeout {
                    server: inner.config.name.clone(),
                    after: timeout,
                })
            }
        }
    }

    /// The server's config.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// The protocol version of the current session: `2026-07-28` for a
    /// server that answered `server/discover`, the version `initialize`
    /// agreed on otherwise; `None` once closed.
    ///
    /// ```no_run
    /// # async fn demo(source: loopwright_mcp::McpToolSource) {
    /// println!("speaking {}", source.protocol_version().unwrap_or_default());
    /// # }
    /// ```
    pub fn protocol_version(&self) -> Option<String> {
        let conn = self.inner.current()?;
        let info = conn.peer.peer_info()?;
        Some(info.protocol_version.as_str().to_owned())
    }

    /// The process id of a stdio server (the leader of its process group).
    pub fn pid(&self) -> Option<u32> {
        self.inner.current().and_then(|c| c.pid())
    }

    /// The server's prompts, as discovered at connect (and after a
    /// `prompts/list_changed`); empty when it offers none.
    ///
    /// ```no_run
    /// # async fn demo(source: loopwright_mcp::McpToolSource) {
    /// for prompt in source.prompts().await {
    ///     println!("{}: {}", prompt.name, prompt.description.unwrap_or_default());
    /// }
    /// # }
    /// ```
    pub async fn prompts(&self) -> Vec<Prompt> {
        let inner = &self.inner;
        if inner.shared.prompts_stale.load(Ordering::SeqCst)
            && let Ok(conn) = inner.live_connection().await
        {
            inner.refresh_prompts(&conn).await;
        }
        inner.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Get one prompt, filled in with `arguments`.
    ///
    /// ```no_run
    /// # async fn demo(source: loopwright_mcp::McpToolSource) -> Result<(), loopwright_mcp::McpError> {
    /// let args = serde_json::json!({"topic": "rust"});
    /// let prompt = source.get_prompt("explain", args.as_object().cloned().unwrap_or_default()).await?;
    /// println!("{} messages", prompt.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, McpError> {
        let conn = self.inner.live_connection().await?;
        conn.peer
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments))
            .await
            .map_err(|e| self.inner.server_error(format!("prompts/get {name} failed: {e}")))
    }

    /// Close the session and end the server (its whole process group for
    /// stdio). Idempotent; later calls return error results.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.closing.cancel();
        let conn = self.inner.conn.write().ok().and_then(|mut c| c.take());
        if let Some(conn) = conn {
            conn.close().await;
        }
    }
}

impl SourceInner {
    pub(crate) fn current(&self) -> Option<Arc<Connection>> {
        self.conn.read().ok().and_then(|c| c.clone())
    }

    fn server_error(&self, message: impl std::fmt::Display) -> McpError {
        McpError::Connect {
            server: self.config.name.clone(),
            message: crate::redact(&message.to_string(), &self.config.inline_secrets()),
        }
    }

    /// A live connection: the current one, or a new one when it closed.
    pub(crate) async fn live_connection(&self) -> Result<Arc<Connection>, McpError> {
        match self.current() {
            Some(conn) if !conn.is_closed() => Ok(conn),
            stale => self.reconnect(stale).await,
        }
    }

    /// Replace `stale` (if it is still the current connection) with a new one.
    pub(crate) async fn reconnect(
        &self,
        stale: Option<Arc<Connection>>,
    ) -> Result<Arc<Connection>, McpError> {
        let _serialised = self.reconnect_lock.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(self.server_error("closed"));
        }
        let current = self.current();
        if let Some(conn) = &current {
            let same = stale.as_ref().is_some_and(|s| Arc::ptr_eq(s, conn));
            if !same && !conn.is_closed() {
                return Ok(conn.clone());
            }
        }
        if let Some(old) = current {
            old.close().await;
        }
        tracing::warn!(server = %self.config.name, "mcp transport closed; reconnecting once");
        // Boxed: connecting (any transport) is a large future, and inlined it
        // would make every call's future large too (copied on each call).
        let attempt = Box::pin(async {
            tokio::time::sleep(RECONNECT_BACKOFF).await;
            connect(&self.config, self.shared.clone()).await
        });
        let conn = tokio::select! {
            connected = attempt => Arc::new(connected.map_err(|e| {
                if e.needs_login() {
                    e
                } else {
                    self.server_error(format!("server is down and reconnecting failed: {e}"))
                }
            })?),
            () = self.closing.cancelled() => return Err(self.server_error("closed")),
        };
        // `close` may have run while this connected: it must stay closed.
        let stored = match self.conn.write() {
            Ok(mut slot) if !self.closed.load(Ordering::SeqCst) => {
                *slot = Some(conn.clone());
                true
            }
            _ => false,
        };
        if !stored {
            conn.close().await;
            return Err(self.server_error("closed"));
        }
        if let Ok(mut instr) = self.instructions.lock() {
            instr.clone_from(&conn.instructions);
        }
        // The new session may offer other tools.
        self.shared.mark_tools_changed();
        self.shared.prompts_stale.store(true, Ordering::SeqCst);
        Ok(conn)
    }

    /// List the server's prompts when it offers them. A failure is logged
    /// and leaves the list empty: prompts are optional, tools are not.
    async fn refresh_prompts(&self, conn: &Connection) {
        self.shared.prompts_stale.store(false, Ordering::SeqCst);
        let offers = conn
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        let prompts = if offers {
            list_all_prompts(&conn.peer).await.unwrap_or_else(|e| {
                tracing::warn!(server = %self.config.name, error = %e, "prompts/list failed");
                Vec::new()
            })
        } else {
            Vec::new()
        };
        if let Ok(mut slot) = self.prompts.lock() {
            *slot = prompts;
        }
    }

    /// List all pages of `tools/list` and store the definitions, with the
    /// resource tools this session can offer.
    async fn refresh_tools(&self, conn: &Connection) -> Result<(), McpError> {
        self.shared.tools_stale.store(false, Ordering::SeqCst);
        let defs = list_all_tools(&conn.peer).await.map_err(|e| {
            if e.starts_with(crate::discovery::UNAUTHORIZED) {
                McpError::NeedsLogin {
                    server: self.config.name.clone(),
                    reason: crate::redact(&e, &self.config.inline_secrets()),
                }
            } else {
                self.server_error(format!("tools/list failed: {e}"))
            }
        })?;
        let advertised = conn
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let offer = Offer::decide(&self.config, advertised, &defs);
        for warning in &offer.warnings {
            tracing::warn!(server = %self.config.name, "{warning}");
        }
        if let Ok(mut slot) = self.definitions.lock() {
            *slot = defs;
        }
        if let Ok(mut slot) = self.resources.lock() {
            *slot = offer;
        }
        Ok(())
    }
}

#[async_trait]
impl ToolSource for McpToolSource {
    fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::External
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        let inner = &self.inner;
        let to_err =
            |e: McpError| ToolSourceError::new(inner.config.name.clone(), e.to_string()).with_source(e);
        let conn = inner.live_connection().await.map_err(to_err)?;
        if inner.shared.tools_stale.load(Ordering::SeqCst) {
            inner.refresh_tools(&conn).await.map_err(to_err)?;
        }
        let defs = inner.definitions.lock().map(|d| d.clone()).unwrap_or_default();
        let ours = inner
            .resources
            .lock()
            .map(|o| o.kinds.clone())
            .unwrap_or_default();
        let trusted = inner.config.trusted;
        let server_tools = defs.into_iter().map(|(def, original)| {
            // An untrusted server's hints are not believed (see
            // `McpServerConfig::trusted`).
            let def = if trusted {
                def
            } else {
                def.with_annotations(ToolAnnotations::default())
            };
            Arc::new(McpTool::new(def, original, inner.clone())) as Arc<dyn Tool>
        });
        let resource_tools = ours
            .into_iter()
            .map(|kind| Arc::new(McpTool::resource(kind, inner.clone())) as Arc<dyn Tool>);
        Ok(server_tools.chain(resource_tools).collect())
    }

    fn instructions(&self) -> Option<String> {
        self.inner.instructions.lock().ok().and_then(|i| i.clone())
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.inner.shared.generation.subscribe())
    }

    /// Why a resource tool the config asked for is not on offer.
    fn warnings(&self) -> Vec<String> {
        self.inner
            .resources
            .lock()
            .map(|o| o.warnings.clone())
            .unwrap_or_default()
    }
}
