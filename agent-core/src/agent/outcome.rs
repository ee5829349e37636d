//! How a run ended, said once: [`Outcome`] (one enum, each ending with
//! what it carries), inside the [`AgentResult`] a run leaves, with the
//! steps it took.
//!
//! Invariants: the model answered exactly when the outcome is
//! [`Outcome::Answered`] or [`Outcome::MaxSteps`] (the concluding call's
//! answer); awaiting `run.await` is `Ok` for those two alone, and every
//! other outcome is its own [`RunError`](crate::RunError) variant carrying
//! the result; a paused run's state is in its outcome, and its messages are
//! empty (they are in the state).

use serde::Serialize;
use serde_json::Value;

use super::events::ExitReason;
use super::hooks::StepSummary;
use super::state::RunState;
use crate::output::OutputError;
use loopwright_types::util::error_chain;
use loopwright_types::{Message, ModelError, Usage};

/// How a run ended.
///
/// ```
/// use loopwright_core::{ExitReason, Outcome};
/// let outcome = Outcome::BudgetExhausted { reason: "the run tree made 5 model calls, its limit".into() };
/// assert_eq!(outcome.exit(), ExitReason::BudgetExhausted);
/// assert!(!outcome.answered());
/// assert!(Outcome::Answered.answered());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The model answered.
    Answered,
    /// The step limit was reached: after `max_steps` steps with tool calls,
    /// one more call without tools concluded; its text (if any) is the
    /// run's text.
    MaxSteps,
    /// A `stop_when` hook ended the run after a step's tool calls.
    Stopped,
    /// The run paused on questions to a person
    /// ([`Approvals::defer`](crate::Approvals::defer)): the state
    /// [`Agent::resume`](crate::Agent::resume) continues.
    AwaitingApproval {
        /// What to resume.
        state: Box<RunState>,
    },
    /// The run tree's budget of model calls or tokens was used up.
    BudgetExhausted {
        /// Which limit, with its figures.
        reason: String,
    },
    /// The conversation no longer fits the model's context window (the
    /// text is the concluding answer, when the budget allowed one).
    TokenLimit,
    /// The run was cancelled: by the application (its token, its event
    /// stream dropped), or by its own deadline (`reason` says so).
    Cancelled {
        /// The run's own limit that cancelled it, if any.
        reason: Option<String>,
    },
    /// The final answer never matched the output schema, after the retries.
    OutputInvalid {
        /// The last validation error and the raw answer.
        error: OutputError,
    },
    /// The pre-flight plan was rejected (by the application, its timeout,
    /// or because the model never gave a valid plan): no tool ran.
    PlanRejected {
        /// Why.
        reason: String,
    },
    /// A model call failed, after every fallback.
    ModelFailed {
        /// The model's error.
        error: ModelError,
    },
    /// A guardrail stopped the run. The text is what was shown before it
    /// tripped; the blocked content is in no message.
    Tripped {
        /// Which guard, where, and why.
        trip: crate::guardrail::Trip,
    },
}

impl Outcome {
    /// The kind, as the `finished` event and `--events` say it.
    pub fn exit(&self) -> ExitReason {
        match self {
            Self::Answered => ExitReason::Completed,
            Self::MaxSteps => ExitReason::MaxSteps,
            Self::Stopped => ExitReason::Stopped,
            Self::AwaitingApproval { .. } => ExitReason::AwaitingApproval,
            Self::BudgetExhausted { .. } => ExitReason::BudgetExhausted,
            Self::TokenLimit => ExitReason::TokenLimit,
            Self::Cancelled { .. } => ExitReason::Cancelled,
            Self::OutputInvalid { .. } => ExitReason::OutputInvalid,
            Self::PlanRejected { .. } => ExitReason::PlanRejected,
            Self::ModelFailed { .. } => ExitReason::ModelError,
            Self::Tripped { .. } => ExitReason::Tripped,
        }
    }

    /// Whether the model answered ([`Outcome::Answered`], or the
    /// concluding answer of [`Outcome::MaxSteps`]).
    pub fn answered(&self) -> bool {
        matches!(self, Self::Answered | Self::MaxSteps)
    }

    /// What the `finished` event says went wrong, if anything.
    pub(crate) fn message(&self) -> Option<String> {
        match self {
            Self::ModelFailed { error } => Some(error_chain(error)),
            Self::OutputInvalid { error } => Some(error.to_string()),
            Self::PlanRejected { reason } => Some(format!("the plan was rejected: {reason}")),
            Self::BudgetExhausted { reason } => Some(reason.clone()),
            Self::Cancelled { reason } => reason.clone(),
            Self::Tripped { trip } => Some(trip.to_string()),
            _ => None,
        }
    }
}

/// What a run did and how it ended.
///
/// ```
/// # use loopwright_core::{AgentResult, Outcome};
/// # fn show(result: AgentResult) {
/// match &result.outcome {
///     Outcome::Answered => println!("{} ({} steps)", result.text, result.steps.len()),
///     Outcome::AwaitingApproval { state } => println!("waiting on {} calls", state.pending().len()),
///     other => println!("ended {:?}", other.exit()),
/// }
/// # }
/// ```
///
/// A result thrown away unread is reported by the compiler:
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), loopwright_core::RunError> {
/// agent.run("Write the report").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct AgentResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The final answer text (the last step's text).
    pub text: String,
    /// The validated final answer, for a run with an output schema.
    pub output: Option<Value>,
    /// The messages this run added (assistant and tool messages), ready to
    /// persist and pass back, after the input, for the next turn. Every tool
    /// call in them has exactly one result. When the run compacted its
    /// history they are still all there, as they were added: the next turn
    /// takes [`AgentResult::history`] instead. Empty for a paused run (its
    /// history is in its state).
    pub messages: Vec<Message>,
    /// For a run that compacted its history: the whole history as it now
    /// stands, the input included, compacted; it replaces the input and
    /// [`AgentResult::messages`] for the next turn (a
    /// [`Conversation`](crate::Conversation) does so). `None` when nothing
    /// was compacted.
    pub history: Option<Vec<Message>>,
    /// Total usage of this run's own model calls.
    pub usage: Usage,
    /// `usage` plus the usage of every sub-agent run it started, theirs
    /// included (equal to `usage` for a run without sub-agents).
    pub tree_usage: Usage,
    /// The steps it took (a resumed run: those since it resumed), each
    /// with its text, calls, results, finish reason and usage.
    pub steps: Vec<StepSummary>,
    /// What its guardrails checked: one entry per guard, point and thing
    /// checked (a resumed run's from before its pause included), as the
    /// accounting lines say.
    pub guardrails: Vec<crate::accounting::GuardEntry>,
}

impl AgentResult {
    /// The outcome's kind ([`Outcome::exit`]).
    pub fn exit(&self) -> ExitReason {
        self.outcome.exit()
    }

    /// `Ok` when the model answered ([`Outcome::answered`]), else the
    /// [`RunError`](crate::RunError) of the outcome, carrying the result:
    /// what awaiting a run gives, for a result taken some other way.
    ///
    /// ```
    /// # fn demo(result: loopwright_core::AgentResult) -> Result<(), loopwright_core::RunError> {
    /// let answered = result.into_answer()?;
    /// println!("{}", answered.text);
    /// # Ok(()) }
    /// ```
    pub fn into_answer(self) -> Result<AgentResult, crate::RunError> {
        crate::RunError::check(self)
    }

    /// The paused state, for a run that awaits approval.
    pub fn state(&self) -> Option<&RunState> {
        match &self.outcome {
            Outcome::AwaitingApproval { state } => Some(state),
            _ => None,
        }
    }

    /// The validated final answer read as a `T` (runs with an output
    /// schema); an error saying which when there is none or it does not
    /// read as a `T`.
    ///
    /// ```
    /// # fn demo(result: loopwright_core::AgentResult) -> Result<(), loopwright_core::output::OutputError> {
    /// #[derive(serde::Deserialize)]
    /// struct Verdict { ok: bool }
    /// let verdict: Verdict = result.output()?;
    /// # let _ = verdict; Ok(()) }
    /// ```
    pub fn output<T: serde::de::DeserializeOwned>(&self) -> Result<T, OutputError> {
        match (&self.output, &self.outcome) {
            (Some(value), _) => crate::output::typed(value),
            (None, Outcome::OutputInvalid { error }) => Err(error.clone()),
            (None, outcome) if !outcome.answered() => Err(OutputError::new(
                format!("the run ended {:?} before a final answer", outcome.exit()),
                self.text.clone(),
            )),
            (None, _) => Err(OutputError::new(
                "the agent has no output schema: build it with one (AgentBuilder::output) to read a typed answer",
                self.text.clone(),
            )),
        }
    }
}

/// The result as JSON (the synchronous REST answer): the fields of the
/// `finished` event and the messages, the outcome's data beside them.
impl Serialize for AgentResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let step_usage: Vec<Usage> = self.steps.iter().map(|step| step.usage).collect();
        let (error, output_error, plan_rejection, stopped_by, state) = match &self.outcome {
            Outcome::ModelFailed { error } => (Some(error_chain(error)), None, None, None, None),
            Outcome::OutputInvalid { error } => (None, Some(error), None, None, None),
            Outcome::PlanRejected { reason } => (None, None, Some(reason), None, None),
            Outcome::BudgetExhausted { reason } => (None, None, None, Some(reason), None),
            Outcome::Cancelled { reason } => (None, None, None, reason.as_ref(), None),
            Outcome::AwaitingApproval { state } => (None, None, None, None, Some(state.as_ref())),
            Outcome::Tripped { trip } => (Some(trip.to_string()), None, None, None, None),
            _ => (None, None, None, None, None),
        };
        let trip = match &self.outcome {
            Outcome::Tripped { trip } => Some(trip),
            _ => None,
        };
        Wire {
            messages: &self.messages,
            history: self.history.as_ref(),
            text: &self.text,
            usage: self.usage,
            tree_usage: self.tree_usage,
            step_usage,
            steps: self.steps.len(),
            exit: self.exit(),
            error,
            output: self.output.as_ref(),
            output_error,
            plan_rejection,
            stopped_by,
            state,
            trip,
            guardrails: &self.guardrails,
        }
        .serialize(s)
    }
}

#[derive(Serialize)]
struct Wire<'a> {
    messages: &'a [Message],
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<&'a Vec<Message>>,
    text: &'a str,
    usage: Usage,
    tree_usage: Usage,
    step_usage: Vec<Usage>,
    steps: usize,
    exit: ExitReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_error: Option<&'a OutputError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan_rejection: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a RunState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trip: Option<&'a crate::guardrail::Trip>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    guardrails: &'a [crate::accounting::GuardEntry],
}
