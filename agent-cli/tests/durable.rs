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
//!   journal agree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::rest::*;
use common::routed::{RoutedServer, chat_answer, chat_calls};
use common::*;
use loopwright_test_support::proxy::Balancer;
use loopwright_test_support::restate::RestateServer;
use serde_json::{Value, json};

/// A free loopback port (bound, then released).
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A `serve` replica with durable runs.
struct Replica {
    child: tokio::process::Child,
    rest: String,
    /// The OpenAI surface (Chat Completions, Responses).
    openai: String,
    said: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    /// Start one: REST on a free port, Restate's endpoint on `listen`,
    /// registered as `advertise`.
    async fn start(
        dir: &Path,
        config: &Path,
        store: &str,
        restate: &RestateServer,
        listen: SocketAddr,
        advertise: &str,
        approve: &str,
    ) -> Self {
        let assistant = dir.join("assistant.md");
        let sleeper = dir.join("sleeper.md");
        let admin = restate.admin_url();
        let ingress = restate.ingress_url();
        let listen = listen.to_string();
        let args = [
            "serve",
            "-v",
            "--config",
            config.to_str().unwrap(),
            "--agent",
            assistant.to_str().unwrap(),
            "--agent",
            sleeper.to_str().unwrap(),
            "--rest",
            "0",
            "--openai",
            "0",
            "--store",
            store,
            "--approve",
            approve,
            "--restate-admin",
            &admin,
            "--restate-ingress",
            &ingress,
            "--restate-listen",
            &listen,
            "--restate-advertise",
            advertise,
        ];
        let mut child = agent_command(&args, &[], dir).spawn().unwrap();
        let (urls, said) = listening_kept(&mut child, 2).await;
        tokio::time::timeout(HANG_GUARD, async {
            while !said
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("durable runs on Restate"))
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("never registered: {:?}", said.lock().unwrap()));
        Self {
            child,
            rest: urls["rest"].clone(),
            openai: urls["openai"].trim_end_matches("/v1").to_owned(),
            said,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    async fn kill(&mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

/// Wait until the MCP server logged `count` lines `line`.
async fn until_logged(log: &Path, line: &str, count: usize) {
    tokio::time::timeout(HANG_GUARD, async {
        while std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(line))
            .count()
            < count
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "never logged {count} x {line:?}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        )
    });
}

/// The replica running run `id` (its record's owner names the process).
async fn runner(base: &str, id: &str, replicas: &[&Replica]) -> usize {
    let view = until_run(base, id, "owned", |v| v["replica"].is_string()).await;
    let owner = view["replica"].as_str().unwrap().to_owned();
    replicas
        .iter()
        .position(|r| owner.contains(&format!("-{}-", r.pid())))
        .unwrap_or_else(|| panic!("no replica runs {id}: {owner}"))
}

/// The tool results for `call_id` in a run's session.
async fn results_in_session(base: &str, session: &str, call_id: &str) -> usize {
    let (status, stored) = get(&format!("{base}/v1/sessions/{session}")).await;
    assert_eq!(status, 200, "{stored}");
    stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "tool_result" && part["call_id"] == call_id)
        .count()
}

/// Assert the stream of a completed run: numbered from 0 without gaps,
/// one `finished` at the end, a `resumed` from the second attempt.
fn assert_whole(events: &[(u64, Value)], resumed: bool) {
    let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "in order, no gap"
    );
    let kinds: Vec<&str> = events.iter().map(|(_, e)| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.last(), Some(&"finished"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "finished").count(), 1, "{kinds:?}");
    if resumed {
        let attempt = events
            .iter()
            .find(|(_, e)| e["type"] == "resumed")
            .map(|(_, e)| e["attempt"].as_u64().unwrap());
        assert!(attempt.is_some_and(|a| a >= 2), "{kinds:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_the_sigkill_of_its_replica_mid_tool() {
    let restate = RestateServer::start().unwrap();
    let database = loopwright_test_support::database();
    let slow = json!({"ms": 3000});
    let models = RoutedServer::start(vec![(
        "slow-model",
        vec![
            chat_calls(&[("call_slow", "test__slow", slow.clone())]),
            chat_answer("Slept."),
            chat_calls(&[("call_slow2", "test__slow", slow.clone())]),
            chat_answer("Slept again."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let (a_addr, b_addr) = (free_addr(), free_addr());
    let balancer = Balancer::start(vec![a_addr, b_addr]).unwrap();
    let lb = balancer.url();
    let start = |addr| Replica::start(dir.path(), &config, database.url(), &restate, addr, &lb, "auto");
    let mut replicas = [start(a_addr).await, start(b_addr).await];

    // Run 1: the replica running it dies in the tool; the other one, behind
    // the same address, continues it.
    let (status, started) = post(
        &format!("{}/v1/agents/sleeper/runs", replicas[0].rest),
        json!({"prompt": "sleep", "session": "one"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_logged(&log, "called slow", 1).await;
    let dead = runner(&replicas[0].rest, &id, &[&replicas[0], &replicas[1]]).await;
    replicas[dead].kill().await;
    let alive = 1 - dead;
    let view = until_run(&replicas[alive].rest, &id, "completed", |v| {
        v["status"] != "running"
    })
    .await;
    assert_eq!(
        view["status"],
        "completed",
        "{view}\n{:?}",
        replicas[alive].said.lock().unwrap()
    );
    assert_eq!(view["result"]["text"], "Slept.");
    assert!(view["durable"]["attempt"].as_u64().unwrap() >= 2, "{view}");
    // The first model call completed before the kill: it reached the model
    // once; the tool ran twice (interrupted, then again); its result is
    // once in the history.
    assert_eq!(models.bodies_for("slow-model").len(), 2);
    assert_eq!(calls_logged(&log, "slow"), 2);
    assert_eq!(
        results_in_session(&replicas[alive].rest, "one", "call_slow").await,
        1
    );
    let last = models.bodies_for("slow-model").pop().unwrap();
    let tool_messages = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(tool_messages, 1, "{last}");
    assert_whole(&all_events(&replicas[alive].rest, &id).await, true);

    // Run 2: its replica dies, and one started in its place continues it.
    let (status, started) = post(
        &format!("{}/v1/agents/sleeper/runs", replicas[alive].rest),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_logged(&log, "called slow", 3).await;
    replicas[alive].kill().await;
    let addr = if alive == 0 { a_addr } else { b_addr };
    let mut again = start(addr).await;
    let view = until_run(&again.rest, &id, "completed", |v| v["status"] != "running").await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept again.");
    assert_eq!(models.bodies_for("slow-model").len(), 4);
    assert_eq!(calls_logged(&log, "slow"), 4);
    assert_whole(&all_events(&again.rest, &id).await, true);
    again.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_awaiting_approval_survives_a_restart_of_restate() {
    let mut restate = RestateServer::start().unwrap();
    let database = loopwright_test_support::database();
    let models = RoutedServer::start(vec![(
        "chat-model",
        vec![
            chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]),
            chat_answer("The echo said hi."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let addr = free_addr();
    let advertised = format!("http://{addr}/");
    let mut replica = Replica::start(
        dir.path(),
        &config,
        database.url(),
        &restate,
        addr,
        &advertised,
        "defer",
    )
    .await;
    let (status, started) = post(
        &format!("{}/v1/agents/assistant/runs", replica.rest),
        json!({"prompt": "say hi"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let view = until_run(&replica.rest, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    assert_eq!(view["pending_approvals"][0]["call_id"], "call_echo", "{view}");
    assert_eq!(view["pending_approvals"][0]["tool"], "test__echo", "{view}");

    restate.stop();
    restate.restart().unwrap();

    // Unknown calls are refused, naming what is pending.
    let (status, body) = post(
        &format!("{}/v1/runs/{id}/approvals", replica.rest),
        json!({"decisions": [{"call_id": "call_nope", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("call_echo"), "{body}");
    let (status, body) = post(
        &format!("{}/v1/runs/{id}/approvals", replica.rest),
        json!({"decisions": [{"call_id": "call_echo", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let view = until_run(&replica.rest, &id, "completed", |v| {
        v["status"] != "running" && v["status"] != "awaiting_approval"
    })
    .await;
    assert_eq!(view["status"], "completed", "{view}\n{}", restate.log());
    assert_eq!(view["result"]["text"], "The echo said hi.");
    assert_eq!(calls_logged(&log, "echo"), 1, "the tool ran once");
    assert_eq!(models.bodies_for("chat-model").len(), 2, "each model call once");
    // Decided already: a conflict.
    let (status, body) = post(
        &format!("{}/v1/runs/{id}/approvals", replica.rest),
        json!({"decisions": [{"call_id": "call_echo", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let events = all_events(&replica.rest, &id).await;
    assert_eq!(events.last().unwrap().1["type"], "finished", "{events:?}");
    replica.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_run_cancelled_while_its_tool_runs_ends_cancelled() {
    let restate = RestateServer::start().unwrap();
    let database = loopwright_test_support::database();
    let models = RoutedServer::start(vec![(
        "slow-model",
        vec![chat_calls(&[("call_slow", "test__slow", json!({"ms": 60000}))])],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let addr = free_addr();
    let advertised = format!("http://{addr}/");
    let mut replica = Replica::start(
        dir.path(),
        &config,
        database.url(),
        &restate,
        addr,
        &advertised,
        "auto",
    )
    .await;
    let (status, started) = post(
        &format!("{}/v1/agents/sleeper/runs", replica.rest),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_logged(&log, "called slow", 1).await;
    let (status, body) = post(&format!("{}/v1/runs/{id}/cancel", replica.rest), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let view = until_run(&replica.rest, &id, "ended", |v| v["status"] != "running").await;
    assert_eq!(view["status"], "cancelled", "{view}");
    until_logged(&log, "cancelled slow", 1).await;
    let events = all_events(&replica.rest, &id).await;
    let finished = &events.last().unwrap().1;
    assert_eq!(finished["type"], "finished", "{events:?}");
    assert_eq!(finished["exit"], "cancelled", "{finished}");
    assert_eq!(calls_logged(&log, "slow"), 1);
    replica.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_a_hundred_steps_agrees_with_its_journal() {
    const STEPS: usize = 100;
    let restate = RestateServer::start().unwrap();
    let database = loopwright_test_support::database();
    let mut script: Vec<String> = (0..STEPS)
        .map(|i| {
            chat_calls(&[(
                &format!("call_{i}"),
                "test__echo",
                json!({"text": format!("step {i}")}),
            )])
        })
        .collect();
    script.push(chat_answer("Done."));
    let models = RoutedServer::start(vec![("chat-model", script)]).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let mut settings: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    settings["defaults"] = json!({"maxSteps": STEPS + 1});
    std::fs::write(&config, settings.to_string()).unwrap();
    let addr = free_addr();
    let advertised = format!("http://{addr}/");
    let mut replica = Replica::start(
        dir.path(),
        &config,
        database.url(),
        &restate,
        addr,
        &advertised,
        "auto",
    )
    .await;
    let (status, started) = post(
        &format!("{}/v1/agents/assistant/runs", replica.rest),
        json!({"prompt": "echo a hundred times"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let view = tokio::time::timeout(
        Duration::from_secs(120),
        until_run(&replica.rest, &id, "ended", |v| v["status"] != "running"),
    )
    .await
    .unwrap();
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Done.");
    assert_eq!(view["result"]["steps"], STEPS + 1, "{view}");
    assert_eq!(calls_logged(&log, "echo"), STEPS);
    assert_eq!(models.bodies_for("chat-model").len(), STEPS + 1);

    let events = all_events(&replica.rest, &id).await;
    assert_whole(&events, false);
    let count = |kind: &str| events.iter().filter(|(_, e)| e["type"] == kind).count();
    assert_eq!(count("step_started"), STEPS + 1);

    // Restate's journal: one step per model call, one per tool batch.
    let journal = journal_steps(&restate, &id).await;
    let models_journaled = journal.iter().filter(|n| n.starts_with("model-")).count();
    let tools_journaled = journal.iter().filter(|n| n.starts_with("tools-")).count();
    assert_eq!(
        (models_journaled, tools_journaled),
        (STEPS + 1, STEPS),
        "{journal:?}"
    );
    replica.kill().await;
}

/// The names of the `run` steps in the journal of run `id`'s workflow, from
/// Restate's SQL introspection.
async fn journal_steps(restate: &RestateServer, id: &str) -> Vec<String> {
    let query = format!(
        "SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id \
         WHERE i.target_service_key = '{id}' AND i.target_handler_name = 'run' AND j.entry_type = 'Command: Run' \
         ORDER BY j.index"
    );
    let response = reqwest_client()
        .post(format!("{}/query", restate.admin_url()))
        .header("accept", "application/json")
        .json(&json!({"query": query}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert!(status.is_success(), "{body}");
    body["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|row| row["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_run_waits_out_a_store_outage_and_goes_on() {
    let restate = RestateServer::start().unwrap();
    let mut postgres = loopwright_test_support::TempPostgres::start();
    let database = postgres.database();
    let models = RoutedServer::start(vec![(
        "slow-model",
        vec![
            chat_calls(&[("call_slow", "test__slow", json!({"ms": 1500}))]),
            chat_answer("Slept through it."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let addr = free_addr();
    let advertised = format!("http://{addr}/");
    let mut replica = Replica::start(
        dir.path(),
        &config,
        database.url(),
        &restate,
        addr,
        &advertised,
        "auto",
    )
    .await;
    let (status, started) = post(
        &format!("{}/v1/agents/sleeper/runs", replica.rest),
        json!({"prompt": "sleep"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    until_logged(&log, "called slow", 1).await;
    postgres.stop();
    // The tool ends while the store is down: its events cannot be stored,
    // so the execution stops (nothing recorded) and Restate retries it.
    tokio::time::timeout(Duration::from_secs(120), async {
        while !replica
            .said
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("the store is unavailable"))
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the execution never stopped: {:?}", replica.said.lock().unwrap()));
    postgres.restart();
    let view = until_run(&replica.rest, &id, "ended", |v| v["status"] != "running").await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["text"], "Slept through it.");
    // The tool's batch was journaled before the outage mattered: it ran once.
    assert_eq!(calls_logged(&log, "slow"), 1);
    assert_eq!(models.bodies_for("slow-model").len(), 2);
    replica.kill().await;
}

/// A background response of the Responses API is a durable run too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_is_a_durable_run() {
    let restate = RestateServer::start().unwrap();
    let database = loopwright_test_support::database();
    let models = RoutedServer::start(vec![(
        "slow-model",
        vec![
            chat_calls(&[("call_slow", "test__slow", json!({"ms": 200}))]),
            chat_answer("Slept."),
        ],
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = files(dir.path(), &models, &log);
    let addr = free_addr();
    let advertised = format!("http://{addr}/");
    let mut replica = Replica::start(
        dir.path(),
        &config,
        database.url(),
        &restate,
        addr,
        &advertised,
        "auto",
    )
    .await;
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
    let models = RoutedServer::start(vec![]).await;
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
