//! Images, files and audio, both ways, per wire format:
//! - in a user message, each provider writes the native form (Anthropic
//!   document blocks, OpenAI `file` / `input_audio` and `input_file` parts,
//!   Gemini `inlineData` / `fileData`); a part a provider cannot take fails
//!   before anything is sent (a local server sees no request), or becomes
//!   its placeholder when the request asks for that;
//! - in a tool result, images, audio and files reach the providers whose
//!   tool results take them (Anthropic, OpenAI Responses, Gemini) and
//!   become placeholders elsewhere (Chat Completions, Ollama), so the model
//!   still learns what came back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::models::{anthropic, chat, gemini, ollama, responses};
use common::{ModelServer, Reply, serve};
use loopwright_core::{
    ContentPart, LanguageModel, Message, Role, ToolCall, ToolOutputPart, ToolResult, message::FileSource,
    message::ImageSource, model::MediaFallback, model::ModelRequest,
};
use loopwright_providers::{AnthropicModel, OllamaModel, OpenAiResponsesModel};
use serde_json::{Value, json};

/// A 1,230-byte PNG, base64-encoded (1,640 characters).
fn png() -> ImageSource {
    ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "A".repeat(1640),
    }
}

fn pdf() -> FileSource {
    FileSource::from_bytes("application/pdf", b"%PDF-1.7 minimal")
}

fn wav() -> FileSource {
    FileSource::from_bytes("audio/wav", b"RIFF....WAVEfmt ")
}

const IMAGE_PLACEHOLDER: &str = "[image: image/png, 1.2 KB]\na chart of sales";

/// A user message with `parts` after a text.
fn asking(parts: Vec<ContentPart>) -> ModelRequest {
    let mut content = vec![ContentPart::text("What is in these?")];
    content.extend(parts);
    ModelRequest::new(vec![Message::new(Role::User, content)])
}

fn a_pdf() -> ContentPart {
    ContentPart::File {
        file: pdf(),
        filename: Some("report.pdf".into()),
    }
}

fn a_clip() -> ContentPart {
    ContentPart::Audio { audio: wav() }
}

fn base64_of(source: &FileSource) -> String {
    match source {
        FileSource::Base64 { data, .. } => data.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn user_files_and_audio_go_in_each_providers_native_form() {
    let pdf64 = base64_of(&pdf());
    let wav64 = base64_of(&wav());
    let notes = ContentPart::file("text/plain", b"line one\nline two", Some("notes.txt"));
    let by_url = ContentPart::File {
        file: FileSource::url("https://example.com/a.pdf", Some("application/pdf")),
        filename: None,
    };

    let body = anthropic("claude-test").request_body(&asking(vec![a_pdf(), notes.clone(), by_url.clone()]));
    let blocks = &body["messages"][0]["content"];
    assert_eq!(
        blocks[1],
        json!({"type": "document", "title": "report.pdf",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf64}})
    );
    assert_eq!(
        blocks[2],
        json!({"type": "document", "title": "notes.txt",
            "source": {"type": "text", "media_type": "text/plain", "data": "line one\nline two"}})
    );
    assert_eq!(
        blocks[3]["source"],
        json!({"type": "url", "url": "https://example.com/a.pdf"})
    );

    let body = chat("gpt-test").request_body(&asking(vec![a_pdf(), a_clip()]));
    let parts = &body["messages"][0]["content"];
    assert_eq!(
        parts[1],
        json!({"type": "file", "file": {"filename": "report.pdf",
            "file_data": format!("data:application/pdf;base64,{pdf64}")}})
    );
    assert_eq!(
        parts[2],
        json!({"type": "input_audio", "input_audio": {"data": wav64, "format": "wav"}})
    );

    let body = responses("gpt-test").request_body(&asking(vec![a_pdf(), by_url]));
    let parts = &body["input"][0]["content"];
    assert_eq!(
        parts[1],
        json!({"type": "input_file", "filename": "report.pdf",
            "file_data": format!("data:application/pdf;base64,{pdf64}")})
    );
    assert_eq!(
        parts[2],
        json!({"type": "input_file", "file_url": "https://example.com/a.pdf"})
    );

    let url_clip = ContentPart::Audio {
        audio: FileSource::url("gs://bucket/clip.mp3", Some("audio/mpeg")),
    };
    let body = gemini("gemini-test").request_body(&asking(vec![a_pdf(), a_clip(), url_clip]));
    let parts = &body["contents"][0]["parts"];
    assert_eq!(
        parts[1],
        json!({"inlineData": {"mimeType": "application/pdf", "data": pdf64}})
    );
    assert_eq!(
        parts[2],
        json!({"inlineData": {"mimeType": "audio/wav", "data": wav64}})
    );
    assert_eq!(
        parts[3],
        json!({"fileData": {"fileUri": "gs://bucket/clip.mp3", "mimeType": "audio/mpeg"}})
    );
}

/// `model.stream(request)` against a local server: the error, and how many
/// requests the server got.
async fn refused(model: &dyn LanguageModel, request: ModelRequest, server: &ModelServer) -> String {
    let error = model.stream(request).await.err().expect("refused");
    assert_eq!(server.received().len(), 0, "nothing may be sent");
    assert_eq!(error.status(), None);
    error.to_string()
}

#[tokio::test]
async fn a_part_a_provider_cannot_take_fails_before_sending_or_becomes_its_placeholder() {
    loopwright_providers::install_tls_provider();
    let server = serve(vec![]).await;
    let claude = AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let message = refused(&claude, asking(vec![a_clip()]), &server).await;
    assert!(
        message.contains("messages[0]: an audio clip [audio: audio/wav, 16 B] cannot be sent to anthropic"),
        "{message}"
    );
    let gpt = OpenAiResponsesModel::builder("gpt-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let message = refused(&gpt, asking(vec![a_clip()]), &server).await;
    assert!(message.contains("the Responses API takes no audio"), "{message}");
    let local = OllamaModel::builder("qwen3")
        .base_url(server.url())
        .build()
        .unwrap();
    let message = refused(&local, asking(vec![a_pdf()]), &server).await;
    assert!(
        message.contains("a file [file: application/pdf, 16 B, report.pdf]"),
        "{message}"
    );
    let xlsx = ContentPart::file("application/vnd.ms-excel", b"x", Some("a.xls"));
    let message = refused(&claude, asking(vec![xlsx]), &server).await;
    assert!(message.contains("PDF and plain-text documents only"), "{message}");

    // Asked for placeholders, the request goes with the placeholder instead.
    let server = serve(vec![Reply::status(400, r#"{"error":{"message":"stop here"}}"#)]).await;
    let claude = AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let mut request = asking(vec![a_clip()]);
    request.unsupported_media = MediaFallback::Placeholder;
    let _ = claude.stream(request).await;
    let sent = server.last_body();
    assert_eq!(
        sent["messages"][0]["content"][1],
        json!({"type": "text", "text": "[audio: audio/wav, 16 B]"})
    );
}

/// A tool result holding `parts`.
fn tool_result(parts: Vec<ToolOutputPart>) -> ModelRequest {
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
                parts,
                is_error: false,
            })],
        ),
    ])
}

fn chart() -> Vec<ToolOutputPart> {
    vec![
        ToolOutputPart::Image { image: png() },
        ToolOutputPart::text("a chart of sales"),
    ]
}

fn media() -> Vec<ToolOutputPart> {
    vec![
        ToolOutputPart::text("three things"),
        ToolOutputPart::Image { image: png() },
        ToolOutputPart::Audio { audio: wav() },
        ToolOutputPart::File {
            file: pdf(),
            filename: Some("report.pdf".into()),
        },
    ]
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
fn tool_results_without_media_support_get_placeholders() {
    let body = chat("gpt-test").request_body(&tool_result(chart()));
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "content": IMAGE_PLACEHOLDER})
    );
    let local = ollama("qwen3").request_body(&tool_result(chart()));
    assert_eq!(local["messages"][2]["content"], IMAGE_PLACEHOLDER);
    let everything = chat("gpt-test").request_body(&tool_result(media()));
    assert_eq!(
        everything["messages"][2]["content"],
        "three things\n[image: image/png, 1.2 KB]\n[audio: audio/wav, 16 B]\n[file: application/pdf, 16 B, report.pdf]"
    );
    for body in [&body, &local, &everything] {
        assert!(
            !strings(body).iter().any(|s| s.contains(&"A".repeat(100))),
            "media bytes sent where the model cannot see them"
        );
    }
}

#[test]
fn providers_that_take_tool_media_get_it() {
    let data = "A".repeat(1640);
    let pdf64 = base64_of(&pdf());
    let wav64 = base64_of(&wav());

    let body = anthropic("claude-test").request_body(&tool_result(media()));
    let content = &body["messages"][2]["content"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "three things"}));
    assert_eq!(content[1]["source"]["data"], data);
    // Anthropic's tool results take no audio: its placeholder.
    assert_eq!(
        content[2],
        json!({"type": "text", "text": "[audio: audio/wav, 16 B]"})
    );
    assert_eq!(content[3]["type"], "document");
    assert_eq!(content[3]["source"]["data"], pdf64);

    let body = responses("gpt-test").request_body(&tool_result(media()));
    let output = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    assert_eq!(
        output["output"],
        json!([
            {"type": "input_text", "text": "three things"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{data}")},
            {"type": "input_text", "text": "[audio: audio/wav, 16 B]"},
            {"type": "input_file", "filename": "report.pdf", "file_data": format!("data:application/pdf;base64,{pdf64}")},
        ])
    );
    // A text result stays a string.
    let plain = responses("gpt-test").request_body(&tool_result(vec![ToolOutputPart::text("42")]));
    assert!(strings(&plain).contains(&"42"));

    let body = gemini("gemini-test").request_body(&tool_result(media()));
    let parts = &body["contents"][2]["parts"];
    assert_eq!(
        parts[0]["functionResponse"]["response"]["content"],
        "three things"
    );
    assert_eq!(
        parts[1],
        json!({"inlineData": {"mimeType": "image/png", "data": data}})
    );
    assert_eq!(
        parts[2],
        json!({"inlineData": {"mimeType": "audio/wav", "data": wav64}})
    );
    assert_eq!(
        parts[3],
        json!({"inlineData": {"mimeType": "application/pdf", "data": pdf64}})
    );
}
