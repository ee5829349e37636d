//! `loopwright serve --a2a ADDR`: the configuration's agent as an A2A
//! agent, its card at /agent/.well-known/agent-card.json (and, one agent
//! served, at the root), a message answered as a completed task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::rest::{get, reqwest_client};
use common::{ModelServer, agent_command, listening};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_a2a_answers_a_message_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![common::answer("Pong.").into()]).await;
    let config = dir.path().join("agent.json");
    let providers =
        json!({"providers": {"local": {"type": "openai-compatible", "baseUrl": model.base_url()}}});
    std::fs::write(&config, providers.to_string()).unwrap();
    let args = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/m",
        "--a2a",
        "0",
    ];
    let mut child = agent_command(&args, &[], dir.path()).spawn().unwrap();
    let (urls, _) = listening(&mut child, 1).await;
    let base = &urls["a2a"];
    let (status, card) = get(&format!("{base}/.well-known/agent-card.json")).await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["name"], "agent");
    let endpoint = card["supportedInterfaces"][0]["url"].as_str().unwrap().to_owned();
    // The agent's own card names its own endpoint; the root's, the root.
    let own = get(&format!("{base}/agent/.well-known/agent-card.json")).await.1;
    assert_eq!(
        own["supportedInterfaces"][0]["url"],
        json!(format!("{base}/agent"))
    );
    assert_eq!(endpoint, *base);
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Ping?"}]}}});
    let answer: Value = reqwest_client()
        .post(&endpoint)
        .header("a2a-version", "1.0")
        .json(&send)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Pong.");
    child.kill().await.unwrap();
}
