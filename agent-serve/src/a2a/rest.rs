//! The HTTP+JSON binding (v1.0), under each agent's path (and at the root
//! with one agent served): `POST message:send`, `POST message:stream`,
//! `GET tasks`, `GET tasks/{id}`, `POST tasks/{id}:cancel`,
//! `GET|POST tasks/{id}:subscribe`, `GET extendedAgentCard`; push
//! configurations (`tasks/{id}/pushNotificationConfigs`) refused.
//!
//! Invariants: bodies and answers are the v1.0 ProtoJSON of the same types
//! as JSON-RPC's; an error is its HTTP status with a `google.rpc.Status`
//! body (`{"error": {code, status, message, details}}`) whose `ErrorInfo`
//! gives the A2A reason; a stream is server-sent events, one
//! `StreamResponse` each, an error (as that body) ending it.

use std::collections::HashMap;
use std::sync::Arc;

use a2a::{
    A2AError, CancelTaskRequest, GetTaskRequest, ListTasksRequest, SubscribeToTaskRequest, error_code,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};

use super::ops::{self, Op, Reply};
use crate::run::Instance;

/// The routes, for every agent and, with one served, at the root.
pub(super) fn routes() -> Router<Arc<Instance>> {
    Router::new()
        .route("/message:send", post(only_send))
        .route("/message:stream", post(only_stream))
        .route("/tasks", get(only_list))
        .route("/tasks/{task}", any(only_task))
        .route("/tasks/{task}/{*rest}", any(only_push))
        .route("/extendedAgentCard", get(only_extended))
        .route("/{name}/message:send", post(send))
        .route("/{name}/message:stream", post(stream))
        .route("/{name}/tasks", get(list))
        .route("/{name}/tasks/{task}", any(task))
        .route("/{name}/tasks/{task}/{*rest}", any(push))
        .route("/{name}/extendedAgentCard", get(extended))
}

/// The agent a route names, its card's URL, or the 404 to answer.
fn target(
    instance: &Instance,
    name: Option<String>,
    headers: &HeaderMap,
) -> Result<(String, String), Box<Response>> {
    let (name, path) = match name {
        Some(name) => {
            let path = format!("/{name}");
            (name, path)
        }
        None => match super::only(instance) {
            Some(name) => (name, String::new()),
            None => return Err(Box::new(super::not_found(instance, "/"))),
        },
    };
    if instance.agents.get(&name).is_none() {
        return Err(Box::new(super::not_found(instance, &format!("/{name}"))));
    }
    Ok((name.clone(), super::base_url(headers, &path)))
}

/// Perform `op` once the route's agent and version are checked.
async fn run(
    instance: &Arc<Instance>,
    name: Option<String>,
    headers: &HeaderMap,
    op: Result<Op, A2AError>,
) -> Response {
    let (agent, url) = match target(instance, name, headers) {
        Ok(target) => target,
        Err(response) => return *response,
    };
    if let Some(asked) = headers.get("a2a-version").and_then(|v| v.to_str().ok())
        && !asked.trim().starts_with("1.")
    {
        let message = format!(
            "A2A-Version {asked}: the HTTP+JSON routes speak {} (JSON-RPC also takes 0.3's method names)",
            super::VERSION
        );
        return failure(&A2AError::new(error_code::VERSION_NOT_SUPPORTED, message));
    }
    let op = match op {
        Ok(op) => op,
        Err(e) => return failure(&e),
    };
    match ops::perform(instance, &agent, &url, op).await {
        Ok(Reply::Value(value)) => axum::Json(value).into_response(),
        Ok(Reply::Stream { first, after }) => {
            let instance = instance.clone();
            crate::sse::event_stream(move |tx| async move {
                let (updates_tx, mut updates) = tokio::sync::mpsc::channel(16);
                let relay = ops::stream_to(instance, agent, first, after, updates_tx);
                let forward = async move {
                    while let Some(update) = updates.recv().await {
                        let (data, failed) = match update {
                            Ok(update) => (serde_json::to_string(&update), false),
                            Err(e) => (serde_json::to_string(&status_body(&e)), true),
                        };
                        let mut event = Event::default().data(data.unwrap_or_else(|_| "{}".to_owned()));
                        if failed {
                            event = event.event("error");
                        }
                        if tx.send(event).await.is_err() || failed {
                            break;
                        }
                    }
                };
                futures::future::join(relay, forward).await;
            })
            .into_response()
        }
        Err(e) => failure(&e),
    }
}

/// `e` as its HTTP status and `google.rpc.Status` body.
fn failure(e: &A2AError) -> Response {
    let status = StatusCode::from_u16(e.http_status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(status_body(e))).into_response()
}

fn status_body(e: &A2AError) -> Value {
    let status = match e.code {
        error_code::TASK_NOT_FOUND => "NOT_FOUND",
        error_code::INTERNAL_ERROR => "INTERNAL",
        error_code::METHOD_NOT_FOUND => "UNIMPLEMENTED",
        error_code::INVALID_PARAMS | error_code::INVALID_REQUEST | error_code::PARSE_ERROR => {
            "INVALID_ARGUMENT"
        }
        _ => "FAILED_PRECONDITION",
    };
    json!({"error": {
        "code": e.http_status_code(),
        "status": status,
        "message": e.message,
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": a2a::error_reason(e.code),
            "domain": "a2a-protocol.org",
        }],
    }})
}

/// The body as `T`: -32700 when it is not JSON, -32602 when not a `T`.
fn body_as<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    what: &str,
) -> Result<T, A2AError> {
    let body = body.map_err(|e| A2AError::invalid_request(e.body_text()))?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| A2AError::parse_error(format!("the body is not JSON: {e}")))?;
    super::jsonrpc::parsed(value, what)
}

async fn only_send(s: State<Arc<Instance>>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    run(&s.0, None, &h, body_as(body, "message:send").map(Op::Send)).await
}

async fn send(
    s: State<Arc<Instance>>,
    Path(name): Path<String>,
    h: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    run(&s.0, Some(name), &h, body_as(body, "message:send").map(Op::Send)).await
}

async fn only_stream(s: State<Arc<Instance>>, h: HeaderMap, body: Result<Bytes, BytesRejection>) -> Response {
    run(
        &s.0,
        None,
        &h,
        body_as(body, "message:stream").map(Op::SendStreaming),
    )
    .await
}

async fn stream(
    s: State<Arc<Instance>>,
    Path(name): Path<String>,
    h: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    run(
        &s.0,
        Some(name),
        &h,
        body_as(body, "message:stream").map(Op::SendStreaming),
    )
    .await
}

type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

/// `GET tasks`' query as `ListTasks`' request.
fn list_request(query: Params) -> Result<ListTasksRequest, A2AError> {
    let Query(query) = query.map_err(|e| A2AError::invalid_params(e.body_text()))?;
    let mut request = serde_json::Map::new();
    for (key, value) in query {
        let typed =
            match key.as_str() {
                "contextId" | "status" | "pageToken" | "statusTimestampAfter" | "tenant" => json!(value),
                "pageSize" | "historyLength" => json!(
                    value
                        .parse::<i32>()
                        .map_err(|_| A2AError::invalid_params(format!("{key}={value:?} is not a number")))?
                ),
                "includeArtifacts" => json!(value.parse::<bool>().map_err(|_| A2AError::invalid_params(
                    format!("{key}={value:?} is not true or false")
                ))?),
                other => {
                    return Err(A2AError::invalid_params(format!(
                        "tasks takes contextId, status, pageSize, pageToken, historyLength, \
                     statusTimestampAfter and includeArtifacts, not {other:?}"
                    )));
                }
            };
        request.insert(key, typed);
    }
    super::jsonrpc::parsed(super::jsonrpc::list_params(Value::Object(request)), "tasks")
}

async fn only_list(s: State<Arc<Instance>>, h: HeaderMap, query: Params) -> Response {
    run(&s.0, None, &h, list_request(query).map(Op::List)).await
}

async fn list(s: State<Arc<Instance>>, Path(name): Path<String>, h: HeaderMap, query: Params) -> Response {
    run(&s.0, Some(name), &h, list_request(query).map(Op::List)).await
}

/// `tasks/{id}`, `tasks/{id}:cancel` and `tasks/{id}:subscribe` as their
/// operations.
fn task_op(method: &Method, task: &str) -> Result<Op, A2AError> {
    let (id, action) = match task.rsplit_once(':') {
        Some((id, action)) if !id.is_empty() => (id.to_owned(), action),
        _ => (task.to_owned(), ""),
    };
    match (action, method) {
        ("", &Method::GET) => Ok(Op::Get(GetTaskRequest {
            id,
            history_length: None,
            tenant: None,
        })),
        ("cancel", &Method::POST) => Ok(Op::Cancel(CancelTaskRequest {
            id,
            metadata: None,
            tenant: None,
        })),
        ("subscribe", &Method::GET | &Method::POST) => {
            Ok(Op::Subscribe(SubscribeToTaskRequest { id, tenant: None }))
        }
        _ => Err(A2AError::new(
            error_code::METHOD_NOT_FOUND,
            format!(
                "{method} tasks/{task}: the task routes are GET tasks/{{id}}, POST tasks/{{id}}:cancel \
                 and GET tasks/{{id}}:subscribe"
            ),
        )),
    }
}

async fn only_task(s: State<Arc<Instance>>, method: Method, Path(t): Path<String>, h: HeaderMap) -> Response {
    run(&s.0, None, &h, task_op(&method, &t)).await
}

async fn task(
    s: State<Arc<Instance>>,
    method: Method,
    Path((name, t)): Path<(String, String)>,
    h: HeaderMap,
) -> Response {
    run(&s.0, Some(name), &h, task_op(&method, &t)).await
}

async fn only_push(s: State<Arc<Instance>>, h: HeaderMap) -> Response {
    run(&s.0, None, &h, Ok(Op::Push)).await
}

async fn push(
    s: State<Arc<Instance>>,
    Path((name, _, _)): Path<(String, String, String)>,
    h: HeaderMap,
) -> Response {
    run(&s.0, Some(name), &h, Ok(Op::Push)).await
}

async fn only_extended(s: State<Arc<Instance>>, h: HeaderMap) -> Response {
    run(&s.0, None, &h, Ok(Op::ExtendedCard)).await
}

async fn extended(s: State<Arc<Instance>>, Path(name): Path<String>, h: HeaderMap) -> Response {
    run(&s.0, Some(name), &h, Ok(Op::ExtendedCard)).await
}
