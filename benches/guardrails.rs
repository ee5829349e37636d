//! What guardrails cost (issue 40), three ways:
//!
//! - `first_token`: from `Agent::run` to the first `text_delta`, with a
//!   model whose first token takes 20 ms: no guard, a passing parallel
//!   input guard of 5 ms (it races the call: it should add nothing), and
//!   the same guard blocking (it should add its 5 ms);
//! - `per_token`: a run streaming 2,000 deltas of one word from the
//!   scripted model, with no guard and with a no-op output guard at each
//!   checkpoint: the difference over 2,000 is the cost per streamed token;
//! - `hold_back`: from `Agent::run` to the first `text_delta` when the
//!   model streams a word every millisecond (a sentence every 10 words, a
//!   paragraph every 50), for each checkpoint: the latency the hold-back
//!   adds to the first byte shown.
//!
//! Run with `cargo bench -p loopwright-benches --bench guardrails`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use loopwright::guardrail::{
    Checkpoint, GuardError, GuardInput, GuardMode, GuardPoint, GuardVerdict, Guardrail, Guardrails,
};
use loopwright::model::{FinishReason, ModelEvent, ModelRequest, ModelStream};
use loopwright::testing::{ScriptedModel, ScriptedStep};
use loopwright::{Agent, AgentEvent, LanguageModel, ModelError, Usage};
use tokio::time::Instant;

/// A guard that passes after `delay`.
struct Pass {
    points: Vec<GuardPoint>,
    mode: GuardMode,
    delay: Duration,
}

#[async_trait]
impl Guardrail for Pass {
    fn name(&self) -> &str {
        "pass"
    }
    fn points(&self) -> &[GuardPoint] {
        &self.points
    }
    fn mode(&self) -> GuardMode {
        self.mode
    }
    async fn check(&self, _input: &GuardInput<'_>) -> Result<GuardVerdict, GuardError> {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        Ok(GuardVerdict::Allow)
    }
}

/// A model whose first word comes after `first`, then one every `every`.
struct Paced {
    first: Duration,
    every: Duration,
    words: usize,
}

#[async_trait]
impl LanguageModel for Paced {
    fn provider(&self) -> &str {
        "bench"
    }
    fn model_id(&self) -> &str {
        "paced"
    }
    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        let (first, every, words) = (self.first, self.every, self.words);
        let stream = futures::stream::unfold(0usize, move |i| async move {
            if i > words {
                return None;
            }
            tokio::time::sleep(if i == 0 { first } else { every }).await;
            let event = if i == words {
                ModelEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage::new(10, words as u64),
                }
            } else {
                ModelEvent::TextDelta { text: word(i) }
            };
            Some((Ok(event), i + 1))
        });
        Ok(stream.boxed())
    }
}

/// Word `i` of the paced answer: a sentence ends every 10 words, a
/// paragraph every 50.
fn word(i: usize) -> String {
    match (i + 1) % 50 {
        0 => "end.\n\n".to_owned(),
        n if n % 10 == 0 => "end. ".to_owned(),
        _ => "word ".to_owned(),
    }
}

/// From the run's start to its first `text_delta`.
async fn first_text(agent: &Agent) -> Duration {
    let started = Instant::now();
    let mut run = agent.run("go");
    while let Some(event) = run.next().await {
        if matches!(event, AgentEvent::TextDelta { .. }) {
            let took = started.elapsed();
            run.cancel();
            while run.next().await.is_some() {}
            return took;
        }
    }
    started.elapsed()
}

/// Each agent's time from `Agent::run` to its first `text_delta`, as a
/// bench of `group`.
fn time_first_text(
    mut group: criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    cases: Vec<(&str, Agent)>,
) {
    for (name, agent) in cases {
        group.bench_function(name, |b| {
            b.to_async(rt).iter_custom(|n| {
                let agent = agent.clone();
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..n {
                        total += first_text(&agent).await;
                    }
                    total
                }
            });
        });
    }
    group.finish();
}

fn rails(guard: Pass, checkpoint: Checkpoint) -> Guardrails {
    Guardrails::new().guard(guard).checkpoint(checkpoint)
}

fn bench_first_token(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("guardrails/first_token");
    group.sample_size(20);
    let model = || {
        Arc::new(Paced {
            first: Duration::from_millis(20),
            every: Duration::from_millis(1),
            words: 5,
        })
    };
    let input = |mode| Pass {
        points: vec![GuardPoint::Input],
        mode,
        delay: Duration::from_millis(5),
    };
    let cases = vec![
        ("no_guard", Agent::builder(model()).build()),
        (
            "parallel_input_guard_5ms",
            Agent::builder(model())
                .guardrails(rails(input(GuardMode::Parallel), Checkpoint::Sentence))
                .build(),
        ),
        (
            "blocking_input_guard_5ms",
            Agent::builder(model())
                .guardrails(rails(input(GuardMode::Blocking), Checkpoint::Sentence))
                .build(),
        ),
    ];
    time_first_text(group, rt, cases);
}

fn bench_per_token(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    const DELTAS: usize = 2_000;
    let mut group = c.benchmark_group("guardrails/per_token");
    group.sample_size(20);
    let deltas: Vec<ModelEvent> = (0..DELTAS)
        .map(|i| ModelEvent::TextDelta { text: word(i) })
        .chain(std::iter::once(ModelEvent::Finish {
            reason: FinishReason::Stop,
            usage: Usage::new(10, DELTAS as u64),
        }))
        .collect();
    let noop = || Pass {
        points: vec![GuardPoint::Output],
        mode: GuardMode::Blocking,
        delay: Duration::ZERO,
    };
    let cases: Vec<(&str, Option<Guardrails>)> = vec![
        ("no_guard", None),
        (
            "noop_output_guard_chars_1",
            Some(rails(noop(), Checkpoint::Chars(1))),
        ),
        (
            "noop_output_guard_sentence",
            Some(rails(noop(), Checkpoint::Sentence)),
        ),
        ("noop_output_guard_end", Some(rails(noop(), Checkpoint::End))),
    ];
    for (name, guardrails) in cases {
        group.bench_with_input(BenchmarkId::new("run_of_2000_deltas", name), &name, |b, _| {
            b.to_async(rt).iter_batched(
                || {
                    let model = ScriptedModel::new(vec![ScriptedStep::events(deltas.clone())]);
                    let builder = Agent::builder(Arc::new(model));
                    match &guardrails {
                        Some(g) => builder.guardrails(g.clone()).build(),
                        None => builder.build(),
                    }
                },
                |agent| async move {
                    let mut run = agent.run("go");
                    let mut shown = 0usize;
                    while let Some(event) = run.next().await {
                        if let AgentEvent::TextDelta { text } = event {
                            shown += text.len();
                        }
                    }
                    std::hint::black_box(shown)
                },
                criterion::BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn bench_hold_back(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("guardrails/hold_back");
    group.sample_size(10);
    let model = || {
        Arc::new(Paced {
            first: Duration::from_millis(1),
            every: Duration::from_millis(1),
            words: 120,
        })
    };
    let noop = || Pass {
        points: vec![GuardPoint::Output],
        mode: GuardMode::Blocking,
        delay: Duration::ZERO,
    };
    let mut cases = vec![("no_guard", Agent::builder(model()).build())];
    for (name, checkpoint) in [
        ("sentence", Checkpoint::Sentence),
        ("paragraph", Checkpoint::Paragraph),
        ("chars_200", Checkpoint::Chars(200)),
        ("ms_100", Checkpoint::Every(Duration::from_millis(100))),
        ("end", Checkpoint::End),
    ] {
        cases.push((
            name,
            Agent::builder(model())
                .guardrails(rails(noop(), checkpoint))
                .build(),
        ));
    }
    time_first_text(group, rt, cases);
}

fn bench_guardrails(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return;
    };
    bench_first_token(c, &rt);
    bench_per_token(c, &rt);
    bench_hold_back(c, &rt);
}

criterion_group!(benches, bench_guardrails);
criterion_main!(benches);
