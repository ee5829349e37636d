//! The guardrails as a policy of the loop (see [`crate::guardrail`]): the
//! blocking input guards before the first step, a step's held output and
//! parallel input gate ([`super::hold`]), an output retry's feedback in the
//! next request, and the tool calls' arguments before their batch. The
//! tool results are checked in each call's task ([`super::exec`]).
//!
//! Invariants: a blocked input starts nothing (it is the first policy:
//! no plan, no compaction); a rewritten input replaces the run's input in
//! the history it returns; a retry's feedback goes into the next request
//! only, never the history; a call whose arguments a guard rewrote is in
//! the history as it ran.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::tool::ToolOutput;
use loopwright_types::{ContentPart, Message, ModelRequest, Role, ToolCall};

use super::account::Accountant;
use super::drive::{Ending, LoopState, Run};
use super::events::AgentEvent;
use super::hold::{Gate, StepGuard, checked_events, failures};
use super::policy::{Flow, Policy, Step};
use super::step::StepOutput;
use crate::guardrail::{Decision, GuardInput, GuardMode, GuardPoint, Guardrails, Trip, run_guards};

/// What the argument guards made of a step's calls.
pub(super) struct GuardedCalls {
    /// The calls, their arguments as the guards left them.
    pub calls: Vec<ToolCall>,
    /// Calls not to run, by id: their one result.
    pub rejected: HashMap<String, String>,
    /// A guard stopped the run (no call runs).
    pub trip: Option<Trip>,
    /// Some call's arguments were rewritten.
    pub replaced: bool,
}

pub(super) struct GuardrailPolicy {
    rails: Arc<Guardrails>,
    /// The input the parallel guards check, until the first step takes it.
    parallel_input: Option<String>,
    retries_left: u32,
    /// A retry's feedback, for the next request.
    feedback: Option<Message>,
}

impl GuardrailPolicy {
    pub fn new(rails: Arc<Guardrails>) -> Self {
        Self {
            retries_left: rails.max_retries,
            rails,
            parallel_input: None,
            feedback: None,
        }
    }
}

/// Send a check's events and the warnings of its failures.
async fn report(
    run: &Run,
    checked: Vec<crate::guardrail::Checked>,
    point: GuardPoint,
    step: u32,
    call: Option<&str>,
) {
    let warnings = failures(&checked);
    for event in checked_events(checked, point, step, call) {
        run.accountant.guard_checked(event).await;
    }
    run.warn_all(&warnings).await;
}

/// The trip a decision stands for, when it stops the run at `point`.
fn trip_of(decision: &Decision, point: GuardPoint) -> Option<Trip> {
    match decision {
        Decision::Block(trip) => Some(trip.clone()),
        Decision::Retry {
            guard,
            feedback: message,
        }
        | Decision::Reject { guard, message }
            if point == GuardPoint::Input =>
        {
            Some(Trip::new(guard.clone(), point, message.clone()))
        }
        _ => None,
    }
}

/// `message` with its text in place of its text parts (at the first).
fn with_text(message: &Message, text: String) -> Message {
    let first = message
        .content
        .iter()
        .position(|p| matches!(p, ContentPart::Text { .. }));
    let mut content: Vec<ContentPart> = message
        .content
        .iter()
        .filter(|p| !matches!(p, ContentPart::Text { .. }))
        .cloned()
        .collect();
    content.insert(first.unwrap_or(0).min(content.len()), ContentPart::text(text));
    Message::new(message.role, content)
}

#[async_trait]
impl Policy for GuardrailPolicy {
    /// The blocking input guards (all of them for a run with a pre-flight
    /// plan, which is not raced); the parallel ones wait for the first
    /// step.
    async fn open(&mut self, run: &Run, lp: &mut LoopState) -> Flow {
        if !self.rails.checks(GuardPoint::Input) {
            return Flow::Go;
        }
        let Some(at) = lp.history.iter().rposition(|m| m.role == Role::User) else {
            return Flow::Go;
        };
        let text = lp.history[at].text();
        let race = run.options.preflight.is_none();
        let input = GuardInput {
            messages: &lp.history,
            ..GuardInput::new(GuardPoint::Input, &text)
        };
        let mode = race.then_some(GuardMode::Blocking);
        let (decision, checked) = run_guards(&self.rails, input, mode).await;
        report(run, checked, GuardPoint::Input, 0, None).await;
        if let Some(trip) = trip_of(&decision, GuardPoint::Input) {
            return Flow::End(Ending::Tripped(trip));
        }
        let text = match decision {
            Decision::Replace(rewritten) => {
                let message = with_text(&lp.history[at], rewritten.clone());
                Arc::make_mut(&mut lp.history)[at] = message;
                // The run's result carries the history whole, with it.
                lp.compacted = true;
                rewritten
            }
            _ => text,
        };
        let parallel = self
            .rails
            .at(GuardPoint::Input)
            .any(|g| g.mode() == GuardMode::Parallel);
        if race && parallel {
            self.parallel_input = Some(text);
        }
        Flow::Go
    }

    fn shape(&self, _run: &Run, _step: &Step, request: &mut ModelRequest) {
        if let Some(feedback) = &self.feedback {
            Arc::make_mut(&mut request.messages).push(feedback.clone());
        }
    }

    fn stream_guard(&mut self, lp: &LoopState, step: &Step) -> Option<StepGuard> {
        let gate = self.parallel_input.take().map(|text| {
            let rails = self.rails.clone();
            let messages = lp.history.clone();
            Box::pin(async move {
                let input = GuardInput {
                    messages: &messages,
                    ..GuardInput::new(GuardPoint::Input, &text)
                };
                run_guards(&rails, input, Some(GuardMode::Parallel)).await
            }) as Gate
        });
        let held = self.rails.checks(GuardPoint::Output) || self.rails.checks(GuardPoint::ToolArguments);
        (gate.is_some() || held).then(|| StepGuard {
            rails: self.rails.clone(),
            step: step.number,
            messages: lp.history.clone(),
            gate,
            may_retry: self.retries_left > 0,
        })
    }

    fn retry_answer(&mut self, feedback: &str) {
        self.retries_left = self.retries_left.saturating_sub(1);
        self.feedback = Some(Message::user(format!(
            "Your last answer was withheld and not shown: {feedback} Answer again."
        )));
    }

    async fn answered(&mut self, _run: &Run, _lp: &LoopState, _output: &StepOutput) {
        self.feedback = None;
    }

    async fn guard_calls(
        &mut self,
        run: &Run,
        lp: &LoopState,
        step: u32,
        calls: &[ToolCall],
    ) -> Option<GuardedCalls> {
        if !self.rails.checks(GuardPoint::ToolArguments) || calls.is_empty() {
            return None;
        }
        Some(guard_arguments(run, &self.rails, &lp.history, step, calls).await)
    }

    fn result_guards(&self) -> Option<Arc<Guardrails>> {
        self.rails
            .checks(GuardPoint::ToolResult)
            .then(|| self.rails.clone())
    }
}

/// The argument guards on `calls` (their events and accounting sent).
pub(super) async fn guard_arguments(
    run: &Run,
    rails: &Guardrails,
    messages: &[Message],
    step: u32,
    calls: &[ToolCall],
) -> GuardedCalls {
    let checks = calls.iter().map(|call| async move {
        let text = call.input.to_string();
        let input = GuardInput {
            messages,
            call: Some(call),
            step,
            ..GuardInput::new(GuardPoint::ToolArguments, &text)
        };
        run_guards(rails, input, None).await
    });
    let decided = futures::future::join_all(checks).await;
    let mut guarded = GuardedCalls {
        calls: calls.to_vec(),
        rejected: HashMap::new(),
        trip: None,
        replaced: false,
    };
    for (call, (decision, checked)) in guarded.calls.iter_mut().zip(decided) {
        report(run, checked, GuardPoint::ToolArguments, step, Some(&call.id)).await;
        match decision {
            Decision::Allow => {}
            Decision::Replace(text) => match serde_json::from_str(&text) {
                Ok(input) => {
                    call.input = input;
                    guarded.replaced = true;
                }
                Err(e) => {
                    let message = format!(
                        "Not run: a guardrail rewrote the arguments into something that is not JSON ({e})."
                    );
                    guarded.rejected.insert(call.id.clone(), message);
                }
            },
            Decision::Reject { message, .. }
            | Decision::Retry {
                feedback: message, ..
            } => {
                guarded.rejected.insert(call.id.clone(), message);
            }
            Decision::Block(trip) => {
                guarded.trip.get_or_insert(trip);
            }
        }
    }
    guarded
}

/// The argument guards again on calls a person approved, just before they
/// run (a resumed run): what they reject, or rewrite now (the approved
/// arguments are no longer what the guards let through), is not run.
pub(super) async fn recheck_approved(run: &Run, step: u32, approved: &[ToolCall]) -> Option<GuardedCalls> {
    let rails = run
        .options
        .guardrails
        .as_ref()
        .filter(|r| r.checks(GuardPoint::ToolArguments))?;
    if approved.is_empty() {
        return None;
    }
    let mut guarded = guard_arguments(run, rails, &[], step, approved).await;
    for (before, after) in approved.iter().zip(&guarded.calls) {
        if before.input != after.input {
            guarded.rejected.entry(before.id.clone()).or_insert_with(|| {
                "Not run: a guardrail would now change the arguments that were approved; call the tool again.".to_owned()
            });
        }
    }
    Some(guarded)
}

impl Run {
    /// A guardrail's rewrite of a step's calls, into the history: the
    /// step's assistant message (the last message) and its summary.
    pub(super) fn rewrite_calls(&self, lp: &mut LoopState, calls: &[ToolCall]) {
        let by_id: HashMap<&str, &ToolCall> = calls.iter().map(|c| (c.id.as_str(), c)).collect();
        let rewrite = |message: &mut Message| {
            for part in &mut message.content {
                if let ContentPart::ToolCall(call) = part
                    && let Some(guarded) = by_id.get(call.id.as_str())
                {
                    call.input = guarded.input.clone();
                }
            }
        };
        if let Some(last) = Arc::make_mut(&mut lp.history).last_mut() {
            rewrite(last);
        }
        if let Some(last) = lp.progress.new_messages.last_mut() {
            rewrite(last);
        }
        if let Some(summary) = lp.progress.summaries.last_mut() {
            summary.tool_calls = calls.to_vec();
        }
    }
}

/// The guards of one call's result.
pub(super) struct ResultGuard {
    pub rails: Arc<Guardrails>,
    pub accountant: Accountant,
    pub call: ToolCall,
    pub step: u32,
}

impl ResultGuard {
    /// [`ResultGuard::check`] when there is a guard; else the result as it
    /// is.
    pub async fn check_if_any(
        guard: Option<Self>,
        output: ToolOutput,
        details: Option<&'static str>,
    ) -> (ToolOutput, Option<&'static str>, Option<Trip>) {
        match guard {
            // Boxed: the rare path stays out of every call task's future.
            Some(guard) => Box::pin(guard.check(output, details)).await,
            None => (output, details, None),
        }
    }

    /// The result as the guards leave it: redacted, rejected (an error
    /// result), or withheld with the trip that stops the run.
    async fn check(
        self,
        output: ToolOutput,
        details: Option<&'static str>,
    ) -> (ToolOutput, Option<&'static str>, Option<Trip>) {
        let text = output.as_text();
        let input = GuardInput {
            call: Some(&self.call),
            step: self.step,
            ..GuardInput::new(GuardPoint::ToolResult, &text)
        };
        let (decision, checked) = run_guards(&self.rails, input, None).await;
        let warnings = super::hold::failures(&checked);
        let events =
            super::hold::checked_events(checked, GuardPoint::ToolResult, self.step, Some(&self.call.id));
        let warnings = warnings
            .into_iter()
            .map(|message| AgentEvent::Warning { message });
        for event in events.into_iter().chain(warnings) {
            if !self.accountant.guard_checked(event).await {
                break;
            }
        }
        match decision {
            Decision::Allow => (output, details, None),
            Decision::Replace(text) => {
                let mut replaced = ToolOutput::text(text);
                replaced.is_error = output.is_error;
                (replaced, details, None)
            }
            Decision::Reject { message, .. }
            | Decision::Retry {
                feedback: message, ..
            } => (ToolOutput::error(message), Some("guardrail"), None),
            Decision::Block(trip) => (
                ToolOutput::error("Withheld: a guardrail stopped the run."),
                Some("guardrail"),
                Some(trip),
            ),
        }
    }
}
