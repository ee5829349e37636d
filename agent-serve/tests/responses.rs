//! The Responses API on two replicas sharing one store (two servers in this
//! process on one SQLite file, and on one PostgreSQL database): a
//! `previous_response_id` chain whose turns alternate between them, a
//! response read and re-streamed on the other replica, a background
//! response cancelled through the other, a deletion seen by both. The
//! agents' model is an OpenAI Chat Completions provider talking to a local
//! HTTP server that replays a recorded OpenAI stream. (The official Python
//! client is tested against `loopwright serve` in
//! agent-cli/tests/serve.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use loopwright_core::Agent;
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, Reply, sse};
use serde_json::{Value, json};

/// The recorded stream every answer replays (Apache-2.0, see the
/// fixtures' README).
const FIXTURE: &str = "../agent-providers/tests/fixtures/openai-chat/openai-text.chunks.txt";

/// A user message containing this makes the model server answer one chunk
/// and then nothing, until the client leaves.
const HANG: &str = "hang";

fn fixture_lines() -> Vec<String> {
    let path = format!("{}/{FIXTURE}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The text the recorded stream says.
fn fixture_text() -> String {
    fixture_lines()
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// A Chat Completions server replaying the recorded stream (one chunk and
/// then nothing for a request saying [`HANG`]); it keeps the request bodies.
async fn model_server() -> ModelServer {
    let mut payloads = fixture_lines();
    payloads.push("[DONE]".to_owned());
    let events = sse::frames(&payloads, false, "\n");
    ModelServer::builder()
        .respond(move |request| {
            if request.body.to_string().contains(HANG) {
                Reply::ok(events[..1].to_vec()).stalled()
            } else {
                Reply::ok(events.clone())
            }
        })
        .start()
        .await
}

/// A replica named `name` serving agent `assistant` on the OpenAI surface,
/// over its own handle on the store at `url`: it and its OpenAI base URL.
async fn replica(url: &str, name: &str, model: &ModelServer) -> (Running, String) {
    common::install_tls();
    let store = loopwright_store::open(url).await.unwrap();
    let model = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::new(model)).name("assistant").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .openai("127.0.0.1:0".parse().unwrap())
        .store(store)
        .replica(name)
        .start()
        .await
        .unwrap();
    let base = format!("http://{}/v1", running.address(Surface::OpenAi).unwrap());
    (running, base)
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn create(base: &str, body: Value) -> Value {
    let (status, response) = send(common::http().post(format!("{base}/responses")).json(&body)).await;
    assert_eq!(status, 200, "{response}");
    response
}

async fn get(base: &str, path: &str) -> (u16, Value) {
    send(common::http().get(format!("{base}{path}"))).await
}

/// The `data` of each server-sent event of a response body.
async fn events(request: reqwest::RequestBuilder) -> Vec<Value> {
    let text = request.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

async fn replicas_share_responses(url: &str) {
    let model = model_server().await;
    let (a, on_a) = replica(url, "replica-a", &model).await;
    let (b, on_b) = replica(url, "replica-b", &model).await;
    let answer = fixture_text();

    // A chain of three turns, alternating replicas.
    let first = create(&on_a, json!({"model": "assistant", "input": "My name is Ada."})).await;
    assert_eq!(
        (first["status"].as_str(), output_text(&first)),
        (Some("completed"), answer.clone())
    );
    let second = create(
        &on_b,
        json!({"model": "assistant", "input": "I am 36.", "previous_response_id": first["id"]}),
    )
    .await;
    let third = create(
        &on_a,
        json!({"model": "assistant", "input": "Who am I?", "previous_response_id": second["id"]}),
    )
    .await;
    assert_eq!(third["previous_response_id"], second["id"]);
    let turns = model.bodies();
    let said: Vec<(String, String)> = turns[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("user", "My name is Ada."),
        ("assistant", answer.as_str()),
        ("user", "I am 36."),
        ("assistant", answer.as_str()),
        ("user", "Who am I?"),
    ]
    .iter()
    .map(|(role, text)| ((*role).to_owned(), (*text).to_owned()))
    .collect();
    assert_eq!(said, expected, "{}", turns[2]);

    // Read on the other replica: the same object.
    let id = first["id"].as_str().unwrap();
    assert_eq!(
        get(&on_b, &format!("/responses/{id}")).await,
        (200, first.clone())
    );

    // Streamed on A, streamed again from the store on B: the same events.
    let streamed = events(
        common::http()
            .post(format!("{on_a}/responses"))
            .json(&json!({"model": "assistant", "input": "Stream it.", "stream": true})),
    )
    .await;
    assert_eq!(
        streamed.last().unwrap()["type"],
        "response.completed",
        "{streamed:?}"
    );
    let streamed_id = streamed[0]["response"]["id"].as_str().unwrap();
    let again = events(common::http().get(format!("{on_b}/responses/{streamed_id}?stream=true"))).await;
    assert_eq!(again, streamed);

    // A background response whose model hangs on A, cancelled through B.
    let hanging = create(
        &on_a,
        json!({"model": "assistant", "input": format!("Please {HANG}."), "background": true}),
    )
    .await;
    let hanging_id = hanging["id"].as_str().unwrap();
    common::until("the hanging response's model call started", || {
        model.bodies().iter().any(|b| b.to_string().contains(HANG))
    })
    .await;
    let (status, seen) = get(&on_b, &format!("/responses/{hanging_id}")).await;
    assert_eq!(
        (status, seen["status"].as_str()),
        (200, Some("in_progress")),
        "{seen}"
    );
    let (status, cancelled) =
        send(common::http().post(format!("{on_b}/responses/{hanging_id}/cancel"))).await;
    assert_eq!(
        (status, cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );
    let (_, on_a_now) = get(&on_a, &format!("/responses/{hanging_id}")).await;
    assert_eq!(on_a_now["status"], "cancelled");

    // Deleted through B: gone on A, in OpenAI's error shape.
    let third_id = third["id"].as_str().unwrap();
    let (status, deleted) = send(common::http().delete(format!("{on_b}/responses/{third_id}"))).await;
    assert_eq!(
        (status, deleted),
        (
            200,
            json!({"id": third_id, "object": "response.deleted", "deleted": true})
        )
    );
    let (status, missing) = get(&on_a, &format!("/responses/{third_id}")).await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["type"], "invalid_request_error", "{missing}");
    assert!(
        missing["error"]["message"].as_str().unwrap().contains(third_id),
        "{missing}"
    );
    let (status, refused) = send(
        common::http()
            .post(format!("{on_b}/responses"))
            .json(&json!({"model": "assistant", "input": "More?", "previous_response_id": third_id})),
    )
    .await;
    assert_eq!(status, 404, "{refused}");

    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_continues_on_another_replica_sharing_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("responses.db").display());
    replicas_share_responses(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_continues_on_another_replica_sharing_a_postgresql_database() {
    let database = loopwright_test_support::database();
    replicas_share_responses(database.url()).await;
}
