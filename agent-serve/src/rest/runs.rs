//! Background runs over REST: `POST /v1/agents/{name}/runs` (202 at once),
//! `GET /v1/runs/{id}`, `GET /v1/runs/{id}/events` (server-sent events from
//! the store's event log, resumable with `Last-Event-ID` or `?after=N`),
//! `POST /v1/runs/{id}/approvals`, `POST /v1/runs/{id}/cancel`.
//!
//! Invariant: every answer is read from or written to the store, so any
//! replica sharing it answers alike (see [`loopwright_runs`]).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use loopwright_core::Message;
use loopwright_store::Store;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use super::{SHAPE, bad, check_session_id, input};
use crate::error::ApiError;
use crate::run::Instance;
use crate::sse::event_stream;
use loopwright_runs::shared::new_id;
use loopwright_runs::{Decision, Logged, RunSpec, RunsError, follow, view};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StartRequest {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    session: Option<String>,
    /// Tools the client runs: a call to one pauses the run until its
    /// output comes through the approvals route.
    #[serde(default)]
    tools: Vec<RestTool>,
    /// A model the server offers, instead of the agent's.
    #[serde(default)]
    model: Option<String>,
}

/// A client tool, as REST declares it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RestTool {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    input_schema: Option<serde_json::Value>,
}

/// REST's declared tools, checked.
pub(super) fn client_tools(tools: Vec<RestTool>) -> Result<Vec<loopwright_core::ToolDefinition>, ApiError> {
    let declared = tools
        .into_iter()
        .map(|t| crate::client_tools::Declared {
            name: t.name,
            description: t.description,
            schema: t.input_schema,
        })
        .collect();
    crate::client_tools::definitions(declared, "tools").map_err(bad)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionsRequest {
    decisions: Vec<Decision>,
}

/// `?after=N` of the events route.
#[derive(Debug, Deserialize)]
pub(super) struct After {
    #[serde(default)]
    after: Option<u64>,
}

/// Answer `result`, or its error.
fn answer(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(IntoResponse::into_response)
}

/// A background run's error, as REST answers it.
fn runs_error(error: RunsError) -> ApiError {
    ApiError::runs(SHAPE, error)
}

/// Send `run_id`'s events after `after` to `tx` as server-sent events
/// (`id:` each event's sequence number) until the run finishes or the
/// client leaves.
async fn tail(store: Arc<dyn Store>, run_id: String, after: Option<u64>, tx: mpsc::Sender<Event>) {
    follow(store, run_id, after, tx, |logged| match logged {
        Logged::Event(seq, event) => Event::default().id(seq.to_string()).data(event.to_string()),
        Logged::Unreadable(message) => error_event(&message),
    })
    .await;
}

/// The stream's end when the log cannot be read: the REST error object,
/// tagged `type` like every event.
fn error_event(message: &str) -> Event {
    Event::default()
        .data(json!({"type": "error", "error": {"type": "server_error", "message": message}}).to_string())
}

/// `POST /v1/agents/{name}/runs`.
pub(super) async fn start(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(
        async {
            let body = crate::error::body_or_error(body, SHAPE)?;
            crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
            let request: StartRequest = serde_json::from_slice(&body).map_err(|e| {
                bad(format!(
                    "the request body must be {{\"prompt\": string}} or {{\"messages\": [...]}}, with an optional \
                     \"session\", \"tools\" and \"model\": {e}"
                ))
            })?;
            drop(body);
            let turn = input(request.prompt, request.messages)?;
            let client_tools = client_tools(request.tools)?;
            let model = request.model.map(|m| instance.models.check(&m, SHAPE)).transpose()?;
            let session = match request.session {
                Some(id) => {
                    check_session_id(&id)?;
                    id
                }
                None => new_id("sess_"),
            };
            let spec = RunSpec {
                agent: name,
                input: turn,
                session: Some(session),
                options: loopwright_runs::RunOptions {
                    client_tools,
                    model,
                    ..Default::default()
                },
                ..RunSpec::default()
            };
            let record = instance
                .runs
                .start(instance.clone(), spec)
                .await
                .map_err(runs_error)?;
            Ok((
                StatusCode::ACCEPTED,
                axum::Json(json!({"id": record.id, "session": record.session, "status": record.status})),
            )
                .into_response())
        }
        .await,
    )
}

/// `GET /v1/runs/{id}`.
pub(super) async fn show(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    answer(
        instance
            .runs
            .get(&id)
            .await
            .map(|record| axum::Json(view(&record)).into_response())
            .map_err(runs_error),
    )
}

/// `GET /v1/runs/{id}/events`.
pub(super) async fn events(
    State(instance): State<Arc<Instance>>,
    Path(id): Path<String>,
    Query(query): Query<After>,
    headers: HeaderMap,
) -> Response {
    answer(
        async {
            let last_event_id = match headers.get("last-event-id") {
                Some(value) => Some(
                    value
                        .to_str()
                        .ok()
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .ok_or_else(|| bad("Last-Event-ID must be an event's sequence number"))?,
                ),
                None => None,
            };
            // The run must exist; the events come from the log.
            instance.runs.get(&id).await.map_err(runs_error)?;
            let after = last_event_id.or(query.after);
            let store = instance.runs.store().clone();
            Ok(event_stream(move |tx| tail(store, id, after, tx)).into_response())
        }
        .await,
    )
}

/// `POST /v1/runs/{id}/approvals`.
pub(super) async fn approvals(
    State(instance): State<Arc<Instance>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(
        async {
            let body = crate::error::body_or_error(body, SHAPE)?;
            let request: DecisionsRequest = serde_json::from_slice(&body).map_err(|e| {
                bad(format!(
                    "the request body must be {{\"decisions\": [{{\"call_id\": string, \"approve\": bool, \
                     \"reason\"?: string}} or {{\"call_id\": string, \"output\": any, \"is_error\"?: bool}}]}}: {e}"
                ))
            })?;
            let record = instance
                .runs
                .decide(instance.clone(), &id, &request.decisions)
                .await
                .map_err(runs_error)?;
            Ok(axum::Json(view(&record)).into_response())
        }
        .await,
    )
}

/// `POST /v1/runs/{id}/cancel`.
pub(super) async fn cancel(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    answer(
        instance
            .runs
            .cancel(&id)
            .await
            .map(|record| axum::Json(view(&record)).into_response())
            .map_err(runs_error),
    )
}
