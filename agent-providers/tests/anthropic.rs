//! Anthropic Messages, replayed through a local HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::{
    Agent, ContentPart, LanguageModel, Message, ModelError, Role, ToolCall, ToolChoice, ToolDefinition,
    ToolOutputPart, ToolResult, message::Reasoning, model::FinishReason, model::ModelEvent,
    model::ModelRequest,
};
use loopwright_providers::AnthropicModel;
use serde_json::{Value, json};

fn model(server: &ModelServer) -> AnthropicModel {
    AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("ak-secret")
        .build()
        .unwrap()
}

async fn replay(path: &str) -> (Vec<ModelEvent>, Option<ModelError>, ModelServer) {
    let server = serve(vec![Reply::ok(frames(&fixture(path), true, "\n"))]).await;
    let stream = model(&server)
        .stream(ModelRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    let (events, err) = collect(stream).await;
    (events, err, server)
}

#[tokio::test]
async fn text_fixture_and_headers() {
    let (events, err, server) = replay("anthropic/anthropic-text.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        text(&events),
        "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(kinds(&events), vec!["usage", "text", "usage", "finish"]);
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens),
        (Some(12), Some(30), Some(0))
    );
    let r = &server.received()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "ak-secret");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.body["max_tokens"], 8192);
}

#[tokio::test]
async fn tool_with_empty_input_after_text() {
    let (events, err, _s) = replay("anthropic/anthropic-tool-no-args.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&events), "I'll update the issue list for you.");
    assert_eq!(
        calls(&events),
        vec![(
            "toolu_01QE1WLsSVp5hy5Q3GmGTmjP".into(),
            "updateIssueList".into(),
            json!({})
        )]
    );
    assert_eq!(
        kinds(&events),
        vec!["usage", "text", "call_start", "call_complete", "usage", "finish"]
    );
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(565), Some(48)));
}

#[tokio::test]
async fn tool_input_json_deltas() {
    let (events, err, _s) = replay("anthropic/anthropic-json-tool.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        calls(&events),
        vec![(
            "toolu_01KFbKqPYSuAKujiL6mTfzYA".into(),
            "json".into(),
            json!({"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]})
        )]
    );
    assert_eq!(finish(&events).1.output_tokens, Some(47));
}

#[tokio::test]
async fn input_tokens_from_message_delta() {
    let (events, err, _s) = replay("anthropic/anthropic-message-delta-input-tokens.chunks.txt").await;
    assert!(err.is_none());
    assert_eq!(text(&events), "pong");
    let (_, usage) = finish(&events);
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(61), Some(2)));
}

#[tokio::test]
async fn refusal_is_content_filter() {
    let (events, err, _s) = replay("anthropic/anthropic-refusal.chunks.txt").await;
    assert!(err.is_none());
    assert_eq!(finish(&events).0, FinishReason::ContentFilter);
}

#[tokio::test]
async fn thinking_with_signature() {
    let (events, err, _s) = replay("anthropic/anthropic-thinking.chunks.txt").await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        reasoning(&events),
        "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185"
    );
    assert_eq!(text(&events), "925 ÷ 5 = 185");
    assert_eq!(
        kinds(&events),
        vec!["usage", "reasoning", "reasoning_done", "text", "usage", "finish"]
    );
    let sig = events.iter().find_map(|e| match e {
        ModelEvent::ReasoningDone { signature, .. } => signature.clone(),
        _ => None,
    });
    assert!(sig.unwrap().starts_with("EvQBCkYICxgCKkAxhD4NUKFzudt"));
    assert_eq!(finish(&events).1.output_tokens, Some(53));
}

#[tokio::test]
async fn error_event_mid_stream() {
    let lines = vec![
        fixture("anthropic/anthropic-text.chunks.txt")[0].clone(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(),
    ];
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (_, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(
        matches!(err, Some(ModelError::Server { status: None, ref message, .. }) if message == "Overloaded"),
        "{err:?}"
    );
}

#[tokio::test]
async fn eof_before_message_stop_is_an_error() {
    let mut lines = fixture("anthropic/anthropic-text.chunks.txt");
    lines.pop();
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Finish { .. })));
    assert!(
        matches!(err, Some(ModelError::StreamCut { message: ref m, .. }) if m.contains("message_stop")),
        "{err:?}"
    );
}

#[tokio::test]
async fn unauthorized_is_auth() {
    let server = serve(vec![Reply::status(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let err = model(&server)
        .stream(ModelRequest::new(vec![]))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ModelError::Authentication { ref message, .. } if message == "invalid x-api-key"),
        "{err:?}"
    );
}

#[tokio::test]
async fn request_body_tools_choice_parallel_and_signatures() {
    let m = AnthropicModel::builder("claude-test").build().unwrap();
    let mut r = ModelRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![
                ContentPart::Reasoning(Reasoning {
                    text: "hmm".into(),
                    signature: Some("sig-1".into()),
                    provider_data: None,
                }),
                ContentPart::Reasoning(Reasoning {
                    text: String::new(),
                    signature: None,
                    provider_data: Some(json!({"redacted_thinking": "opaque"})),
                }),
                // Reasoning from another provider, without a signature: not replayed.
                ContentPart::Reasoning(Reasoning {
                    text: "foreign".into(),
                    signature: None,
                    provider_data: None,
                }),
                ContentPart::ToolCall(ToolCall::new("t1", "plot", json!({"x": 1}))),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "t1".into(),
                parts: vec![
                    ToolOutputPart::text("bad"),
                    ToolOutputPart::Json {
                        value: json!({"k": 2}),
                    },
                ],
                is_error: true,
            })],
        ),
        Message::user("and?"),
    ]);
    r.system = Some("sys".into());
    r.tools = Arc::new(vec![ToolDefinition::new(
        "plot",
        "Plot.",
        json!({"$schema": "x", "type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "integer"}}}),
    )]);
    r.tool_choice = ToolChoice::Required;
    r.parallel_tool_calls = Some(false);
    let body = m.request_body(&r);
    assert_eq!(body["system"], "sys");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert_eq!(
        body["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {"p": {"type": "integer"}}})
    );
    let assistant = &body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "hmm", "signature": "sig-1"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "redacted_thinking", "data": "opaque"})
    );
    assert_eq!(
        assistant[2],
        json!({"type": "tool_use", "id": "t1", "name": "plot", "input": {"x": 1}})
    );
    assert_eq!(assistant.as_array().unwrap().len(), 3);
    // The tool result and the next user text are one user turn.
    let user = &body["messages"][2];
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"][0]["type"], "tool_result");
    assert_eq!(user["content"][0]["tool_use_id"], "t1");
    assert_eq!(user["content"][0]["is_error"], true);
    assert_eq!(user["content"][0]["content"][1]["text"], "{\"k\":2}");
    assert_eq!(user["content"][1], json!({"type": "text", "text": "and?"}));
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);

    r.tool_choice = ToolChoice::Tool { name: "plot".into() };
    r.parallel_tool_calls = None;
    assert_eq!(
        m.request_body(&r)["tool_choice"],
        json!({"type": "tool", "name": "plot"})
    );
}

#[tokio::test]
async fn agent_loop_end_to_end_with_thinking_replayed() {
    let first = vec![
        json!({"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"need weather"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}),
        json!({"type":"message_stop"}),
    ];
    let second = fixture("anthropic/anthropic-message-delta-input-tokens.chunks.txt");
    let to_lines = |v: Vec<Value>| v.iter().map(Value::to_string).collect::<Vec<_>>();
    let server = serve(vec![
        Reply::ok(frames(&to_lines(first), true, "\n")),
        Reply::ok(frames(&second, true, "\n")),
    ])
    .await;
    let agent = Agent::builder(Arc::new(model(&server)))
        .tools(weather_tools())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Weather in Paris?"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert_eq!(result.text, "pong");
    let body = &server.received()[1].body;
    let assistant = &body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": "need weather", "signature": "SIG"})
    );
    assert_eq!(assistant["content"][1]["input"], json!({"location": "Paris"}));
    let results = &body["messages"][2]["content"][0];
    assert_eq!(results["type"], "tool_result");
    assert_eq!(results["tool_use_id"], "toolu_1");
    assert!(
        results["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Sunny in Paris")
    );
}

#[tokio::test]
async fn redacted_thinking_and_server_tools_are_not_client_calls() {
    let lines: Vec<String> = [
        json!({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"OPAQUE"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"found"}}),
        json!({"type":"content_block_stop","index":2}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}),
        json!({"type":"message_stop"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        events[1],
        ModelEvent::ReasoningDone {
            signature: None,
            provider_data: Some(json!({"redacted_thinking": "OPAQUE"}))
        }
    );
    assert!(calls(&events).is_empty());
    assert_eq!(text(&events), "found");
    assert_eq!(finish(&events).0, FinishReason::Stop);
}
