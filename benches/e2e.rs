#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! End to end: what a step of a real run costs above the I/O it must do.
//!
//! An [`Agent`] with an OpenAI-compatible provider and one stdio MCP server
//! (the in-repo echo server, this binary run again; and server-everything
//! from `tests-deps/`) runs N steps against a local model server (Rust,
//! axum, on its own thread): each step the model calls `echo` once, then
//! answers. The floor is the same work without the library: the request
//! bodies the run sent, posted again by a bare `reqwest` client on one
//! kept-alive connection, and N `tools/call` sent by a bare rmcp client to
//! the same kind of server. Per step above the floor:
//! `((run(N) - run(1)) - (model floor(N) - model floor(1)) - (mcp floor(N) - mcp floor(1))) / (N - 1)`.
//! What a run must do that the floor does not, serialising each request,
//! is measured too: the provider's `request_bytes` for each step's request
//! (the run's history up to that step, built outside the timing); the cost
//! above the floor less that is what grows with the history for any other
//! reason.
//!
//! Run with `cargo bench -p loopwright-benches --bench e2e`; it prints medians over `RUNS` runs
//! with their range.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chat_server::Script;
use echo_server::{SERVE_ENV, bare_client, bare_client_of, serve, server_config};
use loopwright::mcp::rmcp::model::CallToolRequestParams;
use loopwright::mcp::{McpServerConfig, McpToolSource};
use loopwright::providers::OpenAiChatModel;
use loopwright::{Agent, Message, ToolSet, model::ModelRequest};
use loopwright_test_support::model_server::ModelServer;
use serde_json::{Value, json};

#[path = "common/chat_server.rs"]
mod chat_server;
#[path = "common/echo_server.rs"]
mod echo_server;

/// Steps (echo calls) per run.
const STEPS: [usize; 3] = [1, 100, 300];
/// Runs per figure (medians reported).
const RUNS: usize = 11;

/// One MCP server to measure with.
struct Server {
    label: &'static str,
    config: McpServerConfig,
    /// Starts the same server for the bare client.
    command: fn() -> tokio::process::Command,
    tool: &'static str,
    args: Value,
}

fn everything_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/.bin/mcp-server-everything")
}

fn servers() -> Vec<Server> {
    let mut list = vec![Server {
        label: "in-repo echo server",
        config: server_config(),
        command: || {
            let mut c = tokio::process::Command::new(std::env::current_exe().unwrap());
            c.env(SERVE_ENV, "1");
            c
        },
        tool: "echo",
        args: json!({"text": "step"}),
    }];
    if everything_path().exists() {
        list.push(Server {
            label: "server-everything",
            config: McpServerConfig::stdio("everything", everything_path().to_string_lossy()),
            command: || tokio::process::Command::new(everything_path()),
            tool: "echo",
            args: json!({"message": "step"}),
        });
    } else {
        eprintln!(
            "server-everything is not installed (bash scripts/test.sh installs it): measuring the in-repo server only"
        );
    }
    list
}

/// Median, min and max in milliseconds.
fn stats(mut runs: Vec<Duration>) -> (f64, f64, f64) {
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(runs[runs.len() / 2]), ms(runs[0]), ms(runs[runs.len() - 1]))
}

struct Figures {
    run: (f64, f64, f64),
    model_floor: (f64, f64, f64),
    mcp_floor: (f64, f64, f64),
    /// Serialising the run's request bodies, all steps.
    serialise: (f64, f64, f64),
}

async fn measure(server: &Server, script: &Script, model_server: &ModelServer, steps: usize) -> Figures {
    let url = &model_server.base_url();
    let source = McpToolSource::connect(server.config.clone()).await.unwrap();
    let name = server.config.name.clone();
    script.play(steps, format!("{name}__{}", server.tool), server.args.clone());
    let model = Arc::new(
        OpenAiChatModel::compatible("local", url, "bench")
            .build()
            .unwrap(),
    );
    let tools = Arc::new(ToolSet::builder().source(source.clone()).build());
    let definitions = tools.catalog().await.definitions().clone();
    let agent = Agent::builder(model.clone())
        .shared_tools(tools)
        .max_steps(u32::try_from(steps).unwrap() + 1)
        .build();

    let (mut runs, mut model_floor, mut mcp_floor, mut serialise) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let http = loopwright::providers::default_client();
    let (_child, bare) = bare_client_of((server.command)()).await;
    let args = server.args.as_object().cloned().unwrap();
    for _ in 0..RUNS {
        model_server.clear();
        let start = Instant::now();
        let result = agent.run("go").await.unwrap();
        runs.push(start.elapsed());
        assert_eq!(result.steps.len(), steps + 1, "{:?}", result.exit());

        let bodies = model_server.take_received().into_iter().map(|r| r.bytes);
        let requests: Vec<ModelRequest> = (0..=steps)
            .map(|k| {
                let history =
                    std::iter::once(Message::user("go")).chain(result.messages[..2 * k].iter().cloned());
                let mut request = ModelRequest::new(history.collect());
                request.tools = definitions.clone();
                request
            })
            .collect();
        let start = Instant::now();
        for request in &requests {
            std::hint::black_box(model.request_bytes(request).unwrap());
        }
        serialise.push(start.elapsed());
        let start = Instant::now();
        for body in bodies {
            let response = http
                .post(format!("{url}/chat/completions"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            std::hint::black_box(response.bytes().await.unwrap());
        }
        model_floor.push(start.elapsed());

        let start = Instant::now();
        for _ in 0..steps {
            let params = CallToolRequestParams::new(server.tool).with_arguments(args.clone());
            std::hint::black_box(bare.call_tool(params).await.unwrap());
        }
        mcp_floor.push(start.elapsed());
    }
    let _ = bare.cancel().await;
    source.close().await;
    Figures {
        run: stats(runs),
        model_floor: stats(model_floor),
        mcp_floor: stats(mcp_floor),
        serialise: stats(serialise),
    }
}

fn show((median, min, max): (f64, f64, f64)) -> String {
    format!("{median:.1} ms [{min:.1}-{max:.1}]")
}

fn main() {
    if std::env::var_os(SERVE_ENV).is_some() {
        serve();
        return;
    }
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let script = Arc::new(Script::default());
    let model_server = chat_server::start(script.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Warm the bare client path once (process start, connection).
    rt.block_on(async { drop(bare_client().await) });
    for server in servers() {
        println!("{}:", server.label);
        let mut figures = Vec::new();
        for steps in STEPS {
            let f = rt.block_on(measure(&server, &script, &model_server, steps));
            println!(
                "  {steps:>3} steps: run {}, model floor {}, mcp floor {}, serialising {}",
                show(f.run),
                show(f.model_floor),
                show(f.mcp_floor),
                show(f.serialise)
            );
            figures.push((steps, f));
        }
        let (_, one) = &figures[0];
        for (steps, f) in &figures[1..] {
            let n = (*steps - 1) as f64;
            let above = ((f.run.0 - one.run.0)
                - (f.model_floor.0 - one.model_floor.0)
                - (f.mcp_floor.0 - one.mcp_floor.0))
                / n;
            let run_per_step = (f.run.0 - one.run.0) / n;
            let serialising = (f.serialise.0 - one.serialise.0) / n;
            println!(
                "  {steps:>3} steps: {run_per_step:.3} ms a step, {above:.3} ms a step above the floor \
                 ({serialising:.3} ms serialising, {:.3} ms the rest)",
                above - serialising
            );
        }
    }
}
