//! One model step: stream the model, forward deltas, assemble the assistant
//! message.

use futures::StreamExt;
use serde_json::Value;
use std::collections::HashSet;
use tokio_util::sync::CancellationToken;

use tokio::time::Instant;

use super::account::{Accountant, LlmAttempt};
use super::emit::Emitter;
use super::events::AgentEvent;
use crate::accounting::EntryStatus;
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

/// Run one model call to the end of its stream.
pub(crate) async fn run_step(
    model: &dyn LanguageModel,
    request: ModelRequest,
    attempt: &mut AttemptInfo,
    io: StepIo<'_>,
) -> Result<StepOutput, StepFailure> {
    let cancel = io.cancel;
    let mut stream = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(StepFailure::Cancelled),
        started = model.stream(request) => started.map_err(|e| model_failure(e, cancel))?,
    };
    let mut assembly = Assembly {
        out: StepOutput::empty(),
        open_reasoning: None,
        hidden: HashSet::new(),
        io,
    };
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(StepFailure::Cancelled),
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
                let mut out = assembly.out;
                out.finish_reason = reason;
                if !usage.is_empty() {
                    out.usage = usage;
                }
                return Ok(out);
            }
            Some(Ok(event)) => assembly.feed(event, attempt).await?,
        }
    }
}

/// A step's answer as its events arrive, and where its deltas go.
struct Assembly<'a> {
    out: StepOutput,
    /// Index in `parts` of the reasoning block still receiving deltas.
    open_reasoning: Option<usize>,
    /// Calls whose argument deltas are not shown ([`Show::Hiding`]).
    hidden: HashSet<String>,
    io: StepIo<'a>,
}

impl Assembly<'_> {
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
                if matches!(self.io.show, Show::Hiding(tool) if tool == name) {
                    self.hidden.insert(id);
                }
                Ok(())
            }
            ModelEvent::ToolCallDelta { id, delta } if !delta.is_empty() && !self.hidden.contains(&id) => {
                self.tell(AgentEvent::ToolInputDelta { call_id: id, delta }).await
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

    /// A delta for the application (none for a quiet call).
    async fn tell(&self, event: AgentEvent) -> Result<(), StepFailure> {
        if self.io.show == Show::Quiet {
            return Ok(());
        }
        self.io.emit.send(event).await.map_err(|_| StepFailure::Detached)
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
        attempt.label.clone_from(&to);
        attempt.started = Instant::now();
        self.io
            .emit
            .send(AgentEvent::ModelFallback { from, to, error })
            .await
            .map_err(|_| StepFailure::Detached)
    }
}
