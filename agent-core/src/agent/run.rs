//! [`AgentRun`]: the handle of a running conversation, and how it ends.
//!
//! Invariants: the run's result is sent before its `finished` event, so once
//! that event (or the end of the stream) was seen the result is there to
//! take; dropping the handle cancels the run.

use std::fmt;
use std::future::IntoFuture;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::events::AgentEvent;
use super::outcome::{AgentResult, Outcome};
use super::state::RunState;
use crate::output::OutputError;
use loopwright_types::model_error::ModelError;

/// A running conversation: a stream of [`AgentEvent`]s ending with
/// [`AgentEvent::Finished`]; awaiting it (the one way to end a run) gives
/// the result, `Ok` when the model answered, else the [`RunError`] of how
/// it ended. Awaiting without reading the events skips them.
///
/// Dropping it cancels the run.
///
/// ```no_run
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), loopwright_core::RunError> {
/// let answer = agent.run("What is 2 + 2?").await?; // Err if the model failed
/// println!("{}", answer.text);
/// # Ok(()) }
/// ```
///
/// A run started and dropped on the spot is a mistake the compiler reports
/// (`#[must_use]`):
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # fn demo(agent: loopwright_core::Agent) {
/// agent.run("Clean up the logs"); // dropped at once: cancelled
/// # }
/// ```
///
/// ```
/// #![deny(unused_must_use)]
/// # fn demo(agent: loopwright_core::Agent) {
/// let _run = agent.run("Clean up the logs"); // kept: compiles
/// # }
/// ```
#[must_use = "a run is cancelled when dropped: read its events, or await it"]
pub struct AgentRun {
    pub(super) events: mpsc::Receiver<AgentEvent>,
    pub(super) result: oneshot::Receiver<AgentResult>,
    pub(super) cancel: CancellationToken,
    pub(super) _guard: DropGuard,
}

/// The run's task ended without a result (it panicked or was aborted).
///
/// ```
/// assert_eq!(loopwright_core::agent::RunAborted.to_string(), "the agent run ended without a result (its task panicked or was aborted)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the agent run ended without a result (its task panicked or was aborted)")]
pub struct RunAborted;

/// How a run that did not answer ended: one variant per
/// [`Outcome`](crate::Outcome) but an answer, each carrying the run's
/// result ([`RunError::result`]): the messages to keep (every tool call
/// with its result), the text so far, the usage, the steps.
///
/// ```
/// # async fn demo(agent: loopwright_core::Agent) {
/// use loopwright_core::RunError;
/// match agent.run("Summarise the logs").await {
///     Ok(result) => println!("{}", result.text),
///     Err(RunError::AwaitingApproval { state, .. }) => println!("paused: {}", state.to_json()),
///     Err(RunError::Model { error, .. }) if error.kind() == "authentication" => eprintln!("check the API key"),
///     Err(e) => {
///         eprintln!("{e}");
///         if let Some(partial) = e.result() {
///             eprintln!("{} steps done, text so far: {}", partial.steps.len(), partial.text);
///         }
///     }
/// }
/// # }
/// ```
#[non_exhaustive]
pub enum RunError {
    /// A model call failed (after every fallback).
    Model {
        /// The model's error.
        error: ModelError,
        /// What the run did before.
        result: Box<AgentResult>,
    },
    /// The run paused on questions to a person: resume it with `state`
    /// ([`Agent::resume`](crate::Agent::resume)).
    AwaitingApproval {
        /// What to resume (also in the result's outcome).
        state: Box<RunState>,
        /// What the run did before (no messages: they are in the state).
        result: Box<AgentResult>,
    },
    /// The run tree's budget of model calls or tokens was used up.
    BudgetExhausted {
        /// Which limit, with its figures.
        reason: String,
        /// What the run did before.
        result: Box<AgentResult>,
    },
    /// The conversation no longer fits the model's context window.
    TokenLimit {
        /// What the run did before (with the concluding answer, if the
        /// budget allowed one).
        result: Box<AgentResult>,
    },
    /// A `stop_when` hook stopped the run after a step.
    Stopped {
        /// What the run did before.
        result: Box<AgentResult>,
    },
    /// The run was cancelled (by the application, or by its own deadline:
    /// the outcome's `reason`).
    Cancelled {
        /// What the run did before.
        result: Box<AgentResult>,
    },
    /// The final answer never matched the output schema.
    Output {
        /// The last validation error and the raw answer.
        error: OutputError,
        /// What the run did before (its text is the raw answer).
        result: Box<AgentResult>,
    },
    /// The pre-flight plan was rejected; no tool ran.
    PlanRejected {
        /// Why.
        reason: String,
        /// What the run did before (the plan call's usage).
        result: Box<AgentResult>,
    },
    /// A guardrail stopped the run.
    Tripped {
        /// Which guard, where, and why.
        trip: crate::guardrail::Trip,
        /// What the run did before (its text: what was shown before the
        /// trip).
        result: Box<AgentResult>,
    },
    /// The run's task ended without a result.
    Aborted(RunAborted),
}

impl fmt::Display for RunError {
    /// One line saying why; for `Model`, the model's error (its own cause
    /// is this error's [`source`](std::error::Error::source), so a report
    /// that walks the chain says each thing once).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Model { error, .. } => write!(f, "the model failed: {error}"),
            Self::AwaitingApproval { state, .. } => write!(
                f,
                "the run is waiting for a decision on {} call(s) (state {})",
                state.pending().len(),
                state.id
            ),
            Self::BudgetExhausted { reason, .. } => write!(f, "the run's budget ran out: {reason}"),
            Self::TokenLimit { .. } => {
                f.write_str("the conversation no longer fits the model's context window")
            }
            Self::Stopped { .. } => f.write_str("a stop_when hook stopped the run"),
            Self::Cancelled { result } => match &result.outcome {
                Outcome::Cancelled { reason: Some(reason) } => write!(f, "the run was cancelled: {reason}"),
                _ => f.write_str("the run was cancelled"),
            },
            Self::Output { error, .. } => fmt::Display::fmt(error, f),
            Self::PlanRejected { reason, .. } => write!(f, "the plan was rejected: {reason}"),
            Self::Tripped { trip, .. } => fmt::Display::fmt(trip, f),
            Self::Aborted(aborted) => fmt::Display::fmt(aborted, f),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Model { error, .. } => std::error::Error::source(error),
            _ => None,
        }
    }
}

impl From<RunAborted> for RunError {
    fn from(aborted: RunAborted) -> Self {
        Self::Aborted(aborted)
    }
}

impl RunError {
    /// The result, for every kind but `Aborted`.
    pub fn result(&self) -> Option<&AgentResult> {
        match self {
            Self::Model { result, .. }
            | Self::AwaitingApproval { result, .. }
            | Self::BudgetExhausted { result, .. }
            | Self::TokenLimit { result }
            | Self::Stopped { result }
            | Self::Cancelled { result }
            | Self::Output { result, .. }
            | Self::PlanRejected { result, .. }
            | Self::Tripped { result, .. } => Some(result),
            Self::Aborted(_) => None,
        }
    }

    /// The result, owned: however the run ended, for every kind but
    /// `Aborted` (`run.await.or_else(RunError::into_result)` reads a run
    /// whatever its outcome).
    pub fn into_result(self) -> Result<AgentResult, RunAborted> {
        match self {
            Self::Model { result, .. }
            | Self::AwaitingApproval { result, .. }
            | Self::BudgetExhausted { result, .. }
            | Self::TokenLimit { result }
            | Self::Stopped { result }
            | Self::Cancelled { result }
            | Self::Output { result, .. }
            | Self::PlanRejected { result, .. }
            | Self::Tripped { result, .. } => Ok(*result),
            Self::Aborted(aborted) => Err(aborted),
        }
    }

    /// The model's error, for `Model` (its kind, status, message).
    pub fn model_error(&self) -> Option<&ModelError> {
        match self {
            Self::Model { error, .. } => Some(error),
            _ => None,
        }
    }

    /// `Ok` for a run that answered ([`Outcome::answered`]), else the
    /// error of its outcome, carrying the result.
    pub(crate) fn check(result: AgentResult) -> Result<AgentResult, RunError> {
        let result = Box::new(result);
        Err(match result.outcome.clone() {
            Outcome::Answered | Outcome::MaxSteps => return Ok(*result),
            Outcome::ModelFailed { error } => Self::Model { error, result },
            Outcome::AwaitingApproval { state } => Self::AwaitingApproval { state, result },
            Outcome::BudgetExhausted { reason } => Self::BudgetExhausted { reason, result },
            Outcome::TokenLimit => Self::TokenLimit { result },
            Outcome::Stopped => Self::Stopped { result },
            Outcome::Cancelled { .. } => Self::Cancelled { result },
            Outcome::OutputInvalid { error } => Self::Output { error, result },
            Outcome::PlanRejected { reason } => Self::PlanRejected { reason, result },
            Outcome::Tripped { trip } => Self::Tripped { trip, result },
        })
    }
}

impl fmt::Debug for RunError {
    /// Short: the kind, the error and the size of the partial result (not
    /// every message), so `main() -> Result<_, RunError>` prints one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = match self {
            Self::Model { error, .. } => {
                let mut s = f.debug_struct("RunError::Model");
                s.field("error", error);
                s
            }
            Self::AwaitingApproval { state, .. } => {
                let mut s = f.debug_struct("RunError::AwaitingApproval");
                s.field("state", &state.id);
                s
            }
            Self::BudgetExhausted { reason, .. } => {
                let mut s = f.debug_struct("RunError::BudgetExhausted");
                s.field("reason", reason);
                s
            }
            Self::TokenLimit { .. } => f.debug_struct("RunError::TokenLimit"),
            Self::Stopped { .. } => f.debug_struct("RunError::Stopped"),
            Self::Cancelled { .. } => f.debug_struct("RunError::Cancelled"),
            Self::Output { error, .. } => {
                let mut s = f.debug_struct("RunError::Output");
                s.field("error", &error.message);
                s
            }
            Self::PlanRejected { reason, .. } => {
                let mut s = f.debug_struct("RunError::PlanRejected");
                s.field("reason", reason);
                s
            }
            Self::Tripped { trip, .. } => {
                let mut s = f.debug_struct("RunError::Tripped");
                s.field("guard", &trip.guard).field("point", &trip.point);
                s
            }
            Self::Aborted(_) => return f.write_str("RunError::Aborted"),
        };
        if let Some(r) = self.result() {
            s.field("steps", &r.steps.len())
                .field("messages", &r.messages.len())
                .field("text", &r.text);
        }
        s.finish()
    }
}

impl AgentRun {
    /// Cancel the run: the model request and every running tool are
    /// cancelled; the run then finishes with [`ExitReason::Cancelled`](crate::ExitReason::Cancelled).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels the run (for another task, a signal handler...).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Drain the events not read yet and return the result however the run
    /// ended; `Err` only when the run's task ended without one. (For
    /// applications, `run.await` is the one way to end a run.)
    pub(crate) async fn into_outcome(mut self) -> Result<AgentResult, RunAborted> {
        while self.events.recv().await.is_some() {}
        (&mut self.result).await.map_err(|_| RunAborted)
    }

    /// The result, once the `finished` event was sent (`None` before, or
    /// when it was taken).
    pub(crate) fn take_finished(&mut self) -> Option<Result<AgentResult, RunAborted>> {
        match self.result.try_recv() {
            Ok(result) => Some(Ok(result)),
            Err(oneshot::error::TryRecvError::Closed) => Some(Err(RunAborted)),
            Err(oneshot::error::TryRecvError::Empty) => None,
        }
    }
}

impl IntoFuture for AgentRun {
    type Output = Result<AgentResult, RunError>;
    type IntoFuture = BoxFuture<'static, Self::Output>;

    /// Drain the events not read yet and return the result: `Ok` when the
    /// model answered ([`Outcome::answered`]), else the [`RunError`] of the
    /// outcome, carrying the result.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { RunError::check(self.into_outcome().await?) })
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.events.poll_recv(cx)
    }
}
