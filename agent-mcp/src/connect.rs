//! Opening one connection: resolve the config, start the transport, run
//! rmcp's `initialize` handshake, all under the connect timeout.
// Built with no transport feature, every config is unsupported.
#![cfg_attr(
    not(any(feature = "stdio", feature = "http")),
    allow(unused_imports, unused_variables, dead_code)
)]

use std::sync::{Arc, Mutex};

use rmcp::service::{Peer, RoleClient, RunningService, serve_client};

use crate::config::{McpServerConfig, McpTransport};
use crate::error::McpError;
use crate::handler::{Handler, Shared};
#[cfg(feature = "stdio")]
use crate::stdio::StdioProcess;

/// One live session with a server.
pub(crate) struct Connection {
    pub(crate) peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    #[cfg(feature = "stdio")]
    process: Option<StdioProcess>,
    pub(crate) instructions: Option<String>,
    /// Set when a send failed (e.g. HTTP connection refused): the session is
    /// not trusted any more and the next call reconnects.
    broken: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    fn new(
        service: RunningService<RoleClient, Handler>,
        #[cfg(feature = "stdio")] process: Option<StdioProcess>,
    ) -> Self {
        let instructions = service
            .peer()
            .peer_info()
            .and_then(|info| info.instructions.clone());
        Self {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            #[cfg(feature = "stdio")]
            process,
            instructions,
            broken: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Stop using this session (a send on it failed).
    pub(crate) fn mark_broken(&self) {
        self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether the transport is gone (server exited, session dropped).
    pub(crate) fn is_closed(&self) -> bool {
        self.broken.load(std::sync::atomic::Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    /// The stdio server's process id, if any.
    pub(crate) fn pid(&self) -> Option<u32> {
        #[cfg(feature = "stdio")]
        {
            self.process.as_ref().and_then(StdioProcess::pid)
        }
        #[cfg(not(feature = "stdio"))]
        None
    }

    /// Close the session (which closes a stdio server's stdin), then end the
    /// server's process group. Idempotent.
    pub(crate) async fn close(&self) {
        let service = match self.service.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(mut service) = service {
            // Bounded: a transport that does not close must not stall shutdown.
            let _ = service.close_with_timeout(CLOSE_SESSION_TIMEOUT).await;
        }
        #[cfg(feature = "stdio")]
        if let Some(process) = &self.process {
            process.close().await;
        }
    }
}

/// How long rmcp's session shutdown may take before the process is ended anyway.
const CLOSE_SESSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Connect to `config` and initialize, under its connect timeout; the
/// credentials in its URL or arguments never appear in the error.
pub(crate) async fn connect(config: &McpServerConfig, shared: Arc<Shared>) -> Result<Connection, McpError> {
    connect_unredacted(config, shared)
        .await
        .map_err(|e| e.redacted(&config.inline_secrets()))
}

async fn connect_unredacted(config: &McpServerConfig, shared: Arc<Shared>) -> Result<Connection, McpError> {
    let name = config.name.clone();
    if !config.enabled {
        return Err(McpError::Disabled { server: name });
    }
    let resolved = config.resolved()?;
    let timeout = config.effective_connect_timeout();
    let handler = Handler { shared };
    let failed = |e: String| McpError::Connect {
        server: name.clone(),
        message: format!("initialize failed: {e}"),
    };
    match &resolved.transport {
        #[cfg(feature = "stdio")]
        McpTransport::Stdio(stdio) => {
            let grace = config.shutdown_grace.unwrap_or(crate::stdio::STDIN_CLOSE_GRACE);
            let (process, pipes) = crate::stdio::spawn(&name, stdio, grace)?;
            let outcome =
                tokio::time::timeout(timeout, serve_client(handler, (pipes.stdout, pipes.stdin))).await;
            match outcome {
                Ok(Ok(service)) => Ok(Connection::new(service, Some(process))),
                Ok(Err(e)) => {
                    process.close().await;
                    Err(failed(e.to_string()))
                }
                Err(_) => {
                    process.close().await;
                    Err(McpError::Timeout {
                        server: name,
                        after: timeout,
                    })
                }
            }
        }
        #[cfg(feature = "http")]
        McpTransport::Http(remote) => {
            let transport = crate::http::transport(&name, remote)?;
            match tokio::time::timeout(timeout, serve_client(handler, transport)).await {
                Ok(Ok(service)) => Ok(Connection::new(
                    service,
                    #[cfg(feature = "stdio")]
                    None,
                )),
                Ok(Err(e)) => Err(failed(e.to_string())),
                Err(_) => Err(McpError::Timeout {
                    server: name,
                    after: timeout,
                }),
            }
        }
        #[cfg(feature = "sse")]
        McpTransport::Sse(remote) => {
            match tokio::time::timeout(timeout, connect_sse(name.clone(), remote.clone(), handler)).await {
                Ok(result) => result,
                Err(_) => Err(McpError::Timeout {
                    server: name,
                    after: timeout,
                }),
            }
        }
        #[cfg(feature = "websocket")]
        McpTransport::WebSocket(remote) => {
            match tokio::time::timeout(timeout, connect_ws(name.clone(), remote.clone(), handler)).await {
                Ok(result) => result,
                Err(_) => Err(McpError::Timeout {
                    server: name,
                    after: timeout,
                }),
            }
        }
        #[allow(unreachable_patterns)]
        other => Err(McpError::UnsupportedTransport {
            server: name,
            transport: other.kind(),
        }),
    }
}

/// Open a legacy SSE session and initialize (owned arguments: the future is `Send`).
#[cfg(feature = "sse")]
async fn connect_sse(
    name: String,
    remote: crate::config::RemoteConfig,
    handler: Handler,
) -> Result<Connection, McpError> {
    let transport = crate::sse::open(&name, &remote).await?;
    initialize(name, transport, handler).await
}

/// Open a WebSocket session and initialize.
#[cfg(feature = "websocket")]
async fn connect_ws(
    name: String,
    remote: crate::config::RemoteConfig,
    handler: Handler,
) -> Result<Connection, McpError> {
    let transport = crate::ws::open(&name, &remote).await?;
    initialize(name, transport, handler).await
}

/// Run `initialize` over an opened network transport.
#[cfg(any(feature = "sse", feature = "websocket"))]
async fn initialize<T, E>(name: String, transport: T, handler: Handler) -> Result<Connection, McpError>
where
    T: rmcp::transport::Transport<RoleClient, Error = E> + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    match serve_client(handler, transport).await {
        Ok(service) => Ok(Connection::new(
            service,
            #[cfg(feature = "stdio")]
            None,
        )),
        Err(e) => Err(McpError::Connect {
            server: name,
            message: format!("initialize failed: {e}"),
        }),
    }
}
