//! Running the guards of one point on one piece of content.
//!
//! Invariant: the guards run in the order they were added, each on what
//! the ones before it let through; the first that stops, retries or
//! rejects decides, and a verdict a point does not have becomes the one it
//! stands for there (a retry at a tool point is a rejection, a rejection
//! or retry at the input is a block).

use std::time::Duration;

use tokio::time::Instant;

use super::{GuardAction, GuardInput, GuardMode, GuardPoint, GuardVerdict, Guardrails, OnError, Trip};

/// One guard's check, for the `guardrail_checked` event and accounting.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    pub guard: String,
    pub action: GuardAction,
    pub duration: Duration,
    /// Why it failed ([`GuardAction::Error`]).
    pub error: Option<String>,
}

/// What the guards of a point decided.
#[derive(Debug, Clone)]
pub(crate) enum Decision {
    Allow,
    /// Go on with this content.
    Replace(String),
    /// Output: answer again, told this.
    Retry {
        guard: String,
        feedback: String,
    },
    /// A tool call: this is its one result.
    Reject {
        guard: String,
        message: String,
    },
    Block(Trip),
}

/// Run the guards at `input.point` (only those of `mode`, when given) on
/// `input.text`.
pub(crate) async fn run_guards(
    rails: &Guardrails,
    input: GuardInput<'_>,
    mode: Option<GuardMode>,
) -> (Decision, Vec<Checked>) {
    let point = input.point;
    let mut current = input.text.to_owned();
    let mut replaced = false;
    let mut checked = Vec::new();
    let guards = rails
        .at(point)
        .filter(|g| mode.is_none_or(|m| effective_mode(g.mode(), point) == m));
    for guard in guards {
        let name = guard.name().to_owned();
        let started = Instant::now();
        let shown = GuardInput {
            text: &current,
            ..input
        };
        let verdict = tokio::time::timeout(rails.timeout, guard.check(&shown)).await;
        let duration = started.elapsed();
        let verdict = match verdict {
            Ok(Ok(verdict)) => Failure::Verdict(verdict),
            Ok(Err(e)) => failed(rails, e.to_string()),
            Err(_) => failed(rails, format!("it took longer than {:?}", rails.timeout)),
        };
        let (action, error) = match &verdict {
            Failure::Pass(e) => (GuardAction::Error, Some(e.clone())),
            Failure::Verdict(v) => (action_of(v, point), None),
        };
        checked.push(Checked {
            guard: name.clone(),
            action,
            duration,
            error,
        });
        let verdict = match verdict {
            Failure::Pass(_) => continue,
            Failure::Verdict(v) => v,
        };
        match settle(verdict, &name, &input) {
            Ok(None) => {}
            Ok(Some(text)) => {
                current = text;
                replaced = true;
            }
            Err(decision) => return (decision, checked),
        }
    }
    let decision = if replaced {
        Decision::Replace(current)
    } else {
        Decision::Allow
    };
    (decision, checked)
}

/// What one guard's verdict means at its point: go on (with new content
/// for a replacement), or the decision that ends the check.
fn settle(verdict: GuardVerdict, name: &str, input: &GuardInput<'_>) -> Result<Option<String>, Decision> {
    let point = input.point;
    let trip = |message: String, info: serde_json::Value| {
        Decision::Block(Trip {
            guard: name.to_owned(),
            point,
            step: input.step,
            call_id: input.call.map(|c| c.id.clone()),
            message,
            info,
        })
    };
    match (verdict, point) {
        (GuardVerdict::Allow, _) => Ok(None),
        (GuardVerdict::Replace { text }, _) => Ok(Some(text)),
        (GuardVerdict::Block { message, info }, _) => Err(trip(message, info)),
        (GuardVerdict::Retry { feedback }, GuardPoint::Output) => Err(Decision::Retry {
            guard: name.to_owned(),
            feedback,
        }),
        (
            GuardVerdict::Retry { feedback: message } | GuardVerdict::Reject { message },
            GuardPoint::ToolArguments | GuardPoint::ToolResult,
        ) => Err(Decision::Reject {
            guard: name.to_owned(),
            message,
        }),
        (GuardVerdict::Retry { feedback: message } | GuardVerdict::Reject { message }, _) => {
            Err(trip(message, serde_json::Value::Null))
        }
    }
}

/// A guard's mode where it checks: parallel exists at the input only.
fn effective_mode(mode: GuardMode, point: GuardPoint) -> GuardMode {
    if point == GuardPoint::Input {
        mode
    } else {
        GuardMode::Blocking
    }
}

/// A check's verdict, or a failure the run lets pass (fail open).
enum Failure {
    Verdict(GuardVerdict),
    Pass(String),
}

/// A guard that failed: a block (fail closed) or a pass.
fn failed(rails: &Guardrails, error: String) -> Failure {
    match rails.on_error {
        OnError::Block => Failure::Verdict(GuardVerdict::block(format!("the guard failed: {error}"))),
        OnError::Allow => Failure::Pass(error),
    }
}

/// What `verdict` did at `point`.
fn action_of(verdict: &GuardVerdict, point: GuardPoint) -> GuardAction {
    let tool = matches!(point, GuardPoint::ToolArguments | GuardPoint::ToolResult);
    match verdict {
        GuardVerdict::Allow => GuardAction::Allow,
        GuardVerdict::Replace { .. } => GuardAction::Replace,
        GuardVerdict::Block { .. } => GuardAction::Block,
        GuardVerdict::Retry { .. } if point == GuardPoint::Output => GuardAction::Retry,
        GuardVerdict::Retry { .. } | GuardVerdict::Reject { .. } if tool => GuardAction::Reject,
        GuardVerdict::Retry { .. } | GuardVerdict::Reject { .. } => GuardAction::Block,
    }
}
