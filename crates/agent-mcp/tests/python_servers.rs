//! Third-party Python servers (PyPI, pinned with hashes in tests-deps/python/
//! and installed into virtual environments by scripts/test.sh): a 10-line
//! server on the SDK's `MCPServer` over stdio, legacy SSE and streamable
//! HTTP; the mcp 1.x SDK's WebSocket server (it answers with the `mcp`
//! subprotocol, which the client must have offered); `mcp-server-time` and
//! `mcp-server-git`. The tests FAIL when the environments are missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use agent_core::ToolSource;
use agent_mcp::{McpServerConfig, McpToolSource};
use common::*;
use serde_json::json;

/// `tests-deps/python/<env>/<rest>`, which must exist.
fn py_path(env: &str, rest: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests-deps/python")
        .join(env)
        .join(rest);
    assert!(
        path.exists(),
        "{} is missing: scripts/test.sh installs the Python test servers",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn python(env: &str) -> String {
    py_path(env, ".venv/bin/python")
}

/// A Python server listening on a free port, killed when dropped.
struct PyServer {
    child: tokio::process::Child,
    port: u16,
}

impl PyServer {
    /// Start `script` of `env` with `args` and wait (hang guard only) until it listens.
    async fn start(env: &str, script: &str, args: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(python(env))
            .arg(py_path(env, script))
            .args(args)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let until = tokio::time::Instant::now() + HANG_GUARD;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(tokio::time::Instant::now() < until, "{script} never listened");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self { child, port }
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
    let config =
        McpServerConfig::stdio("py", python("mcp2")).args([py_path("mcp2", "mcp_server.py"), "stdio".into()]);
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
    let repo = std::env::temp_dir().join(format!("agent-mcp-git-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&repo);
    std::fs::create_dir_all(&repo).unwrap();
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
    let _ = std::fs::remove_dir_all(&repo);
}
