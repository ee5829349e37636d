#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! The context-budget guard's share of a step: a two-step run (one tool call,
//! then an answer) over a 100 KB history, with and without a budget counted
//! by tiktoken (o200k, as for OpenAI models); the difference is the guard.
//! Also the raw tiktoken count of the same 100 KB of text.
//!
//! Run with `cargo bench --bench budget_guard`.

use std::sync::Arc;

use agent_core::testing::{ScriptedModel, ScriptedStep};
use agent_sdk::{Agent, AgentOptions, ContextBudget, Message, StaticToolSource, ToolSet, tool_fn};
use criterion::{Criterion, criterion_group, criterion_main};

/// The history's size.
const HISTORY_BYTES: usize = 100 * 1024;
/// Messages it is split into (a long conversation of ~2 KB turns).
const MESSAGES: usize = 50;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn history() -> Vec<Message> {
    let words = "the agent reads a file, edits a function and runs the tests again ";
    let per = HISTORY_BYTES / MESSAGES;
    (0..MESSAGES)
        .map(|i| {
            let text: String = words.repeat(per / words.len() + 1).chars().take(per).collect();
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

fn bench_guard(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let counter = agent_sdk::providers::token_counter_for("gpt-4.1", None).unwrap();
    let noop = tool_fn("noop", "Does nothing.", |_: NoArgs| async {
        Ok::<_, String>("ok")
    });
    let tools = Arc::new(
        ToolSet::builder()
            .source(StaticToolSource::native("bench").with_tool(noop))
            .build(),
    );
    let input = history();
    let text: String = input.iter().map(Message::text).collect::<Vec<_>>().join("\n");
    println!(
        "history: {} messages, {} bytes, {} tokens",
        input.len(),
        text.len(),
        counter.count(&text)
    );

    let mut group = c.benchmark_group("budget_guard");
    group.sample_size(30);
    for (name, budget) in [
        ("two_step_run_without_budget", None),
        (
            "two_step_run_with_budget",
            Some(ContextBudget::new(1_000_000).counter(counter.clone())),
        ),
    ] {
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let model = ScriptedModel::new(vec![
                    ScriptedStep::tool_calls(&[("c1", "noop", "{}")]),
                    ScriptedStep::text("done"),
                ]);
                let mut options = AgentOptions::default();
                if let Some(budget) = budget.clone() {
                    options = options.budget(budget);
                }
                let agent = Agent::builder(Arc::new(model))
                    .shared_tools(tools.clone())
                    .options(options)
                    .build();
                let input = input.clone();
                async move {
                    agent
                        .run(input)
                        .into_result()
                        .await
                        .map(|r| r.steps)
                        .unwrap_or_default()
                }
            });
        });
    }
    group.bench_function("tiktoken_count_100kb", |b| b.iter(|| counter.count(&text)));
    group.finish();
}

criterion_group!(benches, bench_guard);
criterion_main!(benches);
