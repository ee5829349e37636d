#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, missing_docs)] // a benchmark, like a test
//! Tool search with ~300 MCP tools: what the first request of a run
//! carries, and how long a run takes to make it, without tool search
//! (every tool's schema in every request) and with it (`search_tools`, the
//! tools found loaded from the next step).
//!
//! The catalog: server-everything (Node, from `tests-deps/`) and the
//! in-repo `mcp-test-server` (Rust) started several times each under
//! different names, connected once. Tokens per request: the first
//! request's body in each wire format (Chat Completions, Responses,
//! Anthropic, Gemini), counted with tiktoken's `o200k_base`, and its bytes.
//! Time to the first model call: from `Agent::prompt` to the request's
//! arrival at a local Chat Completions server (Rust, on its own thread),
//! with a tool set built anew for each run (the catalog merged, names
//! resolved and schemas compiled, as in a new process once its servers are
//! connected) and with the tool set of the run before (its catalog
//! cached).
//!
//! Run with `cargo bench -p loopwright-benches --bench tool_search` after
//! `cargo build --release -p loopwright-mcp --example mcp-test-server` (the
//! test server is another package's target, found in `target/release/`). It
//! prints medians over `RUNS` runs with their range.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chat_server::Script;
use futures::StreamExt;
use loopwright::mcp::{Connected, McpServerConfig, connect_all};
use loopwright::providers::{
    AnthropicModel, GeminiModel, OpenAiChatModel, OpenAiResponsesModel, token_counter_for,
};
use loopwright::tool_search::ToolSearch;
use loopwright::{
    Agent, LanguageModel, ModelError, agent::AgentOptions, model::ModelRequest, model::ModelStream,
};
use loopwright_test_support::model_server::ModelServer;

#[path = "common/chat_server.rs"]
mod chat_server;

/// Runs per figure (medians reported).
const RUNS: usize = 21;
/// Copies of each server: 12 x 13 + 8 x 18 = 300 tools.
const EVERYTHING_COPIES: usize = 12;
const TEST_SERVER_COPIES: usize = 8;

fn everything_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules/.bin/mcp-server-everything")
}

/// target/release/examples/mcp-test-server (this bench runs from target/release/deps).
fn test_server_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-test-server")
}

fn configs() -> Vec<McpServerConfig> {
    let everything = everything_path();
    let test_server = test_server_path();
    assert!(
        everything.exists(),
        "{} missing: run `npm ci --prefix tests-deps`",
        everything.display()
    );
    assert!(
        test_server.exists(),
        "{} missing: run `cargo build --release -p loopwright-mcp --example mcp-test-server`",
        test_server.display()
    );
    let mut configs = Vec::new();
    for i in 0..EVERYTHING_COPIES {
        configs.push(
            McpServerConfig::stdio(format!("everything{i}"), everything.to_string_lossy()).arg("stdio"),
        );
    }
    for i in 0..TEST_SERVER_COPIES {
        configs.push(McpServerConfig::stdio(
            format!("test{i}"),
            test_server.to_string_lossy(),
        ));
    }
    configs
}

/// A model that keeps the first request it gets and answers nothing.
struct Capture(Mutex<Option<ModelRequest>>);

#[async_trait::async_trait]
impl LanguageModel for Capture {
    fn provider(&self) -> &str {
        "capture"
    }
    fn model_id(&self) -> &str {
        "capture"
    }
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.0.lock().unwrap().get_or_insert(request);
        Err(ModelError::invalid_request(None, "captured"))
    }
}

fn options(search: bool) -> AgentOptions {
    let mut options = AgentOptions::default();
    if search {
        options.tool_search = Some(ToolSearch::default());
    }
    options
}

/// The first request of a run on `connected`'s tools.
async fn first_request(connected: &Connected, search: bool) -> ModelRequest {
    let capture = Arc::new(Capture(Mutex::new(None)));
    let agent = Agent::builder(capture.clone())
        .tools(connected.tool_set())
        .options(options(search))
        .build();
    let _ = agent.run("What can you do?").await;
    capture.0.lock().unwrap().take().unwrap()
}

fn median(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "{:.2} ms [{:.2}-{:.2}]",
        ms(samples[samples.len() / 2]),
        ms(samples[0]),
        ms(samples[samples.len() - 1])
    )
}

/// Time from `prompt` to the request's arrival, `RUNS` times; a new tool
/// set each run when `fresh`.
async fn time_to_first_call(
    connected: &Connected,
    server: &ModelServer,
    search: bool,
    fresh: bool,
) -> String {
    let model: Arc<dyn LanguageModel> = Arc::new(
        OpenAiChatModel::compatible("bench", server.base_url(), "bench")
            .build()
            .unwrap(),
    );
    let shared = Arc::new(connected.tool_set());
    let mut samples = Vec::new();
    for _ in 0..RUNS {
        server.clear();
        let tools = if fresh {
            Arc::new(connected.tool_set())
        } else {
            shared.clone()
        };
        let agent = Agent::builder(model.clone())
            .shared_tools(tools)
            .options(options(search))
            .build();
        let started = Instant::now();
        let mut run = agent.run("What can you do?");
        while run.next().await.is_some() {}
        let arrived = server.received()[0].arrived;
        samples.push(arrived - started);
    }
    median(samples)
}

/// The request a model gets in each wire format, as bytes.
fn wire_bodies(request: &ModelRequest) -> [(&'static str, Vec<u8>); 4] {
    let chat = OpenAiChatModel::openai("gpt-4.1").build().unwrap();
    let responses = OpenAiResponsesModel::builder("gpt-4.1").build().unwrap();
    let anthropic = AnthropicModel::builder("claude-sonnet-4-5").build().unwrap();
    let gemini = GeminiModel::builder("gemini-2.5-flash").build().unwrap();
    [
        ("chat", chat.request_bytes(request).unwrap().to_vec()),
        ("responses", responses.request_bytes(request).unwrap().to_vec()),
        ("anthropic", anthropic.request_bytes(request).unwrap().to_vec()),
        ("gemini", gemini.request_bytes(request).unwrap().to_vec()),
    ]
}

/// The first request's size, without and with tool search: tools declared,
/// body bytes and tokens in each format, what stays out of the context.
async fn print_first_requests(connected: &Connected) {
    let counter = token_counter_for("gpt-4.1", None).unwrap();
    println!("\nfirst request: tools declared, body bytes, body tokens (o200k_base)");
    for search in [false, true] {
        let request = first_request(connected, search).await;
        let label = if search { "with tool search" } else { "without" };
        println!(
            "{label}: {} tools declared, {} held back",
            request.tools.len(),
            request.deferred_tools.len()
        );
        for (format, bytes) in wire_bodies(&request) {
            let text = String::from_utf8(bytes).unwrap();
            println!(
                "  {format:<10} {:>9} bytes {:>8} tokens",
                text.len(),
                counter.count(&text)
            );
        }
        // Anthropic loads a deferred tool into the model's context only
        // when a result references it: its body less those definitions.
        let deferred: Vec<serde_json::Value> = request
            .deferred_tools
            .iter()
            .map(|t| {
                serde_json::json!({"name": t.name, "description": t.description,
                    "input_schema": t.input_schema, "defer_loading": true})
            })
            .collect();
        let held = counter.count(&serde_json::to_string(&deferred).unwrap());
        let system = request.system.as_deref().map_or(0, |s| counter.count(s));
        println!("  deferred definitions (outside Anthropic's context): {held} tokens");
        println!("  the system prompt (the servers' instructions): {system} tokens");
    }
}

/// Time to the first model call, without and with tool search, with a new
/// tool set and with a cached catalog.
async fn print_times_to_first_call(connected: &Connected) {
    let script = Arc::new(Script::default());
    script.play(0, "none", serde_json::json!({}));
    let server = chat_server::start(script);
    println!("\ntime to the first model call (median of {RUNS} [min-max])");
    for search in [false, true] {
        let label = if search { "with tool search" } else { "without" };
        let fresh = time_to_first_call(connected, &server, search, true).await;
        let warm = time_to_first_call(connected, &server, search, false).await;
        println!("{label}: new tool set {fresh}; cached catalog {warm}");
    }
}

fn main() {
    loopwright::providers::install_tls_provider();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let connected = connect_all(configs()).await;
        if let Some(failure) = connected.failed.first() {
            panic!("{} did not connect: {}", failure.server, failure.error);
        }
        let catalog = connected.tool_set().catalog().await;
        println!(
            "catalog: {} tools from {} servers ({} x server-everything, {} x mcp-test-server)",
            catalog.tools().len(),
            connected.sources.len(),
            EVERYTHING_COPIES,
            TEST_SERVER_COPIES
        );
        print_first_requests(&connected).await;
        print_times_to_first_call(&connected).await;
        connected.close_all().await;
    });
}
