//! Ctrl-C while a tool runs: the run is cancelled, the MCP server and its
//! grandchild end, and `loopwright` exits 130. Its own test binary, so nothing
//! else's processes are counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: i32) -> bool {
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while tokio::time::Instant::now() < until {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_the_run_closes_the_servers_and_exits_130() {
    let server = ModelServer::start(vec![
        tool_call("test__spawn_grandchild", json!({})).into(),
        tool_call("test__slow", json!({"ms": 600_000})).into(),
        answer("never").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {"test": {"command": mcp_test_server(), "args": ["--pid-file", pid_file]}}}),
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/test",
        "--events",
        "work slowly",
    ];
    let mut child = agent_command(&args, &[], dir.path()).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut grandchild = None;
    tokio::time::timeout(HANG_GUARD, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "tool_result" && event["tool"] == "test__spawn_grandchild" {
                grandchild = event["output"][0]["text"]
                    .as_str()
                    .and_then(|t| t.trim().parse::<i32>().ok());
            }
            if event["type"] == "tool_call" && event["tool"] == "test__slow" {
                break;
            }
        }
    })
    .await
    .expect("the slow call never started");
    let grandchild = grandchild.expect("grandchild pid");
    let server_pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!gone(server_pid) && !gone(grandchild));
    // Let the call reach the server, then interrupt.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let agent_pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(agent_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut rest = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        rest.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("agent hung after Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let last = rest.last().expect("a finished event");
    assert_eq!(
        (last["type"].as_str(), last["exit"].as_str()),
        (Some("finished"), Some("cancelled"))
    );
    let slow = rest
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "test__slow");
    assert!(
        slow.is_some_and(|e| e["is_error"] == true),
        "the cancelled call got no result: {rest:?}"
    );
    assert!(wait_gone(server_pid).await, "the MCP server outlived agent");
    assert!(
        wait_gone(grandchild).await,
        "the server's grandchild outlived agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_while_a_server_is_connecting_ends_it_and_exits_130() {
    interrupt_while_connecting(nix::sys::signal::Signal::SIGINT, 130).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_a_server_is_connecting_ends_it_and_exits_143() {
    interrupt_while_connecting(nix::sys::signal::Signal::SIGTERM, 143).await;
}

async fn interrupt_while_connecting(signal: nix::sys::signal::Signal, expected: i32) {
    let server = ModelServer::start(vec![answer("never").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("slow.pid");
    // It never finishes initializing (within the 10 s connect timeout).
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {"slow": {"command": mcp_test_server(),
            "args": ["--slow-init", "600000", "--pid-file", pid_file]}}}),
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/test",
        "hi",
    ];
    let mut child = agent_command(&args, &[], dir.path()).spawn().unwrap();
    let until = tokio::time::Instant::now() + HANG_GUARD;
    let server_pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(tokio::time::Instant::now() < until, "the server never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let agent_pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(agent_pid, signal).unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("agent hung after the signal")
        .unwrap();
    assert_eq!(status.code(), Some(expected), "{signal}");
    assert!(
        wait_gone(server_pid).await,
        "the connecting MCP server outlived agent"
    );
    assert!(server.bodies().is_empty(), "the model was asked after the signal");
}
