//! The OpenAI Chat Completions surface: `GET /v1/models` (one model per
//! served agent, its name the id) and `POST /v1/chat/completions`, with and
//! without `stream`; the Responses API beside it ([`crate::responses`]).
//!
//! Invariants:
//! - the request's messages are the conversation: system (and developer)
//!   messages add to the agent's own system prompt, earlier assistant turns
//!   are history; the client's own `tools` run in the client
//!   ([`client`]: a call to one ends the completion with `tool_calls`, and
//!   the client's `tool` messages continue the paused run);
//! - a streamed answer is text deltas (`content`), reasoning deltas
//!   (`reasoning_content`), a final chunk with `finish_reason`, a usage
//!   chunk when `stream_options.include_usage`, then `[DONE]`; a failure
//!   mid-stream is an `error` event the official client raises on, never a
//!   silently short answer;
//! - `response_format: json_schema` (or `json_object`) makes the agent
//!   answer in that schema; the content is then only the JSON.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::error::{ApiError, Kind, Shape};
use crate::run::{Ending, Instance, Piece, Started, Stop, Tokens, collect, ending, unix_now};
use crate::sse::{event_stream, relay};

mod client;
mod request;

use loopwright_runs::shared::response_id;
pub(crate) use request::image_source;

const SHAPE: Shape = Shape::OpenAi;

/// The routes of one instance.
pub(crate) fn router(instance: Arc<Instance>) -> Router {
    let router = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat));
    crate::responses::routes(router).with_state(instance)
}

async fn models(State(instance): State<Arc<Instance>>) -> Response {
    let data: Vec<Value> = instance
        .agents
        .all()
        .iter()
        .map(|a| json!({"id": a.name(), "object": "model", "created": 0, "owned_by": "loopwright-serve"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

async fn chat(State(instance): State<Arc<Instance>>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match crate::error::body_or_error(body, SHAPE) {
        Ok(body) => body,
        Err(error) => return error.into_response(),
    };
    match chat_checked(instance, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn chat_checked(instance: Arc<Instance>, body: Bytes) -> Result<Response, ApiError> {
    crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
    let p = request::prepare(&body)?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let served = instance.agent(&p.model, SHAPE)?.clone();
    let meta = Meta {
        id: response_id("chatcmpl-"),
        created: unix_now(),
        model: p.model.clone(),
    };
    // Client tools, or their results: a stored turn the results continue.
    if !p.results.is_empty() || !p.options.client_tools.is_empty() {
        return client::answer(&instance, p, meta).await;
    }
    let structured = p.structured();
    let options = p.options;
    let started = instance
        .start(&served, p.history, move |o| options.apply(o), SHAPE)
        .await?;
    if p.stream {
        return Ok(stream(started, meta, structured, p.include_usage).into_response());
    }
    let (pieces, result) = collect(started, structured).await;
    let result = result.map_err(|m| ApiError::new(SHAPE, Kind::Upstream, m))?;
    let (stop, output) = match ending(&result) {
        Ending::Answer { stop, output } => (stop, output),
        Ending::Failed(message) => return Err(ApiError::new(SHAPE, Kind::Upstream, message)),
    };
    let answer = Answer {
        pieces,
        output,
        refusal: crate::run::refusal(&result),
        calls: Vec::new(),
        finish: finish_reason(stop),
        usage: Tokens::from(&result.tree_usage),
    };
    Ok(axum::Json(answer.completion(&meta)).into_response())
}

/// A whole answer, as a completion shows it.
struct Answer {
    pieces: Vec<Piece>,
    /// A structured answer's JSON (the content then).
    output: Option<String>,
    refusal: Option<String>,
    /// Client tool calls it ends with.
    calls: Vec<crate::stored_turn::ClientCall>,
    finish: &'static str,
    usage: Tokens,
}

impl Answer {
    /// The `chat.completion` object.
    fn completion(self, meta: &Meta) -> Value {
        let mut content = String::new();
        let mut reasoning = String::new();
        for piece in self.pieces {
            match piece {
                Piece::Text(t) => content.push_str(&t),
                Piece::Reasoning(t) => reasoning.push_str(&t),
            }
        }
        if let Some(json) = self.output {
            content = json;
        }
        // A guardrail's stop: what was shown stands, with the refusal.
        let mut message = json!({"role": "assistant", "content": content, "refusal": self.refusal});
        if !reasoning.is_empty() {
            message["reasoning_content"] = json!(reasoning);
        }
        if !self.calls.is_empty() {
            if content.is_empty() {
                message["content"] = Value::Null;
            }
            message["tool_calls"] = self.calls.iter().map(tool_call).collect();
        }
        json!({
            "id": meta.id,
            "object": "chat.completion",
            "created": meta.created,
            "model": meta.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": self.finish}],
            "usage": usage(&self.usage),
        })
    }
}

/// A client tool call as a message's `tool_calls` entry.
fn tool_call(call: &crate::stored_turn::ClientCall) -> Value {
    json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments.to_string()}})
}

struct Meta {
    id: String,
    created: u64,
    model: String,
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::End => "stop",
        Stop::Length => "length",
        Stop::Refused => "content_filter",
    }
}

fn usage(t: &Tokens) -> Value {
    json!({
        "prompt_tokens": t.input,
        "completion_tokens": t.output,
        "total_tokens": t.input + t.output,
        "prompt_tokens_details": {"cached_tokens": t.cached},
        "completion_tokens_details": {"reasoning_tokens": t.reasoning},
    })
}

fn chunk(meta: &Meta, delta: Value, finish: Option<&str>) -> Event {
    let data = json!({
        "id": meta.id, "object": "chat.completion.chunk", "created": meta.created, "model": meta.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
    });
    Event::default().data(data.to_string())
}

/// The chunk of one piece of the answer.
fn piece_chunk(meta: &Meta, piece: Piece) -> Event {
    let delta = match piece {
        Piece::Text(t) => json!({"content": t}),
        Piece::Reasoning(t) => json!({"reasoning_content": t}),
    };
    chunk(meta, delta, None)
}

/// The first chunk of a streamed answer.
fn first_chunk(meta: &Meta) -> Event {
    chunk(meta, json!({"role": "assistant", "content": ""}), None)
}

/// The streamed answer: chunks as the run goes, then the ending.
fn stream(
    started: Started,
    meta: Meta,
    structured: bool,
    include_usage: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    event_stream(move |tx| async move {
        if tx.send(first_chunk(&meta)).await.is_err() {
            return;
        }
        let render = |piece| vec![piece_chunk(&meta, piece)];
        let Some((result, stop, output)) = relay(started, structured, &tx, render, error_event).await else {
            return;
        };
        let tail = Tail {
            output,
            refusal: crate::run::refusal(&result),
            calls: Vec::new(),
            finish: finish_reason(stop),
            usage: include_usage.then(|| Tokens::from(&result.tree_usage)),
        };
        let tail = tail.events(&meta);
        for e in tail {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    })
}

/// How a streamed answer ends, after its pieces.
struct Tail {
    /// A structured answer's JSON.
    output: Option<String>,
    refusal: Option<String>,
    /// Client tool calls it ends with.
    calls: Vec<crate::stored_turn::ClientCall>,
    finish: &'static str,
    /// The usage chunk's, when asked for.
    usage: Option<Tokens>,
}

impl Tail {
    /// The last chunks: the structured answer, the refusal, the tool
    /// calls, the finish reason, the usage, `[DONE]`.
    fn events(self, meta: &Meta) -> Vec<Event> {
        let mut tail: Vec<Event> = self
            .output
            .map(|json| chunk(meta, json!({"content": json}), None))
            .into_iter()
            .collect();
        if let Some(refusal) = self.refusal {
            tail.push(chunk(meta, json!({"refusal": refusal}), None));
        }
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    let mut call = tool_call(call);
                    call["index"] = json!(index);
                    call
                })
                .collect();
            tail.push(chunk(meta, json!({"tool_calls": calls}), None));
        }
        tail.push(chunk(meta, json!({}), Some(self.finish)));
        if let Some(tokens) = self.usage {
            let data = json!({
                "id": meta.id, "object": "chat.completion.chunk", "created": meta.created, "model": meta.model,
                "choices": [], "usage": usage(&tokens),
            });
            tail.push(Event::default().data(data.to_string()));
        }
        tail.push(Event::default().data("[DONE]"));
        tail
    }
}

/// An error mid-stream, as the official client reads it (it raises
/// `APIError` on an event whose data has `error`).
fn error_event(message: &str) -> Event {
    let error = ApiError::new(SHAPE, Kind::Upstream, message);
    Event::default().data(error.body().to_string())
}
