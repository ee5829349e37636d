//! A run's events as the UI message stream's chunks.
//!
//! Invariant: every text and reasoning block opened is closed, every step
//! started is finished, before a tool's input, a paused run's approval
//! requests, or the `finish` chunk.

use std::collections::HashSet;

use loopwright_core::agent::PendingKind;
use loopwright_core::message::{FileSource, ImageSource};
use loopwright_core::{AgentEvent, ExitReason, ToolOutputPart};
use serde_json::{Value, json};

/// The blocks open in the stream, and what the request decided.
#[derive(Default)]
pub(super) struct Chunks {
    text: Option<String>,
    reasoning: Option<String>,
    in_step: bool,
    /// Text came in the current step.
    step_text: bool,
    blocks: u32,
    /// What the request decided, by call id.
    decided: Decided,
    /// Calls whose arguments are streaming (`tool-input-start` sent).
    streaming: HashSet<String>,
}

/// The calls a continued turn's request decided.
#[derive(Debug, Default)]
pub(super) struct Decided {
    /// Denied: their results are `tool-output-denied`.
    pub(super) denied: HashSet<String>,
    /// Answered by the client's output, which it holds already: their
    /// results are not sent back.
    pub(super) answered: HashSet<String>,
}

impl Chunks {
    /// For a stream whose request `decided` calls.
    pub(super) fn new(decided: Decided) -> Self {
        Self {
            decided,
            ..Self::default()
        }
    }

    /// The chunks of one event.
    pub(super) fn of(&mut self, event: &AgentEvent) -> Vec<Value> {
        match event {
            AgentEvent::StepStarted { .. } => {
                let mut out = self.close();
                self.in_step = true;
                self.step_text = false;
                out.push(json!({"type": "start-step"}));
                out
            }
            AgentEvent::TextDelta { text } => {
                self.step_text = true;
                self.delta("text", text)
            }
            // A structured answer the model gave through its answer tool
            // is the text of the message, as the AI SDK streams one.
            AgentEvent::Output { value } if !self.step_text => {
                let mut out = self.delta("text", &value.to_string());
                out.extend(self.close_blocks());
                out
            }
            AgentEvent::ReasoningDelta { text } => self.delta("reasoning", text),
            // The arguments as the model writes them, once the tool is
            // known (a provider that does not name it first streams none).
            AgentEvent::ToolInputDelta { call_id, tool, delta } if !tool.is_empty() => {
                let mut out = self.close_blocks();
                if self.streaming.insert(call_id.clone()) {
                    out.push(json!({"type": "tool-input-start", "toolCallId": call_id, "toolName": tool}));
                }
                out.push(json!({"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": delta}));
                out
            }
            AgentEvent::ToolCall {
                call_id, tool, input, ..
            } => {
                let mut out = self.close_blocks();
                out.push(json!({"type": "tool-input-available", "toolCallId": call_id, "toolName": tool, "input": input}));
                out
            }
            AgentEvent::ToolResult {
                call_id, is_error, ..
            } => {
                if self.decided.answered.contains(call_id) {
                    return Vec::new();
                }
                let text = event.tool_result_text().unwrap_or_default();
                let AgentEvent::ToolResult { output, .. } = event else {
                    return Vec::new();
                };
                let mut out = media(call_id, output);
                out.push(if self.decided.denied.contains(call_id) {
                    json!({"type": "tool-output-denied", "toolCallId": call_id})
                } else if *is_error {
                    json!({"type": "tool-output-error", "toolCallId": call_id, "errorText": text})
                } else {
                    json!({"type": "tool-output-available", "toolCallId": call_id, "output": text})
                });
                out
            }
            AgentEvent::StepFinished { .. } => self.close(),
            AgentEvent::AwaitingApproval { pending, .. } => self.paused(pending),
            AgentEvent::Finished { exit, error, .. } => self.finished(*exit, error.as_deref()),
            _ => Vec::new(),
        }
    }

    /// A paused run: an approval request for each call a person decides
    /// (a client tool's call waits for the client's output, which its
    /// `tool-input-available` asked for), then `finish`.
    fn paused(&mut self, pending: &[loopwright_core::agent::PendingCall]) -> Vec<Value> {
        let mut out = self.close();
        for call in pending {
            match call.kind {
                PendingKind::ClientTool => {}
                PendingKind::ToolCall => out.push(json!({
                    "type": "tool-approval-request", "approvalId": call.call_id, "toolCallId": call.call_id,
                })),
                // A plan has no part in the UI message stream.
                _ => out.push(json!({
                    "type": "error",
                    "errorText": format!("the run waits for a decision on {} ({}), which this route cannot ask", call.call_id, call.tool),
                })),
            }
        }
        out.push(json!({"type": "finish", "finishReason": "tool-calls"}));
        out
    }

    /// The run's end: an error chunk when it failed, then `finish`.
    pub(super) fn finished(&mut self, exit: ExitReason, error: Option<&str>) -> Vec<Value> {
        let mut out = self.close();
        match (exit, error) {
            (ExitReason::Completed | ExitReason::Stopped, _) => {}
            (ExitReason::MaxSteps | ExitReason::TokenLimit | ExitReason::Tripped, _) => {}
            (_, Some(message)) => out.push(json!({"type": "error", "errorText": message})),
            (other, None) => {
                out.push(json!({"type": "error", "errorText": format!("the run ended: {other:?}")}));
            }
        }
        out.push(json!({"type": "finish", "finishReason": finish_reason(exit)}));
        out
    }

    /// A text or reasoning delta, opening its block (and closing the other
    /// kind's) when needed.
    fn delta(&mut self, kind: &'static str, delta: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let (mine, other) = if kind == "text" {
            (&mut self.text, &mut self.reasoning)
        } else {
            (&mut self.reasoning, &mut self.text)
        };
        if let Some(id) = other.take() {
            let other_kind = if kind == "text" { "reasoning" } else { "text" };
            out.push(json!({"type": format!("{other_kind}-end"), "id": id}));
        }
        let id = match mine {
            Some(id) => id.clone(),
            None => {
                self.blocks += 1;
                let id = format!("{kind}-{}", self.blocks);
                out.push(json!({"type": format!("{kind}-start"), "id": id}));
                *mine = Some(id.clone());
                id
            }
        };
        out.push(json!({"type": format!("{kind}-delta"), "id": id, "delta": delta}));
        out
    }

    /// The open text and reasoning blocks, ended.
    fn close_blocks(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(id) = self.text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
        if let Some(id) = self.reasoning.take() {
            out.push(json!({"type": "reasoning-end", "id": id}));
        }
        out
    }

    /// The open blocks and the step, ended.
    pub(super) fn close(&mut self) -> Vec<Value> {
        let mut out = self.close_blocks();
        if std::mem::take(&mut self.in_step) {
            out.push(json!({"type": "finish-step"}));
        }
        out
    }
}

/// The media of a tool's output as the message's own parts: inline images,
/// audio and files as `file` chunks (a `data:` URL), files by URL (an MCP
/// resource link) as `source-url` chunks.
fn media(call_id: &str, output: &[ToolOutputPart]) -> Vec<Value> {
    let file = |source: &FileSource| match source {
        FileSource::Base64 { media_type, data } => {
            Some((media_type.clone(), format!("data:{media_type};base64,{data}")))
        }
        _ => None,
    };
    output
        .iter()
        .enumerate()
        .filter_map(|(j, part)| match part {
            ToolOutputPart::Image {
                image: ImageSource::Base64 { media_type, data },
            } => Some(json!({"type": "file", "mediaType": media_type, "url": format!("data:{media_type};base64,{data}")})),
            ToolOutputPart::Image {
                image: ImageSource::Url { url },
            } => Some(json!({"type": "source-url", "sourceId": format!("{call_id}-{j}"), "url": url})),
            ToolOutputPart::Audio { audio } => {
                file(audio).map(|(media_type, url)| json!({"type": "file", "mediaType": media_type, "url": url}))
            }
            ToolOutputPart::File {
                file: FileSource::Url { url, .. },
                filename,
            } => {
                let mut source = json!({"type": "source-url", "sourceId": format!("{call_id}-{j}"), "url": url});
                if let Some(title) = filename {
                    source["title"] = json!(title);
                }
                Some(source)
            }
            ToolOutputPart::File { file: inline, .. } => {
                file(inline).map(|(media_type, url)| json!({"type": "file", "mediaType": media_type, "url": url}))
            }
            _ => None,
        })
        .collect()
}

/// The AI SDK's finish reason for how a run ended.
fn finish_reason(exit: ExitReason) -> &'static str {
    match exit {
        ExitReason::Completed | ExitReason::Stopped => "stop",
        ExitReason::MaxSteps | ExitReason::TokenLimit => "length",
        ExitReason::Tripped => "content-filter",
        ExitReason::AwaitingApproval => "tool-calls",
        _ => "error",
    }
}
