//! Phase 2, call the model: `step_started`, the model's stream (its deltas
//! forwarded as events), the assistant message added to the history, and
//! `step_finished`. The call itself is one journaled side effect of a
//! durable run (replayed, never made again, once journaled), accounted and
//! traced, and counted against the run tree's budget.
//!
//! Invariants: a failed or cancelled stream adds nothing to the history;
//! a call the tree's budget refuses is not made; a completed step's usage
//! counts once, whether it was made or replayed.

use loopwright_types::{LanguageModel, ModelRequest};
use tokio::time::Instant;
use tracing::Instrument;

use super::account::LlmAttempt;
use super::drive::{Ending, LoopState, Run};
use super::events::AgentEvent;
use super::hold::StepGuard;
use super::hooks::StepSummary;
use super::judge::Next;
use super::policy::Policies;
use super::prepare::Prepared;
use super::step::{AttemptInfo, Show, StepFailure, StepIo, StepOutput, run_step};
use crate::accounting::EntryStatus;
use crate::telemetry::{self, ChatFailure};
use loopwright_types::fallback::model_label;
use loopwright_types::util::error_chain;

impl Run {
    /// Call the model with the prepared request; the step's output, or why
    /// the run ends.
    pub(super) async fn call(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
        prepared: &mut Prepared,
    ) -> Result<StepOutput, Next> {
        let number = prepared.step.number;
        self.tell(AgentEvent::StepStarted { step: number }).await;
        let request = std::mem::take(&mut prepared.request);
        let show = match policies.hidden_tool() {
            Some(tool) => Show::Hiding(tool),
            None => Show::All,
        };
        let guard = policies.stream_guard(lp, &prepared.step);
        let output = match self.call_model_guarded(request, show, guard).await {
            Ok(output) => output,
            Err(StepFailure::Cancelled | StepFailure::Detached | StepFailure::Tripped(_)) => {
                return Err(Next::End(Ending::Cancelled));
            }
            Err(StepFailure::Model(e)) => return Err(Next::End(Ending::ModelFailed(e))),
            Err(StepFailure::Budget(why)) => return Err(Next::End(Ending::BudgetExhausted(why))),
        };
        let progress = &mut lp.progress;
        progress.steps = number;
        progress.usage += output.usage;
        progress.text = output.text.clone();
        self.tell(AgentEvent::StepFinished {
            step: number,
            finish_reason: output.finish_reason.clone(),
            usage: output.usage,
        })
        .await;
        if let Some(feedback) = &output.retry {
            // Nothing of the answer was shown or kept: the model tries
            // again, told why, in the next request only.
            policies.retry_answer(feedback);
            return Err(Next::Retry);
        }
        lp.progress.summaries.push(StepSummary {
            step: number,
            text: output.text.clone(),
            tool_calls: output.calls.clone(),
            tool_results: Vec::new(),
            finish_reason: output.finish_reason.clone(),
            usage: output.usage,
        });
        if let Some(trip) = output.trip {
            // The blocked answer is in no message; the text shown before
            // the trip is the run's text.
            return Err(Next::End(Ending::Tripped(*trip)));
        }
        if let Some(message) = output.message() {
            lp.add(message);
        }
        policies.answered(self, lp, &output).await;
        Ok(output)
    }

    /// One model call, accounted (a fallback inside it accounts its own
    /// failed attempts), its deltas shown as `show` says.
    pub(super) async fn call_model(
        &self,
        request: ModelRequest,
        show: Show,
    ) -> Result<StepOutput, StepFailure> {
        self.call_model_on(self.model.as_ref(), request, show, None).await
    }

    /// [`Self::call_model`] for a step of the loop, with its guardrails.
    async fn call_model_guarded(
        &self,
        request: ModelRequest,
        show: Show,
        guard: Option<StepGuard>,
    ) -> Result<StepOutput, StepFailure> {
        self.call_model_on(self.model.as_ref(), request, show, guard)
            .await
    }

    /// [`Self::call_model`] on another model (a summarising one).
    pub(super) async fn call_model_on(
        &self,
        model: &dyn LanguageModel,
        request: ModelRequest,
        show: Show,
        guard: Option<StepGuard>,
    ) -> Result<StepOutput, StepFailure> {
        let budget = self.scope.lineage.budget.as_ref();
        if let Some(budget) = budget {
            budget.take_call().map_err(StepFailure::Budget)?;
        }
        let key = self.journal.next_model_call();
        let journaled = self
            .journal
            .step(key, &self.emit, self.model_call(model, request, show, guard))
            .await;
        let outcome = match journaled {
            Ok(outcome) => outcome,
            Err(e) => {
                self.journal_failed(&e).await;
                Err(StepFailure::Cancelled)
            }
        };
        if let (Some(budget), Ok(output)) = (budget, &outcome) {
            budget.add(&output.usage);
        }
        outcome
    }

    /// The model call itself (one journaled step of a durable run, a
    /// summarising call included): the stream, its span and its accounting
    /// entry.
    async fn model_call(
        &self,
        model: &dyn LanguageModel,
        request: ModelRequest,
        show: Show,
        guard: Option<StepGuard>,
    ) -> Result<StepOutput, StepFailure> {
        let mut attempt = AttemptInfo {
            label: model_label(model),
            started: Instant::now(),
        };
        let io = StepIo {
            cancel: &self.cancel,
            emit: &self.emit,
            accountant: &self.accountant,
            show,
            guard,
        };
        let content = self.options.trace_content;
        let span = telemetry::chat(model, &request, content);
        let outcome = run_step(model, request, &mut attempt, io)
            .instrument(span.clone())
            .await;
        let traced = match &outcome {
            Ok(o) => Ok((&o.finish_reason, &o.usage)),
            Err(StepFailure::Model(e)) => Err(ChatFailure::Model(e)),
            Err(
                StepFailure::Cancelled
                | StepFailure::Detached
                | StepFailure::Budget(_)
                | StepFailure::Tripped(_),
            ) => Err(ChatFailure::Cancelled),
        };
        telemetry::record_chat(&span, &attempt.label, traced);
        if let (true, Ok(output)) = (content, &outcome) {
            telemetry::record_output(&span, &output.text, &output.calls, &output.finish_reason);
        }
        let (status, error) = match &outcome {
            Ok(_) => (EntryStatus::Ok, None),
            Err(StepFailure::Model(e)) => (EntryStatus::Error, Some(error_chain(e))),
            Err(
                StepFailure::Cancelled
                | StepFailure::Detached
                | StepFailure::Budget(_)
                | StepFailure::Tripped(_),
            ) => (EntryStatus::Cancelled, None),
        };
        self.accountant
            .llm(LlmAttempt {
                label: &attempt.label,
                status,
                latency: attempt.started.elapsed(),
                usage: outcome.as_ref().map(|o| o.usage).unwrap_or_default(),
                stop_reason: outcome.as_ref().ok().map(|o| &o.finish_reason),
                error,
            })
            .await;
        outcome
    }

    /// The engine could not journal a step: the run stops (the engine runs
    /// it again, or was cancelling it).
    pub(super) async fn journal_failed(&self, error: &crate::durable::DurableError) {
        if !matches!(error, crate::durable::DurableError::Cancelled) {
            let message = format!("the run stopped: {error}");
            tracing::warn!(target: "loopwright_core", "{message}");
            self.tell(AgentEvent::Warning { message }).await;
        }
        self.cancel.cancel();
    }
}
