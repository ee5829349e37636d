//! The in-repo test server over stdio, driven through McpToolSource: discovery,
//! result mapping, progress, timeouts, cancellation, crashes, list_changed,
//! env scoping and process cleanup.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::*;
use loopwright_core::{ToolContext, ToolError, ToolOutputPart, ToolSource, tool::ProgressReporter};
use loopwright_mcp::{McpError, connect_all};
use serde_json::json;

#[tokio::test]
async fn discovers_every_page_and_the_instructions() {
    let source = connect(test_server("t")).await;
    let tools = source.tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.definition().name.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "add",
            "add_tool",
            "ask_elicitation",
            "ask_ping",
            "ask_roots",
            "ask_sampling",
            "crash",
            "echo",
            "env",
            "fail",
            "header",
            "huge",
            "image",
            "media",
            "meta",
            "noargs",
            "progress",
            "slow",
            "spawn_grandchild"
        ]
    );
    let noargs = tools.iter().find(|t| t.definition().name == "noargs").unwrap();
    assert_eq!(
        noargs.definition().input_schema,
        json!({"type": "object", "properties": {}})
    );
    assert!(source.instructions().unwrap().contains("call echo"));
    assert_eq!(source.kind(), loopwright_core::toolset::SourceKind::External);
    source.close().await;
}

#[tokio::test]
async fn results_are_mapped() {
    let source = connect(test_server("t")).await;
    let ctx = || ToolContext::new("c");
    let echo = tool(&source, "echo")
        .await
        .call(json!({"text": "hi"}), ctx())
        .await
        .unwrap();
    assert_eq!((echo.as_text().as_str(), echo.is_error), ("hi", false));
    let sum = tool(&source, "add")
        .await
        .call(json!({"a": 2, "b": 3.5}), ctx())
        .await
        .unwrap();
    assert_eq!(sum.as_text(), "5.5");
    let image = tool(&source, "image").await.call(json!({}), ctx()).await.unwrap();
    assert!(matches!(image.parts[0], ToolOutputPart::Image { .. }));
    assert_eq!(image.as_text(), "a tiny png");
    let failed = tool(&source, "fail").await.call(json!({}), ctx()).await.unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.as_text(), "it failed on purpose");
    let huge = tool(&source, "huge")
        .await
        .call(json!({"kb": 512}), ctx())
        .await
        .unwrap();
    assert_eq!(huge.as_text().len(), 512 * 1024);
    let none = tool(&source, "noargs")
        .await
        .call(serde_json::Value::Null, ctx())
        .await
        .unwrap();
    assert_eq!(none.as_text(), "noargs ran");
    source.close().await;
}

#[tokio::test]
async fn progress_notifications_reach_the_reporter() {
    let source = connect(test_server("t")).await;
    let (reporter, mut rx) = ProgressReporter::channel("call-7");
    let out = tool(&source, "progress")
        .await
        .call(
            json!({"steps": 3}),
            ToolContext::new("call-7").with_progress(reporter),
        )
        .await
        .unwrap();
    assert_eq!(out.as_text(), "did 3 steps");
    let mut seen = Vec::new();
    while let Some(p) = rx.try_recv() {
        seen.push((p.call_id, p.progress, p.total, p.message));
    }
    assert_eq!(
        seen,
        (1..=3)
            .map(|i| (
                "call-7".to_string(),
                f64::from(i),
                Some(3.0),
                Some(format!("step {i}"))
            ))
            .collect::<Vec<_>>()
    );
    source.close().await;
}

#[tokio::test]
async fn a_timeout_is_an_error_result_and_cancels_on_the_server() {
    let log = temp_log("timeout");
    let config = test_server("sleepy")
        .env("TEST_SERVER_LOG", log.to_string_lossy())
        .call_timeout(Duration::from_millis(300));
    let source = connect(config).await;
    let out = tokio::time::timeout(
        HANG_GUARD,
        tool(&source, "slow")
            .await
            .call(json!({"ms": 600_000}), ToolContext::new("c")),
    )
    .await
    .expect("call hung")
    .unwrap();
    assert!(out.is_error);
    assert!(out.as_text().contains("mcp server sleepy"), "{}", out.as_text());
    assert!(out.as_text().contains("timed out"), "{}", out.as_text());
    assert!(
        wait_for_line(&log, "cancelled slow").await,
        "server never saw notifications/cancelled"
    );
    // The connection is still usable.
    let echo = tool(&source, "echo")
        .await
        .call(json!({"text": "still here"}), ToolContext::new("c"))
        .await;
    assert_eq!(echo.unwrap().as_text(), "still here");
    source.close().await;
}

#[tokio::test]
async fn agent_cancellation_returns_promptly_and_cancels_on_the_server() {
    let log = temp_log("cancel");
    let source = connect(test_server("t").env("TEST_SERVER_LOG", log.to_string_lossy())).await;
    let (token, call) = spawn_cancellable_slow(&source).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    token.cancel();
    let result = tokio::time::timeout(HANG_GUARD, call)
        .await
        .expect("cancel hung")
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(
        wait_for_line(&log, "cancelled slow").await,
        "server never saw notifications/cancelled"
    );
    source.close().await;
}

#[tokio::test]
async fn a_crash_is_an_error_result_naming_the_server_then_it_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let source = connect(test_server("crashy").env("TEST_SERVER_LOG", log.to_string_lossy())).await;
    let first_pid = source.pid().unwrap();
    let out = tokio::time::timeout(
        HANG_GUARD,
        tool(&source, "crash")
            .await
            .call(json!({}), ToolContext::new("c")),
    )
    .await
    .expect("crash hung")
    .unwrap();
    assert!(out.is_error);
    assert!(out.as_text().contains("mcp server crashy"), "{}", out.as_text());
    // The next call finds the transport closed, reconnects once and succeeds.
    let echo = tool(&source, "echo")
        .await
        .call(json!({"text": "back"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!(echo.as_text(), "back");
    // The crashing call was delivered: it was not sent again (the restarted
    // server would have logged it, and crashed again).
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("called crash").count(), 1, "{calls}");
    assert_eq!(calls.matches("called echo").count(), 1, "{calls}");
    assert_ne!(source.pid().unwrap(), first_pid);
    assert!(wait_gone(first_pid).await);
    source.close().await;
}

#[tokio::test]
async fn close_ends_the_server_and_its_grandchildren() {
    let source = connect(test_server("t")).await;
    let server_pid = source.pid().unwrap();
    let echo = tool(&source, "echo").await;
    let out = tool(&source, "spawn_grandchild")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    let grandchild: u32 = out.as_text().parse().unwrap();
    assert!(!process_gone(grandchild), "the grandchild should be running");
    source.close().await;
    source.close().await; // idempotent
    assert!(process_gone(server_pid), "server survived close");
    assert!(process_gone(grandchild), "grandchild survived close");
    // After close: no reconnect, an error naming the server.
    let Err(err) = source.tools().await else {
        panic!("tools() after close")
    };
    assert_eq!(err.source_name, "t");
    let out = echo
        .call(json!({"text": "x"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert!(
        out.is_error && out.as_text().contains("mcp server t"),
        "{}",
        out.as_text()
    );
}

#[tokio::test]
async fn drop_ends_the_server_and_its_grandchildren() {
    let source = connect(test_server("t")).await;
    let server_pid = source.pid().unwrap();
    let spawn = tool(&source, "spawn_grandchild").await;
    let out = spawn.call(json!({}), ToolContext::new("c")).await.unwrap();
    let grandchild: u32 = out.as_text().parse().unwrap();
    drop(spawn);
    drop(source);
    assert!(wait_gone(server_pid).await, "server survived drop");
    assert!(wait_gone(grandchild).await, "grandchild survived drop");
}

#[tokio::test]
async fn list_changed_bumps_the_generation_and_the_new_tool_appears() {
    let source = connect(test_server("t")).await;
    let mut changes = source.changes().unwrap();
    let before = *changes.borrow_and_update();
    tool(&source, "add_tool")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    tokio::time::timeout(HANG_GUARD, changes.changed())
        .await
        .expect("no change seen")
        .unwrap();
    assert!(*changes.borrow() > before);
    let extra = tool(&source, "extra")
        .await
        .call(json!({}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!(extra.as_text(), "extra ran");
    source.close().await;
}

#[tokio::test]
async fn a_server_sees_only_its_own_env_and_the_safe_base() {
    // cargo sets CARGO_MANIFEST_DIR for the test process: the server must not inherit it.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let config = test_server("t").env("GREETING", "pkg ${CARGO_PKG_NAME} ${NOT_SET_ANYWHERE_42:-dflt}");
    let source = connect(config).await;
    let env = tool(&source, "env").await;
    let get = |name: &'static str| {
        let env = env.clone();
        async move {
            env.call(json!({"name": name}), ToolContext::new("c"))
                .await
                .unwrap()
                .as_text()
        }
    };
    assert_eq!(get("CARGO_MANIFEST_DIR").await, "<unset>");
    assert_eq!(get("GREETING").await, "pkg loopwright-mcp dflt");
    assert_eq!(get("PATH").await, std::env::var("PATH").unwrap());
    source.close().await;
}

#[tokio::test]
async fn connect_all_keeps_going_past_failures() {
    let configs = vec![
        test_server("good"),
        test_server("needs_var").env("TOKEN", "${AGENT_MCP_TEST_SURELY_UNSET_VAR}"),
        loopwright_mcp::McpServerConfig::stdio("missing_binary", "/nonexistent/agent-mcp-server"),
        test_server("stuck")
            .args(["--slow-init", "600000"])
            .connect_timeout(Duration::from_millis(500)),
        test_server("off").enabled(false),
    ];
    let got = tokio::time::timeout(HANG_GUARD, connect_all(configs))
        .await
        .expect("connect_all hung");
    assert_eq!(got.server_names(), ["good"]);
    let mut failed: Vec<_> = got.failed.iter().map(|f| f.server.as_str()).collect();
    failed.sort();
    assert_eq!(failed, ["missing_binary", "needs_var", "stuck"]);
    for f in &got.failed {
        match (&*f.server, &f.error) {
            ("needs_var", McpError::MissingVariable { server, variable }) => {
                assert_eq!(
                    (server.as_str(), variable.as_str()),
                    ("needs_var", "AGENT_MCP_TEST_SURELY_UNSET_VAR")
                );
            }
            ("missing_binary", McpError::Spawn { .. }) | ("stuck", McpError::Timeout { .. }) => {}
            other => panic!("unexpected failure {other:?}"),
        }
    }
    got.close_all().await;
}

#[tokio::test]
async fn a_server_that_never_initializes_is_timed_out_and_killed() {
    let pid_file = temp_log("slow-init-pid");
    let config = test_server("stuck")
        .args(["--pid-file", &pid_file.to_string_lossy(), "--slow-init", "600000"])
        .connect_timeout(Duration::from_millis(500));
    let result = tokio::time::timeout(HANG_GUARD, loopwright_mcp::McpToolSource::connect(config))
        .await
        .expect("connect hung");
    match result {
        Err(McpError::Timeout { server, after }) => {
            assert_eq!((server.as_str(), after), ("stuck", Duration::from_millis(500)));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid).await, "the timed-out server was left running");
}

#[tokio::test]
async fn garbage_on_stdout_before_the_handshake_is_survived() {
    let source = connect(test_server("noisy").arg("--garbage")).await;
    let echo = tool(&source, "echo")
        .await
        .call(json!({"text": "ok"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!(echo.as_text(), "ok");
    source.close().await;
}

/// A discovery answered after rmcp stopped waiting for it (and sent
/// `initialize`) is not a broken server: the late answer arrives where the
/// handshake's was expected, and a fresh attempt with the handshake alone
/// connects. (rmcp's probe waits 10 s: this test takes that long.)
#[tokio::test]
async fn a_discovery_answered_after_the_probe_gave_up_falls_back_to_initialize() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/late-discover-server.js"
    );
    // The late answer as an error, then as a result: both at once.
    let late = |name: &str, extra: &[&str]| {
        let mut config = loopwright_mcp::McpServerConfig::stdio(name, "node")
            .arg(script)
            .connect_timeout(Duration::from_secs(60));
        for arg in extra {
            config = config.arg(*arg);
        }
        async move {
            let source = connect(config).await;
            let tools = source.tools().await.unwrap();
            assert_eq!(tools.len(), 1);
            assert_eq!(tools[0].definition().name, "late_echo");
            source.close().await;
        }
    };
    futures::join!(late("late-error", &[]), late("late-result", &["--result"]));
}

#[tokio::test]
async fn legacy_parameters_and_schemaless_tools_are_accepted() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/legacy-server.js");
    let source = connect(loopwright_mcp::McpServerConfig::stdio("legacy", "node").arg(script)).await;
    let tools = source.tools().await.unwrap();
    let echo = tools
        .iter()
        .find(|t| t.definition().name == "legacy_echo")
        .unwrap();
    assert_eq!(
        echo.definition().input_schema["properties"]["text"]["type"],
        "string"
    );
    let bare = tools.iter().find(|t| t.definition().name == "bare").unwrap();
    assert_eq!(
        bare.definition().input_schema,
        json!({"type": "object", "properties": {}})
    );
    let out = echo
        .call(json!({"text": "old but fine"}), ToolContext::new("c"))
        .await
        .unwrap();
    assert_eq!(out.as_text(), "old but fine");
    source.close().await;
}
