//! `--record DIR` and `--replay DIR`: a run recorded against the local model
//! server and the in-repo MCP server, replayed with neither reachable (the
//! provider points at a closed port, the server's command does not exist),
//! giving the same events; a changed prompt reported with its difference.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// A configuration whose model server and MCP server cannot be reached:
/// the same names as [`write_config`]'s, nothing behind them.
fn unreachable_config(dir: &Path) -> std::path::PathBuf {
    let config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}},
        "mcpServers": {"test": {"command": "/nonexistent/mcp-test-server"}}
    });
    let path = dir.join("offline.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The events with their wall-clock fields set to 0 (`duration_ms` of tool
/// results; `timestamp` and `latency_ms` of accounting entries).
fn normalised(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            if e["type"] == "tool_result" {
                e["duration_ms"] = json!(0);
            }
            if e["type"] == "accounting" {
                e["entry"]["timestamp"] = json!("");
                e["entry"]["latency_ms"] = json!(0);
            }
            e
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_replays_with_the_model_server_and_the_mcp_server_gone() {
    let server = ModelServer::start(vec![
        tool_call("test__echo", json!({"text": "recorded once"})).into(),
        tool_call("test__image", json!({})).into(),
        answer("The server said: recorded once.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassette");
    let log = dir.path().join("server.log");
    let servers = json!({"test": {"command": mcp_test_server(), "env": {"TEST_SERVER_LOG": log}}});
    let config = write_config(dir.path(), &server, json!({"mcpServers": servers}));
    let out = run_local(
        &config,
        &["--events", "--record", cassette.to_str().unwrap(), "Echo it"],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let recorded = json_lines(&stdout);
    assert_eq!(server.bodies().len(), 3);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("called ").count(), 2, "{calls}");

    // The cassette: one line per model call, the server's listing and calls.
    let model = std::fs::read_to_string(cassette.join("model.jsonl")).unwrap();
    assert_eq!(model.lines().count(), 3);
    let tools = std::fs::read_to_string(cassette.join("tools/test.jsonl")).unwrap();
    let kinds: Vec<String> = json_lines(&tools)
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["list", "call", "call"]);

    // Replay: the provider's port is closed, the server cannot start.
    let offline = unreachable_config(dir.path());
    let out = run_agent(
        &[
            "--config",
            offline.to_str().unwrap(),
            "--model",
            "local/test",
            "--events",
            "--replay",
            cassette.to_str().unwrap(),
            "Echo it",
        ],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let replayed = json_lines(&stdout);
    assert_eq!(normalised(replayed), normalised(recorded));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        calls,
        "the server was not called"
    );
    assert_eq!(server.bodies().len(), 3, "the model server was not called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_prompt_is_reported_with_its_difference() {
    let server = ModelServer::start(vec![answer("It is noon.").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("cassette");
    let config = write_config(dir.path(), &server, json!({}));
    let record = [
        "--no-mcp",
        "--record",
        cassette.to_str().unwrap(),
        "What time is it?",
    ];
    let out = run_local(&config, &record, &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);

    let offline = unreachable_config(dir.path());
    let replay = |prompt: &'static str| {
        let offline = offline.clone();
        let cassette = cassette.clone();
        async move {
            let args = [
                "--config",
                offline.to_str().unwrap(),
                "--model",
                "local/test",
                "--no-mcp",
                "--replay",
                cassette.to_str().unwrap(),
                prompt,
            ];
            run_agent(&args, &[], dir_of(&offline)).await
        }
    };
    let same = replay("What time is it?").await;
    assert_eq!(texts(&same), ("It is noon.\n".to_owned(), String::new()));
    let changed = replay("What time is it now?").await;
    assert_exit(
        &changed,
        3,
        r#"nearest is line 1: message 1 (user) text differs: recorded "What time is it?" vs "What time is it now?""#,
    );
}

fn dir_of(path: &Path) -> &Path {
    path.parent().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_malformed_cassette_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let offline = unreachable_config(dir.path());
    let base = [
        "--config",
        offline.to_str().unwrap(),
        "--model",
        "local/test",
        "--no-mcp",
    ];
    let missing = dir.path().join("none");
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--replay", missing.to_str().unwrap(), "hi"])
        .collect();
    let out = run_agent(&args, &[], dir.path()).await;
    assert_exit(&out, 2, "--replay: cassette");
    assert_exit(&out, 2, "no such directory");

    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("model.jsonl"), "{\"hash\": 1}\n").unwrap();
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--replay", bad.to_str().unwrap(), "hi"])
        .collect();
    let out = run_agent(&args, &[], dir.path()).await;
    assert_exit(&out, 2, "model.jsonl:1: ");

    let out = run_agent(&["--replay-mode", "strict", "hi"], &[], dir.path()).await;
    assert_exit(&out, 2, "--replay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coding_tools_are_replayed_not_run() {
    let server = ModelServer::start(vec![
        tool_call("Read", json!({"file_path": "notes.txt"})).into(),
        tool_call("Write", json!({"file_path": "out.txt", "content": "written"})).into(),
        answer("The notes say: recorded.").into(),
    ])
    .await;
    let recording = tempfile::tempdir().unwrap();
    std::fs::write(recording.path().join("notes.txt"), "recorded\n").unwrap();
    let cassette = recording.path().join("cassette");
    let config = write_config(recording.path(), &server, json!({}));
    let args = [
        "--no-mcp",
        "--coding-tools",
        "--record",
        cassette.to_str().unwrap(),
        "Read the notes",
    ];
    let recorded = local_events(&config, &args, recording.path()).await;
    assert!(recording.path().join("out.txt").exists());
    let read = recorded.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert!(read["output"].to_string().contains("recorded"), "{read}");

    // Elsewhere, with no notes.txt: the recorded results come back, nothing is written.
    let elsewhere = tempfile::tempdir().unwrap();
    let offline = unreachable_config(elsewhere.path());
    let args = [
        "--config",
        offline.to_str().unwrap(),
        "--model",
        "local/test",
        "--no-mcp",
        "--coding-tools",
        "--events",
        "--replay",
        cassette.to_str().unwrap(),
        "Read the notes",
    ];
    let out = run_agent(&args, &[], elsewhere.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(normalised(json_lines(&stdout)), normalised(recorded));
    assert!(!elsewhere.path().join("out.txt").exists(), "Write was not run");
    assert!(cassette.join("tools/coding.jsonl").exists());
}
