//! The OpenAI Chat Completions surface: `GET /v1/models` (one model per
//! served agent, its name the id) and `POST /v1/chat/completions`, with and
//! without `stream`; the Responses API beside it ([`crate::responses`]).
//!
//! Invariants:
//! - the request's messages are the conversation: system (and developer)
//!   messages add to the agent's own system prompt, earlier assistant turns
//!   are history; client-side `tools` are refused with a 400 naming them;
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
use loopwright_core::{ContentPart, Message, OutputSpec, Role, message::ImageSource};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, Kind, Shape};
use crate::run::{Ending, Instance, Piece, Started, Stop, Tokens, collect, ending, unix_now};
use crate::sse::{event_stream, relay};
use loopwright_runs::shared::response_id;

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

#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    response_format: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    functions: Option<Vec<Value>>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

/// The 400 for a request with `tools` (`count` of them): the agent runs
/// its own tools, a client's cannot be called.
pub(crate) fn client_tools_refused(count: usize) -> ApiError {
    bad(format!(
        "`tools` is not supported: this model is an agent that runs its own tools ({count} client tool(s) sent); \
         send the request without them"
    ))
}

/// The text and images of a message's `content` (a string or parts).
fn content_parts(index: usize, content: Option<&Value>) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![ContentPart::text(text.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, part)| match part.get("type").and_then(Value::as_str) {
                Some("text") => Ok(ContentPart::text(part["text"].as_str().unwrap_or_default())),
                Some("image_url") => {
                    let url = part["image_url"]["url"].as_str().ok_or_else(|| {
                        bad(format!("messages[{index}].content[{j}].image_url.url is missing"))
                    })?;
                    Ok(ContentPart::Image {
                        image: image_source(url),
                    })
                }
                other => Err(bad(format!(
                    "messages[{index}].content[{j}] has type {other:?}; supported: text, image_url"
                ))),
            })
            .collect(),
        Some(_) => Err(bad(format!(
            "messages[{index}].content must be a string or an array of parts"
        ))),
    }
}

/// A `data:` URL as inline bytes, any other URL as is.
pub(crate) fn image_source(url: &str) -> ImageSource {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
        && let Some(media_type) = meta.strip_suffix(";base64")
    {
        return ImageSource::Base64 {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
        };
    }
    ImageSource::Url { url: url.to_owned() }
}

/// The conversation and the extra system text of a request.
fn conversation(messages: &[ChatMessage]) -> Result<(Vec<Message>, Vec<String>), ApiError> {
    let mut history = Vec::new();
    let mut system = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let parts = content_parts(i, m.content.as_ref())?;
        match m.role.as_str() {
            "system" | "developer" => system.push(Message::new(Role::System, parts).text()),
            "user" => history.push(Message::new(Role::User, parts)),
            "assistant" if m.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) => {
                return Err(bad(format!(
                    "messages[{i}] is an assistant message with tool_calls: client-side tools are not supported \
                     by this server (the agent runs its own tools); send the conversation's text only"
                )));
            }
            "assistant" => history.push(Message::new(Role::Assistant, parts)),
            "tool" | "function" => {
                return Err(bad(format!(
                    "messages[{i}] has role {:?}: client-side tools are not supported by this server",
                    m.role
                )));
            }
            other => return Err(bad(format!("messages[{i}] has an unknown role {other:?}"))),
        }
    }
    if !matches!(history.last().map(|m| m.role), Some(Role::User)) {
        return Err(bad("the last message must be a user message"));
    }
    Ok((history, system))
}

/// The output spec `response_format` asks for.
fn output_spec(format: Option<&Value>) -> Result<Option<OutputSpec>, ApiError> {
    let Some(format) = format else { return Ok(None) };
    match format.get("type").and_then(Value::as_str) {
        None | Some("text") => Ok(None),
        Some("json_object") => OutputSpec::from_schema("json_object", json!({"type": "object"}))
            .map(Some)
            .map_err(|e| bad(format!("response_format: {e}"))),
        Some("json_schema") => {
            let spec = &format["json_schema"];
            let name = spec.get("name").and_then(Value::as_str).unwrap_or("response");
            let schema = spec
                .get("schema")
                .cloned()
                .ok_or_else(|| bad("response_format.json_schema.schema is missing"))?;
            OutputSpec::from_schema(name, schema)
                .map(Some)
                .map_err(|e| bad(format!("response_format.json_schema.schema: {e}")))
        }
        Some(other) => Err(bad(format!(
            "response_format.type {other:?} is not supported; use text, json_object or json_schema"
        ))),
    }
}

/// What a request asks of a run, checked.
struct Prepared {
    model: String,
    history: Vec<Message>,
    system: Vec<String>,
    output: Option<OutputSpec>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    max_tokens: Option<u32>,
    stream: bool,
    include_usage: bool,
}

fn prepare(body: &Bytes) -> Result<Prepared, ApiError> {
    let request: ChatRequest = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not a valid chat request: {e}")))?;
    let tools = request.tools.as_ref().map_or(0, Vec::len) + request.functions.as_ref().map_or(0, Vec::len);
    if tools > 0 {
        return Err(client_tools_refused(tools));
    }
    let (history, system) = conversation(&request.messages)?;
    Ok(Prepared {
        output: output_spec(request.response_format.as_ref())?,
        model: request.model,
        history,
        system,
        temperature: request.temperature,
        top_p: request.top_p,
        max_tokens: request.max_completion_tokens.or(request.max_tokens),
        stream: request.stream,
        include_usage: request.stream_options.is_some_and(|o| o.include_usage),
    })
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
    let p = prepare(&body)?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let served = instance.agent(&p.model, SHAPE)?.clone();
    let structured = p.output.is_some();
    let (system, output, temperature, top_p, max_tokens) =
        (p.system, p.output, p.temperature, p.top_p, p.max_tokens);
    let started = instance
        .start(
            &served,
            p.history,
            move |mut o| {
                o = loopwright_runs::shared::add_system(o, &system);
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
    let meta = Meta {
        id: response_id("chatcmpl-"),
        created: unix_now(),
        model: p.model,
    };
    if p.stream {
        return Ok(stream(started, meta, structured, p.include_usage).into_response());
    }
    let (pieces, result) = collect(started, structured).await;
    let result = result.map_err(|m| ApiError::new(SHAPE, Kind::Upstream, m))?;
    let (stop, output) = match ending(&result) {
        Ending::Answer { stop, output } => (stop, output),
        Ending::Failed(message) => return Err(ApiError::new(SHAPE, Kind::Upstream, message)),
    };
    let mut content = String::new();
    let mut reasoning = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => content.push_str(&t),
            Piece::Reasoning(t) => reasoning.push_str(&t),
        }
    }
    if let Some(json) = output {
        content = json;
    }
    // A guardrail's stop: what was shown stands, with the refusal.
    let refusal = crate::run::refusal(&result);
    let mut message = json!({"role": "assistant", "content": content, "refusal": refusal});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    Ok(axum::Json(json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(stop)}],
        "usage": usage(&Tokens::from(&result.tree_usage)),
    }))
    .into_response())
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

/// The streamed answer: chunks as the run goes, then the ending.
fn stream(
    started: Started,
    meta: Meta,
    structured: bool,
    include_usage: bool,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    event_stream(move |tx| async move {
        if tx
            .send(chunk(&meta, json!({"role": "assistant", "content": ""}), None))
            .await
            .is_err()
        {
            return;
        }
        let render = |piece| {
            let delta = match piece {
                Piece::Text(t) => json!({"content": t}),
                Piece::Reasoning(t) => json!({"reasoning_content": t}),
            };
            vec![chunk(&meta, delta, None)]
        };
        let Some((result, stop, output)) = relay(started, structured, &tx, render, error_event).await else {
            return;
        };
        let mut tail: Vec<Event> = output
            .map(|json| chunk(&meta, json!({"content": json}), None))
            .into_iter()
            .collect();
        if let Some(refusal) = crate::run::refusal(&result) {
            tail.push(chunk(&meta, json!({"refusal": refusal}), None));
        }
        tail.push(chunk(&meta, json!({}), Some(finish_reason(stop))));
        if include_usage {
            let data = json!({
                "id": meta.id, "object": "chat.completion.chunk", "created": meta.created, "model": meta.model,
                "choices": [], "usage": usage(&Tokens::from(&result.tree_usage)),
            });
            tail.push(Event::default().data(data.to_string()));
        }
        tail.push(Event::default().data("[DONE]"));
        for e in tail {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    })
}

/// An error mid-stream, as the official client reads it (it raises
/// `APIError` on an event whose data has `error`).
fn error_event(message: &str) -> Event {
    let error = ApiError::new(SHAPE, Kind::Upstream, message);
    Event::default().data(error.body().to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn prepared(body: Value) -> Result<Prepared, ApiError> {
        prepare(&Bytes::from(body.to_string()))
    }

    #[test]
    fn system_messages_add_and_assistant_turns_are_history() {
        let p = prepared(json!({"model": "a", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": [{"type": "text", "text": "And "}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        ]}))
        .ok()
        .unwrap();
        assert_eq!(p.system, ["Be brief."]);
        assert_eq!(p.history.len(), 3);
        assert_eq!(p.history[1].role, Role::Assistant);
        assert!(
            matches!(&p.history[2].content[1], ContentPart::Image { image: ImageSource::Base64 { media_type, .. } } if media_type == "image/png")
        );
    }

    #[test]
    fn client_tools_and_bad_requests_are_named() {
        let tools = prepared(
            json!({"model": "a", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f"}}]}),
        );
        let e = tools.err().unwrap();
        assert_eq!(e.status(), 400);
        assert!(e.message.contains("`tools` is not supported"), "{}", e.message);
        let e = prepared(json!({"messages": []})).err().unwrap();
        assert!(e.message.contains("missing field `model`"), "{}", e.message);
        let e = prepared(
            json!({"model": "a", "messages": [{"role": "tool", "content": "1", "tool_call_id": "c"}]}),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("messages[0]"), "{}", e.message);
        let e = prepared(
            json!({"model": "a", "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "n"}}}),
        )
        .err()
        .unwrap();
        assert!(
            e.message.contains("json_schema.schema is missing"),
            "{}",
            e.message
        );
    }
}
