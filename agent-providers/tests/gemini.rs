//! Google Gemini, replayed through a local HTTP server (CRLF framing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::{
    Agent, ContentPart, LanguageModel, Message, ModelError, Role, ToolCall, ToolChoice, ToolDefinition,
    ToolOutputPart, ToolResult, message::Reasoning, model::FinishReason, model::ModelEvent,
    model::ModelRequest,
};
use loopwright_providers::GeminiModel;
use serde_json::json;

fn model(server: &ModelServer) -> GeminiModel {
    GeminiModel::builder("gemini-test")
        .base_url(format!("{}/v1beta", server.url()))
        .api_key("g-secret")
        .build()
        .unwrap()
}

async fn replay(path: &str) -> (Vec<ModelEvent>, Option<ModelError>, ModelServer) {
    let server = serve(vec![Reply::ok(frames(&fixture(path), false, "\r\n"))]).await;
    let stream = model(&server)
        .stream(ModelRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    let (events, err) = collect(stream).await;
    (events, err, server)
}

fn signatures(events: &[ModelEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ReasoningDone { signature, .. } => signature.clone(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_fixture_with_signature_and_usage() {
    let (events, err, server) = replay("gemini/google-text.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        text(&events),
        "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y"
    );
    assert_eq!(
        kinds(&events),
        vec![
            "usage",
            "text",
            "usage",
            "text",
            "usage",
            "reasoning_done",
            "finish"
        ]
    );
    assert!(signatures(&events)[0].starts_with("EqsFCqgFAb4"));
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens,
            usage.total_tokens
        ),
        (Some(9), Some(23 + 185), Some(185), Some(217))
    );
    let r = &server.received()[0];
    assert_eq!(r.path, "/v1beta/models/gemini-test:streamGenerateContent?alt=sse");
    assert_eq!(r.headers["x-goog-api-key"], "g-secret");
    assert_eq!(
        r.body["contents"],
        json!([{"role": "user", "parts": [{"text": "hi"}]}])
    );
}

#[tokio::test]
async fn reasoning_fixture() {
    let (events, err, _s) = replay("gemini/google-reasoning.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        text(&events),
        "There are **3** \"r\"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y."
    );
    assert!(signatures(&events)[0].starts_with("Eo0HCooHAb4"));
    assert_eq!(finish(&events).1.reasoning_tokens, Some(256));
}

#[tokio::test]
async fn whole_function_call_gets_a_stable_id() {
    let (events, err, _s) = replay("gemini/google-tool-call.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    let c = calls(&events);
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].1.as_str(), &c[0].2),
        ("weather", &json!({"location": "San Francisco"}))
    );
    assert_eq!(c[0].0, "b36LacjwM668nsEP2tbsgQQ_0");
    let data = events.iter().find_map(|e| match e {
        ModelEvent::ToolCallComplete { provider_data, .. } => provider_data.clone(),
        _ => None,
    });
    assert!(
        data.unwrap()["thoughtSignature"]
            .as_str()
            .unwrap()
            .starts_with("EqUCCqICAb4")
    );
    assert_eq!(finish(&events).0, FinishReason::ToolCalls);
}

#[tokio::test]
async fn parallel_partial_args_calls() {
    let (events, err, _s) = replay("gemini/google-stream-no-args-tool-call.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert!(reasoning(&events).starts_with("**Processing User Requests**"));
    let c = calls(&events);
    let summary: Vec<(&str, serde_json::Value)> = c.iter().map(|(_, n, i)| (n.as_str(), i.clone())).collect();
    assert_eq!(
        summary,
        vec![
            ("read_theme", json!({})),
            ("read_screen", json!({"id": "A"})),
            ("read_screen", json!({"id": "B"})),
            ("read_screen", json!({"id": "C"})),
        ]
    );
    let ids: std::collections::HashSet<_> = c.iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(kinds(&events)[..3], ["reasoning", "reasoning_done", "call_start"]);
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(249), Some(58 + 183))
    );
}

#[tokio::test]
async fn eof_without_finish_reason_is_an_error() {
    let lines = vec![fixture("gemini/google-text.chunks.txt")[0].clone()];
    let server = serve(vec![Reply::ok(frames(&lines, false, "\r\n"))]).await;
    let (_, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(
        matches!(err, Some(ModelError::StreamCut { message: ref m, .. }) if m.contains("finishReason")),
        "{err:?}"
    );
}

#[tokio::test]
async fn error_statuses() {
    let server = serve(vec![
        Reply::status(
            400,
            r#"[{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}]"#,
        ),
        Reply::status(
            403,
            r#"{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}"#,
        ),
    ])
    .await;
    let err = model(&server)
        .stream(ModelRequest::new(vec![]))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ModelError::Authentication { status: Some(400), ref message, .. } if message == "API key not valid")
    );
    let err = model(&server)
        .stream(ModelRequest::new(vec![]))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ModelError::Authentication { .. }));
}

#[tokio::test]
async fn request_body_tools_schema_choice_and_signatures() {
    let m = GeminiModel::builder("models/gemini-test").build().unwrap();
    let mut r = ModelRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![
                ContentPart::Reasoning(Reasoning {
                    text: "plan".into(),
                    signature: Some("S1".into()),
                    provider_data: None,
                }),
                ContentPart::ToolCall(ToolCall {
                    id: "r_0".into(),
                    name: "plot".into(),
                    input: json!({"x": 1}),
                    provider_data: Some(json!({"thoughtSignature": "S2"})),
                }),
                ContentPart::text("done"),
                ContentPart::Reasoning(Reasoning {
                    text: String::new(),
                    signature: Some("S3".into()),
                    provider_data: None,
                }),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "r_0".into(),
                parts: vec![ToolOutputPart::text("ok")],
                is_error: false,
            })],
        ),
    ]);
    r.system = Some("sys".into());
    r.tools = Arc::new(vec![
        ToolDefinition::new(
            "plot",
            "Plot.",
            json!({"$schema": "x", "type": "object", "additionalProperties": false,
                   "properties": {"x": {"type": ["integer", "null"], "$ref": "#/$defs/N"}}, "$defs": {"N": {}}}),
        ),
        ToolDefinition::new("now", "Time.", json!({"type": "object", "properties": {}})),
    ]);
    r.tool_choice = ToolChoice::Tool { name: "plot".into() };
    r.max_output_tokens = Some(10);
    let body = m.request_body(&r);
    assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "sys"}]}));
    let decls = &body["tools"][0]["functionDeclarations"];
    assert_eq!(decls[0]["parameters"]["properties"]["x"]["nullable"], true);
    assert!(decls[0]["parameters"].get("additionalProperties").is_none());
    assert!(decls[0]["parameters"].get("$schema").is_none());
    assert!(decls[1].get("parameters").is_none());
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["plot"]}})
    );
    assert_eq!(body["generationConfig"]["maxOutputTokens"], 10);
    let model_parts = &body["contents"][1];
    assert_eq!(model_parts["role"], "model");
    assert_eq!(
        model_parts["parts"][0],
        json!({"text": "plan", "thought": true, "thoughtSignature": "S1"})
    );
    assert_eq!(
        model_parts["parts"][1],
        json!({"functionCall": {"name": "plot", "args": {"x": 1}}, "thoughtSignature": "S2"})
    );
    assert_eq!(
        model_parts["parts"][2],
        json!({"text": "done", "thoughtSignature": "S3"})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"name": "plot", "response": {"content": "ok"}}}]})
    );
}

#[tokio::test]
async fn agent_loop_end_to_end() {
    let server = serve(gemini_call_then_text()).await;
    let agent = Agent::builder(Arc::new(model(&server)))
        .tools(weather_tools())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Weather?"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert!(result.text.starts_with("There are **3**"));
    let body = &server.received()[1].body;
    let call = &body["contents"][1]["parts"][0];
    assert_eq!(call["functionCall"]["name"], "weather");
    assert!(
        call["thoughtSignature"]
            .as_str()
            .unwrap()
            .starts_with("EqUCCqICAb4")
    );
    let response = &body["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "weather");
    assert!(
        response["response"]["content"]
            .as_str()
            .unwrap()
            .contains("Sunny in San Francisco")
    );
}

#[tokio::test]
async fn error_chunk_mid_stream() {
    let lines = vec![
        fixture("gemini/google-text.chunks.txt")[0].clone(),
        json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}})
            .to_string(),
    ];
    let server = serve(vec![Reply::ok(frames(&lines, false, "\r\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert_eq!(text(&events), "There are **3**");
    assert!(
        matches!(err, Some(ModelError::RateLimited { ref message, .. }) if message == "Resource exhausted"),
        "{err:?}"
    );
}
