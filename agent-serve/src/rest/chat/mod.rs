//! The AI SDK's UI message stream, for `useChat` with `DefaultChatTransport`
//! (the `ai` package): `POST /api/chat` when one agent is served, `POST
//! /api/agents/{name}/chat` for each. The body is what the transport sends
//! (`{id, messages, trigger, messageId?}`, the chat's whole history as UI
//! messages), and optionally `tools`, the client's own tools (an object by
//! name or a list, each with `description` and `inputSchema`); the answer
//! is the UI message stream (server-sent `data:` chunks, the header
//! `x-vercel-ai-ui-message-stream: v1`, `data: [DONE]` at the end).
//!
//! Each turn is a stored run ([`loopwright_runs`]) whose id is the
//! assistant message's, kept in the session of the chat's id (a chat is a
//! session: `GET /v1/sessions/{id}` shows it; once it holds turns, they
//! are the history and the request's last user message the input; a
//! regenerated answer is not kept, the session holding the one it
//! replaces). A turn that needs a person's approval, or a client tool's
//! output, ends its stream with `finish` (`tool-calls`), the run paused in
//! the store; the client's next request, whose last message is that
//! assistant message with the approvals or outputs added, continues the
//! run where it stopped, on any replica, and its stream goes on in the
//! same message (its steps' results first, as the AI SDK expects). A turn
//! goes on when its client leaves: `GET .../chat/{id}/stream` (what
//! `useChat({resume: true})` asks on load) streams the chat's turn in
//! progress from its log's start, on any replica; `POST
//! /v1/runs/{message id}/cancel` stops it.
//!
//! Invariants: a history the route cannot read (a part type it does not
//! know, a tool part without its output) is a 400 naming the message and
//! the part, before any run starts; so is a continued message that leaves
//! a pending call unanswered, or that is not a paused turn of this chat;
//! every text and reasoning block the stream opens it closes, every step
//! it starts it finishes, and the stream ends with `finish` (its
//! `finishReason` says how the run ended; an answer a guardrail stopped is
//! `content-filter`, a pause `tool-calls`) or with an `error` chunk, then
//! `[DONE]`, never cut short but by the client.

mod chunks;
mod decide;
mod follow;
mod history;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use loopwright_core::{Message, ToolDefinition};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{SHAPE, bad};
use crate::error::ApiError;
use crate::run::Instance;
use follow::Followed;
use history::{UiMessage, history};
use loopwright_runs::{RunOptions, RunSpec, view};

/// What `DefaultChatTransport` posts (other keys, the transport's own
/// `body`, are allowed and ignored).
#[derive(Debug, Deserialize)]
struct ChatRequest {
    /// The chat's id.
    #[serde(default)]
    id: String,
    messages: Vec<UiMessage>,
    /// `submit-message` or `regenerate-message`.
    #[serde(default)]
    trigger: Option<String>,
    /// The client's own tools.
    #[serde(default)]
    tools: Option<Value>,
    /// A model the server offers, for this turn instead of the agent's.
    #[serde(default)]
    model: Option<String>,
}

/// `POST /api/chat`: the one agent served.
pub(super) async fn chat_only(
    State(instance): State<Arc<Instance>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let names = instance.agents.names();
    match names.as_slice() {
        [name] => answer(instance.clone(), name.clone(), body).await,
        _ => bad(format!(
            "{} agents are served: post to /api/agents/{{name}}/chat, one of {}",
            names.len(),
            names.join(", ")
        ))
        .into_response(),
    }
}

/// `POST /api/agents/{name}/chat`.
pub(super) async fn chat(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(instance, name, body).await
}

async fn answer(instance: Arc<Instance>, name: String, body: Result<Bytes, BytesRejection>) -> Response {
    let result = async {
        let body = crate::error::body_or_error(body, SHAPE)?;
        crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
        let request: ChatRequest = serde_json::from_slice(&body).map_err(|e| {
            bad(format!(
                "the body must be the AI SDK's chat request ({{id, messages, trigger}}): {e}"
            ))
        })?;
        drop(body);
        super::check_session_id(&request.id).map_err(|_| {
            bad(format!(
                "id {:?}: a chat id is its session's, 1 to 128 letters, digits, '-', '_', '.' or ':'",
                request.id
            ))
        })?;
        instance.agent(&name, SHAPE)?;
        let Some((last, earlier)) = request.messages.split_last() else {
            return Err(bad("messages is empty"));
        };
        // The history is checked whole, whichever way the turn goes.
        let mut messages = history(earlier, 0)?;
        match last.role.as_str() {
            "assistant" => continued(&instance, &request.id, last).await,
            _ => {
                let input = history(std::slice::from_ref(last), earlier.len())?;
                let tools = client_tools(request.tools.as_ref())?;
                let model = request
                    .model
                    .map(|m| instance.models.check(&m, SHAPE))
                    .transpose()?;
                messages.extend(input);
                let regenerate = request.trigger.as_deref() == Some("regenerate-message");
                let turn = Turn {
                    agent: name,
                    chat: &request.id,
                    messages,
                    client_tools: tools,
                    model,
                    keep: !regenerate,
                };
                new_turn(&instance, turn).await
            }
        }
    }
    .await;
    match result {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// A new turn, as the request asks it.
struct Turn<'a> {
    agent: String,
    chat: &'a str,
    /// The request's whole history.
    messages: Vec<Message>,
    client_tools: Vec<ToolDefinition>,
    /// The offered model it runs on, if it picked one.
    model: Option<String>,
    /// Keep the turn in the chat's session (not for a regenerated answer:
    /// the session holds the one it replaces).
    keep: bool,
}

/// A new turn: a stored run, streamed from its start. The chat is the
/// session of the same id: once it holds turns, they are the history and
/// the request's trailing user message the input; until then the
/// request's history is.
async fn new_turn(instance: &Arc<Instance>, turn: Turn<'_>) -> Result<Response, ApiError> {
    let Turn {
        agent,
        chat,
        mut messages,
        client_tools,
        model,
        keep,
    } = turn;
    // The trailing user (or system) messages are the turn's input.
    let split = messages
        .iter()
        .rposition(|m| m.role != loopwright_core::Role::User && m.role != loopwright_core::Role::System)
        .map_or(0, |i| i + 1);
    let input = messages.split_off(split);
    let stored = match instance.runs.store().load_conversation(chat).await {
        Ok(stored) => stored.is_some_and(|c| c.version > 0),
        Err(e) => return Err(ApiError::store(SHAPE, &format!("chat {chat}"), &e)),
    };
    let spec = RunSpec {
        agent,
        input,
        history: if keep && stored { Vec::new() } else { messages },
        session: keep.then(|| chat.to_owned()),
        options: RunOptions {
            client_tools,
            model,
            ..RunOptions::default()
        },
        surface: Some(json!({"chat": chat})),
        ..RunSpec::default()
    };
    let record = instance
        .runs
        .start(instance.clone(), spec)
        .await
        .map_err(|e| ApiError::runs(SHAPE, e))?;
    Ok(follow::stream(Followed {
        store: instance.runs.store().clone(),
        run_id: record.id,
        after: None,
        decided: chunks::Decided::default(),
    }))
}

/// A continued turn: the paused run of `message` decided by its parts,
/// streamed from where it paused.
async fn continued(instance: &Arc<Instance>, chat: &str, message: &UiMessage) -> Result<Response, ApiError> {
    let not_paused = |why: &str| {
        bad(format!(
            "messages: the last message is the assistant's ({}), which is {why}: send the user's message, or \
             answer the pending calls of the chat's paused turn",
            message.id
        ))
    };
    let record = match instance.runs.get(&message.id).await {
        Ok(record) => record,
        Err(loopwright_runs::RunsError::NoSuchRun { .. }) => return Err(not_paused("no run of this server")),
        Err(e) => return Err(ApiError::runs(SHAPE, e)),
    };
    let owner = loopwright_runs::surface(&record).and_then(|s| s["chat"].as_str());
    if owner != Some(chat) {
        return Err(not_paused("a turn of another chat"));
    }
    let shown = view(&record);
    let Some(pending) = shown["pending_approvals"].as_array() else {
        return Err(not_paused(&format!(
            "a turn that is {}, not paused",
            record.status
        )));
    };
    let (decisions, decided) = decide::decisions(message, pending)?;
    let after = shown["next_event"].as_u64().and_then(|n| n.checked_sub(1));
    instance
        .runs
        .decide(instance.clone(), &record.id, &decisions)
        .await
        .map_err(|e| ApiError::runs(SHAPE, e))?;
    Ok(follow::stream(Followed {
        store: instance.runs.store().clone(),
        run_id: record.id,
        after,
        decided,
    }))
}

/// The client's tools of a chat request: an object by name (as the AI
/// SDK's `tools`), or a list of `{name, description, inputSchema}`.
fn client_tools(tools: Option<&Value>) -> Result<Vec<ToolDefinition>, ApiError> {
    let declared = |name: &str, t: &Value| crate::client_tools::Declared {
        name: name.to_owned(),
        description: t["description"].as_str().unwrap_or_default().to_owned(),
        schema: ["inputSchema", "input_schema", "parameters"]
            .iter()
            .find_map(|k| t.get(*k).cloned()),
    };
    let list = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(by_name)) => by_name.iter().map(|(n, t)| declared(n, t)).collect(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|t| declared(t["name"].as_str().unwrap_or_default(), t))
            .collect(),
        Some(_) => {
            return Err(bad(
                "tools: an object of tools by name, or a list of {name, description, inputSchema}",
            ));
        }
    };
    crate::client_tools::definitions(list, "tools").map_err(bad)
}

/// `GET /api/chat/{id}/stream`, which `useChat({resume: true})` asks on
/// load: the stream of the chat's turn in progress, from its start, or
/// 204 when none is (the AI SDK reads it as nothing to resume).
pub(super) async fn resume_only(State(instance): State<Arc<Instance>>, Path(chat): Path<String>) -> Response {
    resume(&instance, None, &chat).await
}

/// `GET /api/agents/{name}/chat/{id}/stream`.
pub(super) async fn resume_of(
    State(instance): State<Arc<Instance>>,
    Path((name, chat)): Path<(String, String)>,
) -> Response {
    resume(&instance, Some(&name), &chat).await
}

async fn resume(instance: &Arc<Instance>, agent: Option<&str>, chat: &str) -> Response {
    if super::check_session_id(chat).is_err() {
        return axum::http::StatusCode::NO_CONTENT.into_response();
    }
    let newest = match instance.runs.store().session_runs(chat, 1).await {
        Ok(mut runs) => runs.pop(),
        Err(e) => return ApiError::store(SHAPE, &format!("chat {chat}"), &e).into_response(),
    };
    let going = newest.filter(|run| {
        run.status == loopwright_store::RunStatus::Running && agent.is_none_or(|name| run.agent == name)
    });
    match going {
        Some(run) => follow::stream(Followed {
            store: instance.runs.store().clone(),
            run_id: run.id,
            after: None,
            decided: chunks::Decided::default(),
        }),
        None => axum::http::StatusCode::NO_CONTENT.into_response(),
    }
}
