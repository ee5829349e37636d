#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! Memory of idle agent runs: 1,000 concurrent runs, each started with a
//! short prompt and a three-tool set, all waiting on a model that has not
//! answered yet. Prints the process's resident memory before and after, its
//! peak (VmHWM), and the cost per run. Not a criterion bench: one
//! measurement, printed.
//!
//! Run with `cargo bench -p loopwright-benches --bench idle_runs`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use loopwright::{
    Agent, LanguageModel, ModelError, ToolSet, model::ModelRequest, model::ModelStream, tool_fn,
    toolset::StaticToolSource,
};

/// Concurrent runs.
const RUNS: usize = 1_000;

/// A model whose answer never comes (the request is in flight).
struct Waiting;

#[async_trait::async_trait]
impl LanguageModel for Waiting {
    fn provider(&self) -> &str {
        "bench"
    }

    fn model_id(&self) -> &str {
        "waiting"
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        Ok(futures::stream::pending().boxed())
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    /// A path.
    path: String,
}

/// (VmRSS, VmHWM) in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let tools = (0..3).fold(StaticToolSource::native("app"), |s, i| {
            s.with_tool(tool_fn(
                format!("tool_{i}"),
                "Reads a path.",
                |p: Path| async move { Ok(p.path) },
            ))
        });
        let agent = Agent::builder(Arc::new(Waiting))
            .tools(ToolSet::builder().source(tools).build())
            .system("You are a helpful assistant.")
            .build();
        // Warm up: one run, so lazily built state (the catalog) is not counted per run.
        let warm = agent.run("warm up");
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(warm);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (before, _) = memory();
        let runs: Vec<_> = (0..RUNS)
            .map(|i| agent.run(format!("task number {i}: summarise the notes")))
            .collect();
        // Let every run reach its model call.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (after, peak) = memory();
        println!("idle runs: {RUNS}");
        println!("resident before: {before} KiB, with the runs: {after} KiB, peak (VmHWM): {peak} KiB");
        println!(
            "per run: {:.1} KiB",
            (after.saturating_sub(before)) as f64 / RUNS as f64
        );
        drop(runs);
    });
}
