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

use super::events::{AgentEvent, AgentResult, ExitReason};
use crate::output::OutputError;
use loopwright_types::model_error::ModelError;

/// A running conversation: a stream of [`AgentEvent`]s ending with
/// [`AgentEvent::Finished`]; then [`AgentRun::into_result`]. Awaiting the run
/// itself skips the events and gives the result.
///
/// Dropping it cancels the run.
///
/// ```no_run
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), loopwright_core::RunError> {
/// let answer = agent.prompt("What is 2 + 2?").await?; // Err if the model failed
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
/// agent.prompt("Clean up the logs"); // dropped at once: cancelled
/// # }
/// ```
///
/// ```
/// #![deny(unused_must_use)]
/// # fn demo(agent: loopwright_core::Agent) {
/// let _run = agent.prompt("Clean up the logs"); // kept: compiles
/// # }
/// ```
#[must_use = "a run is cancelled when dropped: read its events, or await it or its `into_result()`"]
pub struct AgentRun {
    pub(super) events: mpsc::Receiver<AgentEvent>,
    pub(super) result: oneshot::Receiver<AgentResult>,
    pub(super) cancel: CancellationToken,
    pub(super) _guard: DropGuard,
}

/// The run's task ended without a result (it panicked or was aborted).
///
/// ```
/// assert_eq!(loopwright_core::RunAborted.to_string(), "the agent run ended without a result (its task panicked or was aborted)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the agent run ended without a result (its task panicked or was aborted)")]
pub struct RunAborted;

/// Why a run did not end with an answer. Each kind but `Aborted` carries
/// what the run did before it ended ([`RunError::result`]): the messages to
/// keep (every tool call with its result), the text so far, the usage.
///
/// ```
/// # async fn demo(agent: loopwright_core::Agent) {
/// match agent.prompt("Summarise the logs").await {
///     Ok(result) => println!("{}", result.text),
///     Err(loopwright_core::RunError::Model { error, .. }) if error.kind() == "authentication" => eprintln!("check the API key"),
///     Err(e) => {
///         eprintln!("{e}");
///         if let Some(partial) = e.result() {
///             eprintln!("{} steps done, text so far: {}", partial.steps, partial.text);
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
    /// The conversation no longer fits the model's context window.
    TokenLimit {
        /// What the run did before (with the concluding answer, if the
        /// budget allowed one).
        result: Box<AgentResult>,
    },
    /// The run was cancelled.
    Cancelled {
        /// What the run did before.
        result: Box<AgentResult>,
    },
    /// The final answer never matched the output schema (or could not be
    /// read as the type asked for).
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
            Self::TokenLimit { .. } => {
                f.write_str("the conversation no longer fits the model's context window")
            }
            Self::Cancelled { .. } => f.write_str("the run was cancelled"),
            Self::Output { error, .. } => fmt::Display::fmt(error, f),
            Self::PlanRejected { reason, .. } => write!(f, "the plan was rejected: {reason}"),
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
    /// The partial result, for every kind but `Aborted`.
    pub fn result(&self) -> Option<&AgentResult> {
        match self {
            Self::Model { result, .. }
            | Self::TokenLimit { result }
            | Self::Cancelled { result }
            | Self::Output { result, .. }
            | Self::PlanRejected { result, .. } => Some(result),
            Self::Aborted(_) => None,
        }
    }

    /// The partial result, owned.
    pub fn into_result(self) -> Option<AgentResult> {
        match self {
            Self::Model { result, .. }
            | Self::TokenLimit { result }
            | Self::Cancelled { result }
            | Self::Output { result, .. }
            | Self::PlanRejected { result, .. } => Some(*result),
            Self::Aborted(_) => None,
        }
    }

    /// The model's error, for `Model` (its kind, status, message).
    pub fn model_error(&self) -> Option<&ModelError> {
        match self {
            Self::Model { error, .. } => Some(error),
            _ => None,
        }
    }

    /// `Ok` for a run that answered (completed, stopped by `stop_when`, or
    /// concluded at the step limit), else the error carrying the result.
    ///
    /// ```
    /// # fn demo(result: loopwright_core::AgentResult) -> Result<(), loopwright_core::RunError> {
    /// let answered = loopwright_core::RunError::check(result)?;
    /// # let _ = answered; Ok(()) }
    /// ```
    pub fn check(result: AgentResult) -> Result<AgentResult, RunError> {
        match result.exit {
            ExitReason::ModelError => {
                let error = result
                    .error
                    .clone()
                    .unwrap_or_else(|| ModelError::server(None, "the model failed"));
                Err(Self::Model {
                    error,
                    result: Box::new(result),
                })
            }
            ExitReason::TokenLimit => Err(Self::TokenLimit {
                result: Box::new(result),
            }),
            ExitReason::Cancelled => Err(Self::Cancelled {
                result: Box::new(result),
            }),
            ExitReason::OutputInvalid => {
                let error = result
                    .output_error
                    .clone()
                    .unwrap_or_else(|| OutputError::new("the answer did not validate", result.text.clone()));
                Err(Self::Output {
                    error,
                    result: Box::new(result),
                })
            }
            ExitReason::PlanRejected => Err(Self::PlanRejected {
                reason: result.plan_rejection.clone().unwrap_or_default(),
                result: Box::new(result),
            }),
            _ => Ok(result),
        }
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
            Self::TokenLimit { .. } => f.debug_struct("RunError::TokenLimit"),
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
            Self::Aborted(_) => return f.write_str("RunError::Aborted"),
        };
        if let Some(r) = self.result() {
            s.field("steps", &r.steps)
                .field("messages", &r.messages.len())
                .field("text", &r.text);
        }
        s.finish()
    }
}

impl AgentRun {
    /// Cancel the run: the model request and every running tool are
    /// cancelled; the run then finishes with [`ExitReason::Cancelled`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels the run (for another task, a signal handler...).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Drain the events not read yet and return the result: `Ok` when the
    /// model answered (exit `completed`, `stopped` or `max_steps`), else a
    /// [`RunError`] carrying the partial result.
    pub async fn into_result(self) -> Result<AgentResult, RunError> {
        RunError::check(self.into_outcome().await?)
    }

    /// Drain the events not read yet and return the result however the run
    /// ended (look at [`AgentResult::exit`]); `Err` only when the run's task
    /// ended without one.
    pub async fn into_outcome(mut self) -> Result<AgentResult, RunAborted> {
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

    /// `run.await` is `run.into_result().await`.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.into_result())
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.events.poll_recv(cx)
    }
}
