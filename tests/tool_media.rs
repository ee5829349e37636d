//! Media from real MCP servers to each provider's request: server-everything's
//! image tool and an embedded binary resource (its gzip tool), and the
//! in-repo server's audio clip and embedded PDF, reach Anthropic, OpenAI
//! Responses and Gemini in their native forms and the other formats as
//! placeholders.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use loopwright::mcp::{McpServerConfig, McpToolSource};
use loopwright::providers::{
    AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel,
};
use loopwright::{
    ContentPart, Message, Role, ToolCall, ToolContext, ToolOutputPart, ToolResult, ToolSource,
    model::ModelRequest,
};
use serde_json::{Value, json};

fn everything() -> McpServerConfig {
    let bin =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests-deps/node_modules/.bin/mcp-server-everything");
    assert!(bin.exists(), "{} is installed by scripts/test.sh", bin.display());
    McpServerConfig::stdio("everything", bin.to_string_lossy()).arg("stdio")
}

fn test_server() -> McpServerConfig {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-test-server");
    assert!(
        bin.exists(),
        "{} is built by `cargo test --workspace` (or `cargo build -p loopwright-mcp --example mcp-test-server`)",
        bin.display()
    );
    McpServerConfig::stdio("test", bin.to_string_lossy())
}

/// Call `tool` of `config`'s server with `input`: its output parts.
async fn call(config: McpServerConfig, tool: &str, input: Value) -> Vec<ToolOutputPart> {
    let source = McpToolSource::connect(config).await.unwrap();
    let found = source
        .tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.definition().name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"));
    let output = found.call(input, ToolContext::new("c")).await.unwrap();
    source.close().await;
    assert!(!output.is_error, "{:?}", output.parts);
    output.parts
}

fn request(parts: Vec<ToolOutputPart>) -> ModelRequest {
    ModelRequest::new(vec![
        Message::user("look"),
        Message::new(
            Role::Assistant,
            vec![ContentPart::ToolCall(ToolCall::new("c1", "t", json!({})))],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "c1".into(),
                parts,
                is_error: false,
            })],
        ),
    ])
}

/// Every string in `body`.
fn strings(body: &Value) -> Vec<String> {
    match body {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => vec![],
    }
}

/// The bodies of every provider for `parts`: (native ones, placeholder ones).
fn bodies(parts: Vec<ToolOutputPart>) -> (Vec<Value>, Vec<Value>) {
    let request = request(parts);
    let native = vec![
        AnthropicModel::builder("claude-test")
            .build()
            .unwrap()
            .request_body(&request),
        OpenAiResponsesModel::builder("gpt-test")
            .build()
            .unwrap()
            .request_body(&request),
        GeminiModel::builder("gemini-test")
            .build()
            .unwrap()
            .request_body(&request),
    ];
    let placeholders = vec![
        OpenAiChatModel::openai("gpt-test")
            .build()
            .unwrap()
            .request_body(&request),
        OllamaModel::builder("qwen3")
            .build()
            .unwrap()
            .request_body(&request),
    ];
    (native, placeholders)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everythings_image_and_embedded_resource_reach_the_providers_that_take_them() {
    loopwright::providers::install_tls_provider();
    let image = call(everything(), "get-tiny-image", json!({})).await;
    let data = image
        .iter()
        .find_map(|p| match p {
            ToolOutputPart::Image {
                image: loopwright::message::ImageSource::Base64 { data, .. },
            } => Some(data.clone()),
            _ => None,
        })
        .expect("an image");
    let (native, placeholders) = bodies(image);
    for body in &native {
        assert!(strings(body).iter().any(|s| s.contains(&data)), "{body}");
    }
    for body in &placeholders {
        assert!(
            strings(body).iter().any(|s| s.contains("[image: image/png")),
            "{body}"
        );
        assert!(!strings(body).iter().any(|s| s.contains(&data)));
    }

    // A gzip of a data URI, returned as an embedded binary resource.
    let gzip = call(
        everything(),
        "gzip-file-as-resource",
        json!({"name": "notes.txt.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=", "outputType": "resource"}),
    )
    .await;
    let (blob, uri) = gzip
        .iter()
        .find_map(|p| match p {
            ToolOutputPart::File {
                file: loopwright::message::FileSource::Base64 { data, media_type },
                filename: Some(uri),
            } if media_type == "application/gzip" => Some((data.clone(), uri.clone())),
            _ => None,
        })
        .expect("a file part");
    assert!(uri.ends_with("notes.txt.gz"), "{uri}");
    let (native, placeholders) = bodies(gzip);
    // Responses and Gemini take any file; Anthropic's documents are PDF and text only.
    assert!(strings(&native[1]).iter().any(|s| s.contains(&blob)));
    assert!(strings(&native[2]).iter().any(|s| s.contains(&blob)));
    assert!(
        strings(&native[0])
            .iter()
            .any(|s| s.starts_with("[file: application/gzip"))
    );
    for body in &placeholders {
        assert!(
            strings(body)
                .iter()
                .any(|s| s.contains("[file: application/gzip")),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audio_clip_and_an_embedded_pdf_reach_the_providers_that_take_them() {
    loopwright::providers::install_tls_provider();
    let parts = call(test_server(), "media", json!({})).await;
    assert!(matches!(&parts[0], ToolOutputPart::Audio { .. }), "{parts:?}");
    assert!(matches!(&parts[1], ToolOutputPart::File { filename: Some(f), .. } if f == "file:///report.pdf"));
    let (native, placeholders) = bodies(parts);
    let anthropic = &native[0]["messages"][2]["content"][0]["content"];
    assert_eq!(
        anthropic[0]["type"], "text",
        "audio as its placeholder: {anthropic}"
    );
    assert_eq!(anthropic[1]["type"], "document");
    assert_eq!(anthropic[1]["title"], "file:///report.pdf");
    let gemini = &native[2]["contents"][2]["parts"];
    assert_eq!(gemini[1]["inlineData"]["mimeType"], "audio/wav");
    assert_eq!(gemini[2]["inlineData"]["mimeType"], "application/pdf");
    for body in &placeholders {
        let text = strings(body).join("\n");
        assert!(
            text.contains("[audio: audio/wav, 44 B]")
                && text.contains("[file: application/pdf, 15 B, file:///report.pdf]"),
            "{text}"
        );
    }
}
