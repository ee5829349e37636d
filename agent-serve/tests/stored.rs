//! What a stored run and a stored response keep in the store: a run's
//! record holds no copy of its input, whatever its size; a response's
//! conversation is its own turn linked to the one before (a chain of 200
//! responses grows linearly), out of the REST sessions' reach; deleting a
//! response in the middle of a chain leaves the later ones whole; what
//! outlived the retention is deleted by the replicas sharing a store
//! (SQLite, PostgreSQL), never a running run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::{GatedModel, post, until};
use loopwright_core::{Agent, Message, Role};
use loopwright_serve::{MIN_RUN_LEASE, Running, Serve, ServedAgent, Surface};
use loopwright_store::{MemoryStore, RunStatus, Store};
use loopwright_testing::{ScriptedModel, ScriptedStep};
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

/// Agent `scripted` answering `answers` in order, on the REST and OpenAI
/// surfaces over `store`.
async fn scripted(store: Arc<dyn Store>, answers: usize) -> (ScriptedModel, Running, String, String) {
    let steps = (0..answers)
        .map(|i| ScriptedStep::text(format!("answer {i}")))
        .collect();
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model.clone())).name("scripted").build();
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

/// A stored response to `input`, continuing `previous`: its id.
async fn respond(openai: &str, input: &str, previous: Option<&str>) -> String {
    let mut body = json!({"model": "scripted", "input": input});
    if let Some(previous) = previous {
        body["previous_response_id"] = json!(previous);
    }
    let (status, response) = post(&format!("{openai}/responses"), body).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed", "{response}");
    response["id"].as_str().unwrap().to_owned()
}

/// The texts of the last model request's messages, `role: text`.
fn last_request(model: &ScriptedModel) -> Vec<String> {
    let request = model.requests().pop().unwrap();
    request
        .messages
        .iter()
        .map(|m: &Message| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                _ => "other",
            };
            format!("{role}: {}", m.text())
        })
        .collect()
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_sessions_cannot_reach_a_stored_responses_conversation() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (model, running, rest, openai) = scripted(store, 3).await;
    let first = respond(&openai, "My name is Ada.", None).await;
    // The name a response's conversation once had as a session: nothing there.
    let session = format!("{rest}/v1/sessions/response:{first}");
    let (status, shown) = send(common::http().get(&session)).await;
    assert_eq!(
        status, 404,
        "a REST session read a response's conversation: {shown}"
    );
    let (status, _) = send(common::http().delete(&session)).await;
    assert_eq!(status, 404, "a REST session deleted a response's conversation");
    // A session of that name is a session like any other, apart.
    let (status, answer) = post(
        &format!("{rest}/v1/agents/scripted"),
        json!({"prompt": "Forget that: my name is Eve.", "session": format!("response:{first}")}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    respond(&openai, "What is my name?", Some(&first)).await;
    assert_eq!(
        last_request(&model),
        [
            "user: My name is Ada.",
            "assistant: answer 0",
            "user: What is my name?"
        ]
    );
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_response_in_the_middle_of_a_chain_leaves_the_later_ones_whole() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (model, running, _rest, openai) = scripted(store.clone(), 5).await;
    let a = respond(&openai, "one", None).await;
    let b = respond(&openai, "two", Some(&a)).await;
    let c = respond(&openai, "three", Some(&b)).await;
    let (status, deleted) = send(common::http().delete(format!("{openai}/responses/{b}"))).await;
    assert_eq!((status, &deleted["deleted"]), (200, &json!(true)), "{deleted}");
    // B is gone from the API: not read, not continued.
    let (status, _) = send(common::http().get(format!("{openai}/responses/{b}"))).await;
    assert_eq!(status, 404);
    let (status, refused) = post(
        &format!("{openai}/responses"),
        json!({"model": "scripted", "input": "x", "previous_response_id": b}),
    )
    .await;
    assert_eq!(status, 404, "{refused}");
    // C still continues with the whole conversation, B's turn included.
    let whole = [
        "user: one",
        "assistant: answer 0",
        "user: two",
        "assistant: answer 1",
        "user: three",
        "assistant: answer 2",
    ];
    respond(&openai, "four", Some(&c)).await;
    assert_eq!(last_request(&model), [&whole[..], &["user: four"]].concat());
    // The first one deleted too: C is still whole.
    let (status, _) = send(common::http().delete(format!("{openai}/responses/{a}"))).await;
    assert_eq!(status, 200);
    respond(&openai, "five", Some(&c)).await;
    assert_eq!(last_request(&model), [&whole[..], &["user: five"]].concat());
    // B's turn is kept for C, not as a chain of its own.
    assert!(store.load_chain(&b, 100).await.unwrap().is_none());
    assert_eq!(store.load_chain(&c, 100).await.unwrap().unwrap().turns, 3);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_200_responses_is_stored_in_linear_space() {
    const TURNS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("chain.db").display());
    let store = loopwright_store::open(&url).await.unwrap();
    let (_model, running, _rest, openai) = scripted(store, TURNS).await;
    // 2 KB a turn: 0.4 MB sent in all. Each response snapshotting the whole
    // conversation stored 40 MB of it (a 48 MB file).
    let input = "y".repeat(2000);
    let mut previous: Option<String> = None;
    for _ in 0..TURNS {
        previous = Some(respond(&openai, &input, previous.as_deref()).await);
    }
    running.shutdown().await;
    let bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    eprintln!("200 chained responses of 2 KB: {bytes} bytes of SQLite files");
    // The turns (0.4 MB), 200 records and event logs, SQLite's pages and
    // up to 4 MB of write-ahead log.
    assert!(
        bytes < 8_000_000,
        "200 chained responses of 2 KB take {bytes} bytes"
    );
}

/// A replica over the store at `url` keeping things `retention`, its model
/// playing `steps`: the model, the replica, its REST and OpenAI bases.
async fn keeping(
    url: &str,
    retention: std::time::Duration,
    steps: Vec<ScriptedStep>,
) -> (ScriptedModel, Running, String, String) {
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model.clone())).name("scripted").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest(local())
        .openai(local())
        .store(loopwright_store::open(url).await.unwrap())
        .run_lease(MIN_RUN_LEASE)
        .retention(retention)
        .shutdown_grace(std::time::Duration::ZERO)
        .start()
        .await
        .unwrap();
    let rest = format!("http://{}", running.address(Surface::Rest).unwrap());
    let openai = format!("http://{}/v1", running.address(Surface::OpenAi).unwrap());
    (model, running, rest, openai)
}

/// Wait until `check` holds (a hang is a failure).
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, check: impl Fn() -> F) {
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while !check().await {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never: {what}"));
}

async fn what_outlived_the_retention_is_deleted_by_the_replicas(url: &str) {
    let retention = std::time::Duration::from_secs(3);
    let hang = ScriptedStep::text("working").without_finish().then_hang();
    let (_, a, rest_a, openai_a) = keeping(
        url,
        retention,
        vec![ScriptedStep::text("a0"), ScriptedStep::text("a1")],
    )
    .await;
    let (model_b, b, rest_b, openai_b) = keeping(url, retention, vec![ScriptedStep::text("b0"), hang]).await;
    let first = respond(&openai_a, "one", None).await;
    let second = respond(&openai_b, "two", Some(&first)).await;
    let (status, done) = post(
        &format!("{rest_a}/v1/agents/scripted/runs"),
        json!({"prompt": "go"}),
    )
    .await;
    assert_eq!(status, 202, "{done}");
    let done = done["id"].as_str().unwrap().to_owned();
    let (status, going) = post(
        &format!("{rest_b}/v1/agents/scripted/runs"),
        json!({"prompt": "go on"}),
    )
    .await;
    assert_eq!(status, 202, "{going}");
    let going = going["id"].as_str().unwrap().to_owned();
    until("the running run asks the model", || model_b.requests().len() == 2).await;
    // Gone from both replicas once the retention passed.
    for base in [&openai_a, &openai_b] {
        for id in [&first, &second] {
            let url = format!("{base}/responses/{id}");
            eventually(&format!("{url} is 404"), || async {
                send(common::http().get(&url)).await.0 == 404
            })
            .await;
        }
    }
    for base in [&rest_a, &rest_b] {
        let url = format!("{base}/v1/runs/{done}");
        eventually(&format!("{url} is 404"), || async {
            send(common::http().get(&url)).await.0 == 404
        })
        .await;
    }
    // In the store: no record, no event, no turn.
    let store = loopwright_store::open(url).await.unwrap();
    eventually("the chain's turns are released", || async {
        store.load_chain(&second, 100).await.unwrap().is_none()
    })
    .await;
    for id in [&first, &second, &done] {
        assert!(store.load_run(id).await.unwrap().is_none(), "{id}");
        assert!(store.read_events(id, None, 10).await.unwrap().is_empty(), "{id}");
    }
    let error = store.put_turn("probe", Some(&first), &[]).await.unwrap_err();
    assert!(
        error.is_conflict(),
        "the first response's turn is deleted: {error}"
    );
    // The run still going is kept, whatever its age.
    let (status, view) = send(common::http().get(format!("{rest_a}/v1/runs/{going}"))).await;
    assert_eq!((status, &view["status"]), (200, &json!("running")), "{view}");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_outlived_the_retention_is_deleted_from_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("kept.db").display());
    what_outlived_the_retention_is_deleted_by_the_replicas(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_outlived_the_retention_is_deleted_from_a_postgresql_database() {
    let database = loopwright_test_support::database();
    what_outlived_the_retention_is_deleted_by_the_replicas(database.url()).await;
}
