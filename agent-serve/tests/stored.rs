//! What a stored run and a stored response keep in the store: a run's
//! record holds no copy of its input, whatever its size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::{GatedModel, post, until};
use loopwright_core::Agent;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_store::{MemoryStore, RunStatus, Store};
use serde_json::{Value, json};

fn local() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Agent `gated` on the REST and OpenAI surfaces over `store`.
async fn serve(store: Arc<dyn Store>) -> (Arc<GatedModel>, Running, String, String) {
    let model = Arc::new(GatedModel::new());
    let agent = Agent::builder(model.clone()).name("gated").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest(local())
        .openai(local())
        .store(store)
        .start()
        .await
        .unwrap();
    let rest = format!("http://{}", running.address(Surface::Rest).unwrap());
    let openai = format!("http://{}/v1", running.address(Surface::OpenAi).unwrap());
    (model, running, rest, openai)
}

/// The length of run `id`'s stored state, as JSON.
async fn state_len(store: &Arc<dyn Store>, id: &str) -> usize {
    let record = store.load_run(id).await.unwrap().unwrap();
    serde_json::to_string(&record.state).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_record_holds_no_copy_of_its_input() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (model, running, rest, openai) = serve(store.clone()).await;
    // 2,000 messages of 100 characters: about 300 KB of input each.
    let text = "x".repeat(100);
    let messages: Vec<Value> = (0..2000)
        .map(|_| json!({"role": "user", "content": [{"type": "text", "text": text}]}))
        .collect();
    let items: Vec<Value> = (0..2000)
        .map(|_| json!({"role": "user", "content": text}))
        .collect();
    let (status, run) = post(
        &format!("{rest}/v1/agents/gated/runs"),
        json!({"messages": messages}),
    )
    .await;
    assert_eq!(status, 202, "{run}");
    let (status, response) = post(
        &format!("{openai}/responses"),
        json!({"model": "gated", "input": items, "background": true}),
    )
    .await;
    assert_eq!(status, 200, "{response}");
    until("both runs ask the model", || {
        model.started.load(Ordering::SeqCst) == 2
    })
    .await;
    for id in [&run["id"], &response["id"]] {
        let id = id.as_str().unwrap();
        let len = state_len(&store, id).await;
        assert!(len < 2048, "run {id} is running with {len} bytes of state");
    }
    model.release.add_permits(2);
    for id in [&run["id"], &response["id"]] {
        let id = id.as_str().unwrap().to_owned();
        let store = store.clone();
        let done = tokio::time::timeout(common::HANG_GUARD, async move {
            loop {
                let record = store.load_run(&id).await.unwrap().unwrap();
                if record.status == RunStatus::Completed {
                    return serde_json::to_string(&record.state).unwrap().len();
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        assert!(done < 2048, "a completed run keeps {done} bytes of state");
    }
    running.shutdown().await;
}
