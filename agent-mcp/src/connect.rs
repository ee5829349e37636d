//! Opening one connection: resolve the config, start the transport, and
//! begin the session, all under the connect timeout (but for the time a
//! person takes to sign in, which has its own limit).
//!
//! Over stdio and streamable HTTP the session begins as 2026-07-28 does
//! (`server/discover`, then stateless requests with per-request `_meta`)
//! and falls back to the 2025-11-25 `initialize` handshake for a server
//! that does not know `server/discover` ([`lifecycle`]); legacy HTTP+SSE
//! and WebSocket servers predate 2026-07-28 and get the handshake.
// Built with no transport feature, every config is unsupported.
#![cfg_attr(
    not(any(feature = "stdio", feature = "http")),
    allow(unused_imports, unused_variables, dead_code)
)]

use std::sync::{Arc, Mutex};

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, Peer, RoleClient, RunningService, serve_client_with_lifecycle};

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
    /// How long a person took to sign in while this connection was made
    /// (not counted against the connect timeout).
    pub(crate) signing_in: std::time::Duration,
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
            signing_in: std::time::Duration::ZERO,
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

/// How a stdio or streamable HTTP session begins: `server/discover` with
/// the newest protocol, the `initialize` handshake of 2025-11-25 for a
/// server that answers it with an error (or not at all within rmcp's probe
/// timeout).
pub(crate) fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::LATEST],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// How long rmcp's session shutdown may take before the process is ended anyway.
const CLOSE_SESSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Connect to `config` and begin the session, under its connect timeout;
/// the credentials in its URL, arguments or OAuth settings never appear in
/// the error.
pub(crate) async fn connect(config: &McpServerConfig, shared: Arc<Shared>) -> Result<Connection, McpError> {
    #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
    let mut secrets = config.inline_secrets();
    #[cfg(feature = "oauth")]
    if let Ok(resolved) = config.resolved()
        && let Some(oauth) = &resolved.oauth
    {
        secrets.extend(oauth.secrets());
    }
    connect_unredacted(config, shared)
        .await
        .map_err(|e| e.redacted(&secrets))
}

/// Why one attempt failed.
enum Failure {
    /// Give up with this error.
    Error(McpError),
    /// `server/discover` looked answered as by an old server, but the
    /// `initialize` after it failed too (a server printing garbage first
    /// can look like that): worth one more attempt with the handshake alone.
    Fallback(McpError),
    /// The server answered 401 with this challenge.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    Unauthorized(String),
}

impl From<McpError> for Failure {
    fn from(e: McpError) -> Self {
        Self::Error(e)
    }
}

async fn connect_unredacted(config: &McpServerConfig, shared: Arc<Shared>) -> Result<Connection, McpError> {
    let name = config.name.clone();
    if !config.enabled {
        return Err(McpError::Disabled { server: name });
    }
    let resolved = config.resolved()?;
    let timeout = config.effective_connect_timeout();
    let timed_out = || McpError::Timeout {
        server: name.clone(),
        after: timeout,
    };
    let attempts = async {
        let mut mode = lifecycle();
        let mut authorized = false;
        // The connect timeout bounds the attempts, not a person's sign-in
        // (which has its own limit, LOGIN_TIMEOUT): the time one takes
        // moves the deadline.
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut deadline = tokio::time::Instant::now() + timeout;
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut signing_in = std::time::Duration::ZERO;
        loop {
            let attempt = tokio::time::timeout_at(
                deadline,
                Box::pin(connect_once(&resolved, shared.clone(), mode.clone())),
            )
            .await
            .map_err(|_| timed_out())?;
            match attempt {
                Ok(mut conn) => {
                    conn.signing_in = signing_in;
                    return Ok(conn);
                }
                Err(Failure::Error(e)) => return Err(e),
                Err(Failure::Fallback(e)) => {
                    if mode == ClientLifecycleMode::Initialize {
                        return Err(e);
                    }
                    tracing::warn!(server = %name, error = %e, "discovery fell back and failed; retrying with initialize alone");
                    mode = ClientLifecycleMode::Initialize;
                }
                #[cfg(feature = "oauth")]
                Err(Failure::Unauthorized(challenge)) if !authorized => {
                    authorized = true;
                    signing_in = answer_challenge(&resolved, &challenge, &shared, deadline)
                        .await?
                        .ok_or_else(timed_out)?;
                    deadline += signing_in;
                }
                Err(Failure::Unauthorized(_)) => {
                    let _ = &mut authorized;
                    return Err(McpError::NeedsLogin {
                        server: name.clone(),
                        reason: "the server still answers 401 after signing in".into(),
                    });
                }
            }
        }
    };
    attempts.await
}

/// Answer a 401's `challenge` (`oauth::session::authorize`) before
/// `deadline`: the time a person took to sign in (not counted against the
/// deadline; zero for client credentials), or `None` when the deadline
/// passed first.
#[cfg(feature = "oauth")]
async fn answer_challenge(
    resolved: &McpServerConfig,
    challenge: &str,
    shared: &Shared,
    deadline: tokio::time::Instant,
) -> Result<Option<std::time::Duration>, McpError> {
    let McpTransport::Http(remote) = &resolved.transport else {
        return Err(failed(&resolved.name, "the server answered 401"));
    };
    let oauth = resolved.oauth.as_ref();
    let authorizing = crate::oauth::session::authorize(&resolved.name, &remote.url, oauth, challenge, shared);
    if crate::oauth::session::signs_in_a_person(oauth, shared) {
        let started = tokio::time::Instant::now();
        authorizing.await?;
        return Ok(Some(started.elapsed()));
    }
    match tokio::time::timeout_at(deadline, authorizing).await {
        Ok(authorized) => authorized.map(|()| Some(std::time::Duration::ZERO)),
        Err(_) => Ok(None),
    }
}

fn failed(server: &str, message: impl std::fmt::Display) -> McpError {
    McpError::Connect {
        server: server.to_owned(),
        message: format!("initialize failed: {message}"),
    }
}

/// Classify a failed start of a session.
fn failure(server: &str, e: &rmcp::service::ClientInitializeError) -> Failure {
    use rmcp::service::ClientInitializeError;
    #[cfg(feature = "http")]
    if let Some(challenge) = e.auth_challenge() {
        return Failure::Unauthorized(challenge.to_owned());
    }
    match e {
        // Also a server that answers `server/discover` with something else
        // than a discovery result (some answer every unknown method `{}`).
        ClientInitializeError::LegacyFallbackFailed { .. } | ClientInitializeError::ExpectedInitResult(_) => {
            Failure::Fallback(failed(server, e))
        }
        // A server slower than rmcp's probe answered `server/discover`
        // after rmcp gave up on it and sent `initialize`: the late answer
        // came where the handshake's was expected. Slow, not broken.
        ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => Failure::Fallback(failed(server, e)),
        _ => Failure::Error(failed(server, e)),
    }
}

/// One attempt to start a session with `config` (already resolved).
async fn connect_once(
    config: &McpServerConfig,
    shared: Arc<Shared>,
    mode: ClientLifecycleMode,
) -> Result<Connection, Failure> {
    let name = config.name.clone();
    let handler = Handler {
        shared: shared.clone(),
    };
    match &config.transport {
        #[cfg(feature = "stdio")]
        McpTransport::Stdio(stdio) => {
            let grace = config.shutdown_grace.unwrap_or(crate::stdio::STDIN_CLOSE_GRACE);
            let (process, pipes) = crate::stdio::spawn(&name, stdio, grace)?;
            // Dropped unfinished (the connect timeout), the guard ends the process.
            let guard = ProcessGuard(Some(process));
            match serve_client_with_lifecycle(handler, (pipes.stdout, pipes.stdin), mode).await {
                Ok(service) => Ok(Connection::new(service, guard.take())),
                Err(e) => {
                    if let Some(process) = guard.take() {
                        process.close().await;
                    }
                    Err(failure(&name, &e))
                }
            }
        }
        #[cfg(feature = "http")]
        McpTransport::Http(remote) => {
            #[cfg(feature = "oauth")]
            let (client, bearer) =
                crate::oauth::session::client(&name, remote, config.oauth.as_ref(), &shared).await?;
            #[cfg(not(feature = "oauth"))]
            let (client, bearer) = (crate::http::LenientClient(crate::http::client()), None);
            let transport = crate::http::transport(&name, remote, client, bearer)?;
            match serve_client_with_lifecycle(handler, transport, mode).await {
                Ok(service) => Ok(Connection::new(
                    service,
                    #[cfg(feature = "stdio")]
                    None,
                )),
                Err(e) => Err(failure(&name, &e)),
            }
        }
        #[cfg(feature = "sse")]
        McpTransport::Sse(remote) => Ok(connect_sse(name.clone(), remote.clone(), handler).await?),
        #[cfg(feature = "websocket")]
        McpTransport::WebSocket(remote) => Ok(connect_ws(name.clone(), remote.clone(), handler).await?),
        #[allow(unreachable_patterns)]
        other => Err(Failure::Error(McpError::UnsupportedTransport {
            server: name,
            transport: other.kind(),
        })),
    }
}

/// Holds a stdio server while its session starts: dropped unfinished (the
/// connect timeout, the caller giving up), the process is dropped too, which
/// kills its group at once (`StdioProcess`'s `Drop`).
#[cfg(feature = "stdio")]
struct ProcessGuard(Option<StdioProcess>);

#[cfg(feature = "stdio")]
impl ProcessGuard {
    fn take(mut self) -> Option<StdioProcess> {
        self.0.take()
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
    match serve_client_with_lifecycle(handler, transport, ClientLifecycleMode::Initialize).await {
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
