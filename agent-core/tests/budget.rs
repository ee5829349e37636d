//! The context-window budget guard: a huge tool result is replaced and the
//! run concludes; a request that cannot fit ends with `token_limit`; metrics
//! are recorded (a test recorder).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::recorded::{metric, snapshot};
use common::*;
use loopwright_core::accounting::AccountingEntry;
use loopwright_core::agent::CONCLUDE_INSTRUCTION;
use loopwright_core::budget::{BUDGET_EXCEEDED_RESULT, TokenCounter};
use loopwright_core::{AgentBuilder, AgentEvent, ContextBudget, ExitReason, ToolChoice, ToolOutput};
use loopwright_testing::ScriptedStep;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

#[tokio::test]
async fn a_huge_tool_result_is_replaced_and_the_run_concludes() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let big = TestTool::new("dump", object_schema(), |_, _| async {
        Ok(ToolOutput::text("word ".repeat(8_000)))
    });
    let small = TestTool::new("peek", object_schema(), |_, _| async {
        Ok(ToolOutput::text("small"))
    });
    let (events, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "peek", "{}"), ("c2", "dump", "{}")]),
            ScriptedStep::text("Concluding with what fits."),
        ],
        tools(vec![big, small]),
        // 4,000 tokens of window: the 40,000-character result (10,000 tokens) cannot fit.
        |b: AgentBuilder| b.budget(ContextBudget::new(4_000).max_output_tokens(500)),
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (false, "small".to_string()));
    assert_eq!(results["c2"], (true, BUDGET_EXCEEDED_RESULT.to_string()));
    assert_eq!(result.exit(), ExitReason::TokenLimit);
    assert_eq!(result.text, "Concluding with what fits.");
    let last = model.requests().pop().unwrap();
    assert_eq!(last.tool_choice, ToolChoice::None);
    assert_eq!(last.messages.last().unwrap().text(), CONCLUDE_INSTRUCTION);
    let entry = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Accounting {
                entry: AccountingEntry::Tool(t),
            } if t.tool == "dump" => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(entry.details.as_deref(), Some("budget_exceeded"));
    let figures = entry.budget.unwrap();
    assert_eq!(figures.limit, 4_000 - 256 - 500);
    assert!(figures.projected > figures.limit && figures.remaining < figures.limit);
    let snap = snapshot(&recorder);
    assert_eq!(
        metric(
            &snap,
            "loopwright_context_guard_events_total",
            ("outcome", "result_replaced")
        ),
        Some(&DebugValue::Counter(1))
    );
    assert!(
        metric(
            &snap,
            "loopwright_context_guard_remaining_tokens",
            ("model", "scripted-test-model")
        )
        .is_some()
    );
    assert_eq!(
        metric(&snap, "loopwright_tool_calls_total", ("tool", "dump")),
        Some(&DebugValue::Counter(1))
    );
    assert_eq!(
        metric(&snap, "loopwright_model_calls_total", ("status", "ok")),
        Some(&DebugValue::Counter(2))
    );
}

#[tokio::test]
async fn a_request_that_cannot_fit_ends_with_token_limit() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let (events, result, model) = run(
        vec![ScriptedStep::text("never asked")],
        tools(vec![]),
        |b: AgentBuilder| b.system("x".repeat(10_000)).budget(ContextBudget::new(1_000)),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::TokenLimit);
    assert!(
        model.requests().is_empty(),
        "the model is not called with a request that cannot fit"
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Finished {
            exit: ExitReason::TokenLimit,
            steps: 0,
            ..
        })
    ));
    let snap = snapshot(&recorder);
    assert_eq!(
        metric(
            &snap,
            "loopwright_context_guard_events_total",
            ("outcome", "token_limit")
        ),
        Some(&DebugValue::Counter(1))
    );
}

#[tokio::test]
async fn within_budget_nothing_changes() {
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "peek", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![TestTool::new("peek", object_schema(), |_, _| async {
            Ok(ToolOutput::text("small"))
        })]),
        |b: AgentBuilder| b.budget(ContextBudget::new(128_000)),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(results_by_id(&result)["c1"], (false, "small".to_string()));
}

/// Counts characters, and how many characters it was asked to count.
#[derive(Debug, Default)]
struct Tally(std::sync::atomic::AtomicUsize);

impl TokenCounter for Tally {
    fn count(&self, text: &str) -> u64 {
        self.0.fetch_add(text.len(), std::sync::atomic::Ordering::SeqCst);
        text.len() as u64 / 4
    }
}

#[tokio::test]
async fn the_next_turn_counts_only_the_new_messages() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let tally = Arc::new(Tally::default());
    let budget = ContextBudget::new(1_000_000).counter(tally.clone());
    let history: Vec<loopwright_core::Message> = (0..20)
        .map(|i| loopwright_core::Message::user(format!("message {i}: {}", "x".repeat(1_000))))
        .collect();
    let history_chars: usize = history.iter().map(|m| m.text().len()).sum();
    let turn = |input: Vec<loopwright_core::Message>| {
        let budget = budget.clone();
        async move {
            let model = loopwright_testing::ScriptedModel::new(vec![ScriptedStep::text("ok")]);
            let agent = loopwright_core::Agent::builder(Arc::new(model))
                .budget(budget)
                .build();
            let _answered = agent.run(input).await.unwrap();
        }
    };
    turn(history.clone()).await;
    let first = tally.0.load(Ordering::SeqCst);
    assert!(
        first >= history_chars,
        "the first turn counted {first} of {history_chars} characters"
    );
    // The next turn: the same history plus one new message.
    let mut next = history.clone();
    next.push(loopwright_core::Message::user("one more question"));
    turn(next).await;
    let second = tally.0.load(Ordering::SeqCst) - first;
    assert!(
        second < 1_000,
        "the second turn recounted the history ({second} characters)"
    );
}
