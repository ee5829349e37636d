//! After a mixed session (several servers, a crash and reconnect, a
//! grandchild, a timed-out handshake, one source dropped without close), no
//! child process of this test binary is left and the grandchild is gone.
//! Its own binary, so no other test's servers are counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use loopwright_core::ToolContext;
use loopwright_mcp::{McpServerConfig, connect_all};
use serde_json::json;

#[tokio::test]
async fn no_child_process_outlives_the_sources() {
    let everything = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/.bin/mcp-server-everything");
    assert!(everything.exists(), "run `npm ci --prefix tests-deps`");
    let configs = vec![
        test_server("a"),
        test_server("b"),
        McpServerConfig::stdio("everything", everything.to_string_lossy()).arg("stdio"),
        test_server("stuck")
            .args(["--slow-init", "600000"])
            .connect_timeout(Duration::from_millis(300)),
    ];
    let connected = tokio::time::timeout(HANG_GUARD, connect_all(configs))
        .await
        .expect("hung");
    assert_eq!(connected.server_names(), ["a", "b", "everything"]);
    assert!(
        live_children().len() >= 3,
        "servers should be running: {:?}",
        live_children()
    );

    let a = &connected.sources[0];
    let out = tool(a, "spawn_grandchild")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    let grandchild: u32 = out.as_text().parse().unwrap();
    // Crash b, then let it reconnect (a new process).
    let b = &connected.sources[1];
    let crashed = tool(b, "crash")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    assert!(crashed.is_error);
    let echo = tool(b, "echo")
        .await
        .call(json!({"text": "x"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!(echo.as_text(), "x");

    // One more source, dropped without close.
    let dropped = connect(test_server("dropped")).await;
    drop(dropped);

    connected.close_all().await;
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while !live_children().is_empty() && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(live_children(), Vec::<u32>::new(), "child processes left behind");
    assert!(wait_gone(grandchild).await, "grandchild left behind");
}
