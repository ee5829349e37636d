//! Resources and structured output against npm
//! `@modelcontextprotocol/server-everything` (pinned in tests-deps/), over
//! stdio and streamable HTTP: the resource tools appear only with
//! `resources: true`; listing shows its seven static documents and its two
//! URI templates; reading gives a document's text, a placeholder for a blob,
//! an error result for an unknown URI; resource links name their URIs and,
//! with resources on, how to read them; a tool's structured output is seen
//! once; and a scripted model lists, then reads, through the agent loop.
//! The tests FAIL when the server is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use common::*;
use loopwright_core::{Agent, ContentPart, ExitReason, ToolSet, ToolSource};
use loopwright_mcp::{McpServerConfig, McpToolSource};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

/// The static documents server-everything serves as resources.
fn docs_dir() -> PathBuf {
    everything_bin()
        .parent()
        .unwrap()
        .join("../@modelcontextprotocol/server-everything/dist/docs")
}

fn doc_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(docs_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

/// A connected server-everything (its HTTP process killed when dropped).
struct Everything {
    source: McpToolSource,
    _server: Option<tokio::process::Child>,
}

#[derive(Clone, Copy, Debug)]
enum Transport {
    Stdio,
    Http,
}

/// server-everything over `transport`, named `everything`, with `resources`
/// as given (never trusted: our annotations must not depend on it).
async fn everything(transport: Transport, resources: bool) -> Everything {
    let (config, server) = match transport {
        Transport::Stdio => (everything_stdio(), None),
        Transport::Http => {
            let port = free_port();
            let server = start_everything("streamableHttp", port).await;
            let url = format!("http://127.0.0.1:{port}/mcp");
            (McpServerConfig::http("everything", url), Some(server))
        }
    };
    Everything {
        source: connect(config.resources(resources)).await,
        _server: server,
    }
}

async fn names(source: &McpToolSource) -> Vec<String> {
    source
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect()
}

/// Everything the resource tools and result mapping promise, on one server.
async fn check_resources(source: &McpToolSource) {
    let all = names(source).await;
    assert!(all.iter().any(|n| n == "list_resources"), "{all:?}");
    assert!(all.iter().any(|n| n == "read_resource"), "{all:?}");
    assert!(source.warnings().is_empty(), "{:?}", source.warnings());
    // Ours are read-only although the server is not trusted; its own
    // read-only claims are not believed.
    let read = tool(source, "read_resource").await;
    assert!(read.definition().annotations.read_only);
    assert_eq!(read.definition().input_schema["required"], json!(["uri"]));
    assert!(!tool(source, "echo").await.definition().annotations.read_only);

    let listing = call(&tool(source, "list_resources").await, json!({})).await;
    assert!(!listing.is_error, "{}", listing.as_text());
    let text = listing.as_text();
    let docs = doc_names();
    assert_eq!(docs.len(), 7, "{docs:?}");
    for name in &docs {
        let line = format!("- demo://resource/static/document/{name} ({name}, ");
        assert!(text.contains(&line), "{line} missing from\n{text}");
    }
    assert!(text.contains("Resources (7):"), "{text}");
    assert!(text.contains("Resource templates (2; "), "{text}");
    assert!(
        text.contains("- demo://resource/dynamic/text/{resourceId} ("),
        "{text}"
    );
    assert!(
        text.contains("- demo://resource/dynamic/blob/{resourceId} ("),
        "{text}"
    );

    let doc = call(&read, json!({"uri": ARCHITECTURE})).await;
    assert!(!doc.is_error, "{}", doc.as_text());
    let on_disk = std::fs::read_to_string(docs_dir().join("architecture.md")).unwrap();
    assert_eq!(doc.as_text(), on_disk);

    let blob = call(&read, json!({"uri": "demo://resource/dynamic/blob/1"})).await;
    assert!(!blob.is_error, "{}", blob.as_text());
    assert_eq!(blob.parts.len(), 1);
    // A text/plain blob reaches the model as its text.
    assert!(
        matches!(&blob.parts[0], loopwright_core::ToolOutputPart::Text { text } if text.starts_with("Resource 1: This is a base64 blob")),
        "{:?}",
        blob.parts
    );

    let unknown = call(&read, json!({"uri": "demo://resource/static/document/nope.md"})).await;
    assert!(unknown.is_error, "{}", unknown.as_text());
    let message = unknown.as_text();
    assert!(
        message.starts_with("mcp server everything: tool read_resource: reading demo://resource/static/document/nope.md failed: ")
            && message.contains("Check the URI: the list_resources tool"),
        "{message}"
    );

    // Odd ids are blobs, even ids text; the model is told how to read them,
    // and the text one reads.
    let links = call(&tool(source, "get-resource-links").await, json!({"count": 2})).await;
    let text = links.as_text();
    assert!(
        text.contains("[resource link: ") && text.contains("demo://resource/dynamic/blob/1"),
        "{text}"
    );
    assert!(text.contains("demo://resource/dynamic/text/2"), "{text}");
    assert!(
        text.ends_with(
            "To read a linked resource, call everything__read_resource (the read_resource tool of MCP server everything) with its uri."
        ),
        "{text}"
    );
    let linked = call(&read, json!({"uri": "demo://resource/dynamic/text/2"})).await;
    assert!(
        linked.as_text().starts_with("Resource 2: "),
        "{}",
        linked.as_text()
    );

    check_structured_once(source).await;
}

/// get-structured-content declares an outputSchema and returns the same
/// JSON as text: the model sees it once.
async fn check_structured_once(source: &McpToolSource) {
    let weather = tool(source, "get-structured-content").await;
    assert!(weather.definition().output_schema.is_some());
    let out = call(&weather, json!({"location": "Chicago"})).await;
    assert!(!out.is_error, "{}", out.as_text());
    let text = out.as_text();
    assert_eq!(text.matches("temperature").count(), 1, "{text}");
    assert!(text.contains("Light rain / drizzle"), "{text}");
}

#[tokio::test]
async fn resources_over_stdio() {
    let server = everything(Transport::Stdio, true).await;
    check_resources(&server.source).await;
    server.source.close().await;
}

#[tokio::test]
async fn resources_over_streamable_http() {
    let server = everything(Transport::Http, true).await;
    check_resources(&server.source).await;
    server.source.close().await;
}

#[tokio::test]
async fn without_resources_true_there_are_no_resource_tools_and_no_note() {
    for transport in [Transport::Stdio, Transport::Http] {
        let server = everything(transport, false).await;
        let all = names(&server.source).await;
        assert!(all.iter().any(|n| n == "echo"), "{transport:?}: {all:?}");
        assert!(
            !all.iter().any(|n| n == "list_resources" || n == "read_resource"),
            "{transport:?}: {all:?}"
        );
        let links = call(
            &tool(&server.source, "get-resource-links").await,
            json!({"count": 1}),
        )
        .await;
        let text = links.as_text();
        assert!(text.contains("demo://resource/dynamic/blob/1"), "{text}");
        assert!(!text.contains("read_resource"), "{transport:?}: {text}");
        check_structured_once(&server.source).await;
        server.source.close().await;
    }
}

#[tokio::test]
async fn the_resource_tools_survive_rediscovery_after_a_reconnect() {
    let port = free_port();
    let mut server = start_everything("streamableHttp", port).await;
    let config = McpServerConfig::http("everything", format!("http://127.0.0.1:{port}/mcp")).resources(true);
    let source = connect(config).await;
    assert!(names(&source).await.iter().any(|n| n == "read_resource"));
    // Awaited, so the next call finds it gone rather than dying.
    server.kill().await.unwrap();
    let echo = tool(&source, "echo").await;
    let down = call(&echo, json!({"message": "one"})).await;
    assert!(down.is_error, "{}", down.as_text());
    let _server = start_everything("streamableHttp", port).await;
    // The call reconnects, which marks the tools for rediscovery.
    assert_eq!(
        call(&echo, json!({"message": "two"})).await.as_text(),
        "Echo: two"
    );
    let all = names(&source).await;
    assert!(all.iter().any(|n| n == "list_resources"), "{all:?}");
    let read = tool(&source, "read_resource").await;
    let doc = call(&read, json!({"uri": ARCHITECTURE})).await;
    assert!(!doc.is_error, "{}", doc.as_text());
    source.close().await;
}

#[tokio::test]
async fn a_server_without_resources_gets_a_warning_and_no_resource_tools() {
    let source = connect(test_server("plain").resources(true)).await;
    let all = names(&source).await;
    assert!(all.iter().any(|n| n == "echo"), "{all:?}");
    assert!(!all.iter().any(|n| n.contains("resource")), "{all:?}");
    let catalog = ToolSet::builder().source(source.clone()).build().catalog().await;
    assert!(
        catalog.warnings().iter().any(|w| w
            .starts_with("mcp server plain: \"resources\": true, but the server does not offer resources")),
        "{:?}",
        catalog.warnings()
    );
    source.close().await;
}

#[tokio::test]
async fn a_server_with_resources_and_no_tools_connects_and_its_resources_are_read() {
    // No `tools` capability, and tools/list answered "method not found".
    let source = connect(test_server("docs").arg("--docs-only").resources(true)).await;
    assert_eq!(names(&source).await, ["list_resources", "read_resource"]);
    let listed = call(&tool(&source, "list_resources").await, json!({})).await;
    assert!(
        !listed.is_error && listed.as_text().contains("docs://readme"),
        "{}",
        listed.as_text()
    );
    let read = call(
        &tool(&source, "read_resource").await,
        json!({"uri": "docs://readme"}),
    )
    .await;
    assert_eq!(
        (read.is_error, read.as_text()),
        (false, "the docs server's readme".to_owned())
    );
    source.close().await;
}

/// The texts of the tool results in a run's history, in order.
fn tool_results(messages: &[loopwright_core::Message]) -> Vec<(bool, String)> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_lists_then_reads_a_resource_through_the_loop() {
    let server = everything(Transport::Stdio, true).await;
    let read_args = json!({"uri": ARCHITECTURE}).to_string();
    let model = Arc::new(ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "everything__list_resources", "{}")]),
        ScriptedStep::tool_calls(&[("c2", "everything__read_resource", &read_args)]),
        ScriptedStep::text("It describes the architecture."),
    ]));
    let agent = Agent::builder(model.clone())
        .tools(ToolSet::builder().source(server.source.clone()).build())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("What does the architecture doc say?"))
        .await
        .expect("run hung")
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Completed);
    let results = tool_results(&result.messages);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        !results[0].0
            && results[0]
                .1
                .contains(&format!("- {ARCHITECTURE} (architecture.md, "))
    );
    let on_disk = std::fs::read_to_string(docs_dir().join("architecture.md")).unwrap();
    assert_eq!(results[1], (false, on_disk.clone()));
    // The model was offered both tools and got the document back.
    let requests = model.requests();
    let offered: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.contains(&"everything__list_resources"), "{offered:?}");
    assert!(offered.contains(&"everything__read_resource"), "{offered:?}");
    let sent = tool_results(&requests[2].messages);
    assert_eq!(sent.last(), Some(&(false, on_disk)));
    server.source.close().await;
}
