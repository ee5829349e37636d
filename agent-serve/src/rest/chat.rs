//! The AI SDK's UI message stream, for `useChat` with `DefaultChatTransport`
//! (the `ai` package): `POST /api/chat` when one agent is served, `POST
//! /api/agents/{name}/chat` for each. The body is what the transport sends
//! (`{id, messages, trigger, messageId?}`, the chat's whole history as UI
//! messages); the answer is the UI message stream (server-sent `data:`
//! chunks, the header `x-vercel-ai-ui-message-stream: v1`, `data: [DONE]`
//! at the end).
//!
//! Invariants: a history the route cannot read (a part type it does not
//! know, a tool part without its output) is a 400 naming the message and
//! the part, before any run starts; every text and reasoning block the
//! stream opens it closes, every step it starts it finishes, and the
//! stream ends with `finish` (its `finishReason` says how the run ended;
//! an answer a guardrail stopped is `content-filter`) or with an `error`
//! chunk, then `[DONE]`, never cut short but by the client.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use loopwright_core::{
    AgentEvent, ContentPart, ExitReason, Message, Role, ToolCall, ToolOutputPart, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{SHAPE, bad};
use crate::error::ApiError;
use crate::run::Instance;
use crate::sse::{closed_or, event_stream};
use loopwright_runs::shared::response_id;

/// What `DefaultChatTransport` posts (other keys, the transport's own
/// `body`, are allowed and ignored).
#[derive(Debug, Deserialize)]
struct ChatRequest {
    /// The chat's id.
    #[serde(default)]
    #[allow(dead_code)]
    id: Option<String>,
    messages: Vec<UiMessage>,
}

#[derive(Debug, Deserialize)]
struct UiMessage {
    #[serde(default)]
    id: String,
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
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
        let messages = history(&request.messages)?;
        let served = instance.agent(&name, SHAPE)?.clone();
        let started = instance.start(&served, messages, |o| o, SHAPE).await?;
        Ok::<_, ApiError>(stream(started))
    }
    .await;
    match result {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// `GET .../chat/{id}/stream`, which `useChat({resume: true})` asks on
/// load: 204, no active stream to resume (chats are not kept by their id
/// yet), which the AI SDK reads as nothing to resume.
pub(super) async fn no_active_stream() -> axum::http::StatusCode {
    axum::http::StatusCode::NO_CONTENT
}

/// The UI messages as the loop's history: user and system text, and each
/// assistant message's steps (text, then its tool calls, then their
/// results as a tool message).
fn history(ui: &[UiMessage]) -> Result<Vec<Message>, ApiError> {
    let mut messages = Vec::new();
    for (i, message) in ui.iter().enumerate() {
        let at = |part: usize| format!("messages[{i}] ({}) parts[{part}]", message.id);
        match message.role.as_str() {
            "user" | "system" => {
                let role = if message.role == "user" {
                    Role::User
                } else {
                    Role::System
                };
                let mut content = Vec::new();
                for (p, part) in message.parts.iter().enumerate() {
                    match kind(part) {
                        "text" => content.push(ContentPart::text(text_of(part))),
                        "step-start" => {}
                        k if k.starts_with("data-") || k.starts_with("source-") => {}
                        other => {
                            return Err(bad(format!(
                                "{}: a {role:?} part of type {other:?} is not supported",
                                at(p)
                            )));
                        }
                    }
                }
                messages.push(Message::new(role, content));
            }
            "assistant" => assistant(&mut messages, message, &at)?,
            other => {
                return Err(bad(format!(
                    "messages[{i}]: unknown role {other:?}: user, assistant or system"
                )));
            }
        }
    }
    if messages.is_empty() {
        return Err(bad("messages is empty"));
    }
    Ok(messages)
}

/// One assistant UI message, as assistant and tool messages, one pair per
/// step.
fn assistant(
    messages: &mut Vec<Message>,
    message: &UiMessage,
    at: &dyn Fn(usize) -> String,
) -> Result<(), ApiError> {
    let mut content: Vec<ContentPart> = Vec::new();
    let mut results: Vec<ContentPart> = Vec::new();
    let mut flush = |content: &mut Vec<ContentPart>, results: &mut Vec<ContentPart>| {
        if !content.is_empty() {
            messages.push(Message::new(Role::Assistant, std::mem::take(content)));
        }
        if !results.is_empty() {
            messages.push(Message::new(Role::Tool, std::mem::take(results)));
        }
    };
    for (p, part) in message.parts.iter().enumerate() {
        match kind(part) {
            "step-start" => flush(&mut content, &mut results),
            "text" => content.push(ContentPart::text(text_of(part))),
            "reasoning" => {}
            k if k.starts_with("data-") || k.starts_with("source-") => {}
            k if k.starts_with("tool-") || k == "dynamic-tool" => {
                let (call, result) = tool_part(part, k).map_err(|why| bad(format!("{}: {why}", at(p))))?;
                content.push(ContentPart::ToolCall(call));
                results.push(ContentPart::ToolResult(result));
            }
            other => {
                return Err(bad(format!(
                    "{}: an assistant part of type {other:?} is not supported",
                    at(p)
                )));
            }
        }
    }
    flush(&mut content, &mut results);
    Ok(())
}

/// A tool part with its output, as its call and result.
fn tool_part(part: &Value, kind: &str) -> Result<(ToolCall, ToolResult), String> {
    let name = match kind {
        "dynamic-tool" => part["toolName"].as_str().unwrap_or_default().to_owned(),
        _ => kind.trim_start_matches("tool-").to_owned(),
    };
    let id = part["toolCallId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or("a tool part without its toolCallId")?;
    let input = part.get("input").cloned().unwrap_or_else(|| json!({}));
    let (output, is_error) = match part["state"].as_str() {
        Some("output-available") => (value_text(&part["output"]), false),
        Some("output-error") => (part["errorText"].as_str().unwrap_or_default().to_owned(), true),
        Some("output-denied") => ("The call was denied.".to_owned(), true),
        state => return Err(format!("tool call {id} has no output yet (state {state:?})")),
    };
    let result = ToolResult {
        call_id: id.to_owned(),
        parts: vec![ToolOutputPart::text(output)],
        is_error,
    };
    Ok((ToolCall::new(id, name, input), result))
}

fn kind(part: &Value) -> &str {
    part["type"].as_str().unwrap_or("(none)")
}

fn text_of(part: &Value) -> String {
    part["text"].as_str().unwrap_or_default().to_owned()
}

/// A tool's output as the model reads it: text as is, other JSON written.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The run's events as UI message chunks.
fn stream(started: crate::run::Started) -> Response {
    let mut response = event_stream(move |tx| async move {
        let mut started = started;
        let mut ui = Chunks::default();
        let start = json!({"type": "start", "messageId": response_id("msg-")});
        if tx.send(chunk(&start)).await.is_err() {
            return;
        }
        loop {
            let Some(next) = closed_or(&tx, started.run.next()).await else {
                return;
            };
            let Some(event) = next else {
                // The events ended without `finished`: the run's task died.
                for c in ui.close() {
                    let _ = tx.send(chunk(&c)).await;
                }
                let error = json!({"type": "error", "errorText": "the run stopped without a result"});
                let _ = tx.send(chunk(&error)).await;
                let _ = tx.send(Event::default().data("[DONE]")).await;
                return;
            };
            let last = matches!(event, AgentEvent::Finished { .. });
            for c in ui.of(&event) {
                if tx.send(chunk(&c)).await.is_err() {
                    return;
                }
            }
            if last {
                let _ = tx.send(Event::default().data("[DONE]")).await;
                return;
            }
        }
    })
    .into_response();
    let headers = response.headers_mut();
    headers.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}

fn chunk(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

/// The blocks open in the stream.
#[derive(Default)]
struct Chunks {
    text: Option<String>,
    reasoning: Option<String>,
    in_step: bool,
    blocks: u32,
}

impl Chunks {
    /// The chunks of one event.
    fn of(&mut self, event: &AgentEvent) -> Vec<Value> {
        match event {
            AgentEvent::StepStarted { .. } => {
                let mut out = self.close();
                self.in_step = true;
                out.push(json!({"type": "start-step"}));
                out
            }
            AgentEvent::TextDelta { text } => self.delta("text", text),
            AgentEvent::ReasoningDelta { text } => self.delta("reasoning", text),
            AgentEvent::ToolCall {
                call_id, tool, input, ..
            } => {
                let mut out = self.close_blocks();
                out.push(json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": tool, "input": input}));
                out
            }
            AgentEvent::ToolResult {
                call_id, is_error, ..
            } => {
                let text = event.tool_result_text().unwrap_or_default();
                vec![if *is_error {
                    json!({"type": "tool-output-error", "toolCallId": call_id, "errorText": text})
                } else {
                    json!({"type": "tool-output-available", "toolCallId": call_id, "output": text})
                }]
            }
            AgentEvent::StepFinished { .. } => self.close(),
            AgentEvent::Finished { exit, error, .. } => {
                let mut out = self.close();
                match (exit, error) {
                    (ExitReason::Completed | ExitReason::Stopped, _) => {}
                    (ExitReason::MaxSteps | ExitReason::TokenLimit | ExitReason::Tripped, _) => {}
                    (_, Some(message)) => out.push(json!({"type": "error", "errorText": message})),
                    (other, None) => {
                        out.push(json!({"type": "error", "errorText": format!("the run ended: {other:?}")}));
                    }
                }
                out.push(json!({"type": "finish", "finishReason": finish_reason(*exit)}));
                out
            }
            _ => Vec::new(),
        }
    }

    /// A text or reasoning delta, opening its block (and closing the other
    /// kind's) when needed.
    fn delta(&mut self, kind: &'static str, delta: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let (mine, other) = if kind == "text" {
            (&mut self.text, &mut self.reasoning)
        } else {
            (&mut self.reasoning, &mut self.text)
        };
        if let Some(id) = other.take() {
            let other_kind = if kind == "text" { "reasoning" } else { "text" };
            out.push(json!({"type": format!("{other_kind}-end"), "id": id}));
        }
        let id = match mine {
            Some(id) => id.clone(),
            None => {
                self.blocks += 1;
                let id = format!("{kind}-{}", self.blocks);
                out.push(json!({"type": format!("{kind}-start"), "id": id}));
                *mine = Some(id.clone());
                id
            }
        };
        out.push(json!({"type": format!("{kind}-delta"), "id": id, "delta": delta}));
        out
    }

    /// The open text and reasoning blocks, ended.
    fn close_blocks(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
        out
    }

    /// The open blocks and the step, ended.
    fn close(&mut self) -> Vec<Value> {
        let mut out = self.close_blocks();
        if std::mem::take(&mut self.in_step) {
            out.push(json!({"type": "finish-step"}));
        }
        out
    }
}

/// The AI SDK's finish reason for how a run ended.
fn finish_reason(exit: ExitReason) -> &'static str {
    match exit {
        ExitReason::Completed | ExitReason::Stopped => "stop",
        ExitReason::MaxSteps | ExitReason::TokenLimit => "length",
        ExitReason::Tripped => "content-filter",
        ExitReason::AwaitingApproval => "other",
        _ => "error",
    }
}
