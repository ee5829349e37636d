//! An image in a tool result reaches the model where the provider's tool
//! results can carry one (Anthropic, Gemini), and becomes a placeholder
//! naming its type and size where they cannot (OpenAI Chat Completions and
//! Responses, Ollama), so the model still learns an image came back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use loopwright_core::{
    ContentPart, ImageSource, Message, ModelRequest, Role, ToolCall, ToolOutputPart, ToolResult,
};
use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};
use serde_json::{Value, json};

/// A 1,230-byte PNG, base64-encoded (1,640 characters).
fn png() -> ImageSource {
    ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "A".repeat(1640),
    }
}

const PLACEHOLDER: &str = "[image: image/png, 1.2 KB]\na chart of sales";

fn request() -> ModelRequest {
    ModelRequest::new(vec![
        Message::user("plot it"),
        Message::new(
            Role::Assistant,
            vec![ContentPart::ToolCall(ToolCall::new("c1", "plot", json!({})))],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "c1".into(),
                parts: vec![
                    ToolOutputPart::Image { image: png() },
                    ToolOutputPart::text("a chart of sales"),
                ],
                is_error: false,
            })],
        ),
    ])
}

/// Every string in `body`, depth first.
fn strings(body: &Value) -> Vec<&str> {
    match body {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => vec![],
    }
}

#[test]
fn text_only_tool_results_get_a_placeholder() {
    let chat = OpenAiChatModel::openai("gpt-test")
        .build()
        .unwrap()
        .request_body(&request());
    assert_eq!(
        chat["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "content": PLACEHOLDER})
    );
    let responses = OpenAiResponsesModel::builder("gpt-test")
        .build()
        .unwrap()
        .request_body(&request());
    let output = responses["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["output"], PLACEHOLDER);
    let ollama = OllamaModel::builder("qwen3")
        .build()
        .unwrap()
        .request_body(&request());
    assert_eq!(ollama["messages"][2]["content"], PLACEHOLDER);
    for body in [&chat, &responses, &ollama] {
        assert!(
            !strings(body).iter().any(|s| s.contains(&"A".repeat(100))),
            "image bytes sent where the model cannot see them"
        );
    }
}

#[test]
fn providers_that_take_tool_images_get_the_image() {
    let data = "A".repeat(1640);
    let anthropic = AnthropicModel::builder("claude-test")
        .build()
        .unwrap()
        .request_body(&request());
    let gemini = GeminiModel::builder("gemini-test")
        .build()
        .unwrap()
        .request_body(&request());
    for body in [&anthropic, &gemini] {
        assert!(strings(body).contains(&data.as_str()), "image missing: {body}");
        assert!(!strings(body).iter().any(|s| s.contains("[image:")), "{body}");
    }
}
