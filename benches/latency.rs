#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, missing_docs)] // a benchmark, like a test
//! The `loopwright` command's latency as a user sees it, in release: from the
//! process's start to its first model request (connecting the stdio MCP
//! servers comes first; they connect concurrently), to the end of the
//! answer on standard output (a pipe reader's EOF), and from there to the
//! process's exit (closing the servers).
//!
//! Each run is one step: the model (a local Chat Completions server, Rust,
//! on its own thread, recording when each request arrives) calls the first
//! server's tool once, then answers. Cases: `--no-mcp`, and 1 and 5
//! servers of each kind: the in-repo `mcp-test-server` (Rust),
//! server-everything (Node) and mcp-server-time (Python), from `tests-deps/`.
//!
//! Run with `cargo bench -p loopwright-benches --bench latency` after
//! `cargo build --release -p loopwright-cli` and
//! `cargo build --release -p loopwright-mcp --example mcp-test-server` (the command and the test server are other packages' targets, found in
//! `target/release/`). `LOOPWRIGHT_BENCH_BIN=PATH` measures another build of
//! `loopwright`. It prints medians over `RUNS` runs with their range.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chat_server::Script;
use loopwright_test_support::model_server::ModelServer;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

#[path = "common/chat_server.rs"]
mod chat_server;

/// Runs per case (medians reported).
const RUNS: usize = 15;

/// A kind of stdio server: its command, and the tool the model calls.
struct Kind {
    label: &'static str,
    command: PathBuf,
    tool: &'static str,
    args: Value,
}

/// target/release: this bench runs from target/release/deps.
fn release_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn kinds() -> Vec<Kind> {
    let mut kinds = Vec::new();
    let test_server = release_dir().join("examples/mcp-test-server");
    if test_server.exists() {
        kinds.push(Kind {
            label: "mcp-test-server (Rust)",
            command: test_server,
            tool: "echo",
            args: json!({"text": "hi"}),
        });
    } else {
        eprintln!(
            "{} is missing (cargo build --release -p loopwright-mcp --example mcp-test-server)",
            test_server.display()
        );
    }
    let everything =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules/.bin/mcp-server-everything");
    if everything.exists() {
        kinds.push(Kind {
            label: "server-everything (Node)",
            command: everything,
            tool: "echo",
            args: json!({"message": "hi"}),
        });
    } else {
        eprintln!("server-everything is not installed (npm ci --prefix tests-deps)");
    }
    let time =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/python/mcp2/.venv/bin/mcp-server-time");
    if time.exists() {
        kinds.push(Kind {
            label: "mcp-server-time (Python)",
            command: time,
            tool: "get_current_time",
            args: json!({"timezone": "UTC"}),
        });
    } else {
        eprintln!("mcp-server-time is not installed (bash scripts/test.sh makes its venv)");
    }
    kinds
}

/// One run's moments, from the process's start.
struct Moments {
    first_request: Duration,
    answer_end: Duration,
    exit_after_answer: Duration,
}

async fn run_once(agent: &Path, config: &Path, no_mcp: bool, model: &ModelServer) -> Moments {
    model.clear();
    let dir = config.parent().unwrap();
    let mut cmd = tokio::process::Command::new(agent);
    cmd.args([
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/bench",
        "--quiet",
    ]);
    if no_mcp {
        cmd.arg("--no-mcp");
    }
    cmd.arg("go")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    let answer_end = start.elapsed();
    let status = child.wait().await.unwrap();
    let exit = start.elapsed();
    assert!(status.success() && out == "done\n", "{status}: {out:?}");
    let first = model.received()[0].arrived;
    Moments {
        first_request: first - start,
        answer_end,
        exit_after_answer: exit - answer_end,
    }
}

/// Median, min and max in milliseconds.
fn stats(mut runs: Vec<Duration>) -> String {
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "{:.1} ms [{:.1}-{:.1}]",
        ms(runs[runs.len() / 2]),
        ms(runs[0]),
        ms(runs[runs.len() - 1])
    )
}

async fn case(agent: &Path, label: &str, servers: &[(String, Value)], model: &ModelServer) {
    let url = model.base_url();
    let dir = tempfile::tempdir().unwrap();
    let mcp: serde_json::Map<String, Value> = servers.iter().cloned().collect();
    let config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": url}},
        "mcpServers": mcp,
    });
    let path = dir.path().join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let (mut first, mut end, mut exit) = (Vec::new(), Vec::new(), Vec::new());
    // One run to warm the page cache, not counted.
    run_once(agent, &path, servers.is_empty(), model).await;
    for _ in 0..RUNS {
        let m = run_once(agent, &path, servers.is_empty(), model).await;
        first.push(m.first_request);
        end.push(m.answer_end);
        exit.push(m.exit_after_answer);
    }
    println!(
        "{label}: first request {}, answer end {}, exit after answer end {}",
        stats(first),
        stats(end),
        stats(exit)
    );
}

fn main() {
    let agent = std::env::var_os("LOOPWRIGHT_BENCH_BIN")
        .map_or_else(|| release_dir().join("loopwright"), PathBuf::from);
    assert!(
        agent.exists(),
        "{} is missing (cargo build --release -p loopwright-cli, or LOOPWRIGHT_BENCH_BIN=PATH)",
        agent.display()
    );
    println!("loopwright: {}", agent.display());
    let script = Arc::new(Script::default());
    let model = chat_server::start(script.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        script.play(0, "", Value::Null);
        case(&agent, "--no-mcp", &[], &model).await;
        for kind in kinds() {
            for n in [1, 5] {
                let servers: Vec<(String, Value)> = (0..n)
                    .map(|i| (format!("s{i}"), json!({"command": kind.command})))
                    .collect();
                script.play(1, format!("s0__{}", kind.tool), kind.args.clone());
                let label = format!("{n} x {}", kind.label);
                case(&agent, &label, &servers, &model).await;
            }
        }
    });
}
