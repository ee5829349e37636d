//! OpenAI Chat Completions, OpenRouter and OpenAI-compatible servers, replayed
//! through a local HTTP server; also the shared transport behaviour.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use loopwright_core::LanguageModel;
use loopwright_core::{
    Agent, ContentPart, Message, ModelError, Role, ToolCall, ToolChoice, ToolDefinition, ToolOutputPart,
    ToolResult, Usage, model::FinishReason, model::ModelEvent, model::ModelRequest,
};
use loopwright_providers::OpenAiChatModel;
use serde_json::{Value, json};

fn model(server: &ModelServer) -> OpenAiChatModel {
    OpenAiChatModel::openai("gpt-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("sk-secret")
        .build()
        .unwrap()
}

fn chat_sse(path: &str) -> Vec<Bytes> {
    let mut chunks = frames(&fixture(path), false, "\n");
    chunks.push(Bytes::from("data: [DONE]\n\n"));
    chunks
}

fn fixture_join(path: &str, field: &str) -> String {
    fixture(path)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| v["choices"][0]["delta"][field].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn openai_text_fixture() {
    let server = serve(vec![Reply::ok(chat_sse("openai-chat/openai-text.chunks.txt"))]).await;
    let (events, err) = collect(
        model(&server)
            .stream(ModelRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    let text = text(&events);
    assert!(text.starts_with("**Holiday Name:** Harmony Day"));
    assert!(text.ends_with("mutual respect."));
    assert_eq!(
        text,
        fixture_join("openai-chat/openai-text.chunks.txt", "content")
    );
    assert_eq!(kinds(&events), vec!["text", "usage", "finish"]);
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(
        usage,
        Usage::new(16, 300)
            .with_cached_input(Some(0))
            .with_reasoning(Some(0))
            .with_total(Some(316))
    );
    let received = server.received();
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].headers["authorization"], "Bearer sk-secret");
    assert_eq!(received[0].body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn xai_reasoning_then_tool_call() {
    let server = serve(vec![Reply::ok(chat_sse("openai-chat/xai-tool-call.chunks.txt"))]).await;
    let m = OpenAiChatModel::compatible("xai", format!("{}/v1", server.url()), "grok-3-mini")
        .build()
        .unwrap();
    let (events, err) = collect(
        m.stream(ModelRequest::new(vec![Message::user("weather?")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    let r = reasoning(&events);
    assert!(r.starts_with("First, the user is asking about the weather in San Francisco."));
    assert_eq!(
        r,
        fixture_join("openai-chat/xai-tool-call.chunks.txt", "reasoning_content")
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
    assert_eq!(
        calls(&events),
        vec![(
            "call_79382389".into(),
            "weather".into(),
            json!({"location": "San Francisco"})
        )]
    );
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!(usage.input_tokens, Some(307));
    assert_eq!(usage.output_tokens, Some(26));
    assert_eq!(usage.cached_input_tokens, Some(306));
    assert_eq!(usage.reasoning_tokens, Some(227));
    assert_eq!(usage.total_tokens, Some(560));
}

#[tokio::test]
async fn groq_whole_tool_call_and_usage_without_done() {
    // Groq's recording has no [DONE]: the finish reason is the end marker.
    let server = serve(vec![Reply::ok(frames(
        &fixture("openai-chat/groq-tool-call.chunks.txt"),
        false,
        "\n",
    ))])
    .await;
    let m = OpenAiChatModel::compatible("groq", format!("{}/openai/v1", server.url()), "llama")
        .build()
        .unwrap();
    let (events, err) = collect(
        m.stream(ModelRequest::new(vec![Message::user("w")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        calls(&events),
        vec![("tk85n1k4m".into(), "weather".into(), json!({}))]
    );
    let (reason, usage) = finish(&events);
    assert_eq!(reason, FinishReason::ToolCalls);
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (Some(210), Some(15), Some(225))
    );
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).to_string()
}

#[tokio::test]
async fn parallel_calls_split_arguments_missing_index_and_reused_index() {
    let lines = vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "add", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\":"}}]}),
            None,
        ),
        chunk(json!({"tool_calls": [{"index": 0}]}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
            None,
        ),
        // Ollama-style: index 0 again, but a new id is a new call.
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "now", "arguments": ""}}]}),
            None,
        ),
        // No index: routed by id.
        chunk(
            json!({"tool_calls": [{"id": "c", "function": {"name": "add", "arguments": "{\"x\":2}"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"id": "a", "function": {"arguments": ""}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let mut chunks = frames(&lines, false, "\n");
    chunks.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![Reply::ok(chunks)]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        calls(&events),
        vec![
            ("a".into(), "add".into(), json!({"x": 1})),
            ("b".into(), "now".into(), json!({})),
            ("c".into(), "add".into(), json!({"x": 2})),
        ]
    );
    // Completion only after the finish reason.
    let first_complete = events
        .iter()
        .position(|e| matches!(e, ModelEvent::ToolCallComplete { .. }))
        .unwrap();
    let last_delta = events
        .iter()
        .rposition(|e| matches!(e, ModelEvent::ToolCallDelta { .. }))
        .unwrap();
    assert!(first_complete > last_delta);
    assert_eq!(finish(&events).0, FinishReason::ToolCalls);
}

#[tokio::test]
async fn openrouter_reasoning_and_attribution_headers() {
    let lines = vec![
        chunk(json!({"reasoning": "think"}), None),
        chunk(json!({"content": "ok"}), None),
        chunk(json!({}), Some("stop")),
    ];
    let mut chunks = frames(&lines, false, "\n");
    chunks.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![Reply::ok(chunks)]).await;
    let m = OpenAiChatModel::openrouter("anthropic/claude-sonnet-4")
        .base_url(format!("{}/api/v1", server.url()))
        .api_key("or-key")
        .referer("https://example.org")
        .title("Example")
        .build()
        .unwrap();
    let (events, err) = collect(
        m.stream(ModelRequest::new(vec![Message::user("x")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none());
    assert_eq!(
        kinds(&events),
        vec!["reasoning", "reasoning_done", "text", "finish"]
    );
    let r = &server.received()[0];
    assert_eq!(r.path, "/api/v1/chat/completions");
    assert_eq!(r.headers["http-referer"], "https://example.org");
    assert_eq!(r.headers["x-title"], "Example");
    assert_eq!(r.body["model"], "anthropic/claude-sonnet-4");
}

fn request_with_tools() -> ModelRequest {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/Point"}},
        "required": ["p"],
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}
    });
    let mut r = ModelRequest::new(vec![
        Message::user("go"),
        Message::new(
            Role::Assistant,
            vec![
                ContentPart::text("calling"),
                ContentPart::ToolCall(ToolCall::new("c1", "plot", json!({"p": {"x": 1}}))),
            ],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "c1".into(),
                parts: vec![ToolOutputPart::text("done")],
                is_error: false,
            })],
        ),
    ]);
    r.system = Some("be brief".into());
    r.tools = Arc::new(vec![
        ToolDefinition::new("plot", "Plot a point.", schema),
        ToolDefinition::new("noargs", "No args.", json!({"type": "object"})),
    ]);
    r.tool_choice = ToolChoice::Required;
    r.parallel_tool_calls = Some(false);
    r.max_output_tokens = Some(77);
    r
}

#[tokio::test]
async fn request_body_tools_choice_parallel_schema() {
    let m = OpenAiChatModel::openai("gpt-test").build().unwrap();
    let body = m.request_body(&request_with_tools());
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        body["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"p\":{\"x\":1}}"
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "done"})
    );
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["max_completion_tokens"], 77);
    let params = &body["tools"][0]["function"]["parameters"];
    assert!(params.get("$schema").is_none() && params.get("$defs").is_none());
    assert_eq!(params["properties"]["p"]["properties"]["x"]["type"], "number");
    assert_eq!(
        body["tools"][1]["function"]["parameters"],
        json!({"type": "object", "properties": {}})
    );

    let mut named = request_with_tools();
    named.tool_choice = ToolChoice::Tool { name: "plot".into() };
    assert_eq!(
        m.request_body(&named)["tool_choice"],
        json!({"type": "function", "function": {"name": "plot"}})
    );

    let lax = OpenAiChatModel::compatible("local", "http://x/v1", "m")
        .supports_required_tool_choice(false)
        .build()
        .unwrap();
    let body = lax.request_body(&request_with_tools());
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["max_tokens"], 77);
}

// ---- shared transport behaviour -------------------------------------------------

#[tokio::test]
async fn rate_limited_then_success() {
    let server = serve(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "10"),
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "0"),
        Reply::ok(chat_sse("openai-chat/groq-tool-call.chunks.txt")),
    ])
    .await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none());
    assert_eq!(finish(&events).0, FinishReason::ToolCalls);
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn rate_limit_exhausts_retries() {
    let server = serve(vec![
        Reply::status(429, r#"{"error":{"message":"slow"}}"#).header("retry-after-ms", "1"),
        Reply::status(429, r#"{"error":{"message":"slow"}}"#).header("retry-after-ms", "1"),
    ])
    .await;
    let m = OpenAiChatModel::openai("m")
        .base_url(server.url())
        .max_retries(1)
        .build()
        .unwrap();
    let err = m.stream(ModelRequest::new(vec![])).await.err().unwrap();
    assert!(
        matches!(err, ModelError::RateLimited { retry_after: Some(d), ref message, .. } if d == Duration::from_millis(1) && message == "slow"),
        "{err:?}"
    );
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_auth_and_not_retried() {
    let server = serve(vec![Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key"}}"#,
    )])
    .await;
    let err = model(&server)
        .stream(ModelRequest::new(vec![]))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ModelError::Authentication { ref message, .. } if message == "Incorrect API key"),
        "{err:?}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn server_error_is_retried() {
    let server = serve(vec![
        Reply::status(503, "overloaded"),
        Reply::ok(chat_sse("openai-chat/groq-tool-call.chunks.txt")),
    ])
    .await;
    let m = OpenAiChatModel::openai("m")
        .base_url(server.url())
        .http_options(loopwright_providers::HttpOptions {
            initial_backoff: Duration::from_millis(1),
            ..Default::default()
        })
        .build()
        .unwrap();
    let (_, err) = collect(m.stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none());
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn error_mid_stream() {
    let lines = vec![
        chunk(json!({"content": "par"}), None),
        json!({"error": {"message": "overloaded", "type": "server_error"}}).to_string(),
    ];
    let server = serve(vec![Reply::ok(frames(&lines, false, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert_eq!(text(&events), "par");
    assert!(
        matches!(err, Some(ModelError::Server { status: None, ref message, .. }) if message == "overloaded"),
        "{err:?}"
    );
    // Not retried: the body had been consumed.
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn eof_before_end_marker_is_an_error() {
    let server = serve(vec![Reply::ok(frames(
        &[chunk(json!({"content": "half"}), None)],
        false,
        "\n",
    ))])
    .await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert_eq!(text(&events), "half");
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Finish { .. })));
    assert!(
        matches!(err, Some(ModelError::StreamCut { message: ref m, .. }) if m.contains("end marker")),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_chunk_is_invalid_response_with_snippet() {
    let chunks = vec![Bytes::from("data: {\"choices\": [oops\n\n")];
    let server = serve(vec![Reply::ok(chunks)]).await;
    let (_, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(
        matches!(err, Some(ModelError::InvalidResponse { ref snippet, .. }) if snippet.contains("[oops")),
        "{err:?}"
    );
}

#[tokio::test]
async fn stalled_stream_hits_inactivity_timeout() {
    let server = serve(vec![
        Reply::ok(frames(&[chunk(json!({"content": "a"}), None)], false, "\n")).stalled(),
    ])
    .await;
    let m = OpenAiChatModel::openai("m")
        .base_url(server.url())
        .inactivity_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let (events, err) = collect(m.stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert_eq!(text(&events), "a");
    assert!(
        matches!(err, Some(ModelError::Timeout { after: d }) if d == Duration::from_millis(200)),
        "{err:?}"
    );
}

#[tokio::test]
async fn cancellation_aborts_the_stream() {
    let server = serve(vec![
        Reply::ok(frames(&[chunk(json!({"content": "a"}), None)], false, "\n")).stalled(),
    ])
    .await;
    let request = ModelRequest::new(vec![]);
    let token = request.cancellation.clone();
    let mut stream = model(&server).stream(request).await.unwrap();
    use futures::StreamExt;
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, ModelEvent::TextDelta { text: "a".into() });
    token.cancel();
    let (_, err) = collect(stream).await;
    assert!(matches!(err, Some(ModelError::Cancelled)), "{err:?}");
}

#[tokio::test]
async fn cancelled_before_request() {
    let server = serve(vec![]).await;
    let request = ModelRequest::new(vec![]);
    request.cancellation.cancel();
    let err = model(&server).stream(request).await.err().unwrap();
    assert!(matches!(err, ModelError::Cancelled));
}

// ---- end to end -----------------------------------------------------------------

#[tokio::test]
async fn agent_loop_end_to_end() {
    let answer = vec![
        chunk(json!({"content": "It is sunny."}), None),
        chunk(json!({}), Some("stop")),
    ];
    let mut second = frames(&answer, false, "\n");
    second.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![
        Reply::ok(chat_sse("openai-chat/xai-tool-call.chunks.txt")),
        Reply::ok(second),
    ])
    .await;
    let agent = Agent::builder(Arc::new(model(&server)))
        .tools(weather_tools())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Weather in SF?"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert_eq!(result.text, "It is sunny.");
    let second_body = &server.received()[1].body;
    let messages = second_body["messages"].as_array().unwrap();
    let call = &messages[messages.len() - 2];
    assert_eq!(call["tool_calls"][0]["id"], "call_79382389");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "weather");
    let tool = messages.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_79382389");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("Sunny in San Francisco")
    );
    assert_eq!(second_body["tools"][0]["function"]["name"], "weather");
}

#[tokio::test]
async fn connection_refused_is_a_network_error_after_retries() {
    // Bind then drop, so that nothing listens on the port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let m = OpenAiChatModel::openai("m")
        .base_url(url)
        .http_options(loopwright_providers::HttpOptions {
            initial_backoff: Duration::from_millis(1),
            ..Default::default()
        })
        .build()
        .unwrap();
    let err = tokio::time::timeout(HANG_GUARD, m.stream(ModelRequest::new(vec![])))
        .await
        .unwrap()
        .err();
    assert!(matches!(err, Some(ModelError::Network { .. })), "{err:?}");
}

#[tokio::test]
async fn provider_options_are_merged_into_the_body() {
    let m = OpenAiChatModel::openai("gpt-test").build().unwrap();
    let mut r = ModelRequest::new(vec![Message::user("x")]);
    r.provider_options.insert(
        "openai".into(),
        json!({"reasoning_effort": "low", "store": false}),
    );
    r.provider_options
        .insert("anthropic".into(), json!({"ignored": true}));
    let body = m.request_body(&r);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["store"], false);
    assert!(body.get("ignored").is_none());
}

#[tokio::test]
async fn openrouter_reasoning_details_are_kept_and_replayed() {
    let detail = |text: &str, sig: Option<&str>| json!({"type": "reasoning.text", "index": 0, "format": "anthropic-claude-v1", "text": text, "signature": sig});
    let lines = vec![
        chunk(
            json!({"reasoning": "Let me ", "reasoning_details": [detail("Let me ", None)]}),
            None,
        ),
        chunk(
            json!({"reasoning": "think.", "reasoning_details": [detail("think.", Some("SIG"))]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "t1", "function": {"name": "weather", "arguments": "{\"location\":\"Oslo\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let mut first = frames(&lines, false, "\n");
    first.push(Bytes::from("data: [DONE]\n\n"));
    let mut second = frames(&[chunk(json!({"content": "Cold."}), Some("stop"))], false, "\n");
    second.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![Reply::ok(first), Reply::ok(second)]).await;
    let m = OpenAiChatModel::openrouter("anthropic/claude-sonnet-4")
        .base_url(format!("{}/api/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::new(m)).tools(weather_tools()).build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Oslo?"))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        result.exit(),
        loopwright_core::ExitReason::ModelError,
        "{:?}",
        result.outcome
    );
    assert_eq!(result.text, "Cold.");
    let reasoning = result.messages[0]
        .content
        .iter()
        .find_map(|p| {
            if let ContentPart::Reasoning(r) = p {
                Some(r.clone())
            } else {
                None
            }
        })
        .unwrap();
    assert_eq!(reasoning.text, "Let me think.");
    assert_eq!(reasoning.signature.as_deref(), Some("SIG"));
    let body = &server.received()[1].body;
    let assistant = &body["messages"][1];
    assert_eq!(
        assistant["reasoning_details"],
        json!([{"type": "reasoning.text", "index": 0, "format": "anthropic-claude-v1", "text": "Let me think.", "signature": "SIG"}])
    );
    assert_eq!(assistant["tool_calls"][0]["id"], "t1");
}

#[tokio::test]
async fn arguments_sent_as_an_object_are_accepted() {
    let lines = vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "o1", "function": {"name": "add", "arguments": {"x": 3}}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "o2", "function": {"name": "now", "arguments": null}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ];
    let server = serve(vec![Reply::ok(frames(&lines, false, "\n"))]).await;
    let (events, err) = collect(model(&server).stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        calls(&events),
        vec![
            ("o1".into(), "add".into(), json!({"x": 3})),
            ("o2".into(), "now".into(), json!({}))
        ]
    );
}
