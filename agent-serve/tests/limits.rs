//! The concurrency limit, counted at the model: a model whose answers wait
//! until the test releases them. Strict limits, queued clients that leave,
//! running clients that leave (streaming or not), the queue bound (one
//! request at a time and in a burst), and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{GatedModel, HANG_GUARD, until};
use loopwright_core::Agent;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use serde_json::{Value, json};

struct Fixture {
    model: Arc<GatedModel>,
    running: Running,
    /// The REST run endpoint.
    url: String,
    /// The OpenAI and Anthropic surfaces' addresses (each its own limit).
    openai: std::net::SocketAddr,
    anthropic: std::net::SocketAddr,
}

async fn serve(concurrency: usize, queue: Option<usize>) -> Fixture {
    let model = Arc::new(GatedModel::new());
    let agent = Agent::builder(model.clone()).name("gated").build();
    let local = "127.0.0.1:0".parse().unwrap();
    let mut serve = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest(local)
        .openai(local)
        .anthropic(local)
        .concurrency(concurrency)
        .shutdown_grace(Duration::from_millis(200));
    if let Some(n) = queue {
        serve = serve.queue(n);
    }
    let running = serve.start().await.unwrap();
    let url = format!(
        "http://{}/v1/agents/gated",
        running.address(Surface::Rest).unwrap()
    );
    Fixture {
        model,
        openai: running.address(Surface::OpenAi).unwrap(),
        anthropic: running.address(Surface::Anthropic).unwrap(),
        running,
        url,
    }
}

async fn post(url: String) -> reqwest::Response {
    common::http()
        .post(url)
        .json(&json!({"prompt": "go"}))
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_two_and_five_requests_give_exactly_two_runs_in_flight() {
    let f = serve(2, None).await;
    let clients: Vec<_> = (0..5).map(|_| tokio::spawn(post(f.url.clone()))).collect();
    until("2 runs at the model and 3 queued", || {
        f.model.in_flight.load(Ordering::SeqCst) == 2 && f.running.queued() == 3
    })
    .await;
    // Released one at a time: each release lets exactly one more in.
    for done in 1..=5 {
        f.model.release.add_permits(1);
        until("the next run to answer", || {
            f.model.started.load(Ordering::SeqCst) == (done + 2).min(5)
                && f.model.in_flight.load(Ordering::SeqCst) == (5 - done).min(2)
        })
        .await;
    }
    for client in clients {
        let body: Value = client.await.unwrap().json().await.unwrap();
        assert_eq!(body["exit"], "completed", "{body}");
        assert_eq!(body["text"], "done");
    }
    assert_eq!(f.model.peak.load(Ordering::SeqCst), 2);
    assert_eq!(f.model.started.load(Ordering::SeqCst), 5);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_client_that_leaves_never_starts_a_run() {
    let f = serve(1, None).await;
    let first = tokio::spawn(post(f.url.clone()));
    until("the first run at the model", || {
        f.model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    let second = tokio::spawn(post(f.url.clone()));
    until("the second request queued", || f.running.queued() == 1).await;
    second.abort();
    until("the queue empty again", || f.running.queued() == 0).await;
    f.model.release.add_permits(1);
    assert_eq!(first.await.unwrap().status(), 200);
    // A third request runs next: the second one never did.
    f.model.release.add_permits(1);
    assert_eq!(post(f.url.clone()).await.status(), 200);
    assert_eq!(f.model.started.load(Ordering::SeqCst), 2);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_client_that_leaves_cancels_its_run() {
    let f = serve(1, None).await;
    let client = tokio::spawn(post(f.url.clone()));
    until("the run at the model", || {
        f.model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    client.abort();
    until("the model call dropped unanswered", || {
        f.model.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    until("the permit back", || f.running.in_flight() == 0).await;
    // The next client gets the slot.
    f.model.release.add_permits(1);
    assert_eq!(post(f.url.clone()).await.status(), 200);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_client_that_leaves_cancels_its_run() {
    let f = serve(1, None).await;
    let requests = [
        (
            format!("http://{}/v1/chat/completions", f.openai),
            json!({"model": "gated", "stream": true, "messages": [{"role": "user", "content": "go"}]}),
        ),
        (
            format!("http://{}/v1/messages", f.anthropic),
            json!({"model": "gated", "stream": true, "max_tokens": 100,
                   "messages": [{"role": "user", "content": "go"}]}),
        ),
    ];
    for (i, (url, body)) in requests.into_iter().enumerate() {
        let response = common::http().post(&url).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        until("the run at the model", || {
            f.model.in_flight.load(Ordering::SeqCst) == 1
        })
        .await;
        // The client goes, its stream unread.
        drop(response);
        until("the model call dropped unanswered", || {
            f.model.dropped.load(Ordering::SeqCst) == i + 1
        })
        .await;
        until("the permit back", || f.running.in_flight() == 0).await;
    }
    assert_eq!(f.model.started.load(Ordering::SeqCst), 2);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_against_a_blocked_model_queues_exactly_the_bound() {
    const BURST: usize = 40;
    const BOUND: usize = 3;
    let f = serve(1, Some(BOUND)).await;
    let first = tokio::spawn(post(f.url.clone()));
    until("the first run at the model", || {
        f.model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    // All at once: each waits at the barrier, then sends.
    let barrier = Arc::new(tokio::sync::Barrier::new(BURST));
    let refused = Arc::new(AtomicUsize::new(0));
    let burst: Vec<_> = (0..BURST)
        .map(|_| {
            let (url, barrier, refused) = (f.url.clone(), barrier.clone(), refused.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let status = post(url).await.status();
                if status == 503 {
                    refused.fetch_add(1, Ordering::SeqCst);
                }
                status
            })
        })
        .collect();
    until("every request of the burst refused or queued", || {
        refused.load(Ordering::SeqCst) + f.running.queued() == BURST
    })
    .await;
    assert_eq!(
        (f.running.queued(), refused.load(Ordering::SeqCst)),
        (BOUND, BURST - BOUND)
    );
    f.model.release.add_permits(1 + BOUND);
    assert_eq!(first.await.unwrap().status(), 200);
    let mut statuses: Vec<u16> = Vec::new();
    for request in burst {
        statuses.push(request.await.unwrap().as_u16());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), BOUND);
    assert_eq!(f.model.started.load(Ordering::SeqCst), 1 + BOUND);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_503_with_retry_after() {
    let f = serve(1, Some(1)).await;
    let first = tokio::spawn(post(f.url.clone()));
    until("the first run at the model", || {
        f.model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    let second = tokio::spawn(post(f.url.clone()));
    until("the second request queued", || f.running.queued() == 1).await;
    let third = post(f.url.clone()).await;
    assert_eq!(third.status(), 503);
    assert_eq!(third.headers()["retry-after"], "5");
    let body: Value = third.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("retry later"),
        "{body}"
    );
    f.model.release.add_permits(2);
    assert_eq!(first.await.unwrap().status(), 200);
    assert_eq!(second.await.unwrap().status(), 200);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_refuses_the_queue_and_cancels_runs_after_the_grace() {
    let f = serve(1, None).await;
    let running_client = tokio::spawn(post(f.url.clone()));
    until("the run at the model", || {
        f.model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    let queued_client = tokio::spawn(post(f.url.clone()));
    until("one queued", || f.running.queued() == 1).await;
    let model = f.model.clone();
    tokio::time::timeout(HANG_GUARD, f.running.shutdown())
        .await
        .expect("shutdown hung");
    // The queued one was refused; the running one was cancelled after the grace.
    assert_eq!(queued_client.await.unwrap().status(), 503);
    let body: Value = running_client.await.unwrap().json().await.unwrap();
    assert_eq!(body["exit"], "cancelled", "{body}");
    assert_eq!(model.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(model.started.load(Ordering::SeqCst), 1);
}
