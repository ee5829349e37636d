//! Exit statuses, one per way a run can end.

use loopwright::ExitReason;

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
        _ => MODEL_ERROR,
    }
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
