//! Reply bodies in each wire format, shaped like recorded streams: OpenAI
//! Chat Completions (the unprefixed builders: [`answer`], [`tool_call`],
//! [`chat_calls`]...), Anthropic Messages (`anthropic_*`), Ollama's JSON lines
//! ([`ollama_answer`]), and [`frames`] for payloads read from fixtures.
//!
//! Invariant: each body is one whole, well-formed response of its format:
//! a Chat Completions body ends with a `finish_reason` chunk carrying the
//! usage (100 prompt and 10 completion tokens) and `data: [DONE]`; an
//! Anthropic body goes from `message_start` to `message_stop`; an Ollama
//! body ends with its `done` line.

use bytes::Bytes;
use serde_json::{Value, json};

/// The usage every Chat Completions body reports.
fn chat_usage() -> Value {
    json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
}

/// One Chat Completions chunk; the finishing one carries the usage.
fn chat_chunk(delta: Value, finish: Option<&str>) -> String {
    let mut chunk = json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1770770843, "model": "test",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    if finish.is_some() {
        chunk["usage"] = chat_usage();
    }
    format!("data: {chunk}\n\n")
}

/// A Chat Completions step answering `text` in two deltas.
///
/// ```
/// let body = loopwright_test_support::model_server::sse::answer("Hello.");
/// assert!(body.ends_with("data: [DONE]\n\n"));
/// ```
pub fn answer(text: &str) -> String {
    let mut half = text.len() / 2;
    while !text.is_char_boundary(half) {
        half -= 1;
    }
    let (a, b) = text.split_at(half);
    chat_chunk(json!({"role": "assistant", "content": ""}), None)
        + &chat_chunk(json!({"content": a}), None)
        + &chat_chunk(json!({"content": b}), None)
        + &chat_chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}

/// A Chat Completions step reasoning `reasoning` (as `reasoning_content`),
/// then answering `text`.
///
/// ```
/// let body = loopwright_test_support::model_server::sse::reasoned_answer("Think.", "Done.");
/// assert!(body.contains("reasoning_content"));
/// ```
pub fn reasoned_answer(reasoning: &str, text: &str) -> String {
    chat_chunk(json!({"role": "assistant", "reasoning_content": reasoning}), None)
        + &chat_chunk(json!({"content": text}), None)
        + &chat_chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}

/// A Chat Completions step calling `tool` with `arguments` (call id
/// `call_TOOL`).
///
/// ```
/// use serde_json::json;
/// let body = loopwright_test_support::model_server::sse::tool_call("test__echo", json!({"text": "hi"}));
/// assert!(body.contains("call_test__echo"));
/// ```
pub fn tool_call(tool: &str, arguments: Value) -> String {
    calls_after(Value::Null, &[(&format!("call_{tool}"), tool, arguments)])
}

/// A Chat Completions step saying `text`, then calling `tool` with
/// `arguments` (call id `call_TOOL`).
///
/// ```
/// use serde_json::json;
/// let body = loopwright_test_support::model_server::sse::text_then_tool_call("Looking.", "read", json!({}));
/// assert!(body.contains("Looking."));
/// ```
pub fn text_then_tool_call(text: &str, tool: &str, arguments: Value) -> String {
    calls_after(json!(text), &[(&format!("call_{tool}"), tool, arguments)])
}

/// A Chat Completions step calling each `(id, tool, arguments)` at once.
///
/// ```
/// use serde_json::json;
/// use loopwright_test_support::model_server::sse::chat_calls;
/// let body = chat_calls(&[("call_a", "read", json!({"path": "a"})), ("call_b", "read", json!({"path": "b"}))]);
/// assert!(body.contains("call_b"));
/// ```
pub fn chat_calls(calls: &[(&str, &str, Value)]) -> String {
    calls_after(Value::Null, calls)
}

/// A step whose first delta has this `content`, then `calls`, one chunk
/// each.
fn calls_after(content: Value, calls: &[(&str, &str, Value)]) -> String {
    let mut body = chat_chunk(json!({"role": "assistant", "content": content}), None);
    for (index, (id, tool, arguments)) in calls.iter().enumerate() {
        let call = json!([{"index": index, "id": id, "type": "function",
            "function": {"name": tool, "arguments": arguments.to_string()}}]);
        body += &chat_chunk(json!({"tool_calls": call}), None);
    }
    body + &chat_chunk(json!({}), Some("tool_calls")) + "data: [DONE]\n\n"
}

/// One named server-sent event.
fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start() -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_test", "type": "message", "role": "assistant",
            "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 200, "output_tokens": 1}}}),
    )
}

fn message_end(stop_reason: &str) -> String {
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 20}}),
    ) + &event("message_stop", json!({"type": "message_stop"}))
}

/// The one content block of an Anthropic message: its start, one delta,
/// its stop.
fn content_block(start: Value, delta: Value) -> String {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
    ) + &event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    ) + &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    )
}

/// An Anthropic Messages step calling `tool` with `input`.
///
/// ```
/// use serde_json::json;
/// let body = loopwright_test_support::model_server::sse::anthropic_call("toolu_1", "read", json!({}));
/// assert!(body.contains("\"stop_reason\":\"tool_use\""));
/// ```
pub fn anthropic_call(id: &str, tool: &str, input: Value) -> String {
    message_start()
        + &content_block(
            json!({"type": "tool_use", "id": id, "name": tool, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        )
        + &message_end("tool_use")
}

/// An Anthropic Messages step answering `text`.
///
/// ```
/// let body = loopwright_test_support::model_server::sse::anthropic_answer("Hi.");
/// assert!(body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
/// ```
pub fn anthropic_answer(text: &str) -> String {
    message_start()
        + &content_block(
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        )
        + &message_end("end_turn")
}

/// An Ollama `/api/chat` reply of `model` answering `text` (JSON lines;
/// serve it with [`super::Reply::ndjson`]).
///
/// ```
/// let body = loopwright_test_support::model_server::sse::ollama_answer("qwen3:latest", "Hi.");
/// assert_eq!(body.lines().count(), 2);
/// ```
pub fn ollama_answer(model: &str, text: &str) -> String {
    let line = |message: Value, done: bool| {
        let mut line = json!({"model": model, "created_at": "2026-01-01T00:00:00Z", "message": message,
            "done": done});
        if done {
            line["done_reason"] = json!("stop");
        }
        format!("{line}\n")
    };
    line(json!({"role": "assistant", "content": text}), false)
        + &line(json!({"role": "assistant", "content": ""}), true)
}

/// Payloads (one JSON document each, as in the fixtures) framed as
/// server-sent events, one chunk per event: `event: <its type>` first when
/// `named` (Anthropic, Responses), lines ended by `eol`.
///
/// ```
/// use loopwright_test_support::model_server::sse::frames;
/// let chunks = frames(&[r#"{"type":"ping"}"#.to_owned()], true, "\r\n");
/// assert_eq!(chunks[0], "event: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\n");
/// ```
///
/// # Panics
///
/// When `named` and a payload is not a JSON object with a string `type`.
pub fn frames(payloads: &[String], named: bool, eol: &str) -> Vec<Bytes> {
    payloads
        .iter()
        .map(|payload| {
            let mut frame = String::new();
            if named {
                let kind = serde_json::from_str::<Value>(payload)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned));
                let Some(kind) = kind else {
                    panic!("a named event needs a JSON payload with a string `type`: {payload}");
                };
                frame.push_str(&format!("event: {kind}{eol}"));
            }
            frame.push_str(&format!("data: {payload}{eol}{eol}"));
            Bytes::from(frame)
        })
        .collect()
}
