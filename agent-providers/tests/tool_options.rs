//! Tools in request bodies, per wire format: per-tool provider options are
//! merged where each format keeps a tool's definition, for that provider
//! only; tool search's held-back tools are declared deferred where the
//! provider loads tools natively (Anthropic, with its beta header and
//! `tool_reference` results) and left out elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::models::{anthropic, chat, gemini, ollama, responses};
use common::{Reply, serve};
use loopwright_core::{
    ContentPart, LanguageModel, Message, Role, ToolCall, ToolDefinition, ToolOutputPart, ToolResult,
    model::ModelRequest,
};
use loopwright_providers::{AnthropicModel, TOOL_SEARCH_BETA};
use serde_json::{Value, json};

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        format!("The {name} tool."),
        json!({"type": "object", "properties": {"x": {"type": "string"}}}),
    )
}

/// A request offering `read` (with options for several providers) and
/// `write`.
fn with_options() -> ModelRequest {
    let read = tool("read")
        .with_provider_options("openai", json!({"strict": true}))
        .with_provider_options("anthropic", json!({"cache_control": {"type": "ephemeral"}}))
        .with_provider_options("google", json!({"behavior": "NON_BLOCKING"}))
        .with_provider_options("ollama", json!({"x-note": "local"}));
    let mut request = ModelRequest::new(vec![Message::user("go")]);
    request.tools = Arc::new(vec![read, tool("write")]);
    request
}

#[test]
fn per_tool_options_are_merged_into_each_providers_definition() {
    let body = chat("gpt-test").request_body(&with_options());
    assert_eq!(body["tools"][0]["function"]["strict"], true);
    assert_eq!(body["tools"][0]["function"]["name"], "read");
    assert!(body["tools"][1]["function"].get("strict").is_none());

    let body = responses("gpt-test").request_body(&with_options());
    assert_eq!(body["tools"][0]["strict"], true);
    assert_eq!(body["tools"][1]["strict"], false);

    let mut uncached = with_options();
    uncached.prompt_caching = false;
    let body = anthropic("claude-test").request_body(&uncached);
    assert_eq!(body["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(body["tools"][1].get("cache_control").is_none());
    assert!(
        body["tools"][0].get("strict").is_none(),
        "openai's options stay out"
    );

    let body = gemini("gemini-test").request_body(&with_options());
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["behavior"],
        "NON_BLOCKING"
    );

    let body = ollama("qwen3").request_body(&with_options());
    assert_eq!(body["tools"][0]["function"]["x-note"], "local");
}

/// A conversation where `search_tools` loaded `fs__read`, with three tools
/// still held back.
fn searched() -> ModelRequest {
    let mut request = ModelRequest::new(vec![
        Message::user("read a.txt"),
        Message::new(
            Role::Assistant,
            vec![ContentPart::ToolCall(ToolCall::new(
                "s1",
                "search_tools",
                json!({"query": "read file"}),
            ))],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "s1".into(),
                parts: vec![
                    ToolOutputPart::text("Found 1 tool(s): - fs__read: Read a file."),
                    ToolOutputPart::ToolReference {
                        tool: "fs__read".into(),
                    },
                ],
                is_error: false,
            })],
        ),
    ]);
    request.tools = Arc::new(vec![tool("fs__read"), tool("note"), tool("search_tools")]);
    request.deferred_tools = Arc::new(vec![tool("fs__write"), tool("fs__delete"), tool("gh__issue")]);
    request.prompt_caching = true;
    request
}

fn names(tools: &Value, deferred: bool) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t.get("defer_loading").is_some() == deferred)
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn anthropic_declares_held_back_tools_deferred_and_sends_references() {
    let body = anthropic("claude-test").request_body(&searched());
    // Loaded up front: the offered tools no result references.
    assert_eq!(names(&body["tools"], false), ["note", "search_tools"]);
    // Deferred, by name: those held back and those a result references.
    assert_eq!(
        names(&body["tools"], true),
        ["fs__delete", "fs__read", "fs__write", "gh__issue"]
    );
    // The cache breakpoint sits on the last tool loaded up front.
    assert_eq!(body["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    // The search result is its references alone, which the API expands.
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        json!([{"type": "tool_reference", "tool_name": "fs__read"}])
    );

    // The beta header goes with the request.
    loopwright_providers::install_tls_provider();
    let server = serve(vec![Reply::status(400, r#"{"error":{"message":"stop"}}"#)]).await;
    let model = AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .header("anthropic-beta", "some-other-beta")
        .build()
        .unwrap();
    let _ = model.stream(searched()).await;
    let headers = &server.received()[0].headers;
    assert_eq!(
        headers["anthropic-beta"].to_str().unwrap(),
        format!("some-other-beta,{TOOL_SEARCH_BETA}")
    );
}

#[test]
fn other_providers_get_the_offered_tools_and_the_results_text() {
    let body = chat("gpt-test").request_body(&searched());
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["fs__read", "note", "search_tools"]);
    assert_eq!(
        body["messages"][2]["content"],
        "Found 1 tool(s): - fs__read: Read a file."
    );
    // Without tool search, Anthropic sends the result's text, no reference.
    let mut plain = searched();
    plain.deferred_tools = Arc::default();
    let body = anthropic("claude-test").request_body(&plain);
    assert_eq!(names(&body["tools"], true), Vec::<&str>::new());
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        json!([{"type": "text", "text": "Found 1 tool(s): - fs__read: Read a file."}])
    );
}
