#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! MCP tool calls over stdio to a small rmcp echo server (this binary, run
//! again with `LOOPWRIGHT_BENCH_MCP_SERVER=1`):
//!
//! - `round_trip/loopwright_mcp`: one `echo` call through loopwright-mcp's tool object
//!   (what the agent loop calls), against `round_trip/bare_rmcp`: the same
//!   call through a bare rmcp client on the same kind of server process,
//!   interleaved (each iteration calls both and times one); also as
//!   `round_trip_client_cpu`, timed by this process's CPU clock: the client
//!   side alone, without the server's work and the machine's scheduling;
//! - `parallel_sleep/N`: N concurrent calls of a tool that sleeps 100 ms,
//!   through one loopwright-mcp source: the wall time stays near 100 ms when
//!   nothing serialises the calls.
//!
//! Run with `cargo bench -p loopwright-benches --bench mcp_calls`.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group};
use echo_server::{SERVE_ENV, bare_client, serve, server_config};
use loopwright::mcp::McpToolSource;
use loopwright::mcp::rmcp;
use loopwright::{ToolContext, ToolSource};
use rmcp::model::CallToolRequestParams;
use serde_json::json;

#[path = "common/echo_server.rs"]
mod echo_server;

/// What a round trip is timed with.
#[derive(Clone, Copy)]
enum Clock {
    /// Elapsed time.
    Wall,
    /// CPU time of this process (all its threads): the client side only.
    ProcessCpu,
}

impl Clock {
    /// Now, as a duration since an arbitrary origin.
    fn now(self) -> Duration {
        match self {
            Self::Wall => {
                static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
                ORIGIN.get_or_init(std::time::Instant::now).elapsed()
            }
            Self::ProcessCpu => {
                let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID).unwrap();
                Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
            }
        }
    }
}

/// The loopwright-mcp tool of this name.
async fn tool(source: &McpToolSource, name: &str) -> std::sync::Arc<dyn loopwright::Tool> {
    let tools = source.tools().await.unwrap();
    tools.into_iter().find(|t| t.definition().name == name).unwrap()
}

/// Set to `agent:N` or `bare:N`: make N echo calls that way and exit, for
/// counting the client's instructions under callgrind
/// (`scripts/mcp-instructions.sh`).
const COUNT_ENV: &str = "LOOPWRIGHT_BENCH_MCP_COUNT";

fn count_calls(spec: &str) {
    let (how, n) = spec.split_once(':').expect("agent:N or bare:N");
    let n: usize = n.parse().expect("a number of calls");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let args = json!({"text": "hello"});
    rt.block_on(async {
        match how {
            "agent" => {
                let source = McpToolSource::connect(server_config()).await.unwrap();
                let echo = tool(&source, "echo").await;
                for _ in 0..n {
                    echo.call(args.clone(), ToolContext::new("bench")).await.unwrap();
                }
                source.close().await;
            }
            "bare" => {
                let (_child, client) = bare_client().await;
                let map = args.as_object().cloned().unwrap();
                for _ in 0..n {
                    let params = CallToolRequestParams::new("echo").with_arguments(map.clone());
                    client.call_tool(params).await.unwrap();
                }
                let _ = client.cancel().await;
            }
            other => panic!("{other}: expected agent or bare"),
        }
    });
}

fn bench_mcp(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let source = rt.block_on(McpToolSource::connect(server_config())).unwrap();
    let echo = rt.block_on(tool(&source, "echo"));
    let sleep = rt.block_on(tool(&source, "sleep"));
    let bare = rt.block_on(bare_client());

    // Interleaved: every iteration makes one call of each kind and times
    // only its own, so both see the same moments of a noisy machine. Timed
    // twice: wall time (the round trip, server and pipes included) and this
    // process's CPU time (the client side alone, where our overhead is).
    let args = json!({"text": "hello"});
    let map = args.as_object().cloned().unwrap();
    let client = &bare.1;
    let ours = || {
        let (echo, args) = (echo.clone(), args.clone());
        async move { echo.call(args, ToolContext::new("bench")).await.unwrap() }
    };
    let theirs = || {
        let params = CallToolRequestParams::new("echo").with_arguments(map.clone());
        async move { client.call_tool(params).await.unwrap() }
    };
    for (group_name, clock) in [
        ("round_trip", Clock::Wall),
        ("round_trip_client_cpu", Clock::ProcessCpu),
    ] {
        let mut group = c.benchmark_group(group_name);
        for (name, timed_is_ours) in [("loopwright_mcp", true), ("bare_rmcp", false)] {
            group.bench_function(name, |b| {
                b.to_async(&rt).iter_custom(|iters| async move {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        let start = clock.now();
                        if timed_is_ours {
                            std::hint::black_box(ours().await);
                            timed += clock.now().saturating_sub(start);
                            std::hint::black_box(theirs().await);
                        } else {
                            std::hint::black_box(theirs().await);
                            timed += clock.now().saturating_sub(start);
                            std::hint::black_box(ours().await);
                        }
                    }
                    timed
                });
            });
        }
        group.finish();
    }

    let mut group = c.benchmark_group("parallel_sleep");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for n in [1usize, 8, 64] {
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.to_async(&rt).iter(|| {
                let sleep = sleep.clone();
                async move {
                    let calls = (0..n).map(|i| {
                        let sleep = sleep.clone();
                        async move {
                            sleep
                                .call(json!({}), ToolContext::new(format!("c{i}")))
                                .await
                                .unwrap()
                        }
                    });
                    futures::future::join_all(calls).await.len()
                }
            });
        });
    }
    group.finish();
    rt.block_on(source.close());
    drop(bare);
}

criterion_group!(benches, bench_mcp);

fn main() {
    if std::env::var_os(SERVE_ENV).is_some() {
        serve();
        return;
    }
    if let Ok(spec) = std::env::var(COUNT_ENV) {
        count_calls(&spec);
        return;
    }
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
