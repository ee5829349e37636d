//! What the CLI tests share: the fake model server of tests-support (its
//! Chat Completions steps re-exported here), the built `loopwright` binary,
//! and the in-repo MCP test server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod pty;
pub mod rest;

// The serve_conformance binary, which shares this module, uses none of them.
#[allow(unused_imports)]
pub use loopwright_test_support::model_server::sse::{self, answer, text_then_tool_call, tool_call};
pub use loopwright_test_support::model_server::{ModelServer, Reply};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A program that `scripts/test.sh` installs under `tests-deps/` (npm's
/// `.bin`), such as `mcp-server-everything`.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = PathBuf::from(format!(
        "{}/../tests-deps/node_modules/.bin/{name}",
        env!("CARGO_MANIFEST_DIR")
    ));
    assert!(
        path.exists(),
        "{} is installed by scripts/test.sh (npm ci --prefix tests-deps)",
        path.display()
    );
    path
}

/// Upper bound used only to detect a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// The `loopwright` binary under test.
pub fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_loopwright"))
}

/// The in-repo MCP test server (built by `cargo test --workspace --all-features`).
pub fn mcp_test_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-test-server");
    assert!(
        path.exists(),
        "{} is built by `cargo test --workspace` (or `cargo build -p loopwright-mcp --example mcp-test-server`)",
        path.display()
    );
    path
}

/// A server playing each model's replies in order (the last one repeats),
/// in the Chat Completions or Anthropic format; other models get a 404.
pub async fn routed(scripts: Vec<(&str, Vec<String>)>) -> ModelServer {
    let mut builder = ModelServer::builder();
    for (model, replies) in scripts {
        builder = builder.model(model, replies.into_iter().map(Reply::from).collect());
    }
    builder.start().await
}

/// Write a config file with the `local` provider at `server` plus `extra`
/// top-level keys merged in; returns its path.
pub fn write_config(dir: &Path, server: &ModelServer, extra: Value) -> PathBuf {
    let mut config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": server.base_url()}},
        "mcpServers": {"test": {"command": mcp_test_server()}}
    });
    if let (Some(base), Some(more)) = (config.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            base.insert(k.clone(), v.clone());
        }
    }
    let path = dir.join("agent.json");
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    path
}

/// Run `loopwright` with `args` and a clean environment (PATH and HOME only,
/// plus `env`), stdin closed; wait under the hang guard.
pub async fn run_agent(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    let child = agent_command(args, env, cwd).spawn().expect("agent binary");
    tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("agent hung")
        .unwrap()
}

/// The events of `loopwright --config CONFIG --model local/test --events ARGS...`,
/// which must exit 0.
pub async fn local_events(config: &Path, args: &[&str], cwd: &Path) -> Vec<Value> {
    let mut all = vec!["--events"];
    all.extend_from_slice(args);
    let out = run_local(config, &all, &[], cwd).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    json_lines(&stdout)
}

/// Run `loopwright --config CONFIG --model local/test ARGS...` in `cwd`: the
/// model of the config [`write_config`] wrote.
pub async fn run_local(config: &Path, args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    let config = config.to_str().unwrap();
    let mut all = vec!["--config", config, "--model", "local/test"];
    all.extend_from_slice(args);
    run_agent(&all, env, cwd).await
}

/// Run `loopwright` with `args`, writing `input` to its standard input (then
/// closing it); wait under the hang guard.
pub async fn run_agent_with_stdin(args: &[&str], input: &[u8], cwd: &Path) -> Output {
    use tokio::io::AsyncWriteExt;
    let mut child = agent_command(args, &[], cwd)
        .stdin(Stdio::piped())
        .spawn()
        .expect("agent binary");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).await.unwrap();
    drop(stdin);
    tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("agent hung")
        .unwrap()
}

/// The command, not started (stdin null, stdout and stderr piped).
pub fn agent_command(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(agent_bin());
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        // No test reaches the Hugging Face Hub: a run with no model would
        // fetch the embedded one; a test that means it sets its own.
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Assert that `loopwright` exited with `code` and said `needle` on stderr.
pub fn assert_exit(out: &Output, code: i32, needle: &str) {
    let stderr = texts(out).1;
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in {stderr}");
}

/// stdout, stderr.
pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON lines of stdout.
pub fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Read stderr until every surface said where it listens: surface -> URL.
pub async fn listening(
    child: &mut tokio::process::Child,
    surfaces: usize,
) -> (HashMap<String, String>, Vec<String>) {
    let (urls, said) = listening_kept(child, surfaces).await;
    let said = said.lock().unwrap().clone();
    (urls, said)
}

/// [`listening`], with every line the server says on stderr, then and
/// later, kept in the returned list.
pub async fn listening_kept(
    child: &mut tokio::process::Child,
    surfaces: usize,
) -> (HashMap<String, String>, Arc<Mutex<Vec<String>>>) {
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut urls = HashMap::new();
    let said = Arc::new(Mutex::new(Vec::new()));
    tokio::time::timeout(HANG_GUARD, async {
        while urls.len() < surfaces {
            let Some(line) = lines.next_line().await.unwrap() else {
                panic!("loopwright serve ended: {:?}", said.lock().unwrap())
            };
            said.lock().unwrap().push(line.clone());
            if let Some(rest) = line.strip_prefix("loopwright serve: ")
                && let Some((surface, url)) = rest.split_once(" on ")
                && url.starts_with("http://")
            {
                urls.insert(surface.to_owned(), url.to_owned());
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("loopwright serve never listened: {:?}", said.lock().unwrap()));
    // Keep reading stderr so the server never blocks on it.
    let kept = said.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            kept.lock().unwrap().push(line);
        }
    });
    (urls, said)
}

/// Wait until `check` holds (polled; the hang guard fails the test).
pub async fn until_true(what: &str, check: impl Fn() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never: {what}"));
}
