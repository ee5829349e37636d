//! What the example tests share: the built examples' paths and a local
//! Ollama-protocol model server playing scripted steps.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How a compaction's summarising call starts its instructions.
pub const SUMMARY_MARK: &str = "You compact the history";

/// What the model server answers a summarising call.
pub const SUMMARY: &str = "The numbers were counted several times.";

/// Upper bound used only to detect a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// A built binary of this workspace: target/debug/deps/<this test> ->
/// target/debug/<path>.
pub fn built(path: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join(path)
}

/// One NDJSON line of Ollama's chat stream.
pub fn line(message: Value, done: bool) -> String {
    let mut l =
        json!({"model": "test", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": done});
    if done {
        l["done_reason"] = json!("stop");
        l["prompt_eval_count"] = json!(20);
        l["eval_count"] = json!(5);
    }
    format!("{l}\n")
}

pub fn end_of_step() -> String {
    line(json!({"role": "assistant", "content": ""}), true)
}

/// A step calling one tool.
pub fn call(name: &str, arguments: Value) -> String {
    let message = json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]});
    line(message, false) + &end_of_step()
}

/// A step answering with text.
pub fn answer(text: &str) -> String {
    line(json!({"role": "assistant", "content": text}), false) + &end_of_step()
}

/// A local model server playing `steps` in order (the last one repeats) and
/// keeping every request body.
pub struct ModelServer {
    pub addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl ModelServer {
    pub async fn start(steps: Vec<String>) -> Self {
        let steps = Arc::new(steps);
        let calls = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::<Value>::new()));
        let b = bodies.clone();
        let app = axum::Router::new().route(
            "/api/chat",
            axum::routing::post(move |body: axum::Json<Value>| {
                let (c, b, s) = (calls.clone(), b.clone(), steps.clone());
                async move {
                    // A compaction's summarising call (told by its
                    // instructions) gets a summary, outside the script.
                    let summarising = body.0["messages"][0]["content"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(SUMMARY_MARK));
                    b.lock().unwrap().push(body.0);
                    if summarising {
                        return ([("content-type", "application/x-ndjson")], answer(SUMMARY));
                    }
                    let i = c.fetch_add(1, Ordering::SeqCst).min(s.len() - 1);
                    ([("content-type", "application/x-ndjson")], s[i].clone())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, bodies }
    }

    pub fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }

    /// An example's command against this server (a clean environment,
    /// every stream piped).
    pub fn example(&self, name: &str, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(built(&format!("examples/{name}")));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("OLLAMA_HOST", format!("http://{}", self.addr))
            .env("LOOPWRIGHT_MODEL", "ollama/test")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Run an example against this server, feeding `stdin`.
    pub async fn run_example(&self, name: &str, args: &[&str], stdin: &[u8]) -> (Output, String, String) {
        let out = self.start_example(name, args, stdin, &[]).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
        (out, stdout, stderr)
    }

    /// Run an example against this server with `env` added, feeding
    /// `stdin`; however it exits.
    pub async fn start_example(
        &self,
        name: &str,
        args: &[&str],
        stdin: &[u8],
        env: &[(&str, &str)],
    ) -> Output {
        let mut child = self
            .example(name, args)
            .envs(env.iter().copied())
            .spawn()
            .expect("the examples are built by `cargo test`");
        {
            use tokio::io::AsyncWriteExt;
            let mut input = child.stdin.take().unwrap();
            input.write_all(stdin).await.unwrap();
        }
        tokio::time::timeout(HANG_GUARD, child.wait_with_output())
            .await
            .unwrap()
            .unwrap()
    }
}

pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}
