//! The REST surface: `POST /v1/agents/{name}` with `{prompt | messages,
//! stream?, session?}` answers the run's result as JSON, or streams the
//! same event JSON as `loopwright --events` over server-sent events;
//! background runs ([`runs`]), sessions ([`sessions`]); what the server
//! holds ([`inspect`]: agents, runs, sessions listed, a tool called);
//! evals run on a served agent (`evals`, feature `ui`);
//! `GET /health`.
//!
//! Invariants: a result answers 200 whatever the run's exit (its `exit`
//! field says how it ended); a request that never ran answers an error
//! `{error: {type, message}}` with its status; a streamed run always ends
//! with its `finished` event unless the client left, or, when the run's
//! task died without one, with an event `{type: "error", error: {type,
//! message}}` (the OpenAI and Anthropic streams end with their own error
//! events alike), never silently.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use loopwright_core::{AgentEvent, Message};
use serde::Deserialize;
use serde_json::json;

use crate::error::{ApiError, Kind, Shape};
use crate::run::Instance;
use crate::sse::{closed_or, event_stream};

mod agui;
mod chat;
#[cfg(feature = "ui")]
mod evals;
mod inspect;
mod runs;
mod sessions;

const SHAPE: Shape = Shape::Plain;

/// The routes of one instance.
pub(crate) fn router(instance: Arc<Instance>) -> Router {
    let router = Router::new();
    #[cfg(feature = "ui")]
    let router = router
        .route("/v1/agents/{name}/evals", post(evals::start))
        .route("/v1/evals", get(evals::list))
        .route("/v1/evals/{id}", get(evals::show));
    router
        .route("/v1/agents", get(inspect::agents))
        .route("/v1/agents/{name}", post(run).get(inspect::agent))
        .route("/v1/agents/{name}/tools/{tool}", post(inspect::call_tool))
        .route("/v1/runs", get(inspect::runs))
        .route("/v1/sessions", get(inspect::sessions))
        .route("/v1/agents/{name}/runs", post(runs::start))
        .route("/v1/runs/{id}", get(runs::show))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/approvals", post(runs::approvals))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route("/v1/sessions/{id}", get(sessions::show).delete(sessions::delete))
        .route("/api/chat", post(chat::chat_only))
        .route("/api/agents/{name}/chat", post(chat::chat))
        .route("/api/chat/{id}/stream", get(chat::resume_only))
        .route("/api/agents/{name}/chat/{id}/stream", get(chat::resume_of))
        .route("/agui", post(agui::agui_only))
        .route("/agui/capabilities", get(agui::capabilities))
        .route("/agui/{name}", post(agui::agui))
        .route("/agui/{name}/capabilities", get(agui::capabilities))
        .route("/health", get(health))
        .with_state(instance)
}

async fn health(State(instance): State<Arc<Instance>>) -> Response {
    axum::Json(json!({
        "status": if instance.lifecycle.stopping.is_cancelled() { "stopping" } else { "ok" },
        "agents": instance.agents.names(),
        "in_flight": instance.limiter.in_flight(),
        "queued": instance.limiter.queued(),
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRequest {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    stream: bool,
    /// A stored conversation to continue (created when new).
    #[serde(default)]
    session: Option<String>,
}

/// The turn's input: `prompt` or `messages`, exactly one.
fn input(prompt: Option<String>, messages: Option<Vec<Message>>) -> Result<Vec<Message>, ApiError> {
    match (prompt, messages) {
        (Some(prompt), None) => Ok(vec![Message::user(prompt)]),
        (None, Some(messages)) if !messages.is_empty() => Ok(messages),
        (None, Some(_)) => Err(bad("messages is empty")),
        (Some(_), Some(_)) => Err(bad("give either prompt or messages, not both")),
        (None, None) => Err(bad("give prompt or messages")),
    }
}

/// A session id as a path segment and store key: 1 to
/// [`MAX_SESSION_ID`] characters of letters, digits, `-`, `_`, `.`, `:`.
pub(crate) fn check_session_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "session {id:?}: a session id is 1 to {MAX_SESSION_ID} letters, digits, '-', '_', '.' or ':'"
        )))
    }
}

/// The longest session id accepted.
const MAX_SESSION_ID: usize = 128;

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

async fn run(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match crate::error::body_or_error(body, SHAPE) {
        Ok(body) => body,
        Err(error) => return error.into_response(),
    };
    match run_checked(instance, name, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn run_checked(instance: Arc<Instance>, name: String, body: Bytes) -> Result<Response, ApiError> {
    crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
    let request: RunRequest = serde_json::from_slice(&body).map_err(|e| {
        bad(format!(
            "the request body must be {{\"prompt\": string}} or {{\"messages\": [...]}}, with an optional \
             \"stream\" and \"session\": {e}"
        ))
    })?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let turn = input(request.prompt, request.messages)?;
    let served = instance.agent(&name, SHAPE)?.clone();
    let session = match &request.session {
        Some(id) => {
            check_session_id(id)?;
            Some(sessions::Turn::load(&instance, id, turn.clone()).await?)
        }
        None => None,
    };
    let messages = match &session {
        Some(session) => session.messages(),
        None => turn,
    };
    let mut started = instance.start(&served, messages, |o| o, SHAPE).await?;
    if !request.stream {
        while started.run.next().await.is_some() {}
        let result = started
            .run
            .await
            .or_else(loopwright_core::RunError::into_result)
            .map_err(|aborted| ApiError::new(SHAPE, Kind::Upstream, format!("the run stopped: {aborted}")))?;
        let mut body = serde_json::to_value(&result).unwrap_or_default();
        if let Some(session) = session {
            body["session"] = json!(session.id);
            if let Some(warning) = session.keep(&instance, &result).await {
                body["warnings"] = json!([warning]);
            }
        }
        return Ok(axum::Json(body).into_response());
    }
    Ok(event_stream(move |tx| async move {
        let mut started = started;
        loop {
            let Some(next) = closed_or(&tx, started.run.next()).await else {
                return;
            };
            let Some(event) = next else {
                // The events ended without `finished`: the run's task died.
                let why = match started.run.await.or_else(loopwright_core::RunError::into_result) {
                    Err(aborted) => format!("the run stopped without a result: {aborted}"),
                    Ok(_) => "the run's events ended before its finished event".to_owned(),
                };
                let _ = tx.send(error_event(&why)).await;
                return;
            };
            let finished = matches!(event, AgentEvent::Finished { .. });
            if finished && let Some(session) = &session {
                // The turn is stored before the client reads `finished`.
                while started.run.next().await.is_some() {}
                if let Ok(result) = started.run.await.or_else(loopwright_core::RunError::into_result)
                    && let Some(warning) = session.keep(&instance, &result).await
                {
                    let _ = tx
                        .send(
                            Event::default().data(json!({"type": "warning", "message": warning}).to_string()),
                        )
                        .await;
                }
                let _ = tx.send(event_data(&event)).await;
                return;
            }
            if tx.send(event_data(&event)).await.is_err() || finished {
                return;
            }
        }
    })
    .into_response())
}

/// An event as the data of a server-sent event.
fn event_data(event: &AgentEvent) -> Event {
    let data = match serde_json::to_string(event) {
        Ok(data) => data,
        Err(e) => {
            json!({"type": "warning", "message": format!("an event could not be written: {e}")}).to_string()
        }
    };
    Event::default().data(data)
}

/// A streamed run's end without `finished`: the error object of this
/// surface's error answers, tagged `type` like every event of the stream.
fn error_event(message: &str) -> Event {
    let mut body = ApiError::new(SHAPE, Kind::Upstream, message).body();
    body["type"] = json!("error");
    Event::default().data(body.to_string())
}
