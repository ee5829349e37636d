//! The JSON-RPC binding: `POST /{name}` (and `POST /` with one agent
//! served), v1.0's method names with `A2A-Version: 1.0`, v0.3's
//! (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
//! `tasks/resubscribe`) with no version header or `0.3`.
//!
//! Invariants: every answer is HTTP 200: a JSON-RPC response, or for the
//! streaming methods a server-sent event stream whose every event is one
//! JSON-RPC response (an error ends it); the protocol's codes for what was
//! wrong (a body that is not JSON -32700, not a request -32600, an unknown
//! method -32601, bad params -32602, a version not served -32009); a
//! request that fails checks starts nothing.

use std::sync::Arc;

use a2a::jsonrpc::{JsonRpcId, JsonRpcRequest, JsonRpcResponse, methods};
use a2a::{A2AError, error_code};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::ops::{self, Op, Reply};
use super::{VERSION, v03};
use crate::run::Instance;

/// Which version's names and shapes a request speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V1,
    V03,
}

/// Answer one JSON-RPC request for `agent`.
pub(super) async fn answer(
    instance: &Arc<Instance>,
    agent: &str,
    url: &str,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let request = match request(body) {
        Ok(request) => request,
        Err((id, e)) => return reply(id, Err(e)),
    };
    let id = request.id.clone();
    let (dialect, op) = match parse(headers, request) {
        Ok(parsed) => parsed,
        Err(e) => return reply(id, Err(e)),
    };
    match ops::perform(instance, agent, url, op).await {
        Ok(Reply::Value(value)) => reply(
            id,
            Ok(match dialect {
                Dialect::V1 => value,
                Dialect::V03 => v03::result(value),
            }),
        ),
        Ok(Reply::Stream { first, after }) => {
            let (instance, agent) = (instance.clone(), agent.to_owned());
            crate::sse::event_stream(move |tx| async move {
                let (updates_tx, mut updates) = tokio::sync::mpsc::channel(16);
                let relay = ops::stream_to(instance, agent, first, after, updates_tx);
                let forward = async move {
                    while let Some(update) = updates.recv().await {
                        let result = update.and_then(|u| {
                            let value = serde_json::to_value(&u).map_err(|e| {
                                A2AError::internal(format!("an update could not be written: {e}"))
                            })?;
                            Ok(match dialect {
                                Dialect::V1 => value,
                                Dialect::V03 => v03::update(value),
                            })
                        });
                        let failed = result.is_err();
                        if tx.send(frame(&id, result)).await.is_err() || failed {
                            break;
                        }
                    }
                };
                futures::future::join(relay, forward).await;
            })
            .into_response()
        }
        Err(e) => reply(id, Err(e)),
    }
}

fn response(id: JsonRpcId, result: Result<Value, A2AError>) -> JsonRpcResponse {
    match result {
        Ok(value) => JsonRpcResponse::success(id, value),
        Err(e) => JsonRpcResponse::error(id, e.to_jsonrpc_error()),
    }
}

fn reply(id: JsonRpcId, result: Result<Value, A2AError>) -> Response {
    axum::Json(response(id, result)).into_response()
}

fn frame(id: &JsonRpcId, result: Result<Value, A2AError>) -> Event {
    let response = response(id.clone(), result);
    Event::default().data(serde_json::to_string(&response).unwrap_or_else(|_| "{}".to_owned()))
}

/// The body as a JSON-RPC request, or the error to answer (with the id,
/// when one could be read).
fn request(body: Result<Bytes, BytesRejection>) -> Result<JsonRpcRequest, (JsonRpcId, A2AError)> {
    let body = body.map_err(|e| (JsonRpcId::Null, A2AError::invalid_request(e.body_text())))?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| {
        (
            JsonRpcId::Null,
            A2AError::parse_error(format!("the body is not JSON: {e}")),
        )
    })?;
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<JsonRpcId>(id.clone()).ok())
        .unwrap_or(JsonRpcId::Null);
    let request: JsonRpcRequest = serde_json::from_value(value).map_err(|e| {
        let message = format!("not a JSON-RPC 2.0 request ({{jsonrpc, id, method, params}}): {e}");
        (id.clone(), A2AError::invalid_request(message))
    })?;
    if request.jsonrpc != "2.0" {
        let message = format!("jsonrpc is {:?}: only \"2.0\" is served", request.jsonrpc);
        return Err((id, A2AError::invalid_request(message)));
    }
    Ok(request)
}

/// The version a request asks for: `A2A-Version`, `None` when absent.
fn asked_version(headers: &HeaderMap) -> Option<String> {
    headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The request's operation, in the dialect its method and version header
/// name.
fn parse(headers: &HeaderMap, request: JsonRpcRequest) -> Result<(Dialect, Op), A2AError> {
    let asked = asked_version(headers);
    let params = request.params.unwrap_or(Value::Null);
    if v03::METHODS.contains(&request.method.as_str()) {
        if asked.as_deref().is_some_and(|v| !v.starts_with("0.3")) {
            return Err(version_error(asked.as_deref().unwrap_or_default()));
        }
        return Ok((Dialect::V03, v03::op(&request.method, params)?));
    }
    if !methods::is_valid(&request.method) {
        return Err(A2AError::new(
            error_code::METHOD_NOT_FOUND,
            format!(
                "method {:?} is not an A2A method (v1.0: SendMessage, SendStreamingMessage, GetTask, \
                 ListTasks, CancelTask, SubscribeToTask, GetExtendedAgentCard; v0.3: {})",
                request.method,
                v03::METHODS.join(", ")
            ),
        ));
    }
    let asked = asked.unwrap_or_else(|| "0.3".to_owned());
    if !asked.starts_with("1.") {
        return Err(version_error(&asked));
    }
    Ok((Dialect::V1, op(&request.method, params)?))
}

fn version_error(asked: &str) -> A2AError {
    A2AError::new(
        error_code::VERSION_NOT_SUPPORTED,
        format!(
            "A2A-Version {asked}: this agent speaks {VERSION} (send the header `A2A-Version: {VERSION}`) \
             and 0.3's method names (message/send, ...)"
        ),
    )
}

/// A v1.0 method's operation.
fn op(method: &str, params: Value) -> Result<Op, A2AError> {
    Ok(match method {
        methods::SEND_MESSAGE => Op::Send(parsed(params, method)?),
        methods::SEND_STREAMING_MESSAGE => Op::SendStreaming(parsed(params, method)?),
        methods::GET_TASK => Op::Get(parsed(params, method)?),
        methods::LIST_TASKS => Op::List(parsed(list_params(params), method)?),
        methods::CANCEL_TASK => Op::Cancel(parsed(params, method)?),
        methods::SUBSCRIBE_TO_TASK => Op::Subscribe(parsed(params, method)?),
        methods::GET_EXTENDED_AGENT_CARD => Op::ExtendedCard,
        _ => Op::Push,
    })
}

/// `ListTasks`' params, none meaning `{}`, and a status no version names
/// (`UNRECOGNIZED`, which a client may send for "any") left out.
pub(super) fn list_params(params: Value) -> Value {
    let mut params = if params.is_null() {
        serde_json::json!({})
    } else {
        params
    };
    if let Some(object) = params.as_object_mut()
        && object
            .get("status")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.starts_with("TASK_STATE_"))
    {
        object.remove("status");
    }
    params
}

/// `params` as `method`'s request, or -32602 naming what was wrong.
pub(super) fn parsed<T: serde::de::DeserializeOwned>(params: Value, method: &str) -> Result<T, A2AError> {
    serde_json::from_value(params)
        .map_err(|e| A2AError::invalid_params(format!("the params of {method}: {e}")))
}
