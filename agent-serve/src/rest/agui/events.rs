//! A stored run's events as AG-UI events.
//!
//! Invariants (the order `@ag-ui/client` verifies): the run opens with
//! `RUN_STARTED`; a step, a text message, a reasoning message and its span
//! are each closed before the next of its kind opens, and all before the
//! run's last event; a tool call is started, given its arguments and ended
//! at once; the last event is `RUN_FINISHED` (its outcome an interrupt
//! when a person must decide a call, success with the pending frontend
//! calls when the client must run them), after a `MESSAGES_SNAPSHOT` of
//! the thread (the client's messages as it sent them, then the run's), or
//! `RUN_ERROR`. Every id the client sees is unique in its thread: message
//! ids carry the stored run's id, tool call ids name the run and the call
//! ([`crate::client_tools::exposed_id`]).

use std::collections::HashSet;

use loopwright_core::AgentEvent;
use loopwright_core::agent::{PendingCall, PendingKind};
use serde_json::{Value, json};

use crate::client_tools::exposed_id;
use crate::run::Tokens;
use crate::stored_turn::TurnEnd;

/// Renders one stored run's events for a client run of a thread.
pub(super) struct Agui {
    /// The stored run.
    run: String,
    thread_id: String,
    /// The client's id of this run.
    client_run: String,
    text: Option<String>,
    reasoning: Option<String>,
    step: Option<String>,
    /// Ids given so far.
    ids: u32,
    /// Calls whose output the client gave: their results are its own.
    answered: HashSet<String>,
    /// The thread's messages: the client's, then this run's as they come
    /// (the run's last events give them whole, `MESSAGES_SNAPSHOT`).
    thread: Vec<Value>,
}

impl Agui {
    /// For stored run `run`, as client run `client_run` of `thread_id`.
    pub(super) fn new(
        run: &str,
        (thread_id, client_run): (&str, &str),
        messages: Vec<Value>,
        answered: HashSet<String>,
    ) -> Self {
        Self {
            thread: messages,
            run: run.to_owned(),
            thread_id: thread_id.to_owned(),
            client_run: client_run.to_owned(),
            text: None,
            reasoning: None,
            step: None,
            ids: 0,
            answered,
        }
    }

    /// `RUN_STARTED`.
    pub(super) fn started(&self) -> Value {
        json!({"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.client_run})
    }

    fn id(&mut self, kind: &str) -> String {
        self.ids += 1;
        format!("{}-{kind}{}", self.run, self.ids)
    }

    /// The events of one of the run's events.
    pub(super) fn of(&mut self, event: &AgentEvent) -> Vec<Value> {
        match event {
            AgentEvent::StepStarted { step } => {
                let mut out = self.close();
                let name = format!("step {step}");
                out.push(json!({"type": "STEP_STARTED", "stepName": name}));
                self.step = Some(name);
                out
            }
            AgentEvent::StepFinished { .. } => self.close(),
            AgentEvent::TextDelta { text } if !text.is_empty() => self.text(text),
            AgentEvent::ReasoningDelta { text } if !text.is_empty() => self.reasoning(text),
            AgentEvent::ToolCall {
                call_id, tool, input, ..
            } => {
                let parent = self.text.clone();
                let mut out = self.close_messages();
                let id = exposed_id(&self.run, call_id);
                let mut start = json!({"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": tool});
                if let Some(parent) = &parent {
                    start["parentMessageId"] = json!(parent);
                }
                out.push(start);
                out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": input.to_string()}));
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": id}));
                self.called(parent, &id, tool, &input.to_string());
                out
            }
            AgentEvent::ToolResult { call_id, .. } if !self.answered.contains(call_id) => {
                let content = event.tool_result_text().unwrap_or_default();
                let message = self.id("r");
                let call = exposed_id(&self.run, call_id);
                self.thread
                    .push(json!({"id": message, "role": "tool", "toolCallId": call, "content": content}));
                vec![json!({"type": "TOOL_CALL_RESULT", "messageId": message,
                    "toolCallId": call, "content": content, "role": "tool"})]
            }
            _ => Vec::new(),
        }
    }

    /// Add `delta` to the content of the thread's message `id`.
    fn append(&mut self, id: &str, delta: &str) {
        if let Some(message) = self.thread.iter_mut().rev().find(|m| m["id"] == id) {
            let content = format!("{}{delta}", message["content"].as_str().unwrap_or_default());
            message["content"] = json!(content);
        }
    }

    /// A tool call in the thread: on its parent message, or on an
    /// assistant message of its own.
    fn called(&mut self, parent: Option<String>, id: &str, tool: &str, arguments: &str) {
        let call = json!({"id": id, "type": "function", "function": {"name": tool, "arguments": arguments}});
        let owner = parent.and_then(|p| self.thread.iter().rposition(|m| m["id"] == p.as_str()));
        let index = match owner {
            Some(index) => index,
            None => {
                let own = self.id("a");
                self.thread.push(json!({"id": own, "role": "assistant"}));
                self.thread.len() - 1
            }
        };
        let message = &mut self.thread[index];
        match message["toolCalls"].as_array_mut() {
            Some(calls) => calls.push(call),
            None => message["toolCalls"] = json!([call]),
        }
    }

    fn text(&mut self, delta: &str) -> Vec<Value> {
        let mut out = self.close_reasoning();
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                let id = self.id("m");
                out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"}));
                self.thread
                    .push(json!({"id": id, "role": "assistant", "content": ""}));
                self.text = Some(id.clone());
                id
            }
        };
        self.append(&id, delta);
        out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": delta}));
        out
    }

    fn reasoning(&mut self, delta: &str) -> Vec<Value> {
        let mut out = self.close_text();
        let id = match &self.reasoning {
            Some(id) => id.clone(),
            None => {
                let id = self.id("t");
                out.push(json!({"type": "REASONING_START", "messageId": id}));
                out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": id, "role": "reasoning"}));
                self.thread
                    .push(json!({"id": id, "role": "reasoning", "content": ""}));
                self.reasoning = Some(id.clone());
                id
            }
        };
        self.append(&id, delta);
        out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": id, "delta": delta}));
        out
    }

    fn close_text(&mut self) -> Vec<Value> {
        self.text
            .take()
            .map(|id| json!({"type": "TEXT_MESSAGE_END", "messageId": id}))
            .into_iter()
            .collect()
    }

    fn close_reasoning(&mut self) -> Vec<Value> {
        match self.reasoning.take() {
            Some(id) => vec![
                json!({"type": "REASONING_MESSAGE_END", "messageId": id}),
                json!({"type": "REASONING_END", "messageId": id}),
            ],
            None => Vec::new(),
        }
    }

    fn close_messages(&mut self) -> Vec<Value> {
        let mut out = self.close_text();
        out.extend(self.close_reasoning());
        out
    }

    /// Everything open, closed.
    fn close(&mut self) -> Vec<Value> {
        let mut out = self.close_messages();
        if let Some(name) = self.step.take() {
            out.push(json!({"type": "STEP_FINISHED", "stepName": name}));
        }
        out
    }

    /// The run's last events, for how it ended or paused.
    pub(super) fn end(&mut self, end: TurnEnd) -> Vec<Value> {
        let mut out = self.close();
        if !matches!(end, TurnEnd::Failed(_)) {
            out.push(json!({"type": "MESSAGES_SNAPSHOT", "messages": self.thread}));
        }
        let finished = |outcome: Value| json!({"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.client_run, "outcome": outcome});
        out.push(match end {
            TurnEnd::Paused(pending) => finished(self.outcome(&pending)),
            TurnEnd::Answer { output, usage, .. } => {
                let mut event = finished(json!({"type": "success"}));
                if let Some(output) = output.and_then(|o| serde_json::from_str::<Value>(&o).ok()) {
                    event["result"] = output;
                }
                event["usage"] = json!([usage_of(&usage)]);
                event
            }
            TurnEnd::Calls(_) => finished(json!({"type": "success"})),
            TurnEnd::Failed(message) => {
                json!({"type": "RUN_ERROR", "message": message, "code": "run_failed"})
            }
        });
        out
    }

    /// The outcome of a pause: an interrupt for each call a person decides
    /// (answered by the next input's `resume`); else success, with the
    /// frontend calls the client runs (answered by its tool messages).
    fn outcome(&self, pending: &[PendingCall]) -> Value {
        let interrupts: Vec<Value> = pending
            .iter()
            .filter(|p| p.kind != PendingKind::ClientTool)
            .map(|p| {
                let id = exposed_id(&self.run, &p.call_id);
                let (reason, message) = match p.kind {
                    PendingKind::ToolCall => ("tool_approval", format!("May the agent call {}?", p.tool)),
                    _ => ("plan_approval", "May the agent follow this plan?".to_owned()),
                };
                let mut interrupt = json!({"id": id, "reason": reason, "message": message,
                    "responseSchema": {"type": "object", "properties": {
                        "approved": {"type": "boolean"}, "reason": {"type": "string"}}, "required": ["approved"]}});
                if p.kind == PendingKind::ToolCall {
                    interrupt["toolCallId"] = json!(id);
                }
                interrupt
            })
            .collect();
        if !interrupts.is_empty() {
            return json!({"type": "interrupt", "interrupts": interrupts});
        }
        let calls: Vec<String> = pending
            .iter()
            .map(|p| exposed_id(&self.run, &p.call_id))
            .collect();
        json!({"type": "success", "pendingToolCallIds": calls})
    }
}

/// Stored messages of thread `thread` as AG-UI messages (ids from their
/// place in the thread; a tool message a message per result).
pub(super) fn thread_messages(thread: &str, messages: &[loopwright_core::Message]) -> Vec<Value> {
    use loopwright_core::{ContentPart, Role};
    let mut out = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let id = format!("{thread}-s{i}");
        match message.role {
            Role::User => out.push(json!({"id": id, "role": "user", "content": message.text()})),
            Role::System => out.push(json!({"id": id, "role": "system", "content": message.text()})),
            Role::Assistant => {
                let mut m = json!({"id": id, "role": "assistant", "content": message.text()});
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(c) => Some(json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.input.to_string()}})),
                        _ => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    m["toolCalls"] = json!(calls);
                }
                out.push(m);
            }
            Role::Tool => {
                for (j, part) in message.content.iter().enumerate() {
                    if let ContentPart::ToolResult(r) = part {
                        out.push(
                            json!({"id": format!("{id}-{j}"), "role": "tool", "toolCallId": r.call_id,
                            "content": r.text()}),
                        );
                    }
                }
            }
        }
    }
    out
}

/// Token counts as AG-UI's `TokenUsage`.
fn usage_of(t: &Tokens) -> Value {
    json!({"inputTokens": t.input, "outputTokens": t.output, "totalTokens": t.input + t.output,
        "reasoningTokens": t.reasoning, "cachedInputTokens": t.cached})
}
