//! The agent loop's own cost per step: a scripted model (no network) and a
//! no-op tool, with 1, 8 and 64 parallel calls per step.
//!
//! One iteration is a whole run of two steps: a step calling the tool N times,
//! then a step answering with text (the agent and its scripted model are
//! built outside the timing). Run with `cargo bench -p loopwright-benches --bench loop_overhead`.

use std::sync::Arc;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use loopwright::testing::{ScriptedModel, ScriptedStep};
use loopwright::{Agent, ToolSet, tool_fn, toolset::StaticToolSource};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn bench_loop(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return;
    };
    let noop = tool_fn("noop", "Does nothing.", |_: NoArgs| async { Ok("ok") });
    let tools = Arc::new(
        ToolSet::builder()
            .source(StaticToolSource::native("bench").with_tool(noop))
            .build(),
    );
    let mut group = c.benchmark_group("loop_overhead");
    for calls in [1usize, 8, 64] {
        let ids: Vec<String> = (0..calls).map(|i| format!("call_{i}")).collect();
        group.bench_with_input(BenchmarkId::new("two_step_run", calls), &calls, |b, _| {
            // The scripted model and the agent are built outside the timing.
            let setup = || {
                let script: Vec<(&str, &str, &str)> =
                    ids.iter().map(|id| (id.as_str(), "noop", "{}")).collect();
                let model = ScriptedModel::new(vec![
                    ScriptedStep::tool_calls(&script),
                    ScriptedStep::text("done"),
                ]);
                Agent::builder(Arc::new(model))
                    .shared_tools(tools.clone())
                    .build()
            };
            b.to_async(&rt).iter_batched(
                setup,
                |agent| async move {
                    let result = agent.run("go").await;
                    std::hint::black_box(result.map(|r| r.steps).unwrap_or_default())
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_loop);
criterion_main!(benches);
