#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! What A2A adds to a run: the same background run (a model that answers at
//! once, so what is measured is the serving path) as a task over A2A's
//! JSON-RPC binding (`SendMessage` answered when the task completed, and
//! `SendStreamingMessage` read to its last update) beside REST's background
//! run (`POST /v1/agents/{name}/runs`, then its events to `finished`), and
//! REST's synchronous request as the floor. One server, both surfaces on
//! 127.0.0.1, one SQLite store, a kept-alive client in the same process.
//!
//! Run with `cargo bench -p loopwright-benches --bench a2a`.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use loopwright::Agent;
use loopwright::serve::{Serve, ServedAgent, Surface};
use serde_json::{Value, json};

#[path = "common/instant_model.rs"]
mod instant_model;
use instant_model::InstantModel;

fn send(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}})
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("store.db").display());
    let running = rt.block_on(async {
        let store = loopwright::store::open(&url).await.unwrap();
        Serve::new()
            .agent(ServedAgent::new(
                Agent::builder(Arc::new(InstantModel)).name("bench").build(),
            ))
            .rest("127.0.0.1:0".parse().unwrap())
            .a2a("127.0.0.1:0".parse().unwrap())
            .store(store)
            .concurrency(100)
            .start()
            .await
            .unwrap()
    });
    let rest = format!("http://{}", running.address(Surface::Rest).unwrap());
    let a2a = format!("http://{}/bench", running.address(Surface::A2a).unwrap());
    let client = loopwright::providers::default_client();

    let mut group = c.benchmark_group("a2a_task");
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("rest_sync", |b| {
        b.to_async(&rt).iter(|| async {
            let r = client
                .post(format!("{rest}/v1/agents/bench"))
                .json(&json!({"prompt": "hello"}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
            r.bytes().await.unwrap()
        })
    });
    group.bench_function("rest_background_run", |b| {
        b.to_async(&rt).iter(|| async {
            let r = client
                .post(format!("{rest}/v1/agents/bench/runs"))
                .json(&json!({"prompt": "hello"}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 202);
            let started: Value = r.json().await.unwrap();
            let id = started["id"].as_str().unwrap();
            let events = client
                .get(format!("{rest}/v1/runs/{id}/events"))
                .send()
                .await
                .unwrap();
            let text = events.text().await.unwrap();
            assert!(text.contains("finished"));
        })
    });
    for (name, method) in [
        ("a2a_send", "SendMessage"),
        ("a2a_stream", "SendStreamingMessage"),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let r = client
                    .post(&a2a)
                    .header("a2a-version", "1.0")
                    .json(&send(method))
                    .send()
                    .await
                    .unwrap();
                let text = r.text().await.unwrap();
                assert!(text.contains("TASK_STATE_COMPLETED"), "{text}");
            })
        });
    }
    group.finish();
    rt.block_on(running.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
