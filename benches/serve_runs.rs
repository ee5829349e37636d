#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! Background runs under load: clients that each start a run
//! (`POST /v1/agents/{name}/runs`) and stream its events
//! (`GET /v1/runs/{id}/events`) until `finished`, against a model that
//! answers at once, so what is measured is the serving path: the store
//! writes of the record and the event log, and the event stream's wake-ups.
//!
//! Two set-ups, on 127.0.0.1 only: one replica on SQLite, and two replicas
//! (two `Serve`s in this process, each its own replica id and connection
//! pool) on one PostgreSQL, each client starting its run on one replica and
//! streaming it from the other. At 1, 10 and 50 concurrent clients it
//! reports runs per second and the p50 and p99 latency from the start
//! request to the first event and to `finished`.
//!
//! A plain bench binary (not criterion): what is reported is a latency
//! distribution under a fixed concurrent load, which criterion's
//! per-iteration statistics do not give.
//!
//! Run with `cargo bench -p loopwright-benches --bench serve_runs`. PostgreSQL:
//! `LOOPWRIGHT_TEST_POSTGRES` (a server URL) when set, else a throwaway
//! server as the tests start (Debian's postgresql package).

use std::sync::Arc;
use std::time::{Duration, Instant};

use loopwright::Agent;
use loopwright::serve::{Running, Serve, ServedAgent, Surface};
use serde_json::json;

/// Client counts measured.
const CLIENTS: [usize; 3] = [1, 10, 50];

/// Runs per client count: every client runs `RUNS / clients` runs in turn
/// (at least [`MIN_RUNS_PER_CLIENT`]).
const RUNS: usize = 500;

/// The fewest runs one client makes.
const MIN_RUNS_PER_CLIENT: usize = 4;

/// Runs before the measured ones (connections, pools, caches).
const WARM_UP: usize = 20;

#[path = "common/instant_model.rs"]
mod instant_model;
use instant_model::InstantModel;

/// A replica on `store`: its REST base URL and its handle.
async fn replica(store: Arc<dyn loopwright::store::Store>, name: &str) -> (String, Running) {
    let agent = Agent::builder(Arc::new(InstantModel)).name("bench").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .store(store)
        .replica(name)
        .concurrency(64)
        .queue(256)
        .start()
        .await
        .unwrap();
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    (base, running)
}

/// One run: started on `start`, streamed from `stream`; the time to its
/// first event and to `finished`.
async fn one_run(http: &reqwest::Client, start: &str, stream: &str) -> (Duration, Duration) {
    let began = Instant::now();
    let started: serde_json::Value = http
        .post(format!("{start}/v1/agents/bench/runs"))
        .json(&json!({"prompt": "hello"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = started["id"].as_str().expect("a run id");
    let mut response = http
        .get(format!("{stream}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let mut first = None;
    let mut seen = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if first.is_none() && seen.contains("data: ") {
            first.get_or_insert_with(|| began.elapsed());
        }
        if seen.contains("\"type\":\"finished\"") {
            return (first.unwrap_or_else(|| began.elapsed()), began.elapsed());
        }
    }
    panic!("the event stream of {id} ended without finished: {seen}");
}

/// `clients` clients over `bases` (start on one, stream from the next);
/// runs per second and the latencies.
async fn load(
    http: &reqwest::Client,
    bases: &[String],
    clients: usize,
) -> (f64, Vec<Duration>, Vec<Duration>) {
    let per_client = (RUNS / clients).max(MIN_RUNS_PER_CLIENT);
    let began = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let http = http.clone();
            let bases = bases.to_vec();
            tokio::spawn(async move {
                let mut times = Vec::with_capacity(per_client);
                for run in 0..per_client {
                    let at = (client + run) % bases.len();
                    let start = &bases[at];
                    let stream = &bases[(at + 1) % bases.len()];
                    times.push(one_run(&http, start, stream).await);
                }
                times
            })
        })
        .collect();
    let mut firsts = Vec::new();
    let mut ends = Vec::new();
    for task in tasks {
        for (first, end) in task.await.unwrap() {
            firsts.push(first);
            ends.push(end);
        }
    }
    let rate = firsts.len() as f64 / began.elapsed().as_secs_f64();
    firsts.sort();
    ends.sort();
    (rate, firsts, ends)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at].as_secs_f64() * 1000.0
}

async fn measure(label: &str, bases: &[String]) {
    loopwright::providers::install_tls_provider();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(128)
        .build()
        .unwrap();
    for _ in 0..WARM_UP {
        one_run(&http, &bases[0], &bases[bases.len() - 1]).await;
    }
    for clients in CLIENTS {
        let (rate, firsts, ends) = load(&http, bases, clients).await;
        println!(
            "{label:<22} {clients:>3} clients  {rate:>7.1} runs/s  first event p50 {:>6.2} ms p99 {:>6.2} ms  \
             finished p50 {:>6.2} ms p99 {:>6.2} ms  ({} runs)",
            percentile(&firsts, 0.5),
            percentile(&firsts, 0.99),
            percentile(&ends, 0.5),
            percentile(&ends, 0.99),
            firsts.len()
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; a filter is not supported.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = loopwright::store::open(&format!("sqlite:{}", dir.path().join("runs.db").display()))
            .await
            .unwrap();
        let (base, running) = replica(sqlite, "sqlite-1").await;
        measure("1 replica, SQLite", &[base]).await;
        running.shutdown().await;

        let database = loopwright_test_support::database();
        let mut bases = Vec::new();
        let mut replicas = Vec::new();
        for name in ["pg-a", "pg-b"] {
            // Each replica its own pool, as two processes would have.
            let store = loopwright::store::open(database.url()).await.unwrap();
            let (base, running) = replica(store, name).await;
            bases.push(base);
            replicas.push(running);
        }
        measure("2 replicas, PostgreSQL", &bases).await;
        for running in replicas {
            running.shutdown().await;
        }
    });
}
