//! `loopwright dev` as a real process: it prints the address of its pages,
//! keeps runs in the default SQLite store (a second start lists the first
//! one's run), asks for a random key with `--token` (in the printed
//! address); `loopwright serve --ui` needs a REST address.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::rest::{get, post, reqwest_client, until_run, until_said};
use common::{ModelServer, agent_command, listening_kept, run_agent};
use serde_json::json;

/// `loopwright dev` of the configuration's agent on a free port, with
/// `extra` flags: the child and the address of its pages.
async fn dev(dir: &Path, model: &ModelServer, extra: &[&str]) -> (tokio::process::Child, String) {
    let config = dir.join("agent.json");
    let providers =
        json!({"providers": {"local": {"type": "openai-compatible", "baseUrl": model.base_url()}}});
    std::fs::write(&config, providers.to_string()).unwrap();
    let mut args = vec![
        "dev",
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/dev-model",
        "--listen",
        "0",
    ];
    args.extend(extra);
    let mut child = agent_command(&args, &[], dir).spawn().unwrap();
    let (_, said) = listening_kept(&mut child, 1).await;
    until_said(&said, "loopwright dev: open ", Duration::from_secs(10)).await;
    let line = said
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("loopwright dev: open "))
        .unwrap()
        .clone();
    let page = line.split_once("open ").unwrap().1.to_owned();
    (child, page)
}

/// The base URL of a pages' address.
fn base_of(page: &str) -> &str {
    page.split_once("/ui/").unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_keeps_runs_in_the_default_store_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![common::answer("Kept.").into()]).await;
    let (mut child, page) = dev(dir.path(), &model, &[]).await;
    assert!(
        page.starts_with("http://127.0.0.1:") && page.ends_with("/ui/"),
        "{page}"
    );
    let base = base_of(&page).to_owned();
    let (status, started) = post(
        &format!("{base}/v1/agents/agent/runs"),
        json!({"prompt": "Keep this."}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_run(&base, &id, "completed", |v| v["status"] == "completed").await;
    child.kill().await.unwrap();

    let (mut again, page) = dev(dir.path(), &model, &[]).await;
    let (status, listed) = get(&format!("{}/v1/runs", base_of(&page))).await;
    assert_eq!(status, 200);
    assert_eq!(listed["runs"][0]["id"], json!(id), "{listed}");
    assert_eq!(listed["runs"][0]["result"]["text"], "Kept.");
    assert!(dir.path().join(".local/share/loopwright/store.db").is_file());
    again.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_with_a_token_asks_every_request_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![]).await;
    let (mut child, page) = dev(dir.path(), &model, &["--token"]).await;
    let token = page.split_once("#token=").unwrap().1.to_owned();
    assert_eq!(token.len(), 32, "{page}");
    assert!(token.chars().all(|c| c.is_ascii_hexdigit()), "{page}");
    let base = base_of(&page).to_owned();
    let client = reqwest_client();
    let pages = client.get(format!("{base}/ui/")).send().await.unwrap();
    assert_eq!(pages.status(), 200);
    assert_eq!(get(&format!("{base}/v1/agents")).await.0, 401);
    let agents = client
        .get(format!("{base}/v1/agents"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(agents.status(), 200);
    let agents: serde_json::Value = agents.json().await.unwrap();
    assert_eq!(agents["agents"][0]["models"], json!(["local/dev-model"]));
    // The playground may pick the agent's own models.
    assert_eq!(agents["models"], json!(["local/dev-model"]));
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_ui_needs_a_rest_address() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_agent(&["serve", "--ui", "--openai", "0"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rest"), "{out:?}");
}
