//! Third-party Python servers (PyPI, pinned with hashes in tests-deps/python/
//! and installed into virtual environments by scripts/test.sh): a 10-line
//! server on the SDK's `MCPServer` over stdio, legacy SSE and streamable
//! HTTP; the mcp 1.x SDK's WebSocket server (it answers with the `mcp`
//! subprotocol, which the client must have offered); `mcp-server-time` and
//! `mcp-server-git`; and faults over legacy SSE (a timeout that cancels, a
//! server that dies mid-call and comes back) on fault_server.py; resources
//! (text, image and binary; a server tool of its own named `read_resource`)
//! on resource_server.py. The tests FAIL when the environments are missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::*;
use loopwright_core::ToolSource;
use loopwright_mcp::{McpServerConfig, McpToolSource};
use serde_json::json;

/// A Python server listening on a free port, killed when dropped.
struct PyServer {
    child: tokio::process::Child,
    port: u16,
}

impl PyServer {
    /// Start `script` of `env` with `args` and wait (hang guard only) until it listens.
    async fn start(env: &str, script: &str, args: &[&str]) -> Self {
        Self::start_on(free_port(), env, script, args, &[]).await
    }

    /// [`start`](Self::start) on `port`, with extra environment `vars`.
    async fn start_on(port: u16, env: &str, script: &str, args: &[&str], vars: &[(&str, &str)]) -> Self {
        let child = tokio::process::Command::new(python(env))
            .arg(py_path(env, script))
            .args(args)
            .env("PORT", port.to_string())
            .envs(vars.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        wait_listening(port, script).await;
        Self { child, port }
    }

    /// Wait until the process has exited by itself (its port is free once
    /// it is reaped: a dying process may still hold its listening socket).
    async fn exited(mut self) {
        tokio::time::timeout(HANG_GUARD, self.child.wait())
            .await
            .expect("the server did not exit")
            .unwrap();
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The server answers `add` and `echo` like the script says.
async fn check_add_and_echo(source: &McpToolSource) {
    let mut names: Vec<_> = source
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["add", "echo"]);
    assert_eq!(
        call(&tool(source, "add").await, json!({"a": 2, "b": 40}))
            .await
            .as_text(),
        "42"
    );
    assert_eq!(
        call(&tool(source, "echo").await, json!({"text": "from rust"}))
            .await
            .as_text(),
        "from rust"
    );
    // The SDK validates arguments and answers with an error result.
    let bad = call(&tool(source, "add").await, json!({"a": "two"})).await;
    assert!(bad.is_error, "{}", bad.as_text());
    assert!(source.instructions().unwrap().contains("demo server"));
}

#[tokio::test]
async fn mcpserver_over_stdio() {
    let config = McpServerConfig::stdio("py", python("mcp2"))
        .args([py_path("mcp2", "mcp_server.py"), "stdio".into()])
        .connect_timeout(PYTHON_START);
    let source = connect(config).await;
    check_add_and_echo(&source).await;
    source.close().await;
}

#[tokio::test]
async fn mcpserver_over_legacy_sse() {
    let server = PyServer::start("mcp2", "mcp_server.py", &["sse"]).await;
    // Python servers name their endpoint `/messages/?session_id=`.
    let config = McpServerConfig::from_json(
        "py",
        &json!({"url": format!("http://127.0.0.1:{}/sse", server.port)}),
    )
    .unwrap();
    assert_eq!(config.transport.kind(), "sse");
    let source = connect(config).await;
    check_add_and_echo(&source).await;
    source.close().await;
    server.stop().await;
}

#[tokio::test]
async fn mcpserver_over_streamable_http() {
    let server = PyServer::start("mcp2", "mcp_server.py", &["streamable-http"]).await;
    let source = connect(McpServerConfig::http(
        "py",
        format!("http://127.0.0.1:{}/mcp", server.port),
    ))
    .await;
    check_add_and_echo(&source).await;
    source.close().await;
    server.stop().await;
}

#[tokio::test]
async fn the_python_websocket_server() {
    let server = PyServer::start("mcp1", "ws_server.py", &[]).await;
    let url = format!("ws://127.0.0.1:{}/ws", server.port);
    let source = connect(McpServerConfig::from_json("pyws", &json!({"url": url})).unwrap()).await;
    check_add_and_echo(&source).await;
    source.close().await;
    server.stop().await;
}

#[tokio::test]
async fn mcp_server_time() {
    let config = McpServerConfig::stdio("time", py_path("mcp2", ".venv/bin/mcp-server-time"))
        .args(["--local-timezone", "UTC"]);
    let source = connect(config).await;
    let now = call(
        &tool(&source, "get_current_time").await,
        json!({"timezone": "Europe/Lisbon"}),
    )
    .await;
    assert!(!now.is_error, "{}", now.as_text());
    assert!(
        now.as_text().contains("Europe/Lisbon") && now.as_text().contains("datetime"),
        "{}",
        now.as_text()
    );
    let bad = call(
        &tool(&source, "get_current_time").await,
        json!({"timezone": "Mars/Olympus"}),
    )
    .await;
    assert!(bad.is_error, "{}", bad.as_text());
    source.close().await;
}

#[tokio::test]
async fn mcp_server_git() {
    let guard = tempfile::Builder::new()
        .prefix("loopwright-mcp-git-")
        .tempdir()
        .unwrap();
    let repo = guard.path().to_path_buf();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("untracked.txt"), "new").unwrap();
    let config = McpServerConfig::stdio("git", py_path("mcp2", ".venv/bin/mcp-server-git"))
        .args(["--repository".to_string(), repo.to_string_lossy().into_owned()]);
    let source = connect(config).await;
    let status = call(&tool(&source, "git_status").await, json!({"repo_path": repo})).await;
    assert!(!status.is_error, "{}", status.as_text());
    assert!(status.as_text().contains("untracked.txt"), "{}", status.as_text());
    source.close().await;
}

#[tokio::test]
async fn legacy_sse_faults_a_timeout_cancels_and_a_crash_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_var = [("TEST_SERVER_LOG", log.to_str().unwrap())];
    let port = free_port();
    let server = PyServer::start_on(port, "mcp2", "fault_server.py", &[], &log_var).await;
    let config = McpServerConfig::sse("faulty", format!("http://127.0.0.1:{port}/sse"))
        .call_timeout(Duration::from_millis(300));
    let source = connect(config).await;
    // A call that outlives its timeout: an error result, and the server is
    // told to stop it.
    let slow = call(&tool(&source, "slow").await, json!({"ms": 30_000})).await;
    assert!(
        slow.is_error && slow.as_text().contains("timed out"),
        "{}",
        slow.as_text()
    );
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("cancelled slow")
    {
        assert!(
            tokio::time::Instant::now() < until,
            "the server never saw the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let echo = tool(&source, "echo").await;
    assert_eq!(
        call(&echo, json!({"text": "still here"})).await.as_text(),
        "still here"
    );
    // The server dies mid-call: an error result naming it, not a hang.
    let crashed = call(&tool(&source, "crash").await, json!({})).await;
    assert!(
        crashed.is_error && crashed.as_text().contains("mcp server faulty"),
        "{}",
        crashed.as_text()
    );
    server.exited().await;
    // Back on the same port: the next call reconnects (a new SSE session).
    let server = PyServer::start_on(port, "mcp2", "fault_server.py", &[], &log_var).await;
    assert_eq!(call(&echo, json!({"text": "back"})).await.as_text(), "back");
    // The crashing call was delivered, so it was not sent again.
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("called crash").count(), 1, "{calls}");
    source.close().await;
    server.stop().await;
}

/// The resource server of `mcp2` over stdio, with `resources: true`; `clash`
/// gives it a tool of its own named `read_resource`.
async fn resource_server(clash: bool) -> McpToolSource {
    let mut args = vec![py_path("mcp2", "resource_server.py")];
    if clash {
        args.push("clash".into());
    }
    connect(
        McpServerConfig::stdio("py", python("mcp2"))
            .args(args)
            .resources(true)
            .connect_timeout(PYTHON_START),
    )
    .await
}

#[tokio::test]
async fn python_resources_read_as_text_image_and_placeholder() {
    let source = resource_server(false).await;
    let read = tool(&source, "read_resource").await;
    assert_eq!(
        call(&read, json!({"uri": "memo://note"})).await.as_text(),
        "a note from python"
    );
    let pixel = call(&read, json!({"uri": "memo://pixel.png"})).await;
    match pixel.parts.as_slice() {
        [
            loopwright_core::ToolOutputPart::Image {
                image: loopwright_core::message::ImageSource::Base64 { media_type, data },
            },
        ] => {
            assert_eq!(media_type, "image/png");
            assert!(data.starts_with("iVBORw0KGgo"), "{data}");
        }
        other => panic!("not one image part: {other:?}"),
    }
    let data = call(&read, json!({"uri": "memo://data.bin"})).await;
    assert_eq!(
        data.parts[0].placeholder().as_deref(),
        Some("[file: application/octet-stream, 10 B, memo://data.bin]")
    );
    let unknown = call(&read, json!({"uri": "memo://nope"})).await;
    assert!(
        unknown.is_error && unknown.as_text().contains("Unknown resource: memo://nope"),
        "{}",
        unknown.as_text()
    );
    // A tool with a declared output schema (the SDK's `{"result": ...}`)
    // whose text already says it: seen once.
    let echoed = call(&tool(&source, "echo").await, json!({"text": "x"})).await;
    assert_eq!(echoed.parts, [loopwright_core::ToolOutputPart::text("x")]);
    source.close().await;
}

#[tokio::test]
async fn a_servers_own_read_resource_wins_over_ours_with_a_warning() {
    let source = resource_server(true).await;
    let tools = source.tools().await.unwrap();
    let named: Vec<_> = tools
        .iter()
        .filter(|t| t.definition().name == "read_resource")
        .collect();
    assert_eq!(named.len(), 1);
    assert_eq!(
        call(named[0], json!({"uri": "memo://note"})).await.as_text(),
        "the server's own read_resource: memo://note"
    );
    assert!(tools.iter().any(|t| t.definition().name == "list_resources"));
    assert_eq!(
        source.warnings(),
        [
            "mcp server py: the server has its own tool read_resource, which is kept; the resource tool read_resource is left out"
        ]
    );
    source.close().await;
}
