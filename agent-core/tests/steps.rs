//! The step limit: `max_steps(n)` lets `n` model calls use tools, then one
//! concluding call without tools answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use loopwright_core::agent::CONCLUDE_INSTRUCTION;
use loopwright_core::{AgentBuilder, AgentEvent, ExitReason, ToolChoice};
use loopwright_testing::ScriptedStep;

/// `max_steps(n)`: a model that calls a tool on every step gets `n` steps
/// with tools, whose calls all run, then one concluding call without tools
/// that is told to answer: `n + 1` requests, exit `max_steps`.
async fn step_limit(n: u32) {
    let (tool, ran) = counted_tool("look", "seen");
    let ids: Vec<String> = (1..=n).map(|i| format!("c{i}")).collect();
    let mut script: Vec<ScriptedStep> = ids
        .iter()
        .map(|id| ScriptedStep::tool_calls(&[(id.as_str(), "look", "{}")]))
        .collect();
    script.push(ScriptedStep::text("Here is what I found."));
    let (events, result, model) = run(script, tools(vec![tool]), |b: AgentBuilder| b.max_steps(n)).await;
    assert_eq!(result.exit(), ExitReason::MaxSteps, "max_steps({n})");
    assert_eq!(result.steps.len() as u32, n + 1);
    assert_eq!(result.text, "Here is what I found.");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        n as usize,
        "every tool step's call ran"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), n as usize + 1);
    for (i, request) in requests[..n as usize].iter().enumerate() {
        assert_eq!(request.tool_choice, ToolChoice::Auto, "step {}", i + 1);
        assert!(request.messages.iter().all(|m| m.text() != CONCLUDE_INSTRUCTION));
    }
    let last = &requests[n as usize];
    assert_eq!(last.tool_choice, ToolChoice::None);
    assert_eq!(last.messages.last().unwrap().text(), CONCLUDE_INSTRUCTION);
    // The instruction is for the model only; it is not part of the history.
    assert!(result.messages.iter().all(|m| m.text() != CONCLUDE_INSTRUCTION));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Finished { exit: ExitReason::MaxSteps, steps, .. }) if *steps == n + 1
    ));
}

#[tokio::test]
async fn max_steps_1_gives_one_step_with_tools_then_a_concluding_call() {
    step_limit(1).await;
}

#[tokio::test]
async fn max_steps_2_gives_two_steps_with_tools_then_a_concluding_call() {
    step_limit(2).await;
}

#[tokio::test]
async fn max_steps_n_gives_n_steps_with_tools_then_a_concluding_call() {
    step_limit(7).await;
}

#[tokio::test]
async fn an_answer_within_the_step_limit_completes_without_the_conclude_instruction() {
    let (_, result, model) = run(
        vec![ScriptedStep::text("Done.")],
        tools(vec![]),
        |b: AgentBuilder| b.max_steps(1),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool_choice, ToolChoice::Auto);
    assert!(
        requests[0]
            .messages
            .iter()
            .all(|m| m.text() != CONCLUDE_INSTRUCTION)
    );
}

#[tokio::test]
async fn tool_calls_on_the_concluding_step_are_answered_but_not_run() {
    let (tool, ran) = counted_tool("look", "seen");
    let hooked = Arc::new(AtomicUsize::new(0));
    let h = hooked.clone();
    let options = |b: AgentBuilder| {
        b.max_steps(1).on_tool_result(move |_, output| {
            h.fetch_add(1, Ordering::SeqCst);
            output
        })
    };
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "look", "{}")]),
            // The concluding call, ignoring `tool_choice: none`.
            ScriptedStep::tool_calls(&[("c2", "look", "{}")]),
        ],
        tools(vec![tool]),
        options,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::MaxSteps);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let results = results_by_id(&result);
    assert!(!results["c1"].0);
    assert!(results["c2"].0, "the concluding step's call gets an error result");
    // Like every result: through the hook, with its event and accounting entry.
    assert_eq!(hooked.load(Ordering::SeqCst), 2);
    let not_run = events.iter().find_map(|e| match e {
        AgentEvent::Accounting {
            entry: loopwright_core::accounting::AccountingEntry::Tool(t),
        } if t.details.as_deref() == Some("not_run") => Some(t.clone()),
        _ => None,
    });
    assert!(not_run.is_some(), "no accounting entry for the refused call");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolResult { call_id, is_error: true, .. } if call_id == "c2"))
    );
}
