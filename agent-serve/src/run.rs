//! What every surface shares: an instance (agents, limiter, keys,
//! lifecycle), starting a run under the limit, and reading a run's events
//! as the pieces a client sees.
//!
//! Invariants:
//! - a run starts only once its request holds a permit, and is cancelled
//!   when the request's response is dropped (the client went away): the
//!   [`Started`] owns both the permit and the [`AgentRun`], whose drop
//!   cancels the run with its tools and MCP calls;
//! - what a client reads is the same whether it streams or not: the text
//!   of every step in order (steps separated by a blank line), or, when it
//!   asked for structured output, only the final JSON answer;
//! - a question a served run's MCP server asks (an `input_requested`
//!   event) has nobody to answer it here: the event is dropped with the
//!   others a surface does not show, which declines it at once. (The
//!   run-state "pause" mechanism, when it lands, is where such a run will
//!   stop with the pending question instead; it joins at this point, where
//!   the surfaces read a run's events.)

use std::sync::Arc;

use loopwright_core::history::check_history;
use loopwright_core::{AgentEvent, AgentResult, AgentRun, Message, Outcome, Usage, agent::AgentOptions};
use tokio_util::sync::CancellationToken;

use crate::agents::{Agents, ServedAgent};
use crate::error::{ApiError, Kind, Shape};
use crate::limit::{Limiter, Permit};
use loopwright_runs::{Host, Refused, RunsError, Ticket};

/// A server's lifecycle, shared by its instances.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lifecycle {
    /// Cancelled when the server stops accepting work: waiting requests
    /// are refused, listeners close.
    pub(crate) stopping: CancellationToken,
    /// Cancelled when the shutdown grace is over: every run still going is
    /// cancelled.
    pub(crate) hard: CancellationToken,
    /// Cancelled once the cancelled runs had their moment to answer: the
    /// MCP sessions close.
    pub(crate) closed: CancellationToken,
}

/// One surface instance: its agents, its own limiter, who may call it.
///
/// [`Instance::start`] checks the conversation of every surface alike
/// ([`check_history`]) before the request waits for a permit.
#[derive(Debug)]
pub(crate) struct Instance {
    pub(crate) agents: Arc<Agents>,
    /// Shared with the tickets of the background runs waiting for it.
    pub(crate) limiter: Arc<Limiter>,
    pub(crate) keys: Arc<[String]>,
    pub(crate) lifecycle: Lifecycle,
    /// Host names accepted in `Host` and `Origin`; `None`: any.
    pub(crate) allowed_hosts: Option<Arc<[String]>>,
    /// The server's background runs and store, shared by its instances.
    pub(crate) runs: Arc<loopwright_runs::Runs>,
    /// What a request's conversation is held to.
    pub(crate) limits: crate::items::Limits,
    /// The models a run may pick instead of its agent's.
    pub(crate) models: Arc<OfferedModels>,
    /// The eval reports the pages ran, shared by the server's instances.
    #[cfg_attr(not(feature = "ui"), allow(dead_code))]
    pub(crate) evals: Arc<EvalsKept>,
}

/// The models a server offers for runs that pick one, by label, in the
/// order offered.
#[derive(Default, Clone)]
pub(crate) struct OfferedModels(pub(crate) Vec<(String, Arc<dyn loopwright_core::LanguageModel>)>);

impl std::fmt::Debug for OfferedModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(label, _)| label))
            .finish()
    }
}

impl OfferedModels {
    /// The model offered as `label`.
    pub(crate) fn get(&self, label: &str) -> Option<Arc<dyn loopwright_core::LanguageModel>> {
        self.0.iter().find(|(l, _)| l == label).map(|(_, m)| m.clone())
    }

    /// Every label, in order.
    pub(crate) fn labels(&self) -> Vec<&str> {
        self.0.iter().map(|(l, _)| l.as_str()).collect()
    }

    /// `label` when it is offered, else a 400 naming what is.
    pub(crate) fn check(&self, label: &str, shape: Shape) -> Result<String, ApiError> {
        if self.get(label).is_some() {
            return Ok(label.to_owned());
        }
        let offered = self.labels();
        Err(ApiError::new(
            shape,
            crate::error::Kind::BadRequest,
            if offered.is_empty() {
                format!("model {label:?}: this server offers no model to pick; leave model out")
            } else {
                format!(
                    "model {label:?} is not offered here (offered: {})",
                    offered.join(", ")
                )
            },
        ))
    }
}

/// Eval reports kept in this process (the newest [`EvalsKept::MAX`]),
/// each a JSON object with its `id`.
#[derive(Debug, Default)]
pub(crate) struct EvalsKept {
    /// Locked only to push or copy, never across an `.await`.
    reports: std::sync::Mutex<std::collections::VecDeque<Arc<serde_json::Value>>>,
}

#[cfg_attr(not(feature = "ui"), allow(dead_code))]
impl EvalsKept {
    /// The most reports kept: older ones are dropped.
    pub(crate) const MAX: usize = 50;

    fn locked(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<Arc<serde_json::Value>>> {
        self.reports
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keep `report`, dropping the oldest beyond [`Self::MAX`].
    pub(crate) fn keep(&self, report: serde_json::Value) {
        let mut reports = self.locked();
        reports.push_front(Arc::new(report));
        reports.truncate(Self::MAX);
    }

    /// Every report, the newest first.
    pub(crate) fn all(&self) -> Vec<Arc<serde_json::Value>> {
        self.locked().iter().cloned().collect()
    }
}

/// A run in flight and its permit.
pub(crate) struct Started {
    pub(crate) run: AgentRun,
    _permit: Permit,
}

impl Instance {
    /// Find an agent or answer 404 in `shape`.
    pub(crate) fn agent(&self, name: &str, shape: Shape) -> Result<&ServedAgent, ApiError> {
        self.agents
            .get(name)
            .ok_or_else(|| ApiError::unknown_agent(shape, name, &self.agents.names()))
    }

    /// Wait for a permit, then start `served` on `messages` with its
    /// options changed by `change`.
    pub(crate) async fn start(
        &self,
        served: &ServedAgent,
        messages: Vec<Message>,
        change: impl FnOnce(AgentOptions) -> AgentOptions,
        shape: Shape,
    ) -> Result<Started, ApiError> {
        // One check of the conversation for every surface, before the
        // request waits: calls and results pair up, the model has
        // something to answer.
        check_history(&messages).map_err(|e| ApiError::new(shape, Kind::BadRequest, e.to_string()))?;
        let permit = self
            .limiter
            .acquire(&self.lifecycle.stopping)
            .await
            .map_err(|refused| ApiError::refused(shape, refused))?;
        // Nobody can answer a question during a synchronous request: calls
        // that would pause or ask are denied with a reason the model reads.
        let agent = served
            .agent()
            .to_builder()
            .cancellation(self.lifecycle.hard.clone())
            .configure(|o| *o = loopwright_runs::shared::foreground_approvals(change(std::mem::take(o))))
            .build();
        Ok(Started {
            run: agent.run(messages),
            _permit: permit,
        })
    }
}

/// What a background run needs of the instance that started or continues
/// it: its agents, its limits, its limiter, its shutdown.
impl Host for Instance {
    fn agent(&self, name: &str) -> Option<loopwright_core::Agent> {
        self.agents.get(name).map(|served| served.agent().clone())
    }

    fn agent_names(&self) -> Vec<String> {
        self.agents.names()
    }

    fn model(&self, label: &str) -> Option<Arc<dyn loopwright_core::LanguageModel>> {
        self.models.get(label)
    }

    fn check_conversation(
        &self,
        stored: &[Message],
        input: &[Message],
        whose: &str,
    ) -> Result<(), RunsError> {
        // Its errors are all 400s: the request's shape is the runs' error's.
        crate::items::check_conversation(stored, input, whose, self.limits, Shape::Plain)
            .map_err(|e| RunsError::Invalid { message: e.message })
    }

    fn ticket(&self, bounded: bool) -> Result<Ticket, Refused> {
        let refused = |refused| match refused {
            crate::limit::Refused::QueueFull => Refused::QueueFull,
            crate::limit::Refused::Stopping => Refused::Stopping,
        };
        let ticket = self
            .limiter
            .ticket(bounded, &self.lifecycle.stopping)
            .map_err(refused)?;
        let (limiter, stopping) = (self.limiter.clone(), self.lifecycle.stopping.clone());
        Ok(Ticket::new(async move {
            limiter.redeem(ticket, &stopping).await.ok()
        }))
    }

    fn stopping(&self) -> &CancellationToken {
        &self.lifecycle.stopping
    }

    fn hard_stop(&self) -> &CancellationToken {
        &self.lifecycle.hard
    }
}

/// Something a client sees, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Text(String),
    Reasoning(String),
}

/// Turns a run's events into [`Piece`]s.
#[derive(Debug, Default)]
pub(crate) struct Transcript {
    structured: bool,
    any_text: bool,
    step_text: bool,
}

/// Between the text of two steps.
const STEP_SEPARATOR: &str = "\n\n";

impl Transcript {
    /// For a run whose client asked for structured output (`structured`:
    /// its text is not shown, only the final answer) or not.
    pub(crate) fn new(structured: bool) -> Self {
        Self {
            structured,
            ..Self::default()
        }
    }

    /// The piece this event shows, if any. Events of sub-agents show
    /// nothing: clients see the served agent's own answer.
    pub(crate) fn piece(&mut self, event: &AgentEvent) -> Option<Piece> {
        match event {
            AgentEvent::StepStarted { .. } => {
                self.step_text = false;
                None
            }
            AgentEvent::TextDelta { text } if !self.structured && !text.is_empty() => {
                let text = if !self.step_text && self.any_text {
                    format!("{STEP_SEPARATOR}{text}")
                } else {
                    text.clone()
                };
                self.step_text = true;
                self.any_text = true;
                Some(Piece::Text(text))
            }
            AgentEvent::ReasoningDelta { text } if !text.is_empty() => Some(Piece::Reasoning(text.clone())),
            _ => None,
        }
    }
}

/// Why a run's answer ended, as clients name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The agent answered.
    End,
    /// A step or token limit cut it short.
    Length,
    /// A guardrail stopped it: what went out before stands, the rest was
    /// withheld (`content_filter`, a `refusal`).
    Refused,
}

/// How a run ended, for a client.
#[derive(Debug, Clone)]
pub(crate) enum Ending {
    /// An answer (for structured output, the JSON to show after the pieces).
    Answer { stop: Stop, output: Option<String> },
    /// No answer: what went wrong.
    Failed(String),
}

/// How `result` ended, for a client: an answer unless it failed (in the
/// words a background run's record keeps, `loopwright_runs::shared::failure`).
pub(crate) fn ending(result: &AgentResult) -> Ending {
    if let Outcome::Tripped { .. } = result.outcome {
        return Ending::Answer {
            stop: Stop::Refused,
            output: None,
        };
    }
    if let Some(message) = loopwright_runs::shared::failure(result) {
        return Ending::Failed(message);
    }
    let stop = match result.outcome {
        Outcome::MaxSteps | Outcome::TokenLimit => Stop::Length,
        _ => Stop::End,
    };
    Ending::Answer {
        stop,
        output: result.output.as_ref().map(|v| v.to_string()),
    }
}

/// Drive `started` to its end, collecting the pieces (for answers that do
/// not stream). The run's permit is held until this returns.
pub(crate) async fn collect(
    mut started: Started,
    structured: bool,
) -> (Vec<Piece>, Result<AgentResult, String>) {
    use futures::StreamExt;
    let mut transcript = Transcript::new(structured);
    let mut pieces: Vec<Piece> = Vec::new();
    while let Some(event) = started.run.next().await {
        if let Some(piece) = transcript.piece(&event) {
            push_merged(&mut pieces, piece);
        }
    }
    let result = started
        .run
        .await
        .or_else(loopwright_core::RunError::into_result)
        .map_err(|aborted| format!("the run stopped without a result: {aborted}"));
    (pieces, result)
}

/// Append `piece`, joining it to the last one when of the same kind.
pub(crate) fn push_merged(pieces: &mut Vec<Piece>, piece: Piece) {
    match (pieces.last_mut(), piece) {
        (Some(Piece::Text(last)), Piece::Text(more)) => last.push_str(&more),
        (Some(Piece::Reasoning(last)), Piece::Reasoning(more)) => last.push_str(&more),
        (_, piece) => pieces.push(piece),
    }
}

/// Token counts a client sees: the whole tree's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tokens {
    pub(crate) input: u64,
    pub(crate) output: u64,
    pub(crate) cached: u64,
    pub(crate) cache_write: u64,
    pub(crate) reasoning: u64,
}

impl From<&Usage> for Tokens {
    fn from(u: &Usage) -> Self {
        Self {
            input: u.input_tokens.unwrap_or(0),
            output: u.output_tokens.unwrap_or(0),
            cached: u.cached_input_tokens.unwrap_or(0),
            cache_write: u.cache_write_tokens.unwrap_or(0),
            reasoning: u.reasoning_tokens.unwrap_or(0),
        }
    }
}

/// Seconds since the Unix epoch (the `created` of OpenAI objects).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Why a guardrail stopped `result`'s run, for a client (`None` when none
/// did).
pub(crate) fn refusal(result: &AgentResult) -> Option<String> {
    match &result.outcome {
        Outcome::Tripped { trip } => Some(trip.to_string()),
        _ => None,
    }
}

/// Cancels a stored run a request waits for when dropped armed: its
/// client left before it ended (a synchronous stored response, a chat
/// turn).
pub(crate) struct CancelOnDrop {
    runs: Arc<loopwright_runs::Runs>,
    id: String,
    armed: bool,
}

impl CancelOnDrop {
    pub(crate) fn new(runs: Arc<loopwright_runs::Runs>, id: &str) -> Self {
        Self {
            runs,
            id: id.to_owned(),
            armed: true,
        }
    }

    /// The response ended: nothing to cancel.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (runs, id) = (self.runs.clone(), std::mem::take(&mut self.id));
        runtime.spawn(async move {
            if let Err(e) = runs.cancel(&id).await {
                tracing::debug!(run = %id, error = %e, "a left run was not cancelled");
            }
        });
    }
}

/// How long a paused run's reader waits for its record to say so.
const RECORD_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Wait (a bounded while) until run `id`'s record is no longer running:
/// a run that paused writes its record just after its last event
/// (`awaiting_approval`), and a client told of the pause may answer at
/// once.
pub(crate) async fn await_record(store: &Arc<dyn loopwright_store::Store>, id: &str) {
    let deadline = tokio::time::Instant::now() + RECORD_PATIENCE;
    let mut wait = std::time::Duration::from_millis(1);
    while tokio::time::Instant::now() < deadline {
        match store.load_run(id).await {
            Ok(Some(record)) if record.status != loopwright_store::RunStatus::Running => return,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(run = %id, error = %e, "a paused run's record could not be read");
            }
            Ok(Some(_)) => {}
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> AgentEvent {
        AgentEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn steps_are_separated_and_structured_runs_show_no_text() {
        let events = [
            AgentEvent::StepStarted { step: 1 },
            text("Let me look."),
            AgentEvent::StepStarted { step: 2 },
            AgentEvent::ReasoningDelta { text: "hmm".into() },
            text("It is "),
            text("sunny."),
        ];
        let mut pieces = Vec::new();
        let mut t = Transcript::new(false);
        for e in &events {
            if let Some(p) = t.piece(e) {
                push_merged(&mut pieces, p);
            }
        }
        assert_eq!(
            pieces,
            [
                Piece::Text("Let me look.".into()),
                Piece::Reasoning("hmm".into()),
                Piece::Text("\n\nIt is sunny.".into())
            ]
        );
        let mut structured = Transcript::new(true);
        assert!(
            events
                .iter()
                .filter_map(|e| structured.piece(e))
                .all(|p| matches!(p, Piece::Reasoning(_)))
        );
    }
}
