//! WebSocket transport against the in-repo server's `--ws` mode, which (like
//! the Python SDK's server) refuses a handshake without the `mcp`
//! subprotocol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use loopwright_core::{ToolContext, ToolSource, tool::ProgressReporter};
use loopwright_mcp::{McpServerConfig, WS_SUBPROTOCOL};
use serde_json::json;

#[tokio::test]
async fn tools_progress_and_list_changed_over_websocket() {
    let server = NetServer::start("--ws", 0, &[]).await;
    // No type: a ws:// URL means WebSocket.
    let config =
        McpServerConfig::from_json("sock", &json!({"url": server.url, "headers": {"X-Test": "1"}})).unwrap();
    assert_eq!(config.transport.kind(), "websocket");
    let source = connect(config).await;
    assert!(source.tools().await.unwrap().len() >= 12);
    assert_eq!(
        call(&tool(&source, "echo").await, json!({"text": "over ws"}))
            .await
            .as_text(),
        "over ws"
    );
    let huge = call(&tool(&source, "huge").await, json!({"kb": 1024})).await;
    assert_eq!(huge.as_text().len(), 1024 * 1024);
    // The configured header reached the server with the handshake.
    let header = call(&tool(&source, "header").await, json!({"name": "x-test"})).await;
    assert_eq!(header.as_text(), "1");

    let (reporter, mut rx) = ProgressReporter::channel("p");
    let out = tool(&source, "progress")
        .await
        .call(json!({"steps": 2}), ToolContext::new("p").with_progress(reporter))
        .await
        .unwrap();
    assert_eq!(out.as_text(), "did 2 steps");
    assert!(rx.try_recv().is_some(), "no progress over websocket");

    let mut changes = source.changes().unwrap();
    let before = *changes.borrow_and_update();
    call(&tool(&source, "add_tool").await, json!({})).await;
    tokio::time::timeout(HANG_GUARD, changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert!(*changes.borrow() > before);
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn the_server_requires_the_subprotocol_the_client_offers() {
    let server = NetServer::start("--ws", 0, &[]).await;
    // A bare handshake is refused by this server...
    let bare = tokio_tungstenite::connect_async(server.url.as_str()).await;
    assert!(
        bare.is_err(),
        "the server accepted a handshake without a subprotocol"
    );
    assert_eq!(WS_SUBPROTOCOL, "mcp");
    // ...and ours is accepted.
    let source = connect(
        McpServerConfig::from_json("sock", &json!({"type": "websocket", "url": server.url})).unwrap(),
    )
    .await;
    assert_eq!(
        call(&tool(&source, "add").await, json!({"a": 2, "b": 3}))
            .await
            .as_text(),
        "5"
    );
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_websocket_server_that_dies_gives_an_error_result_then_reconnects() {
    let server = NetServer::start("--ws", 0, &[]).await;
    let port = server.port();
    let source = connect(McpServerConfig::from_json("sock", &json!({"url": server.url})).unwrap()).await;
    let crash = call(&tool(&source, "crash").await, json!({})).await;
    assert!(crash.is_error);
    assert!(crash.as_text().contains("mcp server sock"), "{}", crash.as_text());
    server.kill().await;
    let server = NetServer::start("--ws", port, &[]).await;
    let back = call(&tool(&source, "echo").await, json!({"text": "back"})).await;
    assert_eq!((back.as_text().as_str(), back.is_error), ("back", false));
    source.close().await;
    server.kill().await;
}
