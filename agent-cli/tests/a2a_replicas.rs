//! A2A on two `loopwright serve` replicas sharing one real PostgreSQL: a
//! task created on A (which pauses on a call that needs approval) is
//! subscribed to on B, which streams it from the shared event log to its
//! pause; B takes the answer (the next message's data part) and streams
//! the task to its end; A reads it completed; the tool ran exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::rest::*;
use common::*;
use serde_json::{Value, json};

/// A replica serving A2A with the shared store; its agent's A2A URL.
async fn replica(dir: &Path, config: &Path, store: &str) -> (tokio::process::Child, String) {
    let assistant = dir.join("assistant.md");
    let args = [
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--agent",
        assistant.to_str().unwrap(),
        "--a2a",
        "0",
        "--store",
        store,
        "--approve",
        "defer",
    ];
    let mut child = agent_command(&args, &[], dir).spawn().unwrap();
    let (urls, _) = listening(&mut child, 1).await;
    let url = format!("{}/assistant", urls["a2a"]);
    (child, url)
}

/// A JSON-RPC request of `method` to `url`: its result, or for a stream
/// every event's result, once the stream ended.
async fn call(url: &str, method: &str, params: Value) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let text = tokio::time::timeout(HANG_GUARD, async {
        let response = reqwest_client()
            .post(url)
            .header("a2a-version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap();
        response.text().await.unwrap()
    })
    .await
    .expect("the A2A call hung");
    let frames: Vec<&str> = match text.trim_start().starts_with('{') {
        true => vec![text.as_str()],
        false => text.lines().filter_map(|l| l.strip_prefix("data:")).collect(),
    };
    frames
        .iter()
        .map(|f| {
            let response: Value = serde_json::from_str(f.trim()).unwrap();
            assert!(response["error"].is_null(), "{response}");
            response["result"].clone()
        })
        .collect()
}

fn message(parts: Value, task: Option<&str>) -> Value {
    let mut message = json!({"messageId": "m", "role": "ROLE_USER", "parts": parts});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}

fn last_state(results: &[Value]) -> &str {
    results.last().unwrap()["statusUpdate"]["status"]["state"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_replica_is_followed_and_answered_on_another() {
    let database = loopwright_test_support::database();
    let models = routed(vec![(
        "chat-model",
        vec![
            sse::chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]),
            sse::answer("The echo said hi."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let (mut a, a_url) = replica(dir.path(), &config, database.url()).await;
    let (mut b, b_url) = replica(dir.path(), &config, database.url()).await;

    let mut started = message(json!([{"text": "say hi"}]), None);
    started["configuration"] = json!({"returnImmediately": true});
    let task = call(&a_url, "SendMessage", started).await.remove(0)["task"].clone();
    let id = task["id"].as_str().unwrap();

    // B follows A's task from the shared log, to its pause.
    let followed = call(&b_url, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(followed[0]["task"]["id"], id);
    assert_eq!(last_state(&followed), "TASK_STATE_INPUT_REQUIRED", "{followed:?}");
    let paused = &followed.last().unwrap()["statusUpdate"]["status"]["message"];
    assert_eq!(
        paused["parts"][1]["data"]["pending"][0]["tool"], "test__echo",
        "{paused}"
    );

    // B takes the answer and streams the task to its end.
    let answer = message(json!([{"data": {"approve": true}}]), Some(id));
    let answered = call(&b_url, "SendStreamingMessage", answer).await;
    assert_eq!(last_state(&answered), "TASK_STATE_COMPLETED", "{answered:?}");
    let got = call(&a_url, "GetTask", json!({"id": id})).await.remove(0);
    assert_eq!(
        got["artifacts"][0]["parts"][0]["text"], "The echo said hi.",
        "{got}"
    );
    assert_eq!(calls_logged(&log, "echo"), 1, "the tool ran exactly once");
    assert_eq!(models.bodies_for("chat-model").len(), 2);

    for child in [&mut a, &mut b] {
        child.start_kill().unwrap();
        child.wait().await.unwrap();
    }
}
