//! The run tree's budget (model calls and tokens for a run and all its
//! sub-agents together) and the run deadline, with scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use loopwright_core::{Agent, AgentEvent, AgentTool, ExitReason};
use loopwright_testing::{ScriptedModel, ScriptedStep};

/// A coordinator that fans out to three sub-agents at once, each of which
/// would call a tool and answer: seven model calls without a budget.
fn fan_out(coordinator: &ScriptedModel, worker: &ScriptedModel) -> Agent {
    let worker_agent = Agent::builder(Arc::new(worker.clone())).name("worker").build();
    Agent::builder(Arc::new(coordinator.clone()))
        .name("lead")
        .sub_agent(AgentTool::new(worker_agent).description("Does a part."))
        .build()
}

fn fan_out_script() -> (ScriptedModel, ScriptedModel) {
    let coordinator = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[
            ("c1", "agent__worker", r#"{"prompt": "one"}"#),
            ("c2", "agent__worker", r#"{"prompt": "two"}"#),
            ("c3", "agent__worker", r#"{"prompt": "three"}"#),
        ]),
        ScriptedStep::text("All done."),
    ]);
    let worker = ScriptedModel::new(vec![
        ScriptedStep::text("part done"),
        ScriptedStep::text("part done"),
        ScriptedStep::text("part done"),
    ]);
    (coordinator, worker)
}

#[tokio::test]
async fn the_tree_budget_counts_every_agents_calls_and_stops_the_tree() {
    let (coordinator, worker) = fan_out_script();
    let lead = fan_out(&coordinator, &worker)
        .to_builder()
        .max_model_calls(3)
        .build();
    let (events, result) = collect(lead.run("coordinate")).await;
    // One call of the lead, two of the workers: the third worker is
    // refused, and so is the lead's next call.
    assert_eq!(coordinator.requests().len() + worker.requests().len(), 3);
    assert_eq!(result.exit(), ExitReason::BudgetExhausted);
    let why = stopped_by(&result).unwrap();
    assert!(why.contains("budget of 3 model calls"), "{why}");
    let Some(AgentEvent::Finished { exit, error, .. }) = events.last() else {
        panic!("no finished event")
    };
    assert_eq!(*exit, ExitReason::BudgetExhausted);
    assert_eq!(error.as_deref(), Some(why.as_str()));
    // The refused worker's call got its one error result, saying why.
    let refused = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                is_error: true,
                output,
                ..
            } => Some(format!("{output:?}")),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("budget"), "{refused:?}");
}

#[tokio::test]
async fn without_a_budget_the_fan_out_runs_to_its_end() {
    let (coordinator, worker) = fan_out_script();
    let (_, result) = collect(fan_out(&coordinator, &worker).run("coordinate")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(coordinator.requests().len() + worker.requests().len(), 5);
    assert_eq!(stopped_by(&result), None);
}

#[tokio::test]
async fn the_token_budget_stops_the_next_call() {
    // Each scripted tool-call step reports 10 + 5 tokens.
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "missing_tool", "{}")]),
        ScriptedStep::tool_calls(&[("c2", "missing_tool", "{}")]),
        ScriptedStep::text("never"),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .max_tree_tokens(20)
        .build();
    let (_, result) = collect(agent.run("go")).await;
    assert_eq!(model.requests().len(), 2);
    assert_eq!(result.exit(), ExitReason::BudgetExhausted);
    assert!(stopped_by(&result).unwrap().contains("30 of 20 tokens"));
}

#[tokio::test]
async fn a_deadline_cancels_a_never_ending_stream_and_says_why() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::text("still talking").without_finish().then_hang(),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .run_timeout(Duration::from_millis(200))
        .build();
    let (events, result) = collect(agent.run("go")).await;
    assert_eq!(result.exit(), ExitReason::Cancelled);
    let why = stopped_by(&result).unwrap();
    assert!(why.contains("deadline of 200ms"), "{why}");
    let Some(AgentEvent::Finished { error, .. }) = events.last() else {
        panic!("no finished event")
    };
    assert_eq!(error.as_deref(), Some(why.as_str()));
}

#[tokio::test]
async fn a_run_cancelled_by_the_application_names_no_limit() {
    let model = ScriptedModel::new(vec![ScriptedStep::text("x").without_finish().then_hang()]);
    let agent = Agent::builder(Arc::new(model))
        .run_timeout(Duration::from_secs(600))
        .build();
    let run = agent.run("go");
    run.cancel();
    let (_, result) = collect(run).await;
    assert_eq!(
        (result.exit(), stopped_by(&result)),
        (ExitReason::Cancelled, None)
    );
}
