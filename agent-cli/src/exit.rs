//! Exit statuses, one per way a run can end.

use loopwright::{ExitReason, Outcome};

/// The model answered.
pub const OK: u8 = 0;
/// Bad usage or configuration (clap also exits 2 on usage errors).
pub const USAGE: u8 = 2;
/// The model failed, after all fallbacks.
pub const MODEL_ERROR: u8 = 3;
/// The conversation no longer fits the context window.
pub const TOKEN_LIMIT: u8 = 4;
/// The step limit was reached: after `--max-steps` steps with tool calls the
/// model was asked to conclude without tools (its answer, if any, was
/// printed).
pub const MAX_STEPS: u8 = 5;
/// The final answer never matched the output schema (after the retries).
pub const OUTPUT_INVALID: u8 = 6;
/// The `--plan` was rejected (no tool ran).
pub const PLAN_REJECTED: u8 = 7;
/// The run paused on questions (`--approve defer`): it is stored, and
/// `loopwright resume RUN_ID` continues it. Not an error.
pub const AWAITING_APPROVAL: u8 = 9;
/// The run tree's budget of model calls or tokens was used up
/// (`--max-model-calls`, `--max-tree-tokens`).
pub const BUDGET_EXHAUSTED: u8 = 8;
/// A guardrail stopped the run (`--guardrail`, or the configuration's
/// `guardrails`): what it blocked was never printed.
pub const TRIPPED: u8 = 10;
/// The run's deadline (`--timeout`) passed: it was cancelled (as GNU
/// `timeout` exits).
pub const TIMED_OUT: u8 = 124;
/// Interrupted (Ctrl-C): the run was cancelled and the servers closed.
pub const INTERRUPTED: u8 = 130;

/// Terminated (SIGTERM): cancelled and cleaned up like an interrupt.
pub const TERMINATED: u8 = 143;

/// The status for how a run ended.
pub fn for_exit(exit: ExitReason) -> u8 {
    match exit {
        ExitReason::Completed | ExitReason::Stopped => OK,
        ExitReason::MaxSteps => MAX_STEPS,
        ExitReason::TokenLimit => TOKEN_LIMIT,
        ExitReason::Cancelled => INTERRUPTED,
        ExitReason::OutputInvalid => OUTPUT_INVALID,
        ExitReason::PlanRejected => PLAN_REJECTED,
        ExitReason::BudgetExhausted => BUDGET_EXHAUSTED,
        ExitReason::AwaitingApproval => AWAITING_APPROVAL,
        ExitReason::Tripped => TRIPPED,
        _ => MODEL_ERROR,
    }
}

/// The status for a run's result: as [`for_exit`], but a run cancelled by
/// its own deadline is [`TIMED_OUT`], not interrupted.
pub fn for_result(result: &loopwright::AgentResult) -> u8 {
    match &result.outcome {
        Outcome::Cancelled { reason: Some(_) } => TIMED_OUT,
        outcome => for_exit(outcome.exit()),
    }
}

/// Why a run that did not complete ended, for stderr: every failing exit
/// says why (a model error's message is printed as its `finished` event
/// arrives, so it is not repeated here).
pub fn explain(result: &loopwright::AgentResult) -> Option<String> {
    let steps = result.steps.len();
    let why = match &result.outcome {
        // A pause is said by the notice that names the run and its calls.
        // The `finished` event already said which limit stopped a run, and
        // why.
        Outcome::Answered
        | Outcome::Stopped
        | Outcome::ModelFailed { .. }
        | Outcome::AwaitingApproval { .. }
        | Outcome::BudgetExhausted { .. }
        | Outcome::Cancelled { reason: Some(_) } => {
            return None;
        }
        Outcome::TokenLimit => format!(
            "the conversation no longer fits the model's context window (after {steps} step(s)), and compaction is \
             off or could not make room; start a new conversation, give a shorter prompt, or use a model with a \
             larger window"
        ),
        Outcome::MaxSteps => format!(
            "the step limit was reached ({steps} steps); the model was asked to conclude without tools (raise \
             --max-steps to let it go on)"
        ),
        Outcome::OutputInvalid { error } => format!("the answer never matched the output schema: {error}"),
        Outcome::PlanRejected { reason } => format!("the plan was rejected: {reason}"),
        Outcome::Tripped { trip } => trip.to_string(),
        Outcome::Cancelled { reason: None } => "the run was cancelled".to_owned(),
        other => format!("the run ended: {:?}", other.exit()),
    };
    Some(format!("loopwright: {why} (exit status {})", for_result(result)))
}

/// An error that ends the command with a status.
#[derive(Debug)]
pub struct Failure {
    /// The exit status.
    pub status: u8,
    /// What to print on stderr.
    pub message: String,
}

impl Failure {
    /// A usage or configuration error (status 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            status: USAGE,
            message: message.into(),
        }
    }
}
