//! The Anthropic Messages surface: `GET /v1/models` and `POST /v1/messages`,
//! with and without `stream`.
//!
//! Invariants:
//! - `system` adds to the agent's own system prompt; earlier assistant
//!   turns are history, their `tool_use` blocks and the `tool_result`
//!   blocks answering them the calls and results the model reads; the
//!   client's own `tools` run in the client ([`client`]: a call to one
//!   ends the message with `tool_use`, `stop_reason: "tool_use"`, and the
//!   client's `tool_result` blocks continue the paused run);
//! - a streamed answer is the named events the official SDK expects:
//!   `message_start`, `ping`, per block `content_block_start` /
//!   `content_block_delta` (`text_delta`, `thinking_delta`) /
//!   `content_block_stop`, `message_delta` with `stop_reason` and usage,
//!   `message_stop`; a failure mid-stream is an `error` event, which the
//!   SDK raises on;
//! - `output_config.format` (`json_schema`) makes the agent answer in that
//!   schema; the answer is then one text block holding only the JSON.

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
use crate::run::{Ending, Instance, Piece, Started, Stop, Tokens, collect, ending, push_merged};
use crate::sse::{event_stream, relay};
use loopwright_runs::shared::response_id;

mod client;
mod request;

const SHAPE: Shape = Shape::Anthropic;

/// The routes of one instance.
pub(crate) fn router(instance: Arc<Instance>) -> Router {
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/messages", post(messages))
        .with_state(instance)
}

async fn models(State(instance): State<Arc<Instance>>) -> Response {
    let data: Vec<Value> = instance
        .agents
        .all()
        .iter()
        .map(|a| {
            json!({"type": "model", "id": a.name(), "display_name": a.name(), "created_at": "1970-01-01T00:00:00Z"})
        })
        .collect();
    let (first, last) = (
        data.first().map(|m| m["id"].clone()),
        data.last().map(|m| m["id"].clone()),
    );
    axum::Json(json!({"data": data, "has_more": false, "first_id": first, "last_id": last})).into_response()
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

async fn messages(State(instance): State<Arc<Instance>>, body: Result<Bytes, BytesRejection>) -> Response {
    let body = match crate::error::body_or_error(body, SHAPE) {
        Ok(body) => body,
        Err(error) => return error.into_response(),
    };
    match messages_checked(instance, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn messages_checked(instance: Arc<Instance>, body: Bytes) -> Result<Response, ApiError> {
    crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
    let p = request::prepare(&body)?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let served = instance.agent(&p.model, SHAPE)?.clone();
    let id = response_id("msg_");
    // Client tools, or their results: a stored turn the results continue.
    if !p.results.is_empty() || !p.options.client_tools.is_empty() {
        return client::answer(&instance, p, id).await;
    }
    let structured = p.structured();
    let options = p.options;
    let started = instance
        .start(&served, p.history, move |o| options.apply(o), SHAPE)
        .await?;
    let model = p.model;
    if p.stream {
        return Ok(stream(started, id, model, structured).into_response());
    }
    let (pieces, result) = collect(started, structured).await;
    let result = result.map_err(|m| ApiError::new(SHAPE, Kind::Upstream, m))?;
    let (stop, output) = match ending(&result) {
        Ending::Answer { stop, output } => (stop, output),
        Ending::Failed(message) => return Err(ApiError::new(SHAPE, Kind::Upstream, message)),
    };
    let answer = Whole {
        pieces,
        output,
        calls: Vec::new(),
        stop: stop_reason(stop),
        usage: Tokens::from(&result.tree_usage),
    };
    Ok(axum::Json(answer.message(&id, &model)).into_response())
}

/// A whole answer, as a message shows it.
struct Whole {
    pieces: Vec<Piece>,
    /// A structured answer's JSON (one more text block).
    output: Option<String>,
    /// The client tool calls it ends with.
    calls: Vec<crate::stored_turn::ClientCall>,
    stop: &'static str,
    usage: Tokens,
}

impl Whole {
    /// The `message` object.
    fn message(mut self, id: &str, model: &str) -> Value {
        if let Some(json) = self.output {
            push_merged(&mut self.pieces, Piece::Text(json));
        }
        let mut content: Vec<Value> = self
            .pieces
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(text) => json!({"type": "text", "text": text}),
                Piece::Reasoning(thinking) => {
                    json!({"type": "thinking", "thinking": thinking, "signature": ""})
                }
            })
            .collect();
        content.extend(
            self.calls
                .iter()
                .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})),
        );
        json!({
            "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": self.stop, "stop_sequence": null, "usage": usage(&self.usage),
        })
    }
}

fn stop_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::End => "end_turn",
        Stop::Length => "max_tokens",
        Stop::Refused => "refusal",
    }
}

fn usage(t: &Tokens) -> Value {
    json!({
        "input_tokens": t.input.saturating_sub(t.cached),
        "output_tokens": t.output,
        "cache_read_input_tokens": t.cached,
        "cache_creation_input_tokens": t.cache_write,
    })
}

fn event(name: &str, data: Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

/// The open content block of a stream.
struct Blocks {
    index: usize,
    open: Option<&'static str>,
}

impl Blocks {
    /// Events that put `piece` on the stream: a new block when its kind
    /// differs from the open one.
    fn piece(&mut self, piece: Piece) -> Vec<Event> {
        let (kind, delta) = match piece {
            Piece::Text(text) => ("text", json!({"type": "text_delta", "text": text})),
            Piece::Reasoning(thinking) => (
                "thinking",
                json!({"type": "thinking_delta", "thinking": thinking}),
            ),
        };
        let mut out = Vec::new();
        if self.open != Some(kind) {
            out.extend(self.close());
            let block = match kind {
                "text" => json!({"type": "text", "text": ""}),
                _ => json!({"type": "thinking", "thinking": "", "signature": ""}),
            };
            out.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": self.index, "content_block": block}),
            ));
            self.open = Some(kind);
        }
        out.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": self.index, "delta": delta}),
        ));
        out
    }

    /// A client tool call's block: its id, name, then its input whole.
    fn tool_use(&mut self, call: &crate::stored_turn::ClientCall) -> Vec<Event> {
        let index = self.index;
        self.index += 1;
        vec![
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": call.arguments.to_string()}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ),
        ]
    }

    fn close(&mut self) -> Option<Event> {
        self.open.take()?;
        let stop = event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": self.index}),
        );
        self.index += 1;
        Some(stop)
    }
}

/// The stream's first events.
fn start_events(id: &str, model: &str) -> [Event; 2] {
    let start = json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }});
    [
        event("message_start", start),
        event("ping", json!({"type": "ping"})),
    ]
}

/// The stream's last events, after the pieces: the structured answer,
/// the client's tool calls, `message_delta`, `message_stop`.
fn end_events(blocks: &mut Blocks, whole: Whole) -> Vec<Event> {
    let mut tail: Vec<Event> = whole
        .output
        .map(|json| blocks.piece(Piece::Text(json)))
        .unwrap_or_default();
    tail.extend(blocks.close());
    for call in &whole.calls {
        tail.extend(blocks.tool_use(call));
    }
    tail.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": whole.stop, "stop_sequence": null},
            "usage": usage(&whole.usage)}),
    ));
    tail.push(event("message_stop", json!({"type": "message_stop"})));
    tail
}

fn stream(
    started: Started,
    id: String,
    model: String,
    structured: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    event_stream(move |tx| async move {
        let mut blocks = Blocks { index: 0, open: None };
        for e in start_events(&id, &model) {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        let relayed = relay(started, structured, &tx, |piece| blocks.piece(piece), error_event).await;
        let Some((result, stop, output)) = relayed else {
            return;
        };
        let whole = Whole {
            pieces: Vec::new(),
            output,
            calls: Vec::new(),
            stop: stop_reason(stop),
            usage: Tokens::from(&result.tree_usage),
        };
        for e in end_events(&mut blocks, whole) {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    })
}

/// An error mid-stream: the SDK raises on the `error` event.
fn error_event(message: &str) -> Event {
    let error = ApiError::new(SHAPE, Kind::Upstream, message);
    event("error", error.body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_open_and_close_by_kind() {
        let mut b = Blocks { index: 0, open: None };
        assert_eq!(b.piece(Piece::Reasoning("a".into())).len(), 2);
        assert_eq!(b.piece(Piece::Reasoning("b".into())).len(), 1);
        assert_eq!(b.piece(Piece::Text("c".into())).len(), 3);
        assert!(b.close().is_some());
        assert!(b.close().is_none());
        assert_eq!(b.index, 2);
    }
}
