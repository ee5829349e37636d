//! A2A v1.0 over JSON-RPC (`Serve::a2a`, feature `a2a`): each served agent
//! is an A2A agent with its card at `/{name}/.well-known/agent-card.json`
//! and its JSON-RPC endpoint at `POST /{name}` (with one agent served, also
//! at `/.well-known/agent-card.json` and `POST /`). The types are the
//! official `a2a-lf` crate's.
//!
//! The mapping, one rule each: a task is a background run (its id is the
//! run's); a context is a stored session (its id is the session's); a
//! message's text parts are the user's turn; the run's answer is the
//! task's artifact and its status message; a run awaiting approval is
//! `TASK_STATE_INPUT_REQUIRED`, failed `FAILED`, cancelled `CANCELED`.
//!
//! Invariants: every answer is a JSON-RPC response (HTTP 200) with the
//! protocol's error codes for what was wrong (a body that is not JSON
//! -32700, not a request -32600, an unknown method -32601, bad params
//! -32602, a version other than 1.x -32009, a task that is not this
//! agent's -32001); a request that fails checks starts nothing; the card
//! names the address the client reached (its `Host`), so a client behind
//! the same name finds the endpoint.
//!
//! Not yet served (answered -32601 or -32004, naming what is missing):
//! streaming, list, cancel, subscribe, push notifications, v0.3 method
//! names, a message continuing a task.

mod task;

use std::sync::Arc;

use a2a::jsonrpc::{JsonRpcError, JsonRpcId, JsonRpcRequest, JsonRpcResponse};
use a2a::{GetTaskRequest, SendMessageRequest, SendMessageResponse, error_code};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::run::Instance;

/// The protocol version this surface speaks.
const VERSION: &str = "1.0";

/// The routes of one instance.
pub(crate) fn router(instance: Arc<Instance>) -> Router {
    Router::new()
        .route("/.well-known/agent-card.json", get(only_card))
        .route("/", post(only_rpc))
        .route("/{name}/.well-known/agent-card.json", get(card))
        .route("/{name}", post(rpc))
        .with_state(instance)
}

/// The one agent's name, when one agent is served.
fn only(instance: &Instance) -> Option<String> {
    match instance.agents.names().as_slice() {
        [name] => Some(name.clone()),
        _ => None,
    }
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
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let url = format!("http://{host}{path}");
    axum::Json(task::card(served, &url, !instance.keys.is_empty())).into_response()
}

fn not_found(instance: &Instance, path: &str) -> Response {
    let names = instance.agents.names();
    (
        axum::http::StatusCode::NOT_FOUND,
        axum::Json(json!({"error": {"type": "not_found", "message": format!(
            "no agent card at {path}: the agents' cards are at /{{name}}/.well-known/agent-card.json ({})",
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
        Some(name) => answer(&instance, &name, &headers, body).await,
        None => not_found(&instance, "/"),
    }
}

async fn rpc(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(&instance, &name, &headers, body).await
}

/// A JSON-RPC error with the protocol's reason in its data.
fn error(code: i32, message: impl Into<String>) -> JsonRpcError {
    JsonRpcError {
        code,
        message: message.into(),
        data: Some(json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": a2a::error_reason(code),
            "domain": "a2a-protocol.org",
        }])),
    }
}

async fn answer(
    instance: &Arc<Instance>,
    agent: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let (id, outcome) = match request(body) {
        Ok(request) => {
            let id = request.id.clone();
            (id, dispatch(instance, agent, headers, request).await)
        }
        Err((id, e)) => (id, Err(e)),
    };
    let response = match outcome {
        Ok(result) => JsonRpcResponse::success(id, result),
        Err(e) => JsonRpcResponse::error(id, e),
    };
    axum::Json(response).into_response()
}

/// The body as a JSON-RPC request, or the error to answer (with the id,
/// when one could be read).
fn request(body: Result<Bytes, BytesRejection>) -> Result<JsonRpcRequest, (JsonRpcId, JsonRpcError)> {
    let body = body.map_err(|e| (JsonRpcId::Null, error(error_code::INVALID_REQUEST, e.body_text())))?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        (
            JsonRpcId::Null,
            error(error_code::PARSE_ERROR, format!("the body is not JSON: {e}")),
        )
    })?;
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<JsonRpcId>(id.clone()).ok())
        .unwrap_or(JsonRpcId::Null);
    let request: JsonRpcRequest = serde_json::from_value(value).map_err(|e| {
        let message = format!("not a JSON-RPC 2.0 request ({{jsonrpc, id, method, params}}): {e}");
        (id.clone(), error(error_code::INVALID_REQUEST, message))
    })?;
    if request.jsonrpc != "2.0" {
        let message = format!("jsonrpc is {:?}: only \"2.0\" is served", request.jsonrpc);
        return Err((id, error(error_code::INVALID_REQUEST, message)));
    }
    Ok(request)
}

/// The version the request asks for: `A2A-Version`, 0.3 when absent.
fn version(headers: &HeaderMap) -> String {
    headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "0.3".to_owned())
}

async fn dispatch(
    instance: &Arc<Instance>,
    agent: &str,
    headers: &HeaderMap,
    request: JsonRpcRequest,
) -> Result<Value, JsonRpcError> {
    if instance.agents.get(agent).is_none() {
        let message = format!(
            "no agent named {agent:?} is served here (served: {})",
            instance.agents.names().join(", ")
        );
        return Err(error(error_code::INVALID_PARAMS, message));
    }
    let asked = version(headers);
    if !asked.starts_with("1.") {
        let message = format!(
            "A2A-Version {asked}: this agent speaks {VERSION}; send the header `A2A-Version: {VERSION}`"
        );
        return Err(error(error_code::VERSION_NOT_SUPPORTED, message));
    }
    let params = request.params.unwrap_or(Value::Null);
    match request.method.as_str() {
        a2a::jsonrpc::methods::SEND_MESSAGE => {
            let request: SendMessageRequest = parsed(params, "SendMessage")?;
            let task = task::send(instance, agent, request).await?;
            serde_json::to_value(SendMessageResponse::Task(task))
                .map_err(|e| error(error_code::INTERNAL_ERROR, e.to_string()))
        }
        a2a::jsonrpc::methods::GET_TASK => {
            let request: GetTaskRequest = parsed(params, "GetTask")?;
            let task = task::get(instance, agent, &request.id).await?;
            serde_json::to_value(task).map_err(|e| error(error_code::INTERNAL_ERROR, e.to_string()))
        }
        other => Err(error(
            error_code::METHOD_NOT_FOUND,
            format!("method {other:?} is not served here (served: SendMessage, GetTask)"),
        )),
    }
}

fn parsed<T: serde::de::DeserializeOwned>(params: Value, method: &str) -> Result<T, JsonRpcError> {
    serde_json::from_value(params)
        .map_err(|e| error(error_code::INVALID_PARAMS, format!("the params of {method}: {e}")))
}
