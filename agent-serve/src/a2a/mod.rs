//! A2A (`Serve::a2a`, feature `a2a`): each served agent is an A2A agent,
//! its card at `/{name}/.well-known/agent-card.json`, its JSON-RPC endpoint
//! `POST /{name}` (v1.0, and v0.3's method names) and its HTTP+JSON routes
//! under `/{name}/` (`message:send`, `message:stream`, `tasks`,
//! `tasks/{id}`, `tasks/{id}:cancel`, `tasks/{id}:subscribe`,
//! `extendedAgentCard`). With one agent served, the same at `/`. The
//! protocol's types are the official `a2a-lf` crate's.
//!
//! The mapping, one rule each: a task is a background run (its id is the
//! run's); a context is a stored session (its id is the session's); a
//! message's text and data parts are the user's turn; a run awaiting
//! approval is `input-required`, its status message listing the calls in a
//! data part, answered by the client's next message for the task (a data
//! part `{"approve": true}`, or `{"decisions": [...]}` per call); a
//! guardrail's stop is `rejected`; the answer is the `answer` artifact and
//! a structured answer the `output` artifact (a data part); a cancelled run
//! is `canceled`. Push notifications are refused (-32003): follow a task by
//! streaming instead.
//!
//! Invariants: a request that fails checks starts nothing; a task is only
//! reachable through its own agent; any replica answers for any task (all
//! of it is read from the store); the card names the address the client
//! reached (its `Host`), so a client behind the same name finds the
//! endpoints.

mod card;
mod jsonrpc;
mod ops;
mod rest;
mod stream;
mod task;
mod v03;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::run::Instance;

/// The protocol version this surface speaks first.
const VERSION: &str = "1.0";

/// The routes of one instance.
pub(crate) fn router(instance: Arc<Instance>) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(only_card))
        .route("/", post(only_rpc))
        .route("/{name}/.well-known/agent-card.json", get(card))
        .route("/{name}", post(rpc))
        .merge(rest::routes())
        .with_state(instance)
}

/// The one agent's name, when one agent is served.
fn only(instance: &Instance) -> Option<String> {
    match instance.agents.names().as_slice() {
        [name] => Some(name.clone()),
        _ => None,
    }
}

/// The address of agent `path` (`""` for the only one) as the client
/// reached it.
fn base_url(headers: &HeaderMap, path: &str) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}{path}")
}

async fn only_card(State(instance): State<Arc<Instance>>, headers: HeaderMap) -> Response {
    match only(&instance) {
        Some(name) => card_of(&instance, &name, &headers, ""),
        None => not_found(&instance, "/.well-known/agent-card.json"),
    }
}

async fn card(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/{name}");
    card_of(&instance, &name, &headers, &path)
}

fn card_of(instance: &Instance, name: &str, headers: &HeaderMap, path: &str) -> Response {
    let Some(served) = instance.agents.get(name) else {
        return not_found(instance, &format!("/{name}/.well-known/agent-card.json"));
    };
    let url = base_url(headers, path);
    let card = card::card(served, &url, !instance.keys.is_empty(), None);
    // A v1.0 client says so; one that does not may be a v0.3 client, which
    // reads the card's older fields beside the new ones.
    let current = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().starts_with("1."));
    if current {
        axum::Json(card).into_response()
    } else {
        axum::Json(card::hybrid(&card, &url)).into_response()
    }
}

/// 404 naming where the agents are.
fn not_found(instance: &Instance, path: &str) -> Response {
    let names = instance.agents.names();
    (
        axum::http::StatusCode::NOT_FOUND,
        axum::Json(json!({"error": {"type": "not_found", "message": format!(
            "no agent at {path}: the agents' cards are at /{{name}}/.well-known/agent-card.json ({})",
            names.join(", ")
        )}})),
    )
        .into_response()
}

async fn only_rpc(
    State(instance): State<Arc<Instance>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match only(&instance) {
        Some(name) => {
            let url = base_url(&headers, "");
            jsonrpc::answer(&instance, &name, &url, &headers, body).await
        }
        None => not_found(&instance, "/"),
    }
}

async fn rpc(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if instance.agents.get(&name).is_none() {
        return not_found(&instance, &format!("/{name}"));
    }
    let url = base_url(&headers, &format!("/{name}"));
    jsonrpc::answer(&instance, &name, &url, &headers, body).await
}
