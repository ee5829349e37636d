//! What the tests of `loopwright serve` replicas share: the agent files
//! (an assistant that echoes, a sleeper that sleeps in a tool), the config
//! pointing them at a local model server and the in-repo MCP server (which
//! logs its own calls), and plain HTTP calls to the REST surface.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::ModelServer;
use super::{HANG_GUARD, mcp_test_server};

pub const ASSISTANT: &str = "---
description: Says hi through the echo tool.
model: local/chat-model
mcp: [test]
tools: [\"test__echo\"]
---
You say hi.
";

pub const SLEEPER: &str = "---
description: Sleeps in a tool.
model: local/slow-model
mcp: [test]
tools: [\"test__slow\"]
---
You sleep.
";

pub const WORKER: &str = "---
description: Echoes and sleeps, in one step.
model: local/slow-model
mcp: [test]
tools: [\"test__echo\", \"test__slow\"]
---
You work.
";

/// The config and agent files in `dir`; the config's path.
pub fn files(dir: &Path, models: &ModelServer, log: &Path) -> std::path::PathBuf {
    let config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": models.base_url()}},
        "mcpServers": {"test": {"command": mcp_test_server(), "env": {"TEST_SERVER_LOG": log}}}
    });
    let path = dir.join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    std::fs::write(dir.join("assistant.md"), ASSISTANT).unwrap();
    std::fs::write(dir.join("sleeper.md"), SLEEPER).unwrap();
    std::fs::write(dir.join("worker.md"), WORKER).unwrap();
    path
}

pub async fn post(url: &str, body: Value) -> (u16, Value) {
    let response = reqwest_client().post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub async fn get(url: &str) -> (u16, Value) {
    let response = reqwest_client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub fn reqwest_client() -> reqwest::Client {
    loopwright::providers::install_tls_provider();
    reqwest::Client::new()
}

/// Poll `GET base/v1/runs/id` until `check` holds.
pub async fn until_run(base: &str, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let (status, view) = get(&format!("{base}/v1/runs/{id}")).await;
            if status == 200 && check(&view) {
                return view;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("run {id} never: {what}"))
}

/// Every event of run `id` from sequence 0 until the stream ends: (id, event).
pub async fn all_events(base: &str, id: &str) -> Vec<(u64, Value)> {
    let text = tokio::time::timeout(HANG_GUARD, async {
        reqwest_client()
            .get(format!("{base}/v1/runs/{id}/events"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    })
    .await
    .expect("the event stream never ended");
    text.split("\n\n")
        .filter_map(|block| {
            let id = block.lines().find_map(|l| l.strip_prefix("id: "))?.parse().ok()?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((id, serde_json::from_str(data).unwrap()))
        })
        .collect()
}

pub fn calls_logged(log: &Path, tool: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == format!("called {tool}"))
        .count()
}

/// Wait until a server said a line containing `needle` (on its kept
/// stderr), at most `patience`.
pub async fn until_said(
    said: &std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    needle: &str,
    patience: Duration,
) {
    tokio::time::timeout(patience, async {
        while !said.lock().unwrap().iter().any(|l| l.contains(needle)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never said {needle:?}: {:?}", said.lock().unwrap()));
}

/// Assert that a run's events are numbered from 0 without gaps or
/// duplicates and end with one `finished`; their types.
pub fn assert_numbered(events: &[(u64, Value)]) -> Vec<String> {
    let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "in order, no gap, no duplicate"
    );
    let kinds: Vec<String> = events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.last().map(String::as_str), Some("finished"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "finished").count(), 1, "{kinds:?}");
    kinds
}
