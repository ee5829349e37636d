//! Durable runs with the real engine and real processes: a real
//! `restate-server` (npm, pinned in tests-deps), `loopwright serve` replicas
//! registered with it on one real PostgreSQL, a local model server that
//! counts its requests, and the in-repo MCP server, which logs each call of
//! its tools (and each cancellation).
//!
//! - a replica SIGKILLed in the middle of a slow tool: the run completes on
//!   the other replica behind the same address (a loopback load balancer),
//!   then, for a second run, on a replica started in the dead one's place;
//!   each model call that completed before the kill reached the model
//!   exactly once; the tool ran at most twice, its result is once in the
//!   history;
//! - `restate-server` stopped and restarted while a run awaits approval; the
//!   approval then completes the run;
//! - a durable run cancelled while its tool runs: the tool's cancellation
//!   fires, the run ends `cancelled`;
//! - a run of 100 steps: `GET /v1/runs/{id}`, the event stream and Restate's
//!   journal agree;
//! - approvals and cancels through the replica that does not run the run;
//!   cancels of runs waiting for a decision, suspended or not; a run that
//!   outlives a store outage; a step longer than the suspension time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

#[path = "durable/world.rs"]
mod world;

use std::time::Duration;

use common::rest::*;
use common::*;
use loopwright_test_support::proxy::Balancer;
use serde_json::{Value, json};
use world::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_the_sigkill_of_its_replica_mid_tool() {
    let slow = json!({"ms": 3000});
    // Step 1 of run 1 is a batch: a quick echo, then the slow tool.
    let script = vec![
        sse::chat_calls(&[
            ("call_echo", "test__echo", json!({"text": "first"})),
            ("call_slow", "test__slow", slow.clone()),
        ]),
        sse::answer("Slept."),
        sse::chat_calls(&[("call_slow2", "test__slow", slow.clone())]),
        sse::answer("Slept again."),
    ];
    let world = World::new("slow-model", script, loopwright_test_support::database()).await;
    let addrs = [free_addr(), free_addr()];
    let balancer = Balancer::start(addrs.to_vec()).unwrap();
    let lb = balancer.url();
    let mut replicas = [
        world.replica(addrs[0], &lb, "auto").await,
        world.replica(addrs[1], &lb, "auto").await,
    ];

    // Run 1: the replica running it dies in the tool; the other one, behind
    // the same address, continues it.
    let id = replicas[0]
        .start_run("worker", json!({"prompt": "work", "session": "one"}))
        .await;
    until_logged(&world.log, "called slow", 1).await;
    let dead = runner(&replicas[0].rest, &id, &[&replicas[0], &replicas[1]]).await;
    let alive = 1 - dead;
    // A client follows the run live, on the replica that survives.
    let live = tokio::spawn(all_events_after(replicas[alive].rest.clone(), id.clone()));
    replicas[dead].kill().await;
    let view = replicas[alive].ended(&id).await;
    assert_eq!(
        view["status"],
        "completed",
        "{view}\n{:?}",
        replicas[alive].said.lock().unwrap()
    );
    assert_eq!(view["result"]["text"], "Slept.");
    assert!(view["durable"]["attempt"].as_u64().unwrap() >= 2, "{view}");
    // The first model call completed before the kill: it reached the model
    // once; the echo (journaled before the kill) ran once, the slow tool
    // twice (interrupted, then again); each result is once in the history.
    assert_eq!(world.model_calls(), 2);
    assert_eq!(world.tool_calls("echo"), 1);
    assert_eq!(world.tool_calls("slow"), 2);
    // Both executions gave the tool the same idempotency key.
    let keys: Vec<String> = std::fs::read_to_string(&world.log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("key slow "))
        .map(str::to_owned)
        .collect();
    assert_eq!(keys, [format!("{id}/1/call_slow"), format!("{id}/1/call_slow")]);
    for call in ["call_echo", "call_slow"] {
        assert_eq!(
            results_in_session(&replicas[alive].rest, "one", call).await,
            1,
            "{call}"
        );
    }
    let last = world.models.bodies_for("slow-model").pop().unwrap();
    let tool_messages = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    let results = last["messages"].to_string();
    assert_eq!(tool_messages, 2, "{last}");
    assert_eq!(
        results.matches("first").count(),
        2,
        "the echo's call and its result: {results}"
    );
    let events = all_events(&replicas[alive].rest, &id).await;
    assert_whole(&events, true);
    // The live stream went through the kill: the same events as stored.
    assert_eq!(live.await.unwrap(), events);
    assert_retried(&events, "call_slow");

    // Run 2: its replica dies, and one started in its place continues it.
    let id = replicas[alive]
        .start_run("sleeper", json!({"prompt": "sleep"}))
        .await;
    until_logged(&world.log, "called slow", 3).await;
    replicas[alive].kill().await;
    let mut again = world.replica(addrs[alive], &lb, "auto").await;
    let view = again.ended(&id).await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept again.");
    assert_eq!(world.model_calls(), 4);
    assert_eq!(world.tool_calls("slow"), 4);
    assert_whole(&all_events(&again.rest, &id).await, true);
    again.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_awaiting_approval_survives_a_restart_of_restate() {
    let script = vec![
        sse::chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]),
        sse::answer("The echo said hi."),
    ];
    let mut world = World::new("chat-model", script, loopwright_test_support::database()).await;
    let (_balancer, mut replicas) = world.pair("defer").await;
    let id = replicas[0]
        .start_run("assistant", json!({"prompt": "say hi"}))
        .await;
    let view = until_run(&replicas[0].rest, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    assert_eq!(view["pending_approvals"][0]["call_id"], "call_echo", "{view}");
    assert_eq!(view["pending_approvals"][0]["tool"], "test__echo", "{view}");
    // Decided on the replica that does not run it.
    let running = runner(&replicas[0].rest, &id, &[&replicas[0], &replicas[1]]).await;
    let replica = &replicas[1 - running];

    world.restate.stop();
    let approvals = format!("{}/v1/runs/{id}/approvals", replica.rest);
    let approve = json!({"decisions": [{"call_id": "call_echo", "approve": true}]});
    // With Restate down the decision is recorded but cannot reach the
    // run: 503, send it again.
    let (status, body) = post(&approvals, approve.clone()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.to_string().contains("send it again"), "{body}");
    world.restate.restart().unwrap();

    // Unknown calls are refused, naming what is pending.
    let (status, body) = post(
        &approvals,
        json!({"decisions": [{"call_id": "call_nope", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("call_echo"), "{body}");
    // A different decision for it is refused; the same one goes through.
    let (status, body) = post(
        &approvals,
        json!({"decisions": [{"call_id": "call_echo", "approve": false}]}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = post(&approvals, approve.clone()).await;
    assert_eq!(status, 200, "{body}");
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "completed", "{view}\n{}", world.restate.log());
    assert_eq!(view["result"]["text"], "The echo said hi.");
    assert_eq!(world.tool_calls("echo"), 1, "the tool ran once");
    assert_eq!(world.model_calls(), 2, "each model call once");
    // Decided already: a conflict.
    let (status, body) = post(&approvals, approve).await;
    assert_eq!(status, 409, "{body}");
    let events = all_events(&replica.rest, &id).await;
    assert_eq!(events.last().unwrap().1["type"], "finished", "{events:?}");
    for replica in &mut replicas {
        replica.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_run_cancelled_while_its_tool_runs_ends_cancelled() {
    let script = vec![sse::chat_calls(&[(
        "call_slow",
        "test__slow",
        json!({"ms": 60000}),
    )])];
    let world = World::new("slow-model", script, loopwright_test_support::database()).await;
    let (_balancer, mut replicas) = world.pair("auto").await;
    let id = replicas[0].start_run("sleeper", json!({"prompt": "sleep"})).await;
    until_logged(&world.log, "called slow", 1).await;
    // Cancelled on the replica that does not run it.
    let running = runner(&replicas[0].rest, &id, &[&replicas[0], &replicas[1]]).await;
    let replica = &replicas[1 - running];
    let (status, body) = post(&format!("{}/v1/runs/{id}/cancel", replica.rest), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "cancelled", "{view}");
    until_logged(&world.log, "cancelled slow", 1).await;
    let events = all_events(&replica.rest, &id).await;
    let finished = &events.last().unwrap().1;
    assert_eq!(finished["type"], "finished", "{events:?}");
    assert_eq!(finished["exit"], "cancelled", "{finished}");
    assert_eq!(world.tool_calls("slow"), 1);
    // Restate's workflow ended too (not left to retry).
    until_invocation(&world.restate, &id, "completed").await;
    for replica in &mut replicas {
        replica.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_a_hundred_steps_agrees_with_its_journal() {
    const STEPS: usize = 100;
    let mut script: Vec<String> = (0..STEPS)
        .map(|i| {
            sse::chat_calls(&[(
                &format!("call_{i}"),
                "test__echo",
                json!({"text": format!("step {i}")}),
            )])
        })
        .collect();
    script.push(sse::answer("Done."));
    let world = World::new("chat-model", script, loopwright_test_support::database()).await;
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&world.config).unwrap()).unwrap();
    settings["defaults"] = json!({"maxSteps": STEPS + 1});
    std::fs::write(&world.config, settings.to_string()).unwrap();
    let mut replica = world.lone_replica("auto").await;
    let id = replica
        .start_run("assistant", json!({"prompt": "echo a hundred times"}))
        .await;
    let view = tokio::time::timeout(Duration::from_secs(120), replica.ended(&id))
        .await
        .unwrap();
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Done.");
    assert_eq!(view["result"]["steps"], STEPS + 1, "{view}");
    assert_eq!(world.tool_calls("echo"), STEPS);
    assert_eq!(world.model_calls(), STEPS + 1);

    let events = all_events(&replica.rest, &id).await;
    assert_whole(&events, false);
    let count = |kind: &str| events.iter().filter(|(_, e)| e["type"] == kind).count();
    assert_eq!(count("step_started"), STEPS + 1);
    // Each call once, in order, with its own result.
    let of = |kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|(_, e)| e["type"] == kind)
            .map(|(_, e)| e["call_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let ids: Vec<String> = (0..STEPS).map(|i| format!("call_{i}")).collect();
    assert_eq!((of("tool_call"), of("tool_result")), (ids.clone(), ids));
    for (i, (_, result)) in events
        .iter()
        .filter(|(_, e)| e["type"] == "tool_result")
        .enumerate()
    {
        assert!(
            result["output"].to_string().contains(&format!("step {i}")),
            "{result}"
        );
    }

    // Restate's journal: each model call, then its step's tool call, in
    // the loop's order, each once; the view counts the same steps.
    let journal = journal_steps(&world.restate, &id).await;
    let mut expected: Vec<String> = (1..=STEPS)
        .flat_map(|step| [format!("model-{step}"), format!("tool-{step}-0")])
        .collect();
    expected.push(format!("model-{}", STEPS + 1));
    assert_eq!(journal, expected);
    assert_eq!(
        journal.iter().filter(|n| n.starts_with("model-")).count(),
        view["result"]["steps"].as_u64().unwrap() as usize
    );
    replica.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_run_waits_out_a_store_outage_and_goes_on() {
    let mut postgres = loopwright_test_support::TempPostgres::start();
    let script = vec![
        sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 1500}))]),
        sse::answer("Slept through it."),
    ];
    let world = World::new("slow-model", script, postgres.database().connect_timeout(2)).await;
    let mut replica = world.lone_replica("auto").await;
    let id = replica.start_run("sleeper", json!({"prompt": "sleep"})).await;
    until_logged(&world.log, "called slow", 1).await;
    postgres.stop();
    // The tool ends while the store is down: its events cannot be stored,
    // so the execution stops (nothing recorded) and Restate retries it.
    until_said(
        &replica.said,
        "the store is unavailable",
        Duration::from_secs(120),
    )
    .await;
    postgres.restart();
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept through it.");
    // The tool's batch was journaled before the outage mattered: it ran once.
    assert_eq!(world.tool_calls("slow"), 1);
    assert_eq!(world.model_calls(), 2);
    replica.kill().await;
}

/// A background response of the Responses API is a durable run too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_is_a_durable_run() {
    let script = vec![
        sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 200}))]),
        sse::answer("Slept."),
    ];
    let world = World::new("slow-model", script, loopwright_test_support::database()).await;
    let mut replica = world.lone_replica("auto").await;
    let (status, created) = post(
        &format!("{}/v1/responses", replica.openai),
        json!({"model": "sleeper", "input": "sleep", "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["status"], "queued", "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let done = tokio::time::timeout(HANG_GUARD, async {
        loop {
            let (_, response) = get(&format!("{}/v1/responses/{id}", replica.openai)).await;
            if !matches!(response["status"].as_str(), Some("queued" | "in_progress")) {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done.to_string().contains("Slept."), "{done}");
    let (_, run) = get(&format!("{}/v1/runs/{id}", replica.rest)).await;
    assert_eq!(run["durable"]["attempt"], 1, "{run}");
    replica.kill().await;
}

/// Durable runs need a store every replica shares: `serve` says so and
/// does not start.
#[tokio::test]
async fn durable_runs_without_a_store_are_refused_at_start() {
    let models = routed(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = files(dir.path(), &models, &dir.path().join("mcp.log"));
    let agent = dir.path().join("assistant.md");
    let out = run_agent(
        &[
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--rest",
            "0",
            "--restate-admin",
            "http://127.0.0.1:9",
            "--restate-ingress",
            "http://127.0.0.1:9",
            "--restate-listen",
            "127.0.0.1:0",
        ],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "need a store every replica shares");
    // The Restate flags go together.
    let out = run_agent(
        &[
            "serve",
            "--agent",
            agent.to_str().unwrap(),
            "--rest",
            "0",
            "--restate-ingress",
            "http://x",
        ],
        &[],
        dir.path(),
    )
    .await;
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--restate-admin"), "{stderr}");
}

/// A run waiting for a decision longer than `--restate-suspend-after` is
/// suspended (nothing of it on any replica); a cancel wakes it up and it
/// ends `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_is_cancelled() {
    let script = vec![sse::chat_calls(&[(
        "call_echo",
        "test__echo",
        json!({"text": "hi"}),
    )])];
    let mut world = World::new("chat-model", script, loopwright_test_support::database()).await;
    world.extra = vec!["--restate-suspend-after".into(), "1s".into()];
    let mut replica = world.lone_replica("defer").await;
    let id = replica.start_run("assistant", json!({"prompt": "say hi"})).await;
    until_run(&replica.rest, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    until_invocation(&world.restate, &id, "suspended").await;
    let (status, body) = post(&format!("{}/v1/runs/{id}/cancel", replica.rest), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "cancelled", "{view}");
    let events = all_events(&replica.rest, &id).await;
    let finished = &events.last().unwrap().1;
    assert_eq!(finished["exit"], "cancelled", "{events:?}");
    assert_eq!(world.tool_calls("echo"), 0, "the call was never approved");
    replica.kill().await;
}

/// A run suspended in Restate while it waits for a decision, and the store
/// down when the decision comes: the decision is refused with a 503 (it
/// could not be recorded), nothing runs; once the store is back the same
/// decision goes through and the run completes, its tool run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_is_decided_after_a_store_outage() {
    let mut postgres = loopwright_test_support::TempPostgres::start();
    let script = vec![
        sse::chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]),
        sse::answer("The echo said hi."),
    ];
    let mut world = World::new("chat-model", script, postgres.database().connect_timeout(2)).await;
    world.extra = vec!["--restate-suspend-after".into(), "1s".into()];
    let mut replica = world.lone_replica("defer").await;
    let id = replica.start_run("assistant", json!({"prompt": "say hi"})).await;
    until_run(&replica.rest, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    until_invocation(&world.restate, &id, "suspended").await;
    postgres.stop();
    let approvals = format!("{}/v1/runs/{id}/approvals", replica.rest);
    let approve = json!({"decisions": [{"call_id": "call_echo", "approve": true}]});
    let (status, body) = post(&approvals, approve.clone()).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        world.tool_calls("echo"),
        0,
        "nothing ran without the decision recorded"
    );
    postgres.restart();
    let (status, body) = post(&approvals, approve).await;
    assert_eq!(status, 200, "{body}");
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "completed", "{view}\n{}", world.restate.log());
    assert_eq!(view["result"]["text"], "The echo said hi.");
    assert_eq!(world.tool_calls("echo"), 1, "the tool ran once");
    assert_eq!(world.model_calls(), 2, "each model call once");
    replica.kill().await;
}

/// A run waiting for a decision, not suspended, cancelled on the replica
/// running it: the loop gives up on the decision at once (the call is
/// denied, never run), the run ends `cancelled`, and its workflow completes
/// in Restate (nothing left waiting on the promise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_awaiting_approval_is_cancelled_before_it_suspends() {
    let script = vec![sse::chat_calls(&[(
        "call_echo",
        "test__echo",
        json!({"text": "hi"}),
    )])];
    let world = World::new("chat-model", script, loopwright_test_support::database()).await;
    let mut replica = world.lone_replica("defer").await;
    let id = replica.start_run("assistant", json!({"prompt": "say hi"})).await;
    until_run(&replica.rest, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    let (status, body) = post(&format!("{}/v1/runs/{id}/cancel", replica.rest), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "cancelled", "{view}");
    let events = all_events(&replica.rest, &id).await;
    assert_eq!(events.last().unwrap().1["exit"], "cancelled", "{events:?}");
    assert_eq!(world.tool_calls("echo"), 0, "the call was never approved");
    until_invocation(&world.restate, &id, "completed").await;
    replica.kill().await;
}

/// A step longer than `--restate-suspend-after` (a slow tool) is journaled
/// when it ends; the run goes on, nothing repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_longer_than_the_suspension_time_is_not_repeated() {
    let script = vec![
        sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 3000}))]),
        sse::answer("Slept long."),
    ];
    let mut world = World::new("slow-model", script, loopwright_test_support::database()).await;
    world.extra = vec!["--restate-suspend-after".into(), "1s".into()];
    let mut replica = world.lone_replica("auto").await;
    let id = replica.start_run("sleeper", json!({"prompt": "sleep"})).await;
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept long.");
    assert_eq!(world.tool_calls("slow"), 1, "the slow tool ran once");
    assert_eq!(world.model_calls(), 2, "each model call once");
    assert_whole(&all_events(&replica.rest, &id).await, false);
    replica.kill().await;
}

/// A durable run whose workflow is killed in Restate (by an operator) is
/// recorded failed once its lease has run out, saying why, and its stream
/// ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_workflow_is_killed_in_restate_is_recorded_failed() {
    let script = vec![sse::chat_calls(&[(
        "call_slow",
        "test__slow",
        json!({"ms": 60000}),
    )])];
    let mut world = World::new("slow-model", script, loopwright_test_support::database()).await;
    world.extra = vec!["--run-lease".into(), "3s".into()];
    let mut replica = world.lone_replica("auto").await;
    let id = replica.start_run("sleeper", json!({"prompt": "sleep"})).await;
    until_logged(&world.log, "called slow", 1).await;
    let query = format!(
        "SELECT id FROM sys_invocation WHERE target_service_key = '{id}' AND target_handler_name = 'run'"
    );
    let rows = restate_query(&world.restate, &query).await;
    let invocation = rows[0]["id"].as_str().unwrap().to_owned();
    let killed = reqwest_client()
        .patch(format!(
            "{}/invocations/{invocation}/kill",
            world.restate.admin_url()
        ))
        .send()
        .await
        .unwrap();
    assert!(killed.status().is_success(), "{}", killed.status());
    let view = replica.ended(&id).await;
    assert_eq!(view["status"], "failed", "{view}");
    assert_eq!(view["error"]["type"], "restate_invocation_ended", "{view}");
    let events = all_events(&replica.rest, &id).await;
    assert_eq!(events.last().unwrap().1["type"], "finished", "{events:?}");
    replica.kill().await;
}
