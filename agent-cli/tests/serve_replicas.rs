//! `loopwright serve` replicas sharing one real PostgreSQL: a run paused for
//! approval on replica A survives A's SIGKILL and completes on replica B,
//! which the approval was posted to; the tool (the in-repo MCP server,
//! which logs its own calls) runs exactly once; B's event stream from
//! sequence 0 holds the whole run without gaps or duplicates; a session
//! started on one replica continues on the other. And a store that goes
//! down while a run is in flight: routes answer 503, the run fails with a
//! clear error, and everything recovers once the store is back. And
//! `--retention`: a run that outlived it is deleted from both replicas.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::rest::*;
use common::*;
use serde_json::json;

/// A replica: `serve --rest` on a free port with the store; its base URL.
async fn replica(dir: &Path, config: &Path, store: &str, approve: &str) -> (tokio::process::Child, String) {
    let (child, url, _) = replica_with(dir, config, store, approve, &[]).await;
    (child, url)
}

/// [`replica`] with `extra` flags; also what it says on stderr.
async fn replica_with(
    dir: &Path,
    config: &Path,
    store: &str,
    approve: &str,
    extra: &[&str],
) -> (tokio::process::Child, String, Arc<Mutex<Vec<String>>>) {
    let assistant = dir.join("assistant.md");
    let sleeper = dir.join("sleeper.md");
    let mut args = vec![
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--agent",
        assistant.to_str().unwrap(),
        "--agent",
        sleeper.to_str().unwrap(),
        "--rest",
        "0",
        "--store",
        store,
        "--approve",
        approve,
    ];
    args.extend(extra);
    let mut child = agent_command(&args, &[], dir).spawn().unwrap();
    let (urls, said) = listening_kept(&mut child, 1).await;
    assert!(
        said.lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("loopwright serve: store ")),
        "{said:?}"
    );
    (child, urls["rest"].clone(), said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_on_a_killed_replica_is_approved_and_completed_on_another() {
    let database = loopwright_test_support::database();
    let models = routed(vec![(
        "chat-model",
        vec![
            sse::chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]),
            sse::answer("The echo said hi."),
            sse::answer("Hi again."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let (mut a, a_url) = replica(dir.path(), &config, database.url(), "defer").await;
    let (mut b, b_url) = replica(dir.path(), &config, database.url(), "defer").await;

    let (status, started) = post(
        &format!("{a_url}/v1/agents/assistant/runs"),
        json!({"prompt": "say hi", "session": "shared-chat"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    // B reads what A stored.
    let view = until_run(&b_url, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    assert_eq!(view["pending_approvals"][0]["call_id"], "call_echo", "{view}");
    assert_eq!(view["pending_approvals"][0]["tool"], "test__echo");

    a.start_kill().unwrap();
    a.wait().await.unwrap();

    let (status, decided) = post(
        &format!("{b_url}/v1/runs/{id}/approvals"),
        json!({"decisions": [{"call_id": "call_echo", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    let view = until_run(&b_url, &id, "completed", |v| v["status"] == "completed").await;
    assert_eq!(view["result"]["text"], "The echo said hi.", "{view}");
    assert_eq!(calls_logged(&log, "echo"), 1, "the tool ran exactly once");
    // Each model call reached the model once.
    assert_eq!(models.bodies_for("chat-model").len(), 2);
    // The same decision again is a conflict, on either side.
    let (status, body) = post(
        &format!("{b_url}/v1/runs/{id}/approvals"),
        json!({"decisions": [{"call_id": "call_echo", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 409, "{body}");

    let events = all_events(&b_url, &id).await;
    let kinds = assert_numbered(&events);
    let has = |kind: &str| kinds.iter().any(|k| k == kind);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("run_started"),
        "{kinds:?}"
    );
    assert!(has("awaiting_approval"), "{kinds:?}");
    assert!(has("tool_call_finished") || has("tool_result"), "{kinds:?}");

    // The session started on A continues on a new replica in A's place.
    let (mut a2, a2_url) = replica(dir.path(), &config, database.url(), "defer").await;
    let (status, turn) = post(
        &format!("{a2_url}/v1/agents/assistant"),
        json!({"prompt": "again", "session": "shared-chat"}),
    )
    .await;
    assert_eq!(status, 200, "{turn}");
    assert_eq!(turn["text"], "Hi again.");
    let last_request = models.bodies_for("chat-model").pop().unwrap();
    let history = last_request["messages"].to_string();
    assert!(
        history.contains("say hi") && history.contains("The echo said hi."),
        "{history}"
    );
    let (_, session) = get(&format!("{b_url}/v1/sessions/shared-chat")).await;
    assert_eq!(session["version"], 2, "{session}");

    for child in [&mut b, &mut a2] {
        child.start_kill().unwrap();
        child.wait().await.unwrap();
    }
}

/// A run in flight on a replica that is killed is recorded failed
/// (`replica_lost`) by another replica once the lease runs out, and its
/// event stream ends; a run whose replica lives is kept alive past the
/// lease by its heartbeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_in_flight_on_a_killed_replica_is_failed_after_its_lease_by_another() {
    let database = loopwright_test_support::database();
    let models = routed(vec![(
        "slow-model",
        vec![
            sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 5000}))]),
            sse::answer("Slept."),
            sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 60000}))]),
            sse::answer("Never."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let lease = ["--run-lease", "3s"];
    let (mut a, a_url, _) = replica_with(dir.path(), &config, database.url(), "auto", &lease).await;
    let (mut b, b_url, _) = replica_with(dir.path(), &config, database.url(), "auto", &lease).await;

    // B runs a 5 s tool, longer than the lease: A keeps reading it, and it
    // stays running until it completes.
    let (status, started) = post(
        &format!("{b_url}/v1/agents/sleeper/runs"),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let alive = started["id"].as_str().unwrap().to_owned();
    let view = until_run(&a_url, &alive, "ended", |v| v["status"] != "running").await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept.");

    // A runs the same tool and is killed in it.
    let (status, started) = post(
        &format!("{a_url}/v1/agents/sleeper/runs"),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let lost = started["id"].as_str().unwrap().to_owned();
    tokio::time::timeout(HANG_GUARD, async {
        while calls_logged(&log, "slow") < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the slow tool never started on A");
    a.start_kill().unwrap();
    a.wait().await.unwrap();
    let (_, view) = get(&format!("{b_url}/v1/runs/{lost}")).await;
    assert_eq!(view["status"], "running", "within its lease: {view}");
    let view = until_run(&b_url, &lost, "failed", |v| v["status"] != "running").await;
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error"]["type"], "replica_lost", "{view}");
    let message = view["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("stopped") && message.contains("start the run again"),
        "{message}"
    );
    let events = all_events(&b_url, &lost).await;
    let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "in order, no gap"
    );
    assert_eq!(events.last().unwrap().1["type"], "finished", "{events:?}");
    // Ended: a cancel is a conflict, not a hang.
    let (status, body) = post(&format!("{b_url}/v1/runs/{lost}/cancel"), json!({})).await;
    assert_eq!(status, 409, "{body}");
    b.start_kill().unwrap();
    b.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_goes_down_mid_run_fails_the_run_clearly_and_the_server_recovers() {
    let mut postgres = loopwright_test_support::TempPostgres::start();
    // Calls give up on the stopped server after 2 s (5 by default).
    let database = postgres.database().connect_timeout(2);
    let models = routed(vec![(
        "slow-model",
        vec![
            sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 1500}))]),
            sse::answer("Slept."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let (mut server, url, said) = replica_with(dir.path(), &config, database.url(), "auto", &["-v"]).await;
    let (status, started) = post(
        &format!("{url}/v1/agents/sleeper/runs"),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    tokio::time::timeout(HANG_GUARD, async {
        while calls_logged(&log, "slow") == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the tool never started");

    postgres.stop();
    let (status, body) = get(&format!("{url}/v1/runs/{id}")).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("unavailable"),
        "{body}"
    );
    let (status, _) = post(
        &format!("{url}/v1/agents/sleeper/runs"),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 503);
    // The server itself keeps answering.
    let (status, _) = get(&format!("{url}/health")).await;
    assert_eq!(status, 200);
    // The tool ends, its events cannot be stored, the run gives up and its
    // record waits for the store.
    until_said(
        &said,
        "the run's record could not be written; retrying",
        Duration::from_secs(120),
    )
    .await;

    postgres.restart();
    let view = until_run(&url, &id, "failed", |v| v["status"] == "failed").await;
    let message = view["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not be stored"), "{view}");
    // New runs work again.
    let (status, _) = post(
        &format!("{url}/v1/agents/sleeper/runs"),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202);
    server.start_kill().unwrap();
    server.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_delete_what_outlived_the_retention() {
    let database = loopwright_test_support::database();
    let models = routed(vec![("chat-model", vec![sse::answer("Done.")])]).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    // A duration the flag does not take is a usage error naming it.
    let out = run_agent(&["serve", "--rest", "0", "--retention", "soon"], &[], dir.path()).await;
    assert_exit(&out, 2, "never");
    let keep = ["--retention", "2s"];
    let (mut a, a_url, _) = replica_with(dir.path(), &config, database.url(), "defer", &keep).await;
    let (mut b, b_url, _) = replica_with(dir.path(), &config, database.url(), "defer", &keep).await;
    let (status, started) = post(
        &format!("{a_url}/v1/agents/assistant/runs"),
        json!({"prompt": "go"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_run(&b_url, &id, "completed", |v| v["status"] == "completed").await;
    // Two seconds after its last write, gone from both replicas.
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let (on_a, _) = get(&format!("{a_url}/v1/runs/{id}")).await;
            let (on_b, _) = get(&format!("{b_url}/v1/runs/{id}")).await;
            if (on_a, on_b) == (404, 404) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the expired run was never deleted");
    a.start_kill().unwrap();
    b.start_kill().unwrap();
    a.wait().await.unwrap();
    b.wait().await.unwrap();
}
