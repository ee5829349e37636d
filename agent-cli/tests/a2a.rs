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

/// The card of the serve README's example agent, as a v1.0 client reads
/// it, checked by tests/a2a/card_schema.py against the schema of A2A's own
/// proto (as its Python SDK ships it); the same card with v0.3's fields,
/// as a client that does not say its version gets it, is not a v1.0 card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_agents_card_validates_against_the_specifications_schema() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(Vec::new()).await;
    // The researcher's MCP server `demo`, played by the in-repo test server.
    let demo = json!({"mcpServers": {"demo": {"command": common::mcp_test_server()}}});
    let config = common::write_config(dir.path(), &model, demo);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let example = root.join("../examples/agents/coordinator.md");
    let args = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/m",
        "--agent",
        example.to_str().unwrap(),
        "--a2a",
        "0",
    ];
    let mut child = agent_command(&args, &[], dir.path()).spawn().unwrap();
    let (urls, _) = listening(&mut child, 1).await;
    let url = format!("{}/coordinator/.well-known/agent-card.json", urls["a2a"]);
    let check = |card: Value| {
        let path = dir.path().join("card.json");
        std::fs::write(&path, card.to_string()).unwrap();
        let out = std::process::Command::new(root.join("../tests-deps/python/clients/.venv/bin/python"))
            .arg(root.join("tests/a2a/card_schema.py"))
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let card: Value = reqwest_client()
        .get(&url)
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "coordinator");
    let checked = check(card.clone());
    assert_eq!(checked["valid"], true, "{checked} {card}");
    assert!(
        checked["required"]
            .as_array()
            .unwrap()
            .contains(&json!("supportedInterfaces"))
    );
    let (_, hybrid) = get(&url).await;
    assert_eq!(hybrid["protocolVersion"], "0.3.0", "{hybrid}");
    let checked = check(hybrid);
    assert_eq!(checked["valid"], false, "{checked}");
    assert!(
        checked["errors"].to_string().contains("protocolVersion"),
        "{checked}"
    );
    child.kill().await.unwrap();
}

/// `a2aAgents` in the configuration: a remote agent made with A2A's Python
/// SDK (loopwright-a2a's tests/clients/a2a_server.py) called as a tool by
/// `loopwright`, its headers' variables expanded; its question (asked when
/// told to delete) declined, as a run with nobody at a terminal declines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_agents_in_the_configuration_are_tools() {
    use tokio::io::AsyncBufReadExt;
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let marks = tempfile::tempdir().unwrap();
    let mut remote = tokio::process::Command::new(root.join("../tests-deps/python/clients/.venv/bin/python"))
        .arg(root.join("../agent-a2a/tests/clients/a2a_server.py"))
        .args(["stream", marks.path().to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(remote.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let url = serde_json::from_str::<Value>(&line).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();

    let model = ModelServer::start(vec![
        common::tool_call("a2a__clerk", json!({"message": "file the memo"})).into(),
        common::tool_call("a2a__clerk", json!({"message": "delete the memo"})).into(),
        common::answer("Filed, not deleted.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let clerk = json!({"a2aAgents": {"clerk": {"url": url, "headers": {"X-Clerk": "${CLERK_KEY}"}}}});
    let config = common::write_config(dir.path(), &model, clerk);
    let out = common::run_local(
        &config,
        &["--events", "File the memo."],
        &[("CLERK_KEY", "k")],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = common::texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = common::json_lines(&stdout);
    let results: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["output"].to_string())
        .collect();
    assert!(results[0].contains("Echo: file the memo (turn 1)"), "{results:?}");
    assert!(results[1].contains("Kept the memo: declined"), "{results:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "input_requested" && e["request"]["source"] == "clerk"),
        "{stdout}"
    );
}
