//! A guarded step's stream: output held back until the output guards
//! passed over it, and everything held while a parallel input guard has
//! not decided (see [`crate::guardrail`]).
//!
//! Invariants: text reaches an event only after every output guard passed
//! over it (the last `lookahead` characters of each passed chunk stay held
//! for the next check, so a match a checkpoint cut is seen whole);
//! reasoning and tool-argument deltas are never shown under output guards;
//! while the gate is closed nothing at all is shown; the step's output
//! carries exactly the text that was released.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::events::AgentEvent;
use crate::guardrail::{
    Checked, Checkpoint, Decision, GuardAction, GuardInput, GuardPoint, Guardrails, Trip, run_guards,
};
use loopwright_types::Message;

/// The parallel input guards' verdict, raced against the model call.
pub(crate) type Gate = Pin<Box<dyn Future<Output = (Decision, Vec<Checked>)> + Send>>;

/// What a guarded step is given.
pub(crate) struct StepGuard {
    pub rails: Arc<Guardrails>,
    pub step: u32,
    /// The conversation the model was sent (the guards' context).
    pub messages: Arc<Vec<Message>>,
    /// Parallel input guards (the first step of a fresh run).
    pub gate: Option<Gate>,
    /// Whether an output guard's retry may send the model back.
    pub may_retry: bool,
}

/// What a check of held text led to.
pub(crate) enum Held {
    /// Go on (anything released is sent already).
    Go,
    /// Stop the step: the run trips.
    Trip(Trip),
    /// Answer again, told this (only when nothing was released).
    Retry(String),
}

/// A guarded step's held output.
pub(crate) struct Hold {
    rails: Arc<Guardrails>,
    step: u32,
    messages: Arc<Vec<Message>>,
    /// Output guards are set: text is held and checked.
    output: bool,
    /// Tool-argument deltas are not shown (argument or output guards).
    quiet_arguments: bool,
    /// A parallel input guard has not decided: nothing is shown.
    pub gated: bool,
    /// Events waiting for the gate.
    queued: Vec<AgentEvent>,
    /// Text not released yet.
    pending: String,
    /// Text released (its replacements applied).
    released: String,
    last_check: Instant,
    lookahead: usize,
    whole: bool,
    may_retry: bool,
    /// Per guard: its strongest action, checks and time.
    tally: Vec<(String, GuardAction, u32, Duration)>,
    /// Checks that failed and were let pass.
    warnings: Vec<String>,
}

impl Hold {
    /// `gated`: the step's parallel input gate has not opened.
    pub fn new(guard: &StepGuard, gated: bool) -> Self {
        let rails = guard.rails.clone();
        let output = rails.checks(GuardPoint::Output);
        Self {
            quiet_arguments: output || rails.checks(GuardPoint::ToolArguments),
            lookahead: rails.lookahead(),
            whole: rails.whole_answers(),
            rails,
            step: guard.step,
            messages: guard.messages.clone(),
            output,
            gated,
            queued: Vec::new(),
            pending: String::new(),
            released: String::new(),
            last_check: Instant::now(),
            may_retry: guard.may_retry,
            tally: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// What to do with an event of the stream: `Some` to send now (or
    /// queue, while gated), `None` when it is held or never shown.
    pub fn filter(&mut self, event: AgentEvent) -> Option<AgentEvent> {
        match event {
            AgentEvent::TextDelta { text } if self.output => {
                self.pending.push_str(&text);
                None
            }
            AgentEvent::ReasoningDelta { .. } if self.output => None,
            AgentEvent::ToolInputDelta { .. } if self.quiet_arguments => None,
            event if self.gated => {
                self.queued.push(event);
                None
            }
            event => Some(event),
        }
    }

    /// The events the gate held, now it opened.
    pub fn open_gate(&mut self) -> Vec<AgentEvent> {
        self.gated = false;
        std::mem::take(&mut self.queued)
    }

    /// A fallback model takes over: what the failed attempt left held is
    /// dropped.
    pub fn restart(&mut self) {
        self.pending.clear();
        self.queued.retain(|e| !matches!(e, AgentEvent::TextDelta { .. }));
    }

    /// Whether held text reached a checkpoint (and may be checked now).
    fn boundary(&self) -> Option<usize> {
        if !self.output || self.gated || self.whole || self.pending.is_empty() {
            return None;
        }
        let text = &self.pending;
        let cut = match self.rails.checkpoint {
            Checkpoint::Sentence => sentence_end(text),
            Checkpoint::Paragraph => text.rfind("\n\n").map(|i| i + 2),
            Checkpoint::Chars(n) => (text.chars().count() >= n).then_some(text.len()),
            Checkpoint::Every(every) => (self.last_check.elapsed() >= every).then_some(text.len()),
            Checkpoint::End => None,
        }?;
        // Worth a check only when something past the lookahead could go.
        (cut > self.lookahead).then_some(cut)
    }

    /// Check held text at a checkpoint, when one is reached: the text it
    /// releases.
    pub async fn checkpoint(&mut self) -> Result<Option<String>, Trip> {
        let Some(cut) = self.boundary() else {
            return Ok(None);
        };
        let window: String = self.pending[..cut].to_owned();
        let rest = self.pending[cut..].to_owned();
        match self.check(&window, true).await {
            Decision::Allow => Ok(self.release(window, rest, false)),
            Decision::Replace(text) => Ok(self.release(text, rest, false)),
            Decision::Block(trip) => Err(trip),
            // A retry or rejection mid-answer: told at the end, when
            // nothing went out; else it stops the run.
            Decision::Retry { guard, feedback }
            | Decision::Reject {
                guard,
                message: feedback,
            } => Err(self.trip_for(guard, feedback)),
        }
    }

    /// The last check, when the stream ended: what it releases, or how the
    /// step ends.
    pub async fn finish(&mut self) -> (Option<String>, Held) {
        if !self.output || self.pending.is_empty() {
            return (None, Held::Go);
        }
        let window = std::mem::take(&mut self.pending);
        match self.check(&window, false).await {
            Decision::Allow => (self.release(window, String::new(), true), Held::Go),
            Decision::Replace(text) => (self.release(text, String::new(), true), Held::Go),
            Decision::Block(trip) => (None, Held::Trip(trip)),
            Decision::Retry { guard, feedback }
            | Decision::Reject {
                guard,
                message: feedback,
            } => {
                if self.released.is_empty() && self.may_retry {
                    (None, Held::Retry(feedback))
                } else {
                    (None, Held::Trip(self.trip_for(guard, feedback)))
                }
            }
        }
    }

    /// A trip of `guard` with `message`.
    fn trip_for(&self, guard: String, message: String) -> Trip {
        Trip {
            step: self.step,
            ..Trip::new(guard, GuardPoint::Output, message)
        }
    }

    /// Release `window` but its last `lookahead` characters (all of it at
    /// the end), which go back before `rest`.
    fn release(&mut self, window: String, rest: String, all: bool) -> Option<String> {
        let keep = if all { 0 } else { self.lookahead };
        let split = char_floor(&window, window.len().saturating_sub(keep));
        let (out, back) = window.split_at(split);
        self.pending = format!("{back}{rest}");
        if out.is_empty() {
            return None;
        }
        self.released.push_str(out);
        Some(out.to_owned())
    }

    /// The output guards on `window`.
    async fn check(&mut self, window: &str, partial: bool) -> Decision {
        self.last_check = Instant::now();
        let input = GuardInput {
            partial,
            released: &self.released,
            messages: &self.messages,
            step: self.step,
            ..GuardInput::new(GuardPoint::Output, window)
        };
        let rails = self.rails.clone();
        let (decision, checked) = run_guards(&rails, input, None).await;
        self.warnings.extend(failures(&checked));
        for c in checked {
            self.count(c);
        }
        decision
    }

    fn count(&mut self, checked: Checked) {
        match self.tally.iter_mut().find(|(g, ..)| *g == checked.guard) {
            Some((_, action, n, time)) => {
                *n += 1;
                *time += checked.duration;
                if strength(checked.action) > strength(*action) {
                    *action = checked.action;
                }
            }
            None => self
                .tally
                .push((checked.guard, checked.action, 1, checked.duration)),
        }
    }

    /// The text released, for the step's output.
    pub fn released(&self) -> &str {
        &self.released
    }

    /// Whether output guards hold this step's text.
    pub fn holds_text(&self) -> bool {
        self.output
    }

    /// The `guardrail_checked` events of the step's output checks, then the
    /// warnings of the checks that failed and were let pass.
    pub fn checked_events(&mut self) -> Vec<AgentEvent> {
        let warnings = std::mem::take(&mut self.warnings)
            .into_iter()
            .map(|message| AgentEvent::Warning { message });
        std::mem::take(&mut self.tally)
            .into_iter()
            .map(|(guard, verdict, checks, time)| AgentEvent::GuardrailChecked {
                guard,
                point: GuardPoint::Output,
                verdict,
                step: self.step,
                call_id: None,
                checks,
                duration_ms: u64::try_from(time.as_millis()).unwrap_or(u64::MAX),
            })
            .chain(warnings)
            .collect()
    }
}

/// The `guardrail_checked` events of `checked` at `point`.
pub(crate) fn checked_events(
    checked: Vec<Checked>,
    point: GuardPoint,
    step: u32,
    call_id: Option<&str>,
) -> Vec<AgentEvent> {
    checked
        .into_iter()
        .map(|c| AgentEvent::GuardrailChecked {
            guard: c.guard,
            point,
            verdict: c.action,
            step,
            call_id: call_id.map(str::to_owned),
            checks: 1,
            duration_ms: u64::try_from(c.duration.as_millis()).unwrap_or(u64::MAX),
        })
        .collect()
}

/// The warnings of checks that failed and were let pass.
pub(crate) fn failures(checked: &[Checked]) -> Vec<String> {
    checked
        .iter()
        .filter_map(|c| {
            c.error
                .as_ref()
                .map(|e| format!("guardrail {} failed and was let pass: {e}", c.guard))
        })
        .collect()
}

/// How strong an action is, for a guard's tally.
fn strength(action: GuardAction) -> u8 {
    match action {
        GuardAction::Replace => 1,
        GuardAction::Error => 2,
        GuardAction::Reject => 3,
        GuardAction::Retry => 4,
        GuardAction::Block => 5,
        _ => 0,
    }
}

/// The end of the last whole sentence in `text`: after a `.`, `!` or `?`
/// followed by whitespace, or after a line break.
fn sentence_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len()).rev().find_map(|i| match bytes[i] {
        b'\n' => Some(i + 1),
        b'.' | b'!' | b'?' if bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace) => Some(i + 2),
        _ => None,
    })
}

/// The largest char boundary of `s` at or below `at`.
fn char_floor(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_end_at_punctuation_before_space_or_at_a_line_break() {
        assert_eq!(sentence_end("One. Two"), Some(5));
        assert_eq!(sentence_end("a.b@c.com"), None);
        assert_eq!(sentence_end("line\nnext"), Some(5));
        assert_eq!(sentence_end("Done! "), Some(6));
    }

    #[test]
    fn char_floor_never_splits_a_character() {
        let s = "añb";
        assert_eq!(char_floor(s, 2), 1);
        assert_eq!(char_floor(s, 3), 3);
        assert_eq!(char_floor(s, 99), 4);
    }
}
