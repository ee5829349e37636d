//! Tools the client runs, on the OpenAI surface, driven by the official
//! clients (tests/clients/client_tools.py, pinned in
//! tests-deps/python/clients): the `openai` package's Chat Completions,
//! whole and streamed, and Responses API; the OpenAI Agents SDK running an
//! agent whose model is the served agent, through either; the `anthropic`
//! package's Messages, whole and streamed. The served agent's own tools are
//! a reference MCP server's (npm `@modelcontextprotocol/server-everything`,
//! over stdio): its `echo` runs on the server, the client's `get_location`
//! in the client, in one step of the model. The agent's own tool runs on the server, the
//! client's in the client, in one step of the model.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright_core::{Agent, ToolSet};
use loopwright_mcp::{McpServerConfig, McpToolSource};
use loopwright_providers::OpenAiChatModel;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

async fn serve(model: &ModelServer) -> Running {
    common::install_tls();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let everything = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/.bin/mcp-server-everything");
    let config = McpServerConfig::stdio("everything", everything.to_string_lossy()).arg("stdio");
    let source = McpToolSource::connect(config).await.unwrap();
    let agent = Agent::builder(Arc::new(provider))
        .name("assistant")
        .tools(ToolSet::builder().source(source).build())
        .build();
    Serve::new()
        .agent(ServedAgent::new(agent))
        .openai("127.0.0.1:0".parse().unwrap())
        .anthropic("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

/// One model step calling the MCP server's echo and the client's
/// get_location at once, then the answer.
fn round() -> [String; 2] {
    [
        sse::chat_calls(&[
            ("call_w", "everything__echo", json!({"message": "Lisbon"})),
            ("call_l", "get_location", json!({"precise": true})),
        ]),
        sse::answer("Sunny in Lisbon, where you are."),
    ]
}

async fn python(mode: &str, base: &str) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let run = tokio::process::Command::new(root.join("../tests-deps/python/clients/.venv/bin/python"))
        .arg(root.join("tests/clients/client_tools.py"))
        .args([mode, base])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the client hung")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{mode}\nstdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("client tools ok"), "{stdout}");
}

/// The tool results of the model's `n`th request, as (call id, content).
fn results_of(body: &Value) -> Vec<(String, String)> {
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
async fn the_official_clients_run_their_tools_beside_the_agents_own() {
    let replies: Vec<_> = (0..7).flat_map(|_| round()).map(Into::into).collect();
    let model = ModelServer::start(replies).await;
    let running = serve(&model).await;
    let base = format!("http://{}/v1", running.address(Surface::OpenAi).unwrap());
    python("chat", &base).await;
    python("agents", &base).await;
    python("responses", &base).await;
    python("agents-responses", &base).await;
    let anthropic = format!("http://{}", running.address(Surface::Anthropic).unwrap());
    python("anthropic", &anthropic).await;
    let bodies = model.bodies();
    assert_eq!(bodies.len(), 14, "two model calls a round: {bodies:?}");
    for round in bodies.chunks(2) {
        // The model was offered the server's tools and the client's, and
        // read both results.
        let offered: Vec<&str> = round[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(
            offered.contains(&"everything__echo") && offered.contains(&"get_location"),
            "{offered:?}"
        );
        let results = results_of(&round[1]);
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0].0, "call_w");
        assert!(results[0].1.contains("Echo: Lisbon"), "{results:?}");
        assert_eq!(results[1], ("call_l".to_owned(), "Lisbon".to_owned()));
    }
    running.shutdown().await;
}
