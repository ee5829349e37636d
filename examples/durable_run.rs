//! A durable run surviving a replica restart: the shape of a service whose
//! long runs must not be lost (or billed twice) when a replica is deployed
//! over or dies.
//!
//! The example serves agent `counter` over REST with durable runs on
//! Restate, starts a background run, and stops the replica while the run's
//! slow tool is working (as a deploy does: its executions are dropped, not
//! failed). It then starts a new replica on the same Restate endpoint
//! address: Restate retries the run there, the model call that had
//! completed is replayed from the journal (not sent again), the interrupted
//! tool runs again with the same idempotency key, and the run completes.
//! Each event of the run is printed with the attempt that sent it.
//!
//! Start Restate first (its server is BSL 1.1; self-hosting is allowed):
//!
//! ```sh
//! npx @restatedev/restate-server@1.7.12   # admin on :9070, ingress on :8080
//! cargo run --features restate,store --example durable_run -- "Count three sheep"
//! ```
//!
//! `RESTATE_ADMIN_URL` (default `http://127.0.0.1:9070`),
//! `RESTATE_INGRESS_URL` (default `http://127.0.0.1:8080`) and
//! `RESTATE_LISTEN` (this example's endpoint, default `127.0.0.1:9080`) say
//! where things are; the runs live in `LOOPWRIGHT_STORE` (default
//! `sqlite:durable_run.db` in the current directory). The model comes from
//! the environment as in the quickstart (`LOOPWRIGHT_MODEL`, a provider key,
//! or a local server).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use loopwright::serve::{Restate, Running, Serve, ServedAgent, Surface};
use loopwright::{Agent, LanguageModel, tool_fn};
use serde_json::{Value, json};
use tokio::sync::Notify;

#[path = "common/events.rs"]
mod events;
#[path = "common/model.rs"]
mod model;

/// How often the client reads the run while it works.
const POLL: Duration = Duration::from_millis(50);
/// How long the client waits for the run to end.
const PATIENCE: Duration = Duration::from_secs(120);
/// How long the tool works: long enough to stop the replica in the middle.
const TOOL_TIME: Duration = Duration::from_secs(2);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Count {
    /// How many sheep to count.
    sheep: u32,
}

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let task = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    if task.trim().is_empty() {
        eprintln!("usage: durable_run TASK...");
        return 2;
    }
    let (model, selector) = match model::model_from_env().await {
        Ok(found) => found,
        Err(help) => {
            eprintln!("{help}");
            return 2;
        }
    };
    eprintln!("model {selector}");
    match demo(model, &task).await {
        Ok(answer) => {
            println!("{answer}");
            0
        }
        Err(why) => {
            eprintln!("{why}");
            1
        }
    }
}

/// Start a run on one replica, stop it mid-tool, finish on the next.
async fn demo(model: Arc<dyn LanguageModel>, task: &str) -> Result<String, String> {
    let env = |key: &str, default: &str| std::env::var(key).unwrap_or_else(|_| default.to_owned());
    let admin = env("RESTATE_ADMIN_URL", "http://127.0.0.1:9070");
    let ingress = env("RESTATE_INGRESS_URL", "http://127.0.0.1:8080");
    let listen: SocketAddr = env("RESTATE_LISTEN", "127.0.0.1:9080")
        .parse()
        .map_err(|e| format!("RESTATE_LISTEN: {e}"))?;
    let store_url = env("LOOPWRIGHT_STORE", "sqlite:durable_run.db");
    let restate = Restate::new(admin, ingress, listen);
    let started = Arc::new(Notify::new());

    let first = replica("first", &model, &store_url, &restate, &started).await?;
    let base = rest_url(&first)?;
    loopwright::providers::install_tls_provider();
    let http = reqwest::Client::new();
    let run = request(
        &http,
        "POST",
        &format!("{base}/v1/agents/counter/runs"),
        Some(json!({"prompt": task})),
    )
    .await?;
    let id = run["id"]
        .as_str()
        .ok_or(format!("no run id in {run}"))?
        .to_owned();
    eprintln!("run {id} started on replica first");
    tokio::time::timeout(PATIENCE, started.notified())
        .await
        .map_err(|_| "the tool never started".to_owned())?;
    eprintln!("the tool is working: stopping replica first");
    first.shutdown().await;

    let second = replica("second", &model, &store_url, &restate, &started).await?;
    let base = rest_url(&second)?;
    eprintln!("replica second is up on the same Restate endpoint address");
    let run_url = format!("{base}/v1/runs/{id}");
    let view = tokio::time::timeout(PATIENCE, async {
        loop {
            let view = request(&http, "GET", &run_url, None).await?;
            if !matches!(view["status"].as_str(), Some("queued" | "running")) {
                return Ok::<Value, String>(view);
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .map_err(|_| format!("run {id} did not end"))??;
    eprintln!(
        "status {} after {} attempts",
        view["status"], view["durable"]["attempt"]
    );
    events::print_events(&http, &run_url).await?;
    second.shutdown().await;
    match view["status"].as_str() {
        Some("completed") => Ok(view["result"]["text"].as_str().unwrap_or_default().to_owned()),
        other => Err(format!(
            "the run ended {}: {}",
            other.unwrap_or("?"),
            view["error"]
        )),
    }
}

/// A replica: the agent over REST on a free port, durable on `restate`.
async fn replica(
    name: &str,
    model: &Arc<dyn LanguageModel>,
    store_url: &str,
    restate: &Restate,
    started: &Arc<Notify>,
) -> Result<Running, String> {
    let store = loopwright::store::open(store_url)
        .await
        .map_err(|e| format!("store {store_url}: {e}"))?;
    let running = Serve::new()
        .agent(ServedAgent::new(counter(model.clone(), started.clone())))
        .rest(([127, 0, 0, 1], 0).into())
        .store(store)
        .replica(name)
        // A stop drops the replica's executions at once; Restate retries
        // them on the next replica.
        .shutdown_grace(Duration::ZERO)
        .restate(restate.clone())
        .start()
        .await
        .map_err(|e| format!("replica {name}: {e}"))?;
    if let Some(deployment) = running.restate_deployment() {
        eprintln!(
            "replica {name}: registered with Restate as {} ({deployment})",
            restate.advertised()
        );
    }
    Ok(running)
}

fn rest_url(running: &Running) -> Result<String, String> {
    running
        .address(Surface::Rest)
        .map(|a| format!("http://{a}"))
        .ok_or_else(|| "the REST surface did not start".to_owned())
}

/// The agent: a slow tool that counts sheep, and says when it starts.
fn counter(model: Arc<dyn LanguageModel>, started: Arc<Notify>) -> Agent {
    let count = tool_fn("count_sheep", "Count sheep, slowly.", move |count: Count| {
        let started = started.clone();
        async move {
            started.notify_one();
            tokio::time::sleep(TOOL_TIME).await;
            Ok::<_, loopwright::ToolError>(format!("counted {} sheep", count.sheep))
        }
    });
    Agent::builder(model)
        .name("counter")
        .tool(count)
        .system(
            "You count sheep with the count_sheep tool, then say in one short sentence how many you counted.",
        )
        .build()
}

/// One request, printed as its curl line; the JSON answer.
async fn request(
    http: &reqwest::Client,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    match &body {
        Some(body) => eprintln!("$ curl -X {method} {url} -H 'content-type: application/json' -d '{body}'"),
        None => eprintln!("$ curl {url}"),
    }
    let request = match method {
        "POST" => http.post(url).json(&body.unwrap_or(Value::Null)),
        _ => http.get(url),
    };
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = response.status();
    let value: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(format!("{url}: {status} {value}"));
    }
    Ok(value)
}
