#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! The context-budget guard's share of a step: a two-step run (one tool call,
//! then an answer) over a 100 KB history, without a budget, and with one
//! counted by tiktoken (o200k, as for OpenAI models) both fresh (the history
//! counted from scratch, as in a conversation's first turn) and shared (a
//! later turn: only new messages are counted); the differences are the
//! guard. Also the raw tiktoken count of the same 100 KB of text.
//!
//! Run with `cargo bench -p loopwright-benches --bench budget_guard`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, criterion_group, criterion_main};
use loopwright::testing::{ScriptedModel, ScriptedStep};
use loopwright::{
    Agent, ContextBudget, LanguageModel, Message, ModelError, ToolSet, model::ModelRequest,
    model::ModelStream, tool_fn, toolset::StaticToolSource,
};

/// The history's size.
const HISTORY_BYTES: usize = 100 * 1024;
/// Messages it is split into (a long conversation of ~2 KB turns).
const MESSAGES: usize = 50;

/// Makes the budget of one iteration (or none).
type BudgetFor<'a> = Box<dyn Fn() -> Option<ContextBudget> + 'a>;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Distinct messages (identical ones would be counted once, by the cache).
fn history() -> Vec<Message> {
    let words = [
        "the", "agent", "reads", "a", "file", "edits", "function", "and", "runs", "tests", "again",
    ];
    let per = HISTORY_BYTES / MESSAGES;
    (0..MESSAGES)
        .map(|i| {
            let mut text = format!("turn {i}:");
            let mut k = i;
            while text.len() < per {
                k = k.wrapping_mul(31).wrapping_add(7);
                text.push(' ');
                text.push_str(words[k % words.len()]);
            }
            if i % 2 == 0 {
                Message::user(text)
            } else {
                Message::assistant(text)
            }
        })
        .collect()
}

/// A counter that tallies what it counts.
#[derive(Debug)]
struct Tally {
    inner: Arc<dyn loopwright::budget::TokenCounter>,
    bytes: AtomicUsize,
    tokens: AtomicUsize,
}

impl loopwright::budget::TokenCounter for Tally {
    fn count(&self, text: &str) -> u64 {
        let tokens = self.inner.count(text);
        self.bytes.fetch_add(text.len(), Ordering::SeqCst);
        self.tokens.fetch_add(tokens as usize, Ordering::SeqCst);
        tokens
    }
}

/// A scripted model that records the tally (bytes, tokens) at each step.
struct Recording {
    inner: ScriptedModel,
    tally: Arc<Tally>,
    seen: Mutex<Vec<(usize, usize)>>,
}

#[async_trait::async_trait]
impl LanguageModel for Recording {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let now = (
            self.tally.bytes.load(Ordering::SeqCst),
            self.tally.tokens.load(Ordering::SeqCst),
        );
        self.seen.lock().unwrap().push(now);
        self.inner.stream(request).await
    }
}

/// What the benches share: the runtime, the tokenizer, the tools, the history.
struct Fixture {
    rt: tokio::runtime::Runtime,
    counter: Arc<dyn loopwright::budget::TokenCounter>,
    tools: Arc<ToolSet>,
    input: Vec<Message>,
}

fn fixture() -> Fixture {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let counter = loopwright::providers::token_counter_for("gpt-4.1", None).unwrap();
    let noop = tool_fn("noop", "Does nothing.", |_: NoArgs| async { Ok("ok") });
    let tools = Arc::new(
        ToolSet::builder()
            .source(StaticToolSource::native("bench").with_tool(noop))
            .build(),
    );
    Fixture {
        rt,
        counter,
        tools,
        input: history(),
    }
}

/// Checked once: what the guard counts in each step of a fresh run (the
/// model records the tally when each step asks it, after the guard ran).
fn print_what_the_guard_counts(f: &Fixture) {
    let tally = Arc::new(Tally {
        inner: f.counter.clone(),
        bytes: Default::default(),
        tokens: Default::default(),
    });
    let model = Arc::new(Recording {
        inner: ScriptedModel::new(vec![
            ScriptedStep::tool_calls(&[("c1", "noop", "{}")]),
            ScriptedStep::text("done"),
        ]),
        tally: tally.clone(),
        seen: Default::default(),
    });
    let agent = Agent::builder(model.clone())
        .shared_tools(f.tools.clone())
        .budget(ContextBudget::new(1_000_000).counter(tally))
        .build();
    let result = f.rt.block_on(async { agent.run(f.input.clone()).await }).unwrap();
    let seen = model.seen.lock().unwrap().clone();
    assert!(
        result.steps.len() == 2 && seen.len() == 2,
        "{} steps",
        result.steps.len()
    );
    assert!(seen[0].0 >= HISTORY_BYTES, "{seen:?}");
    let mut before = (0, 0);
    for (step, (bytes, tokens)) in seen.iter().enumerate() {
        println!(
            "step {}: the guard counted {} tokens ({} bytes)",
            step + 1,
            tokens - before.1,
            bytes - before.0
        );
        before = (*bytes, *tokens);
    }
}

/// One two-step run per iteration, with the budget `budget` makes; the
/// agent, its model and the input are built outside the timing.
fn bench_run(group: &mut BenchmarkGroup<'_, WallTime>, f: &Fixture, name: &str, budget: &BudgetFor<'_>) {
    group.bench_function(name, |b| {
        let setup = || {
            let model = ScriptedModel::new(vec![
                ScriptedStep::tool_calls(&[("c1", "noop", "{}")]),
                ScriptedStep::text("done"),
            ]);
            let mut builder = Agent::builder(Arc::new(model)).shared_tools(f.tools.clone());
            if let Some(budget) = budget() {
                builder = builder.budget(budget);
            }
            (builder.build(), f.input.clone())
        };
        b.to_async(&f.rt).iter_batched(
            setup,
            |(agent, input)| async move { agent.run(input).await.map(|r| r.steps.len()).unwrap_or_default() },
            BatchSize::SmallInput,
        );
    });
}

fn bench_guard(c: &mut Criterion) {
    let f = fixture();
    let text: String = f.input.iter().map(Message::text).collect::<Vec<_>>().join("\n");
    println!(
        "history: {} messages, {} bytes, {} tokens",
        f.input.len(),
        text.len(),
        f.counter.count(&text)
    );
    print_what_the_guard_counts(&f);
    let mut group = c.benchmark_group("budget_guard");
    group.sample_size(30);
    let warm = ContextBudget::new(1_000_000).counter(f.counter.clone());
    // (name, budget for an iteration): none; a new budget each run (the
    // history counted from scratch: a conversation's first turn); one budget
    // shared by every run (a later turn of the same conversation).
    let cases: [(&str, BudgetFor); 3] = [
        ("two_step_run_without_budget", Box::new(|| None)),
        (
            "two_step_run_with_budget_first_turn",
            Box::new(|| Some(ContextBudget::new(1_000_000).counter(f.counter.clone()))),
        ),
        (
            "two_step_run_with_budget_next_turn",
            Box::new(|| Some(warm.clone())),
        ),
    ];
    for (name, budget) in &cases {
        bench_run(&mut group, &f, name, budget);
    }
    group.bench_function("tiktoken_count_100kb", |b| b.iter(|| f.counter.count(&text)));
    group.bench_function("tiktoken_count_50_messages", |b| {
        b.iter(|| f.input.iter().map(|m| f.counter.count(&m.text())).sum::<u64>())
    });
    group.finish();
}

criterion_group!(benches, bench_guard);
criterion_main!(benches);
