//! OpenAI Responses, replayed through a local HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::{
    Agent, ContentPart, LanguageModel, Message, ModelError, Role, ToolCall, ToolChoice, ToolDefinition,
    ToolOutputPart, ToolResult, ToolSet, message::Reasoning, model::FinishReason, model::ModelEvent,
    model::ModelRequest, tool_fn, toolset::StaticToolSource,
};
use loopwright_providers::OpenAiResponsesModel;
use serde_json::{Value, json};

fn model(server: &ModelServer) -> OpenAiResponsesModel {
    // The recorded responses came from a reasoning model.
    OpenAiResponsesModel::builder("gpt-5.1-codex-max")
        .base_url(format!("{}/v1", server.url()))
        .api_key("sk-x")
        .build()
        .unwrap()
}

/// The recording holds four consecutive responses (one per agent step).
fn steps() -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in fixture("openai-responses/openai-reasoning-calculator-3-calls.chunks.txt") {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "response.created" {
            out.push(Vec::new());
        }
        out.last_mut().unwrap().push(line);
    }
    out
}

#[tokio::test]
async fn reasoning_summary_encrypted_content_and_call() {
    let server = serve(vec![Reply::ok(frames(&steps()[0], true, "\n"))]).await;
    let (events, err) = collect(
        model(&server)
            .stream(ModelRequest::new(vec![Message::user("calc")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        reasoning(&events),
        "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product."
    );
    assert_eq!(
        kinds(&events),
        vec![
            "reasoning",
            "reasoning_done",
            "call_start",
            "call_delta",
            "call_complete",
            "usage",
            "finish"
        ]
    );
    let data = events
        .iter()
        .find_map(|e| match e {
            ModelEvent::ReasoningDone { provider_data, .. } => provider_data.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        data["id"],
        "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"
    );
    assert!(
        data["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAABpPDIVOKrsHNZ0")
    );
    assert_eq!(
        calls(&events),
        vec![(
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn".into(),
            "calculator".into(),
            json!({"a": 12, "b": 7, "op": "add"})
        )]
    );
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_input_tokens,
            usage.reasoning_tokens,
            usage.total_tokens
        ),
        (Some(134), Some(28), Some(0), Some(0), Some(162))
    );
    let r = &server.received()[0];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.body["store"], false);
    assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
}

#[tokio::test]
async fn error_event_is_quota() {
    let lines = fixture("openai-responses/openai-error.chunks.txt");
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(events.is_empty());
    assert!(
        matches!(err, Some(ModelError::QuotaExceeded { ref message, .. }) if message.starts_with("You exceeded your current quota")),
        "{err:?}"
    );
}

#[tokio::test]
async fn failed_response_without_error_event() {
    let lines: Vec<String> = fixture("openai-responses/openai-error.chunks.txt")
        .into_iter()
        .filter(|l| !l.starts_with("{\"type\":\"error\""))
        .collect();
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (_, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(matches!(err, Some(ModelError::QuotaExceeded { .. })), "{err:?}");
}

#[tokio::test]
async fn eof_before_completed_is_an_error() {
    let mut lines = steps()[3].clone();
    lines.pop();
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert_eq!(text(&events), "The final result is **570**.");
    assert!(
        matches!(err, Some(ModelError::StreamCut { message: ref m, .. }) if m.contains("response.completed")),
        "{err:?}"
    );
}

#[tokio::test]
async fn request_body_tools_choice_parallel_and_reasoning_replay() {
    let m = OpenAiResponsesModel::builder("gpt-test").build().unwrap();
    let mut r = ModelRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![
                ContentPart::Reasoning(Reasoning {
                    text: "sum".into(),
                    signature: None,
                    provider_data: Some(json!({"id": "rs_1", "encrypted_content": "ENC"})),
                }),
                ContentPart::Reasoning(Reasoning {
                    text: "foreign".into(),
                    signature: Some("x".into()),
                    provider_data: None,
                }),
                ContentPart::ToolCall(ToolCall::new("call_1", "plot", json!({"x": 1}))),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "call_1".into(),
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
    r.tool_choice = ToolChoice::Tool { name: "plot".into() };
    r.parallel_tool_calls = Some(false);
    r.max_output_tokens = Some(5);
    let body = m.request_body(&r);
    assert_eq!(body["instructions"], "sys");
    assert_eq!(body["tool_choice"], json!({"type": "function", "name": "plot"}));
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["max_output_tokens"], 5);
    assert_eq!(
        body["tools"][0]["parameters"],
        json!({"type": "object", "properties": {"x": {"type": "number"}}})
    );
    let input = body["input"].as_array().unwrap();
    assert_eq!(
        input[0],
        json!({"role": "user", "content": [{"type": "input_text", "text": "go"}]})
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC", "summary": [{"type": "summary_text", "text": "sum"}]})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "plot", "arguments": "{\"x\":1}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "ok"})
    );
    assert_eq!(input.len(), 4);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Calc {
    a: f64,
    b: f64,
    op: String,
}

#[tokio::test]
async fn agent_loop_end_to_end_three_calls() {
    let replies = steps().iter().map(|s| Reply::ok(frames(s, true, "\n"))).collect();
    let server = serve(replies).await;
    let tools = ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(tool_fn(
            "calculator",
            "Calculate.",
            |c: Calc| async move {
                let v = if c.op == "add" { c.a + c.b } else { c.a * c.b };
                Ok(format!("{v}"))
            },
        )))
        .build();
    let agent = Agent::builder(Arc::new(model(&server))).tools(tools).build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("12+7, *3, *10"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert_eq!(result.text, "The final result is **570**.");
    assert_eq!(result.steps.len(), 4);
    let received = server.received();
    assert_eq!(received.len(), 4);
    let input = received[1].body["input"].as_array().unwrap().clone();
    assert_eq!(input[1]["type"], "reasoning");
    assert!(
        input[1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAABpPDIVOKrsHNZ0")
    );
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_AB6AaRZ1FYZB2RwS6A5vbdqn");
    assert_eq!(
        input[2]["id"],
        "fc_01830d662ab3856501693c32151234819091cfca267e98cc5f"
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"})
    );
    let last = received[3].body["input"].as_array().unwrap().clone();
    assert_eq!(last.last().unwrap()["output"], "570");
}

#[tokio::test]
async fn incomplete_response_is_length() {
    let lines: Vec<String> = [
        json!({"type": "response.output_text.delta", "delta": "cut"}),
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 3, "output_tokens": 16, "total_tokens": 19}}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&events), "cut");
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(usage.output_tokens, Some(16));
}
