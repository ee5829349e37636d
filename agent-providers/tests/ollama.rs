//! Ollama's native NDJSON chat stream through a local HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::*;
use loopwright_core::{
    Agent, ContentPart, LanguageModel, Message, ModelError, Role, ToolCall, ToolChoice, ToolDefinition,
    ToolOutputPart, ToolResult, model::FinishReason, model::ModelRequest,
};
use loopwright_providers::OllamaModel;
use serde_json::{Value, json};

fn model(server: &ModelServer, suffix: &str) -> OllamaModel {
    OllamaModel::builder("qwen3")
        .base_url(format!("{}{suffix}", server.url()))
        .build()
        .unwrap()
}

fn msg(message: Value) -> Value {
    json!({"model": "qwen3", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false})
}

fn done(reason: &str) -> Value {
    json!({"model": "qwen3", "created_at": "2025-01-01T00:00:01Z", "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": reason, "total_duration": 1, "prompt_eval_count": 26, "eval_count": 12})
}

/// NDJSON lines, cut at awkward places to check reassembly.
fn ndjson(lines: &[Value]) -> Vec<Bytes> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let bytes = text.into_bytes();
    bytes.chunks(37).map(Bytes::copy_from_slice).collect()
}

fn weather_lines() -> Vec<Value> {
    vec![
        msg(json!({"role": "assistant", "content": "", "thinking": "Two cities"})),
        msg(json!({"role": "assistant", "content": "", "thinking": ", two calls."})),
        msg(json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"index": 0, "name": "weather", "arguments": {"location": "Paris"}}}]})),
        msg(json!({"role": "assistant", "content": "", "tool_calls": [
            {"function": {"index": 0, "name": "weather", "arguments": {"location": "Rome"}}}]})),
        done("stop"),
    ]
}

#[tokio::test]
async fn thinking_and_parallel_calls_reusing_index_zero() {
    let server = serve(vec![Reply::ok(ndjson(&weather_lines()))]).await;
    // A base URL ending in /v1 is rewritten to the native API.
    let (events, err) = collect(
        model(&server, "/v1")
            .stream(ModelRequest::new(vec![Message::user("w")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(server.received()[0].path, "/api/chat");
    assert_eq!(reasoning(&events), "Two cities, two calls.");
    assert_eq!(
        kinds(&events),
        vec![
            "reasoning",
            "reasoning_done",
            "call_start",
            "call_delta",
            "call_start",
            "call_delta",
            "call_complete",
            "usage",
            "finish"
        ]
    );
    assert_eq!(
        calls(&events),
        vec![
            (
                "ollama_call_0".into(),
                "weather".into(),
                json!({"location": "Paris"})
            ),
            (
                "ollama_call_1".into(),
                "weather".into(),
                json!({"location": "Rome"})
            ),
        ]
    );
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(26), Some(12)));
}

#[tokio::test]
async fn text_and_length() {
    let lines = vec![
        msg(json!({"role": "assistant", "content": "Hel"})),
        msg(json!({"role": "assistant", "content": "lo"})),
        done("length"),
    ];
    let server = serve(vec![Reply::ok(ndjson(&lines))]).await;
    let (events, err) = collect(
        model(&server, "")
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none());
    assert_eq!(text(&events), "Hello");
    assert_eq!(finish(&events).0, FinishReason::Length);
}

#[tokio::test]
async fn error_line_mid_stream() {
    let lines = vec![
        msg(json!({"role": "assistant", "content": "a"})),
        json!({"error": "model crashed"}),
    ];
    let server = serve(vec![Reply::ok(ndjson(&lines))]).await;
    let (_, err) = collect(
        model(&server, "")
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        matches!(err, Some(ModelError::Server { status: None, ref message, .. }) if message == "model crashed")
    );
}

#[tokio::test]
async fn eof_before_done_and_malformed_line() {
    let server = serve(vec![
        Reply::ok(ndjson(&[msg(json!({"role": "assistant", "content": "a"}))])),
        Reply::ok(vec![Bytes::from("{\"message\": nope}\n")]),
    ])
    .await;
    let (_, err) = collect(
        model(&server, "")
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        matches!(err, Some(ModelError::StreamCut { message: ref m, .. }) if m.contains("done: true")),
        "{err:?}"
    );
    let (_, err) = collect(
        model(&server, "")
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        matches!(err, Some(ModelError::InvalidResponse { ref snippet, .. }) if snippet.contains("nope")),
        "{err:?}"
    );
}

#[tokio::test]
async fn model_not_found_status() {
    let server = serve(vec![Reply::status(404, r#"{"error":"model 'x' not found"}"#)]).await;
    let err = model(&server, "")
        .stream(ModelRequest::new(vec![]))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ModelError::InvalidRequest { status: Some(404), ref message, .. } if message == "model 'x' not found")
    );
}

#[tokio::test]
async fn request_body() {
    let m = OllamaModel::builder("qwen3").build().unwrap();
    let mut r = ModelRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![ContentPart::ToolCall(ToolCall::new(
                "c1",
                "plot",
                json!({"x": 1}),
            ))],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "c1".into(),
                parts: vec![ToolOutputPart::text("ok")],
                is_error: false,
            })],
        ),
    ]);
    r.system = Some("sys".into());
    r.tools = Arc::new(vec![ToolDefinition::new(
        "plot",
        "Plot.",
        json!({"$schema": "s", "type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "number"}}}),
    )]);
    r.max_output_tokens = Some(9);
    let body = m.request_body(&r);
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "sys"}));
    assert_eq!(
        body["messages"][2]["tool_calls"],
        json!([{"function": {"name": "plot", "arguments": {"x": 1}}}])
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "content": "ok", "tool_name": "plot"})
    );
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["properties"]["x"],
        json!({"type": "number"})
    );
    assert_eq!(body["options"]["num_predict"], 9);
    r.tool_choice = ToolChoice::None;
    assert!(m.request_body(&r).get("tools").is_none());
}

#[tokio::test]
async fn agent_loop_end_to_end() {
    let answer = vec![
        msg(json!({"role": "assistant", "content": "Sunny in both."})),
        done("stop"),
    ];
    let server = serve(vec![
        Reply::ok(ndjson(&weather_lines())),
        Reply::ok(ndjson(&answer)),
    ])
    .await;
    let agent = Agent::builder(Arc::new(model(&server, "")))
        .tools(weather_tools())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Paris and Rome?"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert_eq!(result.text, "Sunny in both.");
    let body = &server.received()[1].body;
    let messages = body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 3]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(messages[n - 3]["thinking"], "Two cities, two calls.");
    assert_eq!(messages[n - 2]["role"], "tool");
    assert_eq!(messages[n - 2]["tool_name"], "weather");
    assert!(
        messages[n - 2]["content"]
            .as_str()
            .unwrap()
            .contains("Sunny in Paris")
    );
    assert!(
        messages[n - 1]["content"]
            .as_str()
            .unwrap()
            .contains("Sunny in Rome")
    );
}
