//! The durable tests' world: a real `restate-server`, a database, a model
//! server playing a script, the agent files, `serve` replicas registered
//! with Restate, and what the tests read back (the MCP server's log,
//! sessions, event streams, Restate's SQL introspection).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopwright_test_support::TempDatabase;
use loopwright_test_support::proxy::Balancer;
use loopwright_test_support::restate::RestateServer;
use serde_json::{Value, json};

use crate::common::rest::*;
use crate::common::*;

/// A free loopback port (bound, then released).
pub(crate) fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// One test's world: a Restate server, a database, a model server playing
/// `model`'s script, and the config and agent files.
pub(crate) struct World {
    pub(crate) restate: RestateServer,
    pub(crate) database: TempDatabase,
    pub(crate) models: ModelServer,
    pub(crate) model: String,
    pub(crate) dir: tempfile::TempDir,
    /// The MCP server's log of its calls.
    pub(crate) log: PathBuf,
    pub(crate) config: PathBuf,
    /// Flags every replica gets besides the usual ones.
    pub(crate) extra: Vec<String>,
}

impl World {
    pub(crate) async fn new(model: &str, script: Vec<String>, database: TempDatabase) -> Self {
        let restate = RestateServer::start().unwrap();
        let models = routed(vec![(model, script)]).await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("mcp.log");
        let config = files(dir.path(), &models, &log);
        Self {
            restate,
            database,
            models,
            model: model.to_owned(),
            dir,
            log,
            config,
            extra: Vec::new(),
        }
    }

    /// A replica whose endpoint listens on `listen`, registered as
    /// `advertise`.
    pub(crate) async fn replica(&self, listen: SocketAddr, advertise: &str, approve: &str) -> Replica {
        Replica::start(self, listen, advertise, approve).await
    }

    /// Two replicas behind one loopback load balancer (kept alive with
    /// them), registered under its address.
    pub(crate) async fn pair(&self, approve: &str) -> (Balancer, [Replica; 2]) {
        let addrs = [free_addr(), free_addr()];
        let balancer = Balancer::start(addrs.to_vec()).unwrap();
        let lb = balancer.url();
        let replicas = [
            self.replica(addrs[0], &lb, approve).await,
            self.replica(addrs[1], &lb, approve).await,
        ];
        (balancer, replicas)
    }

    /// A replica alone at its own address.
    pub(crate) async fn lone_replica(&self, approve: &str) -> Replica {
        let listen = free_addr();
        self.replica(listen, &format!("http://{listen}/"), approve).await
    }

    /// The requests the model server got.
    pub(crate) fn model_calls(&self) -> usize {
        self.models.bodies_for(&self.model).len()
    }

    /// How many times the MCP server's tool `tool` was called.
    pub(crate) fn tool_calls(&self, tool: &str) -> usize {
        calls_logged(&self.log, tool)
    }
}

/// A `serve` replica with durable runs (REST and OpenAI on free ports).
pub(crate) struct Replica {
    pub(crate) child: tokio::process::Child,
    pub(crate) rest: String,
    /// The OpenAI surface (Chat Completions, Responses).
    pub(crate) openai: String,
    pub(crate) said: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    pub(crate) async fn start(world: &World, listen: SocketAddr, advertise: &str, approve: &str) -> Self {
        let dir = world.dir.path();
        let assistant = dir.join("assistant.md");
        let sleeper = dir.join("sleeper.md");
        let worker = dir.join("worker.md");
        let (admin, ingress) = (world.restate.admin_url(), world.restate.ingress_url());
        let listen = listen.to_string();
        let mut args = vec![
            "serve",
            "-v",
            "--config",
            world.config.to_str().unwrap(),
            "--agent",
            assistant.to_str().unwrap(),
            "--agent",
            sleeper.to_str().unwrap(),
            "--agent",
            worker.to_str().unwrap(),
            "--rest",
            "0",
            "--openai",
            "0",
            "--store",
            world.database.url(),
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
        args.extend(world.extra.iter().map(String::as_str));
        let mut child = agent_command(&args, &[], dir).spawn().unwrap();
        let (urls, said) = listening_kept(&mut child, 2).await;
        until_said(&said, "durable runs on Restate", HANG_GUARD).await;
        Self {
            child,
            rest: urls["rest"].clone(),
            openai: urls["openai"].trim_end_matches("/v1").to_owned(),
            said,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// Start a background run of `agent` on `body`; its id.
    pub(crate) async fn start_run(&self, agent: &str, body: Value) -> String {
        let (status, started) = post(&format!("{}/v1/agents/{agent}/runs", self.rest), body).await;
        assert_eq!(status, 202, "{started}");
        started["id"].as_str().unwrap().to_owned()
    }

    /// Wait until run `id` is no longer `running` (or `awaiting_approval`);
    /// its view.
    pub(crate) async fn ended(&self, id: &str) -> Value {
        until_run(&self.rest, id, "ended", |v| {
            v["status"] != "running" && v["status"] != "awaiting_approval"
        })
        .await
    }

    pub(crate) async fn kill(&mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

/// Wait until the MCP server logged `count` lines starting with `line`.
pub(crate) async fn until_logged(log: &Path, line: &str, count: usize) {
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
pub(crate) async fn runner(base: &str, id: &str, replicas: &[&Replica]) -> usize {
    let view = until_run(base, id, "owned", |v| v["replica"].is_string()).await;
    let owner = view["replica"].as_str().unwrap().to_owned();
    replicas
        .iter()
        .position(|r| owner.contains(&format!("-{}-", r.pid())))
        .unwrap_or_else(|| panic!("no replica runs {id}: {owner}"))
}

/// The tool results for `call_id` in a run's session.
pub(crate) async fn results_in_session(base: &str, session: &str, call_id: &str) -> usize {
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

/// Every event of run `id` on `base` (owned, for a task).
pub(crate) async fn all_events_after(base: String, id: String) -> Vec<(u64, Value)> {
    all_events(&base, &id).await
}

/// Assert that call `call_id` was interrupted and ran again: the first
/// execution sent its `tool_call`, the second (after `resumed`) sent it
/// again with its one `tool_result`, which a client keeps by call id.
pub(crate) fn assert_retried(events: &[(u64, Value)], call_id: &str) {
    let kinds: Vec<String> = events
        .iter()
        .map(|(_, e)| {
            format!(
                "{} {}",
                e["type"].as_str().unwrap(),
                e["call_id"].as_str().unwrap_or("")
            )
        })
        .collect();
    let resumed = kinds.iter().position(|k| k.starts_with("resumed")).unwrap();
    let at = |kind: &str| -> Vec<usize> {
        let wanted = format!("{kind} {call_id}");
        kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == wanted)
            .map(|(i, _)| i)
            .collect()
    };
    let (calls, results) = (at("tool_call"), at("tool_result"));
    assert!(
        calls.len() == 2 && calls[0] < resumed && calls[1] > resumed,
        "{call_id}: {kinds:?}"
    );
    assert!(
        results.len() == 1 && results[0] > calls[1],
        "{call_id}: {kinds:?}"
    );
}

/// Assert the stream of a completed run: numbered from 0 without gaps,
/// one `finished` at the end, a `resumed` from the second attempt.
pub(crate) fn assert_whole(events: &[(u64, Value)], resumed: bool) {
    let kinds = assert_numbered(events);
    if resumed {
        let attempt = events
            .iter()
            .find(|(_, e)| e["type"] == "resumed")
            .map(|(_, e)| e["attempt"].as_u64().unwrap());
        assert!(attempt.is_some_and(|a| a >= 2), "{kinds:?}");
    }
}

/// The rows Restate's SQL introspection (admin `POST /query`) answers.
pub(crate) async fn restate_query(restate: &RestateServer, query: &str) -> Vec<Value> {
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
        .cloned()
        .unwrap_or_else(|| panic!("{body}"))
}

/// The names of the `run` steps in the journal of run `id`'s workflow.
pub(crate) async fn journal_steps(restate: &RestateServer, id: &str) -> Vec<String> {
    let query = format!(
        "SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id \
         WHERE i.target_service_key = '{id}' AND i.target_handler_name = 'run' AND j.entry_type = 'Command: Run' \
         ORDER BY j.index"
    );
    restate_query(restate, &query)
        .await
        .iter()
        .map(|row| row["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The state of run `id`'s workflow invocation in Restate.
pub(crate) async fn invocation_status(restate: &RestateServer, id: &str) -> String {
    let query = format!(
        "SELECT status FROM sys_invocation WHERE target_service_key = '{id}' AND target_handler_name = 'run'"
    );
    let rows = restate_query(restate, &query).await;
    rows.first()
        .and_then(|row| row["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Wait until run `id`'s workflow invocation is `status` in Restate.
pub(crate) async fn until_invocation(restate: &RestateServer, id: &str, status: &str) {
    tokio::time::timeout(HANG_GUARD, async {
        while invocation_status(restate, id).await != status {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("run {id}'s workflow never became {status} in Restate"));
}
