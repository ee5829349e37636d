//! A third-party server nobody here wrote: npm
//! `@modelcontextprotocol/server-everything` (pinned in tests-deps/, installed
//! by scripts/test.sh with `npm ci`), over stdio and streamable HTTP. The
//! tests FAIL when it is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use futures::StreamExt;
use loopwright_core::{
    Agent, AgentEvent, ToolContext, ToolOutputPart, ToolSet, ToolSource, tool::ProgressReporter,
};
use loopwright_mcp::{McpServerConfig, McpToolSource};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

async fn check_tools(source: &McpToolSource) {
    let names: Vec<_> = source
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tool(source, "echo")
        .await
        .call(json!({"message": "hi"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!((echo.as_text().as_str(), echo.is_error), ("Echo: hi", false));
    let sum = tool(source, "get-sum")
        .await
        .call(json!({"a": 2, "b": 40}), ToolContext::new("c"))
        .await
        .unwrap();
    assert!(sum.as_text().contains("42"), "{}", sum.as_text());
    let image = tool(source, "get-tiny-image")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    assert!(
        image
            .parts
            .iter()
            .any(|p| matches!(p, ToolOutputPart::Image { .. }))
    );
}

#[tokio::test]
async fn everything_over_stdio() {
    let source = connect(everything_stdio()).await;
    let pid = source.pid().unwrap();
    check_tools(&source).await;
    let (reporter, mut rx) = ProgressReporter::channel("p");
    let out = tool(&source, "trigger-long-running-operation")
        .await
        .call(
            json!({"duration": 0.3, "steps": 3}),
            ToolContext::new("p").with_progress(reporter),
        )
        .await
        .unwrap();
    assert!(out.as_text().contains("completed"), "{}", out.as_text());
    let mut steps = Vec::new();
    while let Some(p) = rx.try_recv() {
        steps.push((p.progress, p.total));
    }
    assert_eq!(steps, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
    source.close().await;
    assert!(process_gone(pid), "server survived close");
}

#[tokio::test]
async fn everything_through_the_agent_loop() {
    let source = connect(everything_stdio()).await;
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "everything__echo", r#"{"message": "from the loop"}"#)]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(ToolSet::builder().source(source.clone()).build())
        .build();
    let mut run = agent.run("echo something");
    let events: Vec<_> = tokio::time::timeout(HANG_GUARD, async {
        let mut v = Vec::new();
        while let Some(e) = run.next().await {
            v.push(e);
        }
        v
    })
    .await
    .expect("run hung");
    let result = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult {
                call_id,
                is_error,
                output,
                ..
            } if call_id == "c1" => Some((*is_error, output.clone())),
            _ => None,
        })
        .expect("tool result event");
    assert!(!result.0);
    assert_eq!(result.1, [ToolOutputPart::text("Echo: from the loop")]);
    source.close().await;
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let port = free_port();
    let mut server = start_everything("streamableHttp", port).await;
    let config = McpServerConfig::http("web", format!("http://127.0.0.1:{port}/mcp"))
        .header("X-Agent-Test", "${AGENT_MCP_TEST_HEADER_UNSET:-yes}");
    let source = connect(config).await;
    assert_eq!(source.name(), "web");
    assert!(source.pid().is_none());
    check_tools(&source).await;
    source.close().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn an_http_server_that_goes_away_gives_error_results_then_comes_back() {
    let port = free_port();
    let mut server = start_everything("streamableHttp", port).await;
    let source = connect(McpServerConfig::http(
        "web",
        format!("http://127.0.0.1:{port}/mcp"),
    ))
    .await;
    let echo = tool(&source, "echo").await;
    let call = |text: &'static str| {
        let echo = echo.clone();
        async move {
            tokio::time::timeout(
                HANG_GUARD,
                echo.call(json!({"message": text}), ToolContext::new("c")),
            )
            .await
            .expect("call hung")
            .unwrap()
        }
    };
    assert_eq!(call("one").await.as_text(), "Echo: one");
    server.kill().await.unwrap();
    let down = call("two").await;
    assert!(down.is_error, "{}", down.as_text());
    assert!(down.as_text().contains("mcp server web"), "{}", down.as_text());
    let mut server = start_everything("streamableHttp", port).await;
    // A new session: the call reconnects (re-initializes) and succeeds.
    assert_eq!(call("three").await.as_text(), "Echo: three");
    source.close().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn everything_over_legacy_sse() {
    let port = free_port();
    let mut server = start_everything("sse", port).await;
    // No type: a URL path ending in /sse means the legacy transport.
    let config =
        McpServerConfig::from_json("old", &json!({"url": format!("http://127.0.0.1:{port}/sse")})).unwrap();
    assert_eq!(config.transport.kind(), "sse");
    let source = connect(config).await;
    check_tools(&source).await;
    let (reporter, mut rx) = ProgressReporter::channel("p");
    let out = tool(&source, "trigger-long-running-operation")
        .await
        .call(
            json!({"duration": 0.2, "steps": 2}),
            ToolContext::new("p").with_progress(reporter),
        )
        .await
        .unwrap();
    assert!(out.as_text().contains("completed"), "{}", out.as_text());
    assert!(rx.try_recv().is_some(), "no progress over SSE");
    source.close().await;
    server.kill().await.unwrap();
}
