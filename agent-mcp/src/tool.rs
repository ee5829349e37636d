//! [`McpTool`]: one MCP tool as an agent-core [`Tool`].
//!
//! A call sends `tools/call` with the tool's ORIGINAL name, forwards the
//! server's progress notifications to `ctx.progress()`, and ends on the
//! first of: the result, the timeout (rmcp sends `notifications/cancelled`),
//! the agent's cancellation (we send `notifications/cancelled`), or the call
//! future being dropped (a guard sends `notifications/cancelled`).

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, RequestId,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestHandle, RoleClient, ServiceError};
use serde_json::{Map, Value};

use crate::connect::Connection;
use crate::delivery::{Delivery, classify};
use crate::result::map_call_result;
use crate::source::SourceInner;

/// Reason sent with `notifications/cancelled` when the agent cancels a call.
const CANCEL_REASON: &str = "cancelled by the client";

/// One tool of an MCP server.
pub(crate) struct McpTool {
    definition: ToolDefinition,
    original_name: String,
    source: Arc<SourceInner>,
}

impl McpTool {
    pub(crate) fn new(definition: ToolDefinition, original_name: String, source: Arc<SourceInner>) -> Self {
        Self {
            definition,
            original_name,
            source,
        }
    }

    fn server(&self) -> &str {
        &self.source.config.name
    }

    fn error(&self, message: impl std::fmt::Display) -> ToolOutput {
        let text = format!(
            "mcp server {}: tool {}: {message}",
            self.server(),
            self.original_name
        );
        ToolOutput::error(crate::redact(&text, &self.source.config.inline_secrets()))
    }

    fn request(&self, arguments: &Map<String, Value>) -> ClientRequest {
        let params = CallToolRequestParams::new(self.original_name.clone()).with_arguments(arguments.clone());
        ClientRequest::CallToolRequest(CallToolRequest::new(params))
    }

    fn options(&self, ctx: &ToolContext) -> PeerRequestOptions {
        let from_deadline = ctx
            .deadline()
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        match self.source.config.call_timeout.or(from_deadline) {
            Some(timeout) => PeerRequestOptions::with_timeout(timeout.max(MIN_CALL_TIMEOUT)),
            None => PeerRequestOptions::no_options(),
        }
    }

    /// Send the request; a transport found closed (so the request was never
    /// delivered) is reconnected once and the request sent again.
    async fn send(
        &self,
        arguments: &Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<(Arc<Connection>, RequestHandle<RoleClient>), ToolOutput> {
        let conn = self.source.live_connection().await.map_err(|e| self.error(e))?;
        match conn
            .peer
            .send_request_with_option(self.request(arguments), self.options(ctx))
            .await
        {
            Ok(handle) => Ok((conn, handle)),
            Err(ServiceError::TransportClosed) => {
                let conn = self
                    .source
                    .reconnect(Some(conn))
                    .await
                    .map_err(|e| self.error(e))?;
                let handle = conn
                    .peer
                    .send_request_with_option(self.request(arguments), self.options(ctx))
                    .await
                    .map_err(|e| self.error(e))?;
                Ok((conn, handle))
            }
            Err(e) => Err(self.error(e)),
        }
    }
}

/// A timeout so small it would fire before the request is written is raised
/// to this, so a nearly spent deadline still gets a definite answer.
const MIN_CALL_TIMEOUT: Duration = Duration::from_millis(10);

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The server config's call timeout replaces the agent's tool timeout.
    fn timeout_for(&self, _input: &Value) -> Option<Duration> {
        self.source.config.call_timeout
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::invalid_input(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        if ctx.cancellation().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // At most one resend, and only of a request that never reached the
        // server (see `delivery`).
        let mut resent = false;
        loop {
            let (conn, handle) = match self.send(&arguments, &ctx).await {
                Ok(sent) => sent,
                Err(output) => return Ok(output),
            };
            let _progress = self
                .source
                .shared
                .watch_progress(handle.progress_token.clone(), ctx.progress().clone());
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
                return Err(ToolError::Cancelled);
            };
            // Answered, failed or timed out (rmcp already told the server): no cancel.
            guard.disarm();
            // rmcp handles each notification in a task spawned before the
            // response that follows it is delivered; yielding once lets a last
            // progress report through before the route is dropped.
            tokio::task::yield_now().await;
            return Ok(match response {
                Ok(ServerResult::CallToolResult(result)) => map_call_result(result),
                Ok(other) => self.error(format!("unexpected response: {other:?}")),
                Err(ServiceError::TransportSend(e)) => match classify(&e) {
                    // Never reached the server, the transport is gone:
                    // reconnect and resend once.
                    Delivery::Never => {
                        conn.mark_broken();
                        if resent {
                            self.error(e)
                        } else {
                            resent = true;
                            continue;
                        }
                    }
                    // It may have run: a second send could run it twice. The
                    // session is kept (a gateway's 502 does not end it); a
                    // dead transport shows on the next send.
                    Delivery::Maybe => self.error(format!(
                        "{e} (the request may have reached the server, so it was not sent again)"
                    )),
                },
                Err(ServiceError::Timeout { timeout }) => self.error(format!("timed out after {timeout:?}")),
                Err(ServiceError::TransportClosed) => {
                    self.error("the connection closed during the call (did the server exit?)")
                }
                Err(ServiceError::McpError(e)) => self.error(e.message),
                Err(e) => self.error(e),
            });
        }
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
