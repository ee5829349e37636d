#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! Durable runs on Restate: what the journal costs, and how soon a run goes
//! on after its replica dies.
//!
//! - **Cost per step.** One replica (a `Serve` in this process, on SQLite),
//!   a scripted model that answers at once and calls one MCP tool (an rmcp
//!   echo server over stdio: this binary again) a step, 100 steps a run.
//!   The same background run is timed from `POST /v1/agents/{name}/runs`
//!   to its record's end in process and as a durable run on a real
//!   `restate-server`; the difference over 100 steps is the journal's cost
//!   per step (two `ctx.run` entries: the model call, then the tool call,
//!   whose confirmation by Restate's log overlaps the next model call).
//! - **Failover.** Two replicas as real processes (this binary again)
//!   behind a loopback load balancer, a run in a 500 ms tool, the replica
//!   running it SIGKILLed: the time from the kill to the tool starting
//!   again on the other replica (Restate's retry policy: first retry after
//!   100 ms, the default of `loopwright_serve::durable`).
//!
//! A plain bench binary (not criterion): each figure involves a server
//! process and real sockets; what is reported is the median and the
//! spread over the repetitions. Run with
//! `cargo bench -p loopwright-benches --bench durable_runs` (the Restate
//! server comes from tests-deps: `npm ci --prefix tests-deps`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use loopwright::mcp::McpToolSource;
use loopwright::serve::{Restate, Running, Serve, ServedAgent, Surface};
use loopwright::{
    Agent, LanguageModel, ModelError, ToolSet, Usage, model::FinishReason, model::ModelEvent,
    model::ModelRequest, model::ModelStream, tool_fn,
};
use loopwright_test_support::{Balancer, RestateServer};
use serde_json::{Value, json};

#[path = "common/echo_server.rs"]
mod echo_server;

/// Steps of a measured run (each a model call and one tool call).
const STEPS: usize = 100;
/// Runs timed per set-up (after one to warm up).
const RUNS: usize = 7;
/// Kills timed.
const KILLS: usize = 5;
/// How long the failover run's tool works.
const TOOL_TIME: Duration = Duration::from_millis(500);
/// Set in the environment of a replica process: its settings, as JSON.
const REPLICA_ENV: &str = "LOOPWRIGHT_BENCH_DURABLE_REPLICA";

/// Calls the tool `tool` until the conversation holds `steps` results,
/// then answers; at once, every time.
struct StepModel {
    tool: String,
    arguments: Value,
    steps: usize,
}

#[async_trait::async_trait]
impl LanguageModel for StepModel {
    fn provider(&self) -> &str {
        "bench"
    }
    fn model_id(&self) -> &str {
        "steps"
    }
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let done = request
            .messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter(|p| matches!(p, loopwright::ContentPart::ToolResult(_)))
            .count();
        let events = if done < self.steps {
            vec![
                Ok(ModelEvent::ToolCallComplete {
                    id: format!("call_{done}"),
                    name: self.tool.clone(),
                    input_json: self.arguments.to_string(),
                    provider_data: None,
                }),
                Ok(ModelEvent::Finish {
                    reason: FinishReason::ToolCalls,
                    usage: Usage::new(10, 1),
                }),
            ]
        } else {
            vec![
                Ok(ModelEvent::TextDelta { text: "done".into() }),
                Ok(ModelEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage::new(10, 1),
                }),
            ]
        };
        Ok(futures::stream::iter(events).boxed())
    }
}

fn main() {
    if std::env::var_os(echo_server::SERVE_ENV).is_some() {
        echo_server::serve();
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Ok(settings) = std::env::var(REPLICA_ENV) {
        runtime.block_on(replica_process(serde_json::from_str(&settings).unwrap()));
        return;
    }
    loopwright::providers::install_tls_provider();
    runtime.block_on(async {
        per_step().await;
        failover().await;
    });
}

/// Median, min and max, in ms.
fn spread(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(samples[samples.len() / 2]),
        ms(samples[0]),
        ms(samples[samples.len() - 1]),
    )
}

/// A replica in this process; its REST base URL.
async fn replica(agent: Agent, store: &str, restate: Option<Restate>) -> (String, Running) {
    let mut serve = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .store(loopwright::store::open(store).await.unwrap());
    if let Some(restate) = restate {
        serve = serve.restate(restate);
    }
    let running = serve.start().await.unwrap();
    (
        format!("http://{}", running.address(Surface::Rest).unwrap()),
        running,
    )
}

/// Start a run on `base` and wait for its end; how long it took.
async fn timed_run(http: &reqwest::Client, base: &str) -> Duration {
    let began = Instant::now();
    let id = start_run(http, base, "go").await;
    let view = wait_for_end(http, base, &id).await;
    let took = began.elapsed();
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["result"]["steps"], STEPS + 1, "{view}");
    took
}

async fn start_run(http: &reqwest::Client, base: &str, prompt: &str) -> String {
    let started: Value = http
        .post(format!("{base}/v1/agents/bench/runs"))
        .json(&json!({"prompt": prompt}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    started["id"].as_str().expect("a run id").to_owned()
}

/// Follow the run's event stream to its end; the run's record then.
async fn wait_for_end(http: &reqwest::Client, base: &str, id: &str) -> Value {
    let mut events = http
        .get(format!("{base}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    while let Some(chunk) = events.chunk().await.unwrap() {
        if String::from_utf8_lossy(&chunk).contains("\"type\":\"finished\"") {
            break;
        }
    }
    http.get(format!("{base}/v1/runs/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Restate's settings measured: its defaults (the log server syncs each
/// journal write to disk), and the log server's sync off (the journal then
/// survives any process's death, restate-server's too, but not the
/// machine's).
const SETTINGS: [(&str, &[(&str, &str)]); 2] = [
    ("Restate, defaults (fsync each write)", &[]),
    (
        "Restate, log-server fsync off",
        &[("RESTATE_LOG_SERVER__ROCKSDB_DISABLE_WAL_FSYNC", "true")],
    ),
];

async fn per_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("runs.db").display());
    let source = McpToolSource::connect(echo_server::server_config())
        .await
        .unwrap();
    let tools = Arc::new(ToolSet::builder().source(source).build());
    let model = Arc::new(StepModel {
        tool: "bench__echo".into(),
        arguments: json!({"text": "hello"}),
        steps: STEPS,
    });
    let agent = Agent::builder(model)
        .name("bench")
        .shared_tools(tools)
        .max_steps(u32::try_from(STEPS).unwrap() + 1)
        .build();
    let http = reqwest::Client::new();
    let (plain, plain_running) = replica(agent.clone(), &store, None).await;
    let mut servers = Vec::new();
    for (name, settings) in SETTINGS {
        let server = RestateServer::start_with(settings).unwrap();
        let restate = Restate::new(server.admin_url(), server.ingress_url(), free_addr());
        let (base, running) = replica(agent.clone(), &store, Some(restate)).await;
        servers.push((name, base, running, server));
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); 1 + servers.len()];
    for round in 0..=RUNS {
        let mut took = vec![timed_run(&http, &plain).await];
        for (_, base, _, _) in &servers {
            took.push(timed_run(&http, base).await);
        }
        if round > 0 {
            for (i, t) in took.into_iter().enumerate() {
                samples[i].push(t);
            }
        }
    }
    let steps = STEPS as f64;
    println!("durable runs: {STEPS} steps a run (a model call and one MCP tool call each), {RUNS} runs each");
    let (p, p_min, p_max) = spread(samples[0].clone());
    println!(
        "  {:<40} median {p:8.1} ms (min {p_min:.1}, max {p_max:.1})  {:.3} ms a step",
        "in process",
        p / steps
    );
    for ((name, _, running, _), sample) in servers.into_iter().zip(samples.into_iter().skip(1)) {
        let (d, d_min, d_max) = spread(sample);
        println!(
            "  {name:<40} median {d:8.1} ms (min {d_min:.1}, max {d_max:.1})  {:.3} ms a step, {:.3} ms a step above in process",
            d / steps,
            (d - p) / steps
        );
        running.shutdown().await;
    }
    plain_running.shutdown().await;
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Settings of a replica process.
#[derive(serde::Serialize, serde::Deserialize)]
struct ReplicaSettings {
    store: String,
    admin: String,
    ingress: String,
    listen: SocketAddr,
    advertise: String,
    /// Where the tool writes `start <unix ns>` each time it starts.
    log: PathBuf,
}

/// A replica process: a durable `Serve` whose agent calls a slow tool once;
/// prints its REST URL, then serves until killed.
async fn replica_process(settings: ReplicaSettings) {
    let log = settings.log.clone();
    let slow = tool_fn(
        "slow",
        "Work for a while.",
        move |_: serde_json::Map<String, Value>| {
            let log = log.clone();
            async move {
                append(&log, &format!("start {}\n", now_ns()));
                tokio::time::sleep(TOOL_TIME).await;
                Ok::<_, loopwright::ToolError>("done")
            }
        },
    );
    let model = Arc::new(StepModel {
        tool: "slow".into(),
        arguments: json!({}),
        steps: 1,
    });
    let agent = Agent::builder(model).name("bench").tool(slow).build();
    let restate =
        Restate::new(settings.admin, settings.ingress, settings.listen).advertise(settings.advertise);
    let (base, _running) = replica(agent, &settings.store, Some(restate)).await;
    println!("rest {base}");
    std::future::pending::<()>().await;
}

fn append(path: &Path, line: &str) {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(line.as_bytes()).unwrap();
}

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// The tool starts logged so far, in ns since the epoch.
fn starts(log: &Path) -> Vec<u128> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("start ")?.parse().ok())
        .collect()
}

/// A replica process and its REST URL.
struct Child {
    process: tokio::process::Child,
    rest: String,
}

async fn spawn_replica(settings: &ReplicaSettings) -> Child {
    use tokio::io::AsyncBufReadExt as _;
    let mut process = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(REPLICA_ENV, serde_json::to_string(settings).unwrap())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(process.stdout.take().unwrap()).lines();
    let rest = loop {
        let line = lines.next_line().await.unwrap().expect("the replica ended");
        if let Some(url) = line.strip_prefix("rest ") {
            break url.to_owned();
        }
    };
    Child { process, rest }
}

async fn failover() {
    let restate = RestateServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tool.log");
    let addrs = [free_addr(), free_addr()];
    let balancer = Balancer::start(addrs.to_vec()).unwrap();
    let settings = |listen| ReplicaSettings {
        store: format!("sqlite:{}", dir.path().join("runs.db").display()),
        admin: restate.admin_url(),
        ingress: restate.ingress_url(),
        listen,
        advertise: balancer.url(),
        log: log.clone(),
    };
    let mut replicas = [
        spawn_replica(&settings(addrs[0])).await,
        spawn_replica(&settings(addrs[1])).await,
    ];
    let http = reqwest::Client::new();
    let mut gaps = Vec::new();
    for _ in 0..KILLS {
        let before = starts(&log).len();
        let id = start_run(&http, &replicas[0].rest, "work").await;
        while starts(&log).len() == before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // The replica running it (its record names the process).
        let view: Value = http
            .get(format!("{}/v1/runs/{id}", replicas[0].rest))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let owner = view["replica"].as_str().unwrap_or_default().to_owned();
        let dead = replicas
            .iter()
            .position(|r| owner.contains(&format!("-{}-", r.process.id().unwrap())))
            .unwrap_or_else(|| panic!("no replica runs {id}: {view}"));
        let killed_at = now_ns();
        replicas[dead].process.start_kill().unwrap();
        replicas[dead].process.wait().await.unwrap();
        while starts(&log).len() < before + 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let again = starts(&log)[before + 1];
        gaps.push(Duration::from_nanos(
            u64::try_from(again.saturating_sub(killed_at)).unwrap(),
        ));
        let alive = 1 - dead;
        let view = wait_for_end(&http, &replicas[alive].rest, &id).await;
        assert_eq!(view["status"], "completed", "{view}");
        replicas[dead] = spawn_replica(&settings(addrs[dead])).await;
    }
    let (median, min, max) = spread(gaps);
    println!(
        "failover: SIGKILL of the replica in a tool -> the tool running again on the other replica, {KILLS} kills"
    );
    println!(
        "  median {median:.1} ms (min {min:.1}, max {max:.1}); Restate retries after 100 ms, doubling to 5 s"
    );
}
