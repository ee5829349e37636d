//! One model step: stream the model, forward deltas, assemble the assistant
//! message.

use futures::StreamExt;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use tokio_util::sync::CancellationToken;

use tokio::time::Instant;

use super::account::{Accountant, LlmAttempt};
use super::emit::Emitter;
use super::events::AgentEvent;
use super::hold::{Gate, Held, Hold, StepGuard, checked_events, failures};
use crate::accounting::EntryStatus;
use crate::guardrail::{Checked, Decision, GuardAction, GuardPoint, Trip};
use loopwright_types::model_error::ModelError;
use loopwright_types::{ContentPart, Message, Reasoning, Role, ToolCall};
use loopwright_types::{FinishReason, Usage};
use loopwright_types::{LanguageModel, ModelEvent, ModelRequest};

/// A step whose stream completed.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct StepOutput {
    pub parts: Vec<ContentPart>,
    pub text: String,
    pub calls: Vec<ToolCall>,
    /// Calls whose arguments were not valid JSON: (call id, parse error).
    pub bad_json: Vec<(String, String)>,
    pub finish_reason: FinishReason,
    pub usage: Usage,
    /// The provider compacted on its side: the input tokens it cleared,
    /// when it said (its item, if any, is among the parts).
    pub provider_compacted: Option<Option<u64>>,
    /// A guardrail stopped the step: its text is what was released, and
    /// it has no calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trip: Option<Box<Trip>>,
    /// An output guard sends the model back, telling it this (nothing of
    /// the answer was shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
}

impl StepOutput {
    pub fn message(&self) -> Option<Message> {
        (!self.parts.is_empty()).then(|| Message::new(Role::Assistant, self.parts.clone()))
    }
}

/// How a step ended when it did not complete.
pub(crate) enum StepFailure {
    Cancelled,
    Model(ModelError),
    /// The event receiver is gone.
    Detached,
    /// The run tree's budget refused the call (no call was made): why.
    Budget(String),
    /// A guardrail stopped the step (only inside [`run_step`], which
    /// returns it as the output's `trip`).
    Tripped(Trip),
}

/// The model attempt in progress (a fallback starts another).
pub(crate) struct AttemptInfo {
    /// `provider/model`.
    pub label: String,
    pub started: Instant,
}

/// Where a step reports to.
pub(crate) struct StepIo<'a> {
    pub cancel: &'a CancellationToken,
    pub emit: &'a Emitter,
    pub accountant: &'a Accountant,
    /// Which deltas go to the application.
    pub show: Show,
    /// The step's guardrails, when it has any.
    pub guard: Option<StepGuard>,
}

/// Which of a model call's deltas go to the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Show {
    /// Every delta.
    All,
    /// None (the pre-flight plan's JSON, a summary being written).
    Quiet,
    /// Every delta but the arguments of calls to this tool (the
    /// final-answer tool, whose answer is the `output` event).
    Hiding(&'static str),
}

impl StepOutput {
    fn empty() -> Self {
        Self {
            parts: Vec::new(),
            text: String::new(),
            calls: Vec::new(),
            bad_json: Vec::new(),
            finish_reason: FinishReason::Stop,
            usage: Usage::default(),
            provider_compacted: None,
            trip: None,
            retry: None,
        }
    }
}

/// A model's error as the step's failure: a call cut off by the run's
/// cancellation is the run's cancellation, not a model failure (a
/// provider may see the token before this step does, or a wrapper may
/// cancel the call for it).
fn model_failure(error: ModelError, cancel: &CancellationToken) -> StepFailure {
    if cancel.is_cancelled() || matches!(error, ModelError::Cancelled) {
        StepFailure::Cancelled
    } else {
        StepFailure::Model(error)
    }
}

/// Run one model call to the end of its stream. A guarded step that a
/// guardrail stopped or sent back is an output with its `trip` or `retry`
/// (the stream dropped, which cancels the call).
pub(crate) async fn run_step(
    model: &dyn LanguageModel,
    request: ModelRequest,
    attempt: &mut AttemptInfo,
    mut io: StepIo<'_>,
) -> Result<StepOutput, StepFailure> {
    let mut guard = io.guard.take();
    let mut gate = guard.as_mut().and_then(|g| g.gate.take());
    let hold = guard.as_ref().map(|g| Hold::new(g, gate.is_some()));
    let mut assembly = Assembly {
        out: StepOutput::empty(),
        open_reasoning: None,
        hidden: HashSet::new(),
        begun: HashMap::new(),
        io,
        hold,
    };
    // A trip drops the stream (which ends the call) and cancels the
    // call's own token, for a provider that watches it.
    let call = request.cancellation.clone();
    match assembly.stream(model, request, attempt, &mut gate).await {
        Ok(()) => Ok(assembly.out),
        Err(StepFailure::Tripped(trip)) => {
            call.cancel();
            Ok(assembly.tripped(trip).await)
        }
        Err(e) => Err(e),
    }
}

/// Send a step's guard events (the checks accounted); false when the
/// receiver is gone.
async fn report(accountant: &Accountant, events: Vec<AgentEvent>) -> bool {
    let mut attached = true;
    for event in events {
        attached &= accountant.guard_checked(event).await;
    }
    attached
}

/// Wait for the gate, when there is one (else never).
async fn decided(gate: &mut Option<Gate>) -> (Decision, Vec<Checked>) {
    match gate {
        Some(gate) => gate.await,
        None => std::future::pending().await,
    }
}

/// A step's answer as its events arrive, and where its deltas go.
struct Assembly<'a> {
    out: StepOutput,
    /// Index in `parts` of the reasoning block still receiving deltas.
    open_reasoning: Option<usize>,
    /// Calls whose argument deltas are not shown ([`Show::Hiding`]).
    hidden: HashSet<String>,
    /// The tool each call the model began is for, by call id (its
    /// argument deltas name it).
    begun: HashMap<String, String>,
    io: StepIo<'a>,
    /// What the step's guardrails hold back.
    hold: Option<Hold>,
}

impl<'a> Assembly<'a> {
    /// Read the model's stream to its finish (racing the gate, when there
    /// is one, which must open before the step completes).
    async fn stream(
        &mut self,
        model: &dyn LanguageModel,
        request: ModelRequest,
        attempt: &mut AttemptInfo,
        gate: &mut Option<Gate>,
    ) -> Result<(), StepFailure> {
        let cancel = self.io.cancel;
        let start = model.stream(request);
        tokio::pin!(start);
        let mut stream = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(StepFailure::Cancelled),
                verdict = decided(gate) => {
                    *gate = None;
                    self.gate_decided(verdict).await?;
                }
                started = &mut start => break started.map_err(|e| model_failure(e, cancel))?,
            }
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(StepFailure::Cancelled),
                verdict = decided(gate) => {
                    *gate = None;
                    self.gate_decided(verdict).await?;
                    continue;
                }
                next = stream.next() => next,
            };
            match next {
                None => {
                    return Err(StepFailure::Model(ModelError::stream_cut(
                        "the model's stream ended before its finish event",
                    )));
                }
                Some(Err(e)) => return Err(model_failure(e, cancel)),
                Some(Ok(ModelEvent::Finish { reason, usage })) => {
                    self.out.finish_reason = reason;
                    if !usage.is_empty() {
                        self.out.usage = usage;
                    }
                    if gate.is_some() {
                        let verdict = tokio::select! {
                            biased;
                            _ = cancel.cancelled() => return Err(StepFailure::Cancelled),
                            verdict = decided(gate) => verdict,
                        };
                        *gate = None;
                        self.gate_decided(verdict).await?;
                    }
                    return self.settle_held().await;
                }
                Some(Ok(event)) => self.feed(event, attempt).await?,
            }
        }
    }

    /// The parallel input guards decided: the held events go out, or the
    /// step trips.
    async fn gate_decided(
        &mut self,
        (decision, checked): (Decision, Vec<Checked>),
    ) -> Result<(), StepFailure> {
        let warnings = failures(&checked);
        let rewriter = checked
            .iter()
            .find(|c| c.action == GuardAction::Replace)
            .map(|c| c.guard.clone());
        let accountant = self.io.accountant;
        for event in checked_events(checked, GuardPoint::Input, 0, None) {
            if !accountant.guard_checked(event).await {
                return Err(StepFailure::Detached);
            }
        }
        for message in warnings {
            self.send(AgentEvent::Warning { message }).await?;
        }
        let trip = match decision {
            Decision::Allow => None,
            Decision::Replace(_) => Some(Trip::new(
                rewriter.unwrap_or_default(),
                GuardPoint::Input,
                "a parallel input guard cannot rewrite input the model was already sent (make it a blocking guard)",
            )),
            Decision::Block(trip) => Some(trip),
            Decision::Retry {
                guard,
                feedback: message,
            }
            | Decision::Reject { guard, message } => Some(Trip::new(guard, GuardPoint::Input, message)),
        };
        if let Some(trip) = trip {
            return Err(StepFailure::Tripped(trip));
        }
        let queued = self.hold.as_mut().map(Hold::open_gate).unwrap_or_default();
        for event in queued {
            self.send(event).await?;
        }
        self.checkpoint().await
    }

    /// The stream finished: the last check of the held text.
    async fn settle_held(&mut self) -> Result<(), StepFailure> {
        let Some(hold) = &mut self.hold else {
            return Ok(());
        };
        let (text, held) = hold.finish().await;
        let events = hold.checked_events();
        if let Some(text) = text {
            self.send(AgentEvent::TextDelta { text }).await?;
        }
        if !report(self.io.accountant, events).await {
            return Err(StepFailure::Detached);
        }
        match held {
            Held::Go => {
                self.keep_released();
                Ok(())
            }
            Held::Trip(trip) => Err(StepFailure::Tripped(trip)),
            Held::Retry(feedback) => {
                let usage = self.out.usage;
                self.out = StepOutput::empty();
                self.out.usage = usage;
                self.out.retry = Some(feedback);
                Ok(())
            }
        }
    }

    /// The step's text, as released (replacements applied), in place of
    /// the text parts the model streamed.
    fn keep_released(&mut self) {
        let Some(hold) = self.hold.as_ref().filter(|h| h.holds_text()) else {
            return;
        };
        let released = hold.released().to_owned();
        let parts = &mut self.out.parts;
        let first = parts.iter().position(|p| matches!(p, ContentPart::Text { .. }));
        parts.retain(|p| !matches!(p, ContentPart::Text { .. }));
        if let Some(at) = first
            && !released.is_empty()
        {
            parts.insert(at, ContentPart::text(released.clone()));
        }
        self.out.text = released;
    }

    /// A guardrail stopped the step: its output is what was released, no
    /// calls, and the trip.
    async fn tripped(&mut self, trip: Trip) -> StepOutput {
        let (released, events) = match &mut self.hold {
            Some(hold) if hold.holds_text() => (hold.released().to_owned(), hold.checked_events()),
            Some(hold) => (String::new(), hold.checked_events()),
            None => (String::new(), Vec::new()),
        };
        // The run ends after a trip: a receiver gone meanwhile changes nothing.
        report(self.io.accountant, events).await;
        let mut out = StepOutput::empty();
        out.usage = self.out.usage;
        out.finish_reason = FinishReason::ContentFilter;
        if !released.is_empty() {
            out.parts.push(ContentPart::text(released.clone()));
        }
        out.text = released;
        out.trip = Some(Box::new(trip));
        out
    }

    /// Check the held text, when it reached a checkpoint: what passes goes
    /// out.
    async fn checkpoint(&mut self) -> Result<(), StepFailure> {
        let Some(hold) = &mut self.hold else {
            return Ok(());
        };
        match hold.checkpoint().await {
            Ok(Some(text)) => self.send(AgentEvent::TextDelta { text }).await,
            Ok(None) => Ok(()),
            Err(trip) => Err(StepFailure::Tripped(trip)),
        }
    }

    /// The model began call `id` of tool `name`: its argument deltas name
    /// the tool, unless the call is one whose deltas are not shown.
    fn begin(&mut self, id: String, name: String) {
        if matches!(self.io.show, Show::Hiding(tool) if tool == name) {
            self.hidden.insert(id);
        } else {
            self.begun.insert(id, name);
        }
    }

    /// Take one event of the stream (not its finish).
    async fn feed(&mut self, event: ModelEvent, attempt: &mut AttemptInfo) -> Result<(), StepFailure> {
        match event {
            ModelEvent::TextDelta { text } if !text.is_empty() => {
                self.out.text.push_str(&text);
                match self.out.parts.last_mut() {
                    Some(ContentPart::Text { text: last }) => last.push_str(&text),
                    _ => self.out.parts.push(ContentPart::text(text.clone())),
                }
                self.tell(AgentEvent::TextDelta { text }).await
            }
            ModelEvent::ReasoningDelta { text } => {
                let idx = self.reasoning_block();
                if let Some(ContentPart::Reasoning(r)) = self.out.parts.get_mut(idx) {
                    r.text.push_str(&text);
                }
                self.tell(AgentEvent::ReasoningDelta { text }).await
            }
            ModelEvent::ReasoningDone {
                signature,
                provider_data,
            } => {
                let idx = self.reasoning_block();
                self.open_reasoning = None;
                if let Some(ContentPart::Reasoning(r)) = self.out.parts.get_mut(idx) {
                    r.signature = signature;
                    r.provider_data = provider_data;
                }
                Ok(())
            }
            ModelEvent::ToolCallComplete {
                id,
                name,
                input_json,
                provider_data,
            } => {
                self.tool_call(id, name, input_json, provider_data);
                Ok(())
            }
            ModelEvent::ToolCallStart { id, name } => {
                self.begin(id, name);
                Ok(())
            }
            ModelEvent::ToolCallDelta { id, delta } if !delta.is_empty() && !self.hidden.contains(&id) => {
                let tool = self.begun.get(&id).cloned().unwrap_or_default();
                let call_id = id;
                self.tell(AgentEvent::ToolInputDelta { call_id, tool, delta })
                    .await
            }
            ModelEvent::Compacted { item, cleared_tokens } => {
                if let Some(item) = item {
                    self.out.parts.push(ContentPart::Compaction(item));
                }
                let cleared = self.out.provider_compacted.flatten();
                self.out.provider_compacted = Some(match (cleared, cleared_tokens) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                });
                Ok(())
            }
            ModelEvent::Usage { usage } => {
                self.out.usage = usage;
                Ok(())
            }
            ModelEvent::Fallback {
                from,
                to,
                error,
                latency_ms,
            } => self.fallback(attempt, from, to, error, latency_ms).await,
            // A start is for display; the complete event carries
            // everything the loop needs.
            _ => Ok(()),
        }
    }

    /// A delta for the application (none for a quiet call; a guarded
    /// step's are held as its guardrails say).
    async fn tell(&mut self, event: AgentEvent) -> Result<(), StepFailure> {
        if self.io.show == Show::Quiet {
            return Ok(());
        }
        let event = match &mut self.hold {
            Some(hold) => match hold.filter(event) {
                Some(event) => event,
                None => return self.checkpoint().await,
            },
            None => event,
        };
        self.send(event).await
    }

    /// Send `event` (through the emitter alone: the assembly holds the
    /// gate, which is not `Sync`, so no `&self` lives across the await).
    fn send(&self, event: AgentEvent) -> impl Future<Output = Result<(), StepFailure>> + Send + 'a {
        let emit = self.io.emit;
        async move { emit.send(event).await.map_err(|_| StepFailure::Detached) }
    }

    /// The reasoning block receiving deltas (a new one when none is open).
    fn reasoning_block(&mut self) -> usize {
        *self.open_reasoning.get_or_insert_with(|| {
            self.out.parts.push(ContentPart::Reasoning(Reasoning::default()));
            self.out.parts.len() - 1
        })
    }

    /// A complete tool call; arguments that are not JSON are kept as text
    /// and noted, for the call's error result.
    fn tool_call(&mut self, id: String, name: String, input_json: String, provider_data: Option<Value>) {
        let input = if input_json.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str::<Value>(&input_json) {
                Ok(v) => v,
                Err(e) => {
                    self.out.bad_json.push((id.clone(), e.to_string()));
                    Value::String(input_json)
                }
            }
        };
        let call = ToolCall {
            id,
            name,
            input,
            provider_data,
        };
        self.out.calls.push(call.clone());
        self.out.parts.push(ContentPart::ToolCall(call));
    }

    /// A fallback model takes over: the failed attempt is accounted and its
    /// partial output dropped.
    async fn fallback(
        &mut self,
        attempt: &mut AttemptInfo,
        from: String,
        to: String,
        error: String,
        latency_ms: u64,
    ) -> Result<(), StepFailure> {
        self.io
            .accountant
            .llm(LlmAttempt {
                label: &from,
                status: EntryStatus::Error,
                latency: std::time::Duration::from_millis(latency_ms),
                usage: self.out.usage,
                stop_reason: None,
                error: Some(error.clone()),
            })
            .await;
        self.out = StepOutput::empty();
        self.open_reasoning = None;
        if let Some(hold) = &mut self.hold {
            hold.restart();
        }
        attempt.label.clone_from(&to);
        attempt.started = Instant::now();
        self.io
            .emit
            .send(AgentEvent::ModelFallback { from, to, error })
            .await
            .map_err(|_| StepFailure::Detached)
    }
}
