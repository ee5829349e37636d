//! Compaction: a long run that overflowed its window completes; each
//! strategy keeps the invariants (every call answered once, whole steps,
//! the system prompt and the latest user message kept); the `compacted`
//! event, the summary's accounting, the conversation's compacted form, a
//! paused run's state, and sub-agents.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::accounting::AccountingEntry;
use loopwright_core::compaction::clear::CLEARED_NOTE;
use loopwright_core::compaction::summarize::{SUMMARY_HEADER, SUMMARY_SYSTEM};
use loopwright_core::compaction::{Compaction, CompactionStrategy};
use loopwright_core::history::check_history;
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, Approvals, ContextBudget, Conversation, ExitReason, LanguageModel,
    Message, ModelError, Role, ToolOutput, model::ModelRequest, model::ModelStream, tool::ToolAnnotations,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

/// Steps of the long run.
const LONG_RUN_STEPS: usize = 200;

/// A tool answering 40 lines (about 700 tokens) each call.
fn reader() -> TestTool {
    let mut tool = TestTool::new("read", object_schema(), |input, _| async move {
        let n = input["n"].as_u64().unwrap_or(0);
        let text: String = (1..=40)
            .map(|i| format!("file {n}, line {i}: some content here\n"))
            .collect();
        Ok(ToolOutput::text(text))
    });
    tool.set_annotations(ToolAnnotations::default().read_only(true));
    tool
}

/// `n` steps each reading once, then an answer.
fn reading_steps(n: usize) -> Vec<ScriptedStep> {
    let mut steps: Vec<ScriptedStep> = (0..n)
        .map(|i| {
            let input = format!(r#"{{"n": {i}}}"#);
            ScriptedStep::tool_calls(&[(&format!("c{i}"), "read", &input)])
        })
        .collect();
    steps.push(ScriptedStep::text("All files read."));
    steps
}

/// A window of 8,000 tokens: some fifteen results fit, not two hundred.
fn small_budget() -> ContextBudget {
    ContextBudget::new(8_000).max_output_tokens(1_000)
}

/// A window of 4,000 tokens: some eight results fit.
fn tiny_budget() -> ContextBudget {
    ContextBudget::new(4_000).max_output_tokens(500)
}

fn summaries(n: usize) -> ScriptedModel {
    ScriptedModel::new(
        (0..n)
            .map(|i| {
                ScriptedStep::text(format!(
                    "Summary {i}: files read so far, nothing left but the rest."
                ))
            })
            .collect(),
    )
}

fn compacted_events(events: &[AgentEvent]) -> Vec<(String, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Compacted {
                strategy,
                tokens_before,
                tokens_after,
            } => Some((strategy.clone(), *tokens_before, *tokens_after)),
            _ => None,
        })
        .collect()
}

/// A finished history is valid: a next user message could follow it.
fn assert_valid(history: &[Message]) {
    let mut next = history.to_vec();
    next.push(Message::user("next"));
    assert_eq!(check_history(&next), Ok(()));
}

/// Every request kept the invariants: a valid history, the system prompt,
/// the latest user message.
fn assert_requests_whole(requests: &[ModelRequest], system: &str) {
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(check_history(&request.messages), Ok(()), "request {i}");
        assert_eq!(request.system.as_deref(), Some(system), "request {i}");
        assert_eq!(request.messages[0], Message::user("do the task"), "request {i}");
    }
}

#[tokio::test]
async fn a_200_step_run_that_overflowed_its_window_completes_with_compaction() {
    // Without compaction the run stops at the window.
    let options = |b: AgentBuilder| {
        b.system("Read every file.")
            .max_steps(LONG_RUN_STEPS as u32 + 1)
            .budget(small_budget())
    };
    let (_, stopped, _) = run(reading_steps(LONG_RUN_STEPS), tools(vec![reader()]), options).await;
    assert_eq!(stopped.exit(), ExitReason::TokenLimit);
    assert!(stopped.steps.len() < 30, "{}", stopped.steps.len());

    // With it, the same run goes to the end.
    let summarizer = summaries(LONG_RUN_STEPS);
    let compaction = Compaction::new(vec![
        CompactionStrategy::clear_tool_results(),
        CompactionStrategy::summarize_with(Arc::new(summarizer.clone())),
    ]);
    let (events, result, model) = run(
        reading_steps(LONG_RUN_STEPS),
        tools(vec![reader()]),
        |b: AgentBuilder| options(b).compaction(compaction),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed, "{:?}", result.outcome);
    assert_eq!(result.steps.len(), LONG_RUN_STEPS + 1);
    assert_eq!(result.text, "All files read.");
    // Every call kept its result, the requests were whole and within the window.
    let requests = model.requests();
    assert_requests_whole(&requests, "Read every file.");
    let compactions = compacted_events(&events);
    assert!(
        compactions.iter().any(|c| c.0 == "clear_tool_results"),
        "{compactions:?}"
    );
    assert!(compactions.iter().any(|c| c.0 == "summarize"), "{compactions:?}");
    assert!(compactions.iter().all(|(_, before, after)| after < before));
    // The result holds every message added, and the compacted history.
    assert_eq!(result.messages.len(), 2 * LONG_RUN_STEPS + 1);
    let history = result.history.as_ref().expect("compacted history");
    assert_valid(history);
    assert!(history.len() < result.messages.len());
    assert!(history.iter().any(|m| m.text().starts_with(SUMMARY_HEADER)));
    // The summaries were written from transcripts, without tools.
    let summary_requests = summarizer.requests();
    assert!(!summary_requests.is_empty());
    assert!(
        summary_requests
            .iter()
            .all(|r| r.system.as_deref() == Some(SUMMARY_SYSTEM) && r.tools.is_empty())
    );
}

/// A summary that is larger than the turns it replaces is refused: the
/// turns are kept, a warning says why, and no `compacted` event claims
/// it (11.6k tokens became 125.6k before).
#[tokio::test]
async fn a_summary_larger_than_what_it_replaces_is_refused() {
    let huge = "word ".repeat(20_000);
    let summarizer = ScriptedModel::new((0..40).map(|_| ScriptedStep::text(huge.clone())).collect());
    let compaction = Compaction::new(vec![CompactionStrategy::summarize_with(Arc::new(
        summarizer.clone(),
    ))])
    .keep_turns(1);
    let options = |b: AgentBuilder| {
        b.system("Read every file.")
            .max_steps(40)
            .budget(small_budget())
            .compaction(compaction)
    };
    let (events, result, _) = run(reading_steps(30), tools(vec![reader()]), options).await;
    assert!(!summarizer.requests().is_empty(), "the summary was asked for");
    assert!(
        compacted_events(&events).is_empty(),
        "{:?}",
        compacted_events(&events)
    );
    let warnings: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Warning { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("compaction (summarize) failed") && w.contains("is not smaller")),
        "{warnings:?}"
    );
    // Nothing was replaced: the window ran out instead.
    assert_eq!(result.exit(), ExitReason::TokenLimit);
    assert!(result.history.is_none());
}

/// A run whose history was compacted but still does not fit stops at the
/// window with the compacted history in its result (it was lost before,
/// leaving a result whose messages did not add up to its history).
#[tokio::test]
async fn a_run_compacted_that_still_overflows_keeps_the_compacted_history() {
    // Three reads, the third with an input that alone fills the window:
    // the first compaction (before the fourth step) clears the results,
    // not the model's own calls.
    let mut steps = reading_steps(3);
    let pad = "word ".repeat(6_000);
    let input = serde_json::json!({"n": 2, "pad": pad}).to_string();
    steps[2] = ScriptedStep::tool_calls(&[("c2", "read", &input)]);
    let compaction = Compaction::new(vec![CompactionStrategy::clear_tool_results()]).keep_turns(1);
    let options = |b: AgentBuilder| {
        b.system("Read.")
            .max_steps(30)
            .budget(tiny_budget())
            .compaction(compaction)
    };
    let (events, result, _) = run(steps, tools(vec![reader()]), options).await;
    assert_eq!(result.exit(), ExitReason::TokenLimit, "{:?}", result.outcome);
    assert!(
        !compacted_events(&events).is_empty(),
        "a compaction happened first"
    );
    let history = result.history.as_ref().expect("the compacted history");
    assert_valid(history);
    assert!(history.iter().any(|m| m.content.iter().any(|p| matches!(p,
        loopwright_core::ContentPart::ToolResult(r) if r.text().contains(CLEARED_NOTE)))));
}

#[tokio::test]
async fn clearing_keeps_every_call_and_its_first_lines() {
    let compaction = Compaction::new(vec![CompactionStrategy::clear_tool_results()]).keep_turns(2);
    let options = |b: AgentBuilder| {
        b.system("Read.")
            .max_steps(30)
            .budget(tiny_budget())
            .compaction(compaction)
    };
    let (events, result, model) = run(reading_steps(12), tools(vec![reader()]), options).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let compactions = compacted_events(&events);
    assert!(!compactions.is_empty());
    assert!(compactions.iter().all(|c| c.0 == "clear_tool_results"));
    let last = model.requests().pop().unwrap();
    let results: Vec<String> = last
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.iter().map(|_| m.text()).collect::<String>())
        .collect();
    let texts: Vec<String> = last
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            loopwright_core::ContentPart::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), 12, "{results:?}");
    // Old results: their first lines, then what was cleared; the last two whole.
    assert!(texts[0].starts_with("file 0, line 1:"), "{}", texts[0]);
    assert!(
        texts[0].contains(CLEARED_NOTE) && texts[0].contains("35 more line(s)"),
        "{}",
        texts[0]
    );
    assert!(!texts[11].contains(CLEARED_NOTE) && texts[11].lines().count() == 40);
    assert_eq!(check_history(&last.messages), Ok(()));
    assert_eq!(result.history.unwrap().len(), last.messages.len() + 1);
}

/// The agent's model: the scripted steps, except that a summarising call
/// (told by its system prompt) answers a summary.
struct Summarising {
    steps: ScriptedModel,
    requests: std::sync::Mutex<Vec<ModelRequest>>,
}

#[async_trait::async_trait]
impl LanguageModel for Summarising {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model_id(&self) -> &str {
        "summarising"
    }
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        if request.system.as_deref() == Some(SUMMARY_SYSTEM) {
            let answer = ScriptedModel::new(vec![ScriptedStep::text("Summary: read files 0 to 8.")]);
            return answer.stream(request).await;
        }
        self.steps.stream(request).await
    }
}

#[tokio::test]
async fn the_agents_own_model_summarises_and_the_call_is_accounted() {
    let compaction = Compaction::new(vec![CompactionStrategy::summarize()]).keep_turns(1);
    let model = Arc::new(Summarising {
        steps: ScriptedModel::new(reading_steps(9)),
        requests: std::sync::Mutex::default(),
    });
    let agent = Agent::builder(model.clone())
        .system("Read.")
        .tools(tools(vec![reader()]))
        .budget(tiny_budget())
        .compaction(compaction)
        .build();
    let (events, result) = collect(agent.run("do the task")).await;
    assert_eq!(result.exit(), ExitReason::Completed, "{:?}", result.outcome);
    let requests = model.requests.lock().unwrap().clone();
    let summary_at = requests
        .iter()
        .position(|r| r.system.as_deref() == Some(SUMMARY_SYSTEM))
        .expect("a summarising call");
    let transcript = requests[summary_at].messages[0].text();
    assert!(
        transcript.contains("[called read (c0) with {\"n\":0}]"),
        "{transcript}"
    );
    let after = requests[summary_at..]
        .iter()
        .find(|r| r.system.as_deref() == Some("Read."))
        .unwrap();
    assert_eq!(after.messages[0], Message::user("do the task"));
    assert!(after.messages[1].text().contains("Summary: read files 0 to 8."));
    assert_eq!(after.messages.len(), 2 + 2);
    assert_eq!(compacted_events(&events)[0].0, "summarize");
    // Each summarising call is an accounting entry and its usage counts.
    let llm_entries = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::Accounting {
                    entry: AccountingEntry::Llm(_)
                }
            )
        })
        .count();
    assert_eq!(llm_entries, requests.len());
    assert_eq!(result.usage.input_tokens, Some(10 * requests.len() as u64));
    assert_eq!(result.steps.len() as u32, 10);
}

#[tokio::test]
async fn a_conversation_keeps_the_compacted_form() {
    let summarizer = summaries(10);
    let compaction = Compaction::new(vec![
        CompactionStrategy::clear_tool_results(),
        CompactionStrategy::summarize_with(Arc::new(summarizer)),
    ]);
    let mut steps = reading_steps(14);
    steps.push(ScriptedStep::text("Second answer."));
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(tools(vec![reader()]))
        .budget(tiny_budget())
        .compaction(compaction)
        .build();
    let mut chat = Conversation::new();
    let first = chat.send(&agent, "do the task").await.unwrap();
    assert_eq!(first.exit(), ExitReason::Completed);
    let compacted = first.history.clone().expect("compacted");
    assert_eq!(chat.messages(), compacted.as_slice());
    assert_eq!(chat.turns(), 1);
    let _ = chat.send(&agent, "and now?").await.unwrap();
    let second = model.requests().pop().unwrap();
    assert_eq!(second.messages[..compacted.len()], compacted[..]);
    assert_eq!(second.messages.last().unwrap().text(), "and now?");
    assert_eq!(chat.turns(), 2);
}

#[tokio::test]
async fn a_paused_run_compacted_before_resumes_with_one_result_per_call() {
    let write = counted_tool("write", "written").0;
    let mut steps = reading_steps(10);
    steps.pop();
    steps.push(ScriptedStep::tool_calls(&[("w1", "write", "{}")]));
    steps.push(ScriptedStep::text("Written."));
    let model = ScriptedModel::new(steps);
    let approvals = Approvals::defer();
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(tools(vec![reader(), write]))
        .budget(tiny_budget())
        .compaction(Compaction::new(vec![CompactionStrategy::clear_tool_results()]).keep_turns(2))
        .approvals(approvals)
        .build();
    let (_, paused) = collect(agent.run("do the task")).await;
    assert_eq!(paused.exit(), ExitReason::AwaitingApproval);
    let state = paused.state().cloned().unwrap();
    assert!(state.compacted);
    // The state's history ends with the waiting call; before it, all whole.
    let waiting = state.messages.len() - 1;
    assert_eq!(check_history(&state.messages[..waiting]), Ok(()));
    assert!(state.messages.iter().any(|m| m.content.iter().any(|p| matches!(
        p, loopwright_core::ContentPart::ToolResult(r) if r.text().contains(CLEARED_NOTE)))));
    let state = loopwright_core::RunState::from_json(&state.to_json()).unwrap();
    let (_, done) = collect(agent.resume(state).approve("w1").run().await.unwrap()).await;
    assert_eq!(done.exit(), ExitReason::Completed);
    let history = done
        .history
        .expect("the resumed run carries the compacted history");
    assert_valid(&history);
    assert_eq!(history.last().unwrap().text(), "Written.");
}

#[tokio::test]
async fn a_sub_agent_compacts_its_own_history() {
    let summarizer = summaries(20);
    let child_model = ScriptedModel::new(reading_steps(20));
    let child = Agent::builder(Arc::new(child_model.clone()))
        .name("reader")
        .tools(tools(vec![reader()]))
        .max_steps(40)
        .budget(small_budget())
        .compaction(Compaction::new(vec![
            CompactionStrategy::clear_tool_results(),
            CompactionStrategy::summarize_with(Arc::new(summarizer)),
        ]))
        .build();
    let lead_model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("s1", "agent__reader", r#"{"prompt": "read them all"}"#)]),
        ScriptedStep::text("The reader is done."),
    ]);
    let lead = Agent::builder(Arc::new(lead_model))
        .sub_agent(child.as_tool())
        .build();
    let (events, result) = collect(lead.run("delegate")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let inner: Vec<&AgentEvent> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SubAgent { path, event } if path == "agent/reader" => Some(event.as_ref()),
            _ => None,
        })
        .collect();
    assert!(inner.iter().any(|e| matches!(e, AgentEvent::Compacted { .. })));
    assert!(inner.iter().any(|e| matches!(
        e,
        AgentEvent::Finished {
            exit: ExitReason::Completed,
            ..
        }
    )));
    for request in child_model.requests() {
        assert_eq!(check_history(&request.messages), Ok(()));
    }
}
