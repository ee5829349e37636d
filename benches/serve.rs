#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! The headend's cost: one request through `loopwright::serve` (OpenAI Chat
//! Completions, streamed and not, and REST) against the same agent run
//! in-process, with a model that answers at once, so what is measured is
//! the HTTP surface, the limiter and the event translation. Then requests
//! per second for that trivial agent at 1, 10 and 100 concurrent clients
//! (a bounded load: a fixed batch of requests over keep-alive connections
//! to 127.0.0.1, the server's limit set to the client count).
//!
//! Run with `cargo bench -p loopwright-benches --bench serve`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use loopwright::Agent;
use loopwright::serve::{Serve, ServedAgent, Surface};
use serde_json::json;

/// Requests per load batch.
const BATCH: usize = 1_000;

#[path = "common/instant_model.rs"]
mod instant_model;
use instant_model::InstantModel;

fn agent() -> Agent {
    Agent::builder(Arc::new(InstantModel)).name("bench").build()
}

fn chat_body(stream: bool) -> serde_json::Value {
    json!({"model": "bench", "stream": stream, "messages": [{"role": "user", "content": "hello"}]})
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let running = rt.block_on(async {
        Serve::new()
            .agent(ServedAgent::new(agent()))
            .openai("127.0.0.1:0".parse().unwrap())
            .rest("127.0.0.1:0".parse().unwrap())
            .concurrency(100)
            .start()
            .await
            .unwrap()
    });
    let openai = format!(
        "http://{}/v1/chat/completions",
        running.address(Surface::OpenAi).unwrap()
    );
    let rest = format!(
        "http://{}/v1/agents/bench",
        running.address(Surface::Rest).unwrap()
    );
    let client = loopwright::providers::default_client();

    let mut group = c.benchmark_group("serve_request");
    group.measurement_time(Duration::from_secs(5));
    let in_process = agent();
    group.bench_function("in_process", |b| {
        b.to_async(&rt)
            .iter(|| async { in_process.run("hello").await.unwrap() })
    });
    for (name, url, body) in [
        ("openai", openai.clone(), chat_body(false)),
        ("openai_stream", openai.clone(), chat_body(true)),
        ("rest", rest.clone(), json!({"prompt": "hello"})),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let response = client.post(&url).json(&body).send().await.unwrap();
                assert!(response.status().is_success());
                response.bytes().await.unwrap()
            })
        });
    }
    group.finish();

    // Requests per second: BATCH requests from `clients` concurrent
    // clients; criterion reports the time of one batch.
    let mut group = c.benchmark_group("serve_load_1000_requests");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for clients in [1usize, 10, 100] {
        group.bench_function(format!("clients_{clients}"), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (client, url) = (client.clone(), openai.clone());
                async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let per_client = BATCH / clients;
                        let tasks: Vec<_> = (0..clients)
                            .map(|_| {
                                let (client, url) = (client.clone(), url.clone());
                                tokio::spawn(async move {
                                    for _ in 0..per_client {
                                        let r =
                                            client.post(&url).json(&chat_body(false)).send().await.unwrap();
                                        assert!(r.status().is_success());
                                        r.bytes().await.unwrap();
                                    }
                                })
                            })
                            .collect();
                        for t in tasks {
                            t.await.unwrap();
                        }
                    }
                    start.elapsed()
                }
            })
        });
    }
    group.finish();
    rt.block_on(running.shutdown());
}

criterion_group!(benches, bench);
criterion_main!(benches);
