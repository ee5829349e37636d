//! `--otel`: the trace spans of a run (a coordinator agent file, a
//! sub-agent calling the in-repo MCP server) exported over OTLP/HTTP to a
//! local collector, received and decoded here: span names, kinds, nesting
//! and the GenAI attributes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::*;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::json;

/// A local OTLP/HTTP collector keeping every span it is sent.
struct Collector {
    addr: std::net::SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    async fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: bytes::Bytes| {
                let kept = kept.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).unwrap();
                    for resource in request.resource_spans {
                        for scope in resource.scope_spans {
                            kept.lock().unwrap().extend(scope.spans);
                        }
                    }
                    (
                        [("content-type", "application/x-protobuf")],
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, spans }
    }
}

/// An attribute's value.
fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    match attr(span, key) {
        Some(Any::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Any::IntValue(n)) => Some(*n),
        _ => None,
    }
}

const COORDINATOR: &str = "---
description: Hands research to a researcher.
model: local/coord-model
agents: [researcher.md]
---
You coordinate.
";

const RESEARCHER: &str = "---
description: Looks things up with the test server's echo.
model: local/research-model
mcp: [test]
---
You research.
";

/// The coordinator asks the researcher, which calls the test server's
/// echo, with `--otel` and `extra` flags: every span the collector got
/// (all sent before the command exited).
async fn export(extra: &[&str]) -> Vec<Span> {
    let collector = Collector::start().await;
    let server = routed(vec![
        (
            "coord-model",
            vec![
                sse::chat_calls(&[("call_r", "agent__researcher", json!({"prompt": "echo ping"}))]),
                sse::answer("The researcher heard ping."),
            ],
        ),
        (
            "research-model",
            vec![
                sse::chat_calls(&[("call_e", "test__echo", json!({"text": "ping"}))]),
                sse::answer("ping"),
            ],
        ),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": server.base_url()}},
        "mcpServers": {"test": {"command": mcp_test_server()}}
    });
    let config_path = dir.path().join("agent.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    std::fs::write(dir.path().join("coordinator.md"), COORDINATOR).unwrap();
    std::fs::write(dir.path().join("researcher.md"), RESEARCHER).unwrap();

    let endpoint = format!("http://{}", collector.addr);
    let coordinator = dir.path().join("coordinator.md");
    let mut args = vec![
        "--config",
        config_path.to_str().unwrap(),
        "--agent",
        coordinator.to_str().unwrap(),
        "--otel",
    ];
    args.extend(extra);
    args.push("Ask the researcher");
    let out = run_agent(&args, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The researcher heard ping.\n");

    collector.spans.lock().unwrap().clone()
}

#[tokio::test]
async fn otel_exports_the_span_tree_of_a_run_with_a_sub_agent_and_an_mcp_call() {
    let spans = export(&[]).await;
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let one = |name: &str| -> &Span {
        let found = named(name);
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(found.len(), 1, "one `{name}` span expected among {names:?}");
        found[0]
    };
    let parent_of =
        |span: &Span| -> Option<&str> { by_id.get(span.parent_span_id.as_slice()).map(|p| p.name.as_str()) };

    let root = one("invoke_agent coordinator");
    assert!(root.parent_span_id.is_empty(), "the run is the root");
    assert_eq!(root.kind, SpanKind::Internal as i32);
    assert_eq!(text(root, "gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(text(root, "gen_ai.agent.name"), Some("coordinator"));
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id), "one trace");

    let coord_chats = named("chat coord-model");
    assert_eq!(coord_chats.len(), 2);
    for chat in &coord_chats {
        assert_eq!(parent_of(chat), Some("invoke_agent coordinator"));
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(text(chat, "gen_ai.provider.name"), Some("local"));
        assert_eq!(text(chat, "gen_ai.request.model"), Some("coord-model"));
        assert_eq!(int(chat, "gen_ai.usage.input_tokens"), Some(100));
        assert_eq!(int(chat, "gen_ai.usage.output_tokens"), Some(10));
    }
    let reasons: Vec<_> = coord_chats
        .iter()
        .map(|c| text(c, "gen_ai.response.finish_reasons").unwrap())
        .collect();
    assert!(
        reasons.contains(&"tool_calls") && reasons.contains(&"stop"),
        "{reasons:?}"
    );

    let delegate = one("execute_tool agent__researcher");
    assert_eq!(parent_of(delegate), Some("invoke_agent coordinator"));
    assert_eq!(text(delegate, "gen_ai.tool.call.id"), Some("call_r"));
    let child = one("invoke_agent researcher");
    assert_eq!(parent_of(child), Some("execute_tool agent__researcher"));
    for chat in named("chat research-model") {
        assert_eq!(parent_of(chat), Some("invoke_agent researcher"));
    }
    let echo = one("execute_tool test__echo");
    assert_eq!(parent_of(echo), Some("invoke_agent researcher"));
    assert_eq!(text(echo, "gen_ai.tool.call.id"), Some("call_e"));
    let mcp = one("tools/call echo");
    assert_eq!(parent_of(mcp), Some("execute_tool test__echo"));
    assert_eq!(mcp.kind, SpanKind::Client as i32);
    assert_eq!(text(mcp, "mcp.method.name"), Some("tools/call"));
    assert_eq!(text(mcp, "gen_ai.tool.name"), Some("echo"));
    assert_eq!(text(mcp, "mcp.server.name"), Some("test"));
    assert_eq!(text(mcp, "network.transport"), Some("pipe"));
    assert!(text(mcp, "jsonrpc.request.id").is_some_and(|id| !id.is_empty()));
    assert_eq!(text(mcp, "error.type"), None);
    // No conversation in the spans unless asked for.
    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert_eq!(text(span, key), None, "{key} in {}", span.name);
        }
    }
}

#[tokio::test]
async fn otel_content_puts_the_conversation_in_the_spans() {
    let spans = export(&["--otel-content"]).await;
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat coord-model").collect();
    let first = chats
        .iter()
        .find(|c| text(c, "gen_ai.response.finish_reasons") == Some("tool_calls"))
        .unwrap();
    let input: serde_json::Value =
        serde_json::from_str(text(first, "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(
        input[0],
        json!({"role": "user", "parts": [{"type": "text", "content": "Ask the researcher"}]})
    );
    let system: serde_json::Value =
        serde_json::from_str(text(first, "gen_ai.system_instructions").unwrap()).unwrap();
    assert!(
        system[0]["content"].as_str().unwrap().contains("You coordinate."),
        "{system}"
    );
    let output: serde_json::Value =
        serde_json::from_str(text(first, "gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(output[0]["parts"][0]["name"], "agent__researcher");
    assert_eq!(output[0]["finish_reason"], "tool_calls");
    let echo = spans
        .iter()
        .find(|s| s.name == "execute_tool test__echo")
        .unwrap();
    assert_eq!(
        text(echo, "gen_ai.tool.call.arguments"),
        Some(r#"{"text":"ping"}"#)
    );
    assert!(text(echo, "gen_ai.tool.call.result").unwrap().contains("ping"));
}
