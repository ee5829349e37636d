//! The path every request a tool sends to its server takes: `tools/call`
//! for the server's tools, `resources/list`, `resources/templates/list` and
//! `resources/read` for the resource tools.
//!
//! Invariants:
//! - a request goes out on a live connection (a closed one is reconnected
//!   first, see [`SourceInner::live_connection`]);
//! - it is sent again at most once, and only when it provably never reached
//!   the server (the transport was found closed on sending, or
//!   [`delivery`](crate::delivery) says `Never`); anything that may have
//!   been delivered becomes an error, never a second run;
//! - it ends on the first of: the answer, the timeout (rmcp sends
//!   `notifications/cancelled`), the agent's cancellation (we send
//!   `notifications/cancelled`), or the future being dropped (a guard sends
//!   `notifications/cancelled`);
//! - the server's progress notifications go to `ctx.progress()` while it
//!   runs, and its elicitation requests are asked on behalf of the call;
//! - error texts are redacted of the server config's inline secrets.

use std::sync::Arc;
use std::time::Duration;

use loopwright_types::{ToolContext, ToolOutput};
use rmcp::model::{CancelledNotificationParam, ClientRequest, RequestId, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, RequestHandle, RoleClient, ServiceError};
use tracing::{Instrument, Span};

use crate::connect::Connection;
use crate::delivery::{Delivery, classify};
use crate::source::SourceInner;
use crate::trace::{self, What};

/// Reason sent with `notifications/cancelled` when the agent cancels a call.
const CANCEL_REASON: &str = "cancelled by the client";

/// A timeout so small it would fire before the request is written is raised
/// to this, so a nearly spent deadline still gets a definite answer.
const MIN_CALL_TIMEOUT: Duration = Duration::from_millis(10);

/// Why a request got no result.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The agent cancelled the call; the server was told.
    Cancelled,
    /// The server answered with a JSON-RPC error (its message).
    Server(String),
    /// No answer within the call's timeout (the server was told).
    TimedOut(String),
    /// No answer: the transport failed or the connection was lost (what
    /// happened).
    Failed(String),
}

impl SourceInner {
    /// Send the request `make` builds (once more only when the first never
    /// reached the server) and wait for its answer under the call's timeout
    /// and cancellation.
    ///
    /// The request has its client span (see [`trace`](crate::trace)),
    /// named after `what`.
    pub(crate) async fn request(
        &self,
        what: What<'_>,
        make: &(dyn Fn() -> ClientRequest + Send + Sync),
        ctx: &ToolContext,
    ) -> Result<ServerResult, RequestError> {
        let span = trace::request(what, &self.config.name, &self.config.transport);
        let outcome = self.traced(make, ctx, &span).instrument(span.clone()).await;
        match &outcome {
            Ok(ServerResult::CallToolResult(result)) if result.is_error == Some(true) => {
                trace::failed(&span, "tool_error");
            }
            Ok(_) => {}
            Err(RequestError::Cancelled) => trace::failed(&span, "cancelled"),
            // The JSON-RPC code is recorded where it is known.
            Err(RequestError::Server(_)) => {}
            Err(RequestError::TimedOut(_)) => trace::failed(&span, "timeout"),
            Err(RequestError::Failed(_)) => trace::failed(&span, "transport"),
        }
        outcome
    }

    async fn traced(
        &self,
        make: &(dyn Fn() -> ClientRequest + Send + Sync),
        ctx: &ToolContext,
        span: &Span,
    ) -> Result<ServerResult, RequestError> {
        if ctx.cancellation().is_cancelled() {
            return Err(RequestError::Cancelled);
        }
        let mut resent = false;
        #[cfg(feature = "oauth")]
        let mut step_ups = 0u32;
        loop {
            let (conn, handle) = self.send(make, ctx).await?;
            span.record("jsonrpc.request.id", handle.id.to_string());
            let _progress = self
                .shared
                .watch_progress(handle.progress_token.clone(), ctx.progress().clone());
            // A server's elicitation during the call is asked for this call.
            let _call = self.shared.watch_call(handle.id.clone(), ctx);
            let mut guard = CancelOnDrop {
                peer: Some(handle.peer.clone()),
                id: handle.id.clone(),
            };
            let outcome = tokio::select! {
                response = handle.await_response() => Some(response),
                () = ctx.cancellation().cancelled() => None,
            };
            let Some(response) = outcome else {
                // The guard sends notifications/cancelled.
                return Err(RequestError::Cancelled);
            };
            // Answered, failed or timed out (rmcp already told the server): no cancel.
            guard.disarm();
            // rmcp handles each notification in a task spawned before the
            // response that follows it is delivered; yielding once lets a last
            // progress report through before the route is dropped.
            tokio::task::yield_now().await;
            return match response {
                Ok(result) => Ok(result),
                #[cfg(feature = "oauth")]
                Err(ServiceError::TransportSend(e)) if insufficient_scope(&e).is_some() => {
                    // Refused before it ran: sign in for more scope and send it again.
                    let challenge = insufficient_scope(&e).unwrap_or_default();
                    if step_ups >= crate::oauth::MAX_STEP_UPS {
                        return Err(RequestError::Failed(format!(
                            "the server still refuses the call for lack of scope after {step_ups} sign-ins for more"
                        )));
                    }
                    step_ups += 1;
                    self.step_up_within(&challenge, ctx).await?;
                    continue;
                }
                Err(ServiceError::TransportSend(e)) => match classify(&e) {
                    // Never reached the server, the transport is gone:
                    // reconnect and resend once.
                    Delivery::Never => {
                        conn.mark_broken();
                        if resent {
                            Err(RequestError::Failed(e.to_string()))
                        } else {
                            resent = true;
                            continue;
                        }
                    }
                    // It may have run: a second send could run it twice. The
                    // session is kept (a gateway's 502 does not end it); a
                    // dead transport shows on the next send.
                    Delivery::Maybe => Err(RequestError::Failed(format!(
                        "{e} (the request may have reached the server, so it was not sent again)"
                    ))),
                },
                Err(ServiceError::Timeout { timeout }) => {
                    Err(RequestError::TimedOut(format!("timed out after {timeout:?}")))
                }
                Err(ServiceError::TransportClosed) => Err(RequestError::Failed(
                    "the connection closed during the call (did the server exit?)".into(),
                )),
                Err(ServiceError::McpError(e)) => {
                    trace::failed(span, &e.code.0.to_string());
                    Err(RequestError::Server(e.message.to_string()))
                }
                Err(e) => Err(RequestError::Failed(e.to_string())),
            };
        }
    }

    /// An error result about `tool` of this server, redacted.
    pub(crate) fn tool_error(&self, tool: &str, message: impl std::fmt::Display) -> ToolOutput {
        let text = format!("mcp server {}: tool {tool}: {message}", self.config.name);
        ToolOutput::error(crate::redact(&text, &self.config.inline_secrets()))
    }

    /// The request's timeout: the server config's call timeout, else what
    /// is left of the call's deadline.
    fn options(&self, ctx: &ToolContext) -> PeerRequestOptions {
        let from_deadline = ctx
            .deadline()
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        match self.config.call_timeout.or(from_deadline) {
            Some(timeout) => PeerRequestOptions::with_timeout(timeout.max(MIN_CALL_TIMEOUT)),
            None => PeerRequestOptions::no_options(),
        }
    }

    /// Send the request; a transport found closed (so the request was never
    /// delivered) is reconnected once and the request sent again.
    async fn send(
        &self,
        make: &(dyn Fn() -> ClientRequest + Send + Sync),
        ctx: &ToolContext,
    ) -> Result<(Arc<Connection>, RequestHandle<RoleClient>), RequestError> {
        let failed = |e: &dyn std::fmt::Display| RequestError::Failed(e.to_string());
        let conn = self.live_connection().await.map_err(|e| failed(&e))?;
        match conn
            .peer
            .send_request_with_option(make(), self.options(ctx))
            .await
        {
            Ok(handle) => Ok((conn, handle)),
            Err(ServiceError::TransportClosed) => {
                let conn = self.reconnect(Some(conn)).await.map_err(|e| failed(&e))?;
                let handle = conn
                    .peer
                    .send_request_with_option(make(), self.options(ctx))
                    .await
                    .map_err(|e| failed(&e))?;
                Ok((conn, handle))
            }
            Err(e) => Err(failed(&e)),
        }
    }
}

/// The `WWW-Authenticate` challenge of a 403 `insufficient_scope`, when
/// that is why a send failed.
#[cfg(feature = "oauth")]
fn insufficient_scope(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    use rmcp::transport::streamable_http_client::{InsufficientScopeError, StreamableHttpError};
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(scope) = e.downcast_ref::<InsufficientScopeError>() {
            return Some(scope.www_authenticate_header.clone());
        }
        if let Some(StreamableHttpError::InsufficientScope(scope)) =
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(scope.www_authenticate_header.clone());
        }
        next = e.source();
    }
    None
}

#[cfg(feature = "oauth")]
impl SourceInner {
    /// [`Self::step_up`] as part of the call: it ends when the call is
    /// cancelled, and within the call's timeout (the server's call timeout,
    /// else what is left of the call's deadline), so an authorization
    /// server that never sends the person back cannot hold the call.
    async fn step_up_within(&self, challenge: &str, ctx: &ToolContext) -> Result<(), RequestError> {
        let limit = self.config.call_timeout.or_else(|| {
            ctx.deadline()
                .map(|d| d.saturating_duration_since(tokio::time::Instant::now()))
        });
        let step_up = async {
            let signed_in = match limit {
                Some(limit) => tokio::time::timeout(limit, self.step_up(challenge))
                    .await
                    .map_err(|_| {
                        RequestError::TimedOut(format!(
                            "the sign-in for more OAuth scope did not end within the call's {limit:?}"
                        ))
                    })?,
                None => self.step_up(challenge).await,
            };
            signed_in.map_err(|why| {
                RequestError::Failed(format!(
                    "the server needs more OAuth scope for this call ({why}); sign in again"
                ))
            })
        };
        tokio::select! {
            stepped = step_up => stepped,
            () = ctx.cancellation().cancelled() => Err(RequestError::Cancelled),
        }
    }

    /// Sign in for the scopes `challenge` names (see `oauth::session`).
    async fn step_up(&self, challenge: &str) -> Result<(), String> {
        let resolved = self.config.resolved().map_err(|e| e.to_string())?;
        let crate::McpTransport::Http(remote) = &resolved.transport else {
            return Err("not an HTTP server".into());
        };
        crate::oauth::session::step_up(
            &self.config.name,
            &remote.url,
            resolved.oauth.as_ref(),
            challenge,
            &self.shared,
        )
        .await
    }
}

/// Sends `notifications/cancelled` for a request unless disarmed.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.peer = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params = CancelledNotificationParam::new(Some(self.id.clone()), Some(CANCEL_REASON.into()));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}
