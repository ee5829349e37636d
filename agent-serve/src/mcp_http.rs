//! MCP over streamable HTTP at `/mcp`: rmcp's service, behind the checks
//! it does not make itself.
//!
//! Invariants:
//! - a POST body over the body limit is answered 413, and one that is not
//!   JSON 400, each with a JSON-RPC error (`-32600`, `-32700`) as MCP
//!   clients read them, before rmcp sees the request;
//! - at most `max` sessions are open at once: an `initialize` beyond that is
//!   answered 503 with a JSON-RPC error and `Retry-After`; sessions being
//!   created count from the check on, so a burst of `initialize` calls
//!   never opens more than `max`;
//! - a session without a message for `idle` is closed by rmcp; a client
//!   that comes back gets 404 and initializes again;
//! - a 2026-07-28 client is served statelessly (rmcp: no session, each
//!   request carries its `_meta`), so instances can sit behind a load
//!   balancer without sticky sessions; older clients get the handshake and
//!   a session;
//! - a DELETE that closed a session is answered 204 No Content.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

use crate::limit::RETRY_AFTER_SECS;
use crate::mcp::McpSurface;
use crate::run::Instance;

/// JSON-RPC: the body is not JSON.
const PARSE_ERROR: i64 = -32700;

/// JSON-RPC: the request is not acceptable (here: too large).
const INVALID_REQUEST: i64 = -32600;

/// JSON-RPC, implementation-defined server error: no room for a session.
const SERVER_BUSY: i64 = -32000;

/// The session limits of one instance.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sessions {
    pub(crate) max: usize,
    pub(crate) idle: Duration,
    pub(crate) body_limit: usize,
}

/// The `/mcp` route of one instance.
pub(crate) fn router(instance: Arc<Instance>, sessions: Sessions) -> Router {
    let mut config = StreamableHttpServerConfig::default();
    // The guard checks Host and Origin for every surface alike.
    config = config.disable_allowed_hosts();
    // Open until the runs cut off by a shutdown have answered.
    config.cancellation_token = instance.lifecycle.closed.child_token();
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(sessions.idle);
    let manager = Arc::new(manager);
    let surface = McpSurface { instance };
    let service = StreamableHttpService::new(move || Ok(surface.clone()), manager.clone(), config);
    let gate = Gate {
        manager,
        limits: sessions,
        creating: Arc::new(AtomicUsize::new(0)),
    };
    Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(gate, check))
}

#[derive(Clone)]
struct Gate {
    manager: Arc<LocalSessionManager>,
    limits: Sessions,
    /// `initialize` requests let through whose session may not be in the
    /// manager's map yet.
    creating: Arc<AtomicUsize>,
}

/// Gives its place back when the `initialize` it let through is answered.
struct Creating(Arc<AtomicUsize>);

impl Drop for Creating {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A JSON-RPC error answer with `status`.
fn rpc_error(status: StatusCode, code: i64, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// Whether a message (or a batch) asks to initialize a session.
fn initializes(message: &Value) -> bool {
    match message {
        Value::Array(batch) => batch.iter().any(initializes),
        other => other.get("method").and_then(Value::as_str) == Some("initialize"),
    }
}

async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if request.method() == Method::DELETE {
        let mut response = next.run(request).await;
        // rmcp answers a closed session 202; the official clients take 200
        // or 204 (the Python SDK logs "Session termination failed: 202").
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
        }
        return response;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let limit = gate.limits.body_limit;
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let too_large = crate::error::is_length_limit(&e);
            return if too_large {
                rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    INVALID_REQUEST,
                    format!("the request body is larger than this server reads ({limit} bytes)"),
                )
            } else {
                rpc_error(
                    StatusCode::BAD_REQUEST,
                    PARSE_ERROR,
                    format!("the request body could not be read: {e}"),
                )
            };
        }
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("Parse error: the body is not JSON: {e}"),
            );
        }
    };
    let mut place = None;
    if !parts.headers.contains_key("mcp-session-id") && initializes(&message) {
        let open = gate.manager.sessions.read().await.len();
        let creating = gate.creating.fetch_add(1, Ordering::SeqCst);
        place = Some(Creating(gate.creating.clone()));
        if open + creating >= gate.limits.max {
            let mut response = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_BUSY,
                format!(
                    "this server has {} MCP sessions open, its limit; retry later",
                    gate.limits.max
                ),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
            return response;
        }
    }
    let response = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    drop(place);
    response
}
