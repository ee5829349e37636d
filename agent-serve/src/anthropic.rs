//! The Anthropic Messages surface: `GET /v1/models` and `POST /v1/messages`,
//! with and without `stream`.
//!
//! Invariants:
//! - `system` adds to the agent's own system prompt; earlier assistant
//!   turns are history; client `tools` (and `tool_use` / `tool_result`
//!   blocks) are refused with a 400 naming them;
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
use loopwright_core::{ContentPart, Message, OutputSpec, Role, message::ImageSource};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, Kind, Shape};
use crate::run::{Ending, Instance, Piece, Started, Stop, Tokens, collect, ending, push_merged};
use crate::sse::{event_stream, relay};
use loopwright_runs::shared::{add_system, response_id};

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

#[derive(Debug, Deserialize)]
struct MessagesRequest {
    model: String,
    messages: Vec<InMessage>,
    #[serde(default)]
    system: Option<Value>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    output_config: Option<Value>,
    /// The beta spelling of `output_config.format`.
    #[serde(default)]
    output_format: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct InMessage {
    role: String,
    content: Value,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

fn blocks(index: usize, content: &Value) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        Value::String(text) => Ok(vec![ContentPart::text(text.clone())]),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (j, block) in blocks.iter().enumerate() {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parts.push(ContentPart::text(block["text"].as_str().unwrap_or_default())),
                    Some("image") => parts.push(ContentPart::Image {
                        image: image(&block["source"]).ok_or_else(|| {
                            bad(format!(
                                "messages[{index}].content[{j}].source must be base64 or url"
                            ))
                        })?,
                    }),
                    // Earlier reasoning is the served agent's own business.
                    Some("thinking" | "redacted_thinking") => {}
                    Some(kind @ ("tool_use" | "tool_result" | "server_tool_use")) => {
                        return Err(bad(format!(
                            "messages[{index}].content[{j}] is a {kind} block: client-side tools are not supported \
                             by this server (the agent runs its own tools)"
                        )));
                    }
                    other => {
                        return Err(bad(format!(
                            "messages[{index}].content[{j}] has type {other:?}; supported: text, image"
                        )));
                    }
                }
            }
            Ok(parts)
        }
        _ => Err(bad(format!(
            "messages[{index}].content must be a string or an array of blocks"
        ))),
    }
}

fn image(source: &Value) -> Option<ImageSource> {
    match source.get("type").and_then(Value::as_str)? {
        "base64" => Some(ImageSource::Base64 {
            media_type: source["media_type"].as_str()?.to_owned(),
            data: source["data"].as_str()?.to_owned(),
        }),
        "url" => Some(ImageSource::Url {
            url: source["url"].as_str()?.to_owned(),
        }),
        _ => None,
    }
}

fn system_texts(system: Option<&Value>) -> Result<Vec<String>, ApiError> {
    match system {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect()),
        Some(_) => Err(bad("system must be a string or an array of text blocks")),
    }
}

fn output_spec(request: &MessagesRequest) -> Result<Option<OutputSpec>, ApiError> {
    let format = request
        .output_config
        .as_ref()
        .and_then(|c| c.get("format"))
        .or(request.output_format.as_ref());
    let Some(format) = format.filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = format
                .get("schema")
                .cloned()
                .ok_or_else(|| bad("output_config.format.schema is missing"))?;
            OutputSpec::from_schema("output", schema)
                .map(Some)
                .map_err(|e| bad(format!("output_config.format.schema: {e}")))
        }
        other => Err(bad(format!(
            "output_config.format.type {other:?} is not supported; use json_schema"
        ))),
    }
}

struct Prepared {
    request: MessagesRequest,
    history: Vec<Message>,
    system: Vec<String>,
    output: Option<OutputSpec>,
}

fn prepare(body: &Bytes) -> Result<Prepared, ApiError> {
    let request: MessagesRequest = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not a valid messages request: {e}")))?;
    if let Some(tools) = request.tools.as_ref().filter(|t| !t.is_empty()) {
        return Err(bad(format!(
            "tools: client-side tools are not supported: this model is an agent that runs its own tools ({} \
             sent); send the request without them",
            tools.len()
        )));
    }
    let mut history = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(bad(format!(
                    "messages[{i}].role {other:?} must be user or assistant"
                )));
            }
        };
        history.push(Message::new(role, blocks(i, &m.content)?));
    }
    if !matches!(history.last().map(|m| m.role), Some(Role::User)) {
        return Err(bad("the last message must be a user message"));
    }
    Ok(Prepared {
        system: system_texts(request.system.as_ref())?,
        output: output_spec(&request)?,
        history,
        request,
    })
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
    let p = prepare(&body)?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let served = instance.agent(&p.request.model, SHAPE)?.clone();
    let structured = p.output.is_some();
    let (system, output) = (p.system, p.output);
    let (temperature, top_p, max_tokens) = (p.request.temperature, p.request.top_p, p.request.max_tokens);
    let started = instance
        .start(
            &served,
            p.history,
            move |mut o| {
                o = add_system(o, &system);
                if output.is_some() {
                    o.output = output;
                }
                if temperature.is_some() {
                    o.temperature = temperature;
                }
                if top_p.is_some() {
                    o.top_p = top_p;
                }
                if max_tokens.is_some() {
                    o.max_output_tokens = max_tokens;
                }
                o
            },
            SHAPE,
        )
        .await?;
    let id = response_id("msg_");
    let model = p.request.model;
    if p.request.stream {
        return Ok(stream(started, id, model, structured).into_response());
    }
    let (mut pieces, result) = collect(started, structured).await;
    let result = result.map_err(|m| ApiError::new(SHAPE, Kind::Upstream, m))?;
    let (stop, output) = match ending(&result) {
        Ending::Answer { stop, output } => (stop, output),
        Ending::Failed(message) => return Err(ApiError::new(SHAPE, Kind::Upstream, message)),
    };
    if let Some(json) = output {
        push_merged(&mut pieces, Piece::Text(json));
    }
    let content: Vec<Value> = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => json!({"type": "text", "text": text}),
            Piece::Reasoning(thinking) => json!({"type": "thinking", "thinking": thinking, "signature": ""}),
        })
        .collect();
    Ok(axum::Json(json!({
        "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
        "stop_reason": stop_reason(stop), "stop_sequence": null,
        "usage": usage(&Tokens::from(&result.tree_usage)),
    }))
    .into_response())
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

fn stream(
    started: Started,
    id: String,
    model: String,
    structured: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    event_stream(move |tx| async move {
        let mut blocks = Blocks { index: 0, open: None };
        let start = json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }});
        for e in [
            event("message_start", start),
            event("ping", json!({"type": "ping"})),
        ] {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        let relayed = relay(started, structured, &tx, |piece| blocks.piece(piece), error_event).await;
        let Some((result, stop, output)) = relayed else {
            return;
        };
        let mut tail: Vec<Event> = output
            .map(|json| blocks.piece(Piece::Text(json)))
            .unwrap_or_default();
        tail.extend(blocks.close());
        tail.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(stop), "stop_sequence": null},
                "usage": usage(&Tokens::from(&result.tree_usage))}),
        ));
        tail.push(event("message_stop", json!({"type": "message_stop"})));
        for e in tail {
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
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn prepared(body: Value) -> Result<Prepared, ApiError> {
        prepare(&Bytes::from(body.to_string()))
    }

    #[test]
    fn system_blocks_history_and_refusals() {
        let p = prepared(json!({"model": "a", "max_tokens": 100, "system": [{"type": "text", "text": "Be brief."}],
            "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "text", "text": "Hello"}]},
                         {"role": "user", "content": "Again"}]}))
        .ok()
        .unwrap();
        assert_eq!(p.system, ["Be brief."]);
        assert_eq!(p.history[1].text(), "Hello");
        let e = prepared(
            json!({"model": "a", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "t", "input_schema": {}}]}),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("client-side tools"), "{}", e.message);
        assert_eq!(e.body()["error"]["type"], "invalid_request_error");
        let e = prepared(json!({"model": "a", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]})).err().unwrap();
        assert!(
            e.message.contains("messages[0].content[0] is a tool_result"),
            "{}",
            e.message
        );
    }

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
