//! One outcome, said once: every way a run ends, awaited without reading
//! its events. `Ok` only when the model answered ([`Outcome::Answered`],
//! [`Outcome::MaxSteps`]); each other ending is its own [`RunError`]
//! variant carrying the result, whose outcome agrees. Before the reshape a
//! run that ended `budget_exhausted` or `awaiting_approval` awaited `Ok`
//! with no answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{counted_tool, tools};
use loopwright_core::approval::{ApprovalPolicy, ApprovalTier};
use loopwright_core::output::OutputSpec;
use loopwright_core::preflight::{Plan, PlanDecision, Preflight};
use loopwright_core::{
    Agent, AgentBuilder, AgentResult, Approvals, CancellationToken, ContextBudget, ExitReason, ModelError,
    Outcome, RunError,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

const PLAN: &str = r#"{"steps": [{"description": "Wipe", "tool": "echo", "risk": "high"}]}"#;

/// Build an agent over `steps` and an `echo` tool, run it, await it.
async fn awaited(
    steps: Vec<ScriptedStep>,
    options: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> Result<AgentResult, RunError> {
    let (echo, _) = counted_tool("echo", "echoed");
    let model = ScriptedModel::new(steps);
    let agent = options(Agent::builder(Arc::new(model)).tools(tools(vec![echo]))).build();
    tokio::time::timeout(common::HANG_GUARD, agent.run("go"))
        .await
        .expect("run hung")
}

fn call() -> ScriptedStep {
    ScriptedStep::tool_calls(&[("c1", "echo", "{}")])
}

/// The error's result, whose outcome is `exit`.
fn result_of(error: &RunError, exit: ExitReason) -> &AgentResult {
    let result = error.result().expect("the error carries the result");
    assert_eq!(result.exit(), exit, "{error}");
    assert!(!result.outcome.answered());
    result
}

#[tokio::test]
async fn an_answer_is_ok() {
    let result = awaited(vec![ScriptedStep::text("Hi.")], |b| b).await.unwrap();
    assert!(matches!(result.outcome, Outcome::Answered));
    assert_eq!(result.text, "Hi.");
}

#[tokio::test]
async fn the_concluding_answer_at_the_step_limit_is_ok() {
    let result = awaited(vec![call(), ScriptedStep::text("Enough.")], |b| b.max_steps(1))
        .await
        .unwrap();
    assert!(matches!(result.outcome, Outcome::MaxSteps));
    assert_eq!(result.text, "Enough.");
}

#[tokio::test]
async fn a_stop_hook_is_stopped() {
    let error = awaited(vec![call(), ScriptedStep::text("never")], |b| {
        b.stop_when(|_| true)
    })
    .await
    .unwrap_err();
    assert!(matches!(error, RunError::Stopped { .. }), "{error}");
    assert_eq!(result_of(&error, ExitReason::Stopped).steps.len(), 1);
}

#[tokio::test]
async fn a_deferred_approval_is_awaiting_approval_with_its_state() {
    let approvals = Approvals::defer().policy(ApprovalPolicy::default().default_tier(ApprovalTier::Always));
    let error = awaited(vec![call()], |b| b.approvals(approvals))
        .await
        .unwrap_err();
    let RunError::AwaitingApproval { state, result } = &error else {
        panic!("{error}")
    };
    assert_eq!(state.pending().len(), 1);
    assert!(matches!(result.outcome, Outcome::AwaitingApproval { .. }));
    assert!(result.state().is_some());
    assert_eq!(result.text, "");
}

#[tokio::test]
async fn a_used_up_call_budget_is_budget_exhausted() {
    let error = awaited(vec![call(), call(), ScriptedStep::text("never")], |b| {
        b.max_model_calls(1)
    })
    .await
    .unwrap_err();
    let RunError::BudgetExhausted { reason, .. } = &error else {
        panic!("{error}")
    };
    assert!(reason.contains("model calls"), "{reason}");
    result_of(&error, ExitReason::BudgetExhausted);
}

#[tokio::test]
async fn a_prompt_beyond_the_window_is_token_limit() {
    let error = awaited(vec![ScriptedStep::text("never")], |b| {
        b.system("word ".repeat(5_000))
            .budget(ContextBudget::new(1_000).max_output_tokens(100))
    })
    .await
    .unwrap_err();
    assert!(matches!(error, RunError::TokenLimit { .. }), "{error}");
    result_of(&error, ExitReason::TokenLimit);
}

#[tokio::test]
async fn a_cancelled_run_is_cancelled() {
    let token = CancellationToken::new();
    token.cancel();
    let error = awaited(vec![ScriptedStep::text("never")], |b| b.cancellation(token))
        .await
        .unwrap_err();
    assert!(matches!(error, RunError::Cancelled { .. }), "{error}");
    result_of(&error, ExitReason::Cancelled);
}

#[tokio::test]
async fn an_answer_that_never_matches_the_schema_is_an_output_error() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Verdict {
        ok: bool,
    }
    let wrong = || ScriptedStep::tool_calls(&[("f", "final_answer", r#"{"ok": "yes"}"#)]);
    let error = awaited(vec![wrong(), wrong(), wrong(), wrong()], |b| {
        b.output(OutputSpec::of::<Verdict>()).max_output_retries(1)
    })
    .await
    .unwrap_err();
    let RunError::Output { error: invalid, .. } = &error else {
        panic!("{error}")
    };
    assert!(invalid.to_string().contains("ok"), "{invalid}");
    result_of(&error, ExitReason::OutputInvalid);
}

#[tokio::test]
async fn a_rejected_plan_is_plan_rejected() {
    let preflight = Preflight::with_approver(|_: &Plan| PlanDecision::reject("too risky"));
    let error = awaited(vec![ScriptedStep::text(PLAN), call()], |b| b.preflight(preflight))
        .await
        .unwrap_err();
    let RunError::PlanRejected { reason, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!(reason, "too risky");
    result_of(&error, ExitReason::PlanRejected);
}

#[tokio::test]
async fn a_failed_model_call_is_a_model_error() {
    let error = awaited(
        vec![ScriptedStep::fail(ModelError::authentication(
            Some(401),
            "bad key",
        ))],
        |b| b,
    )
    .await
    .unwrap_err();
    let RunError::Model { error: model, .. } = &error else {
        panic!("{error}")
    };
    assert!(model.to_string().contains("bad key"), "{model}");
    result_of(&error, ExitReason::ModelError);
    // The error gives its result back for a caller that wants it anyway.
    let result = error.into_result().unwrap();
    assert!(matches!(result.outcome, Outcome::ModelFailed { .. }));
}
