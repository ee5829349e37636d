//! A run's events as Responses stream events and output items.
//!
//! Invariants:
//! - the events are a function of the run's events: replaying a stored
//!   run's event log gives the same events, with the same
//!   `sequence_number`s and item ids, on every replica and every read (so
//!   `starting_after` resumes a stream exactly);
//! - every item added is done before the response's last event, and the
//!   last event is `response.completed`, `.incomplete` or `.failed`,
//!   carrying the whole response with its usage;
//! - the pieces a client sees are those of the other surfaces
//!   ([`Transcript`]): the served agent's text (steps separated), its
//!   reasoning as summary text, or only the final JSON for structured
//!   output.

use loopwright_core::AgentEvent;
use loopwright_core::agent::PendingKind;
use serde_json::{Value, json};

use super::object::{Meta, Outcome, Status, object};
use crate::run::{Piece, Transcript};

/// The kind of the output item being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reasoning,
    Message,
}

/// The item being written, and its text so far.
#[derive(Debug)]
struct Open {
    kind: Kind,
    id: String,
    text: String,
}

/// Turns one response's run into stream events and its object.
#[derive(Debug)]
pub(super) struct Render {
    id: String,
    meta: Meta,
    transcript: Transcript,
    /// The next event's `sequence_number`.
    seq: u64,
    /// The items done.
    done: Vec<Value>,
    open: Option<Open>,
    /// How the run ended, once it did.
    outcome: Option<Outcome>,
}

impl Render {
    /// For response `id`, asked for structured output or not.
    pub(super) fn new(id: &str, meta: Meta, structured: bool) -> Self {
        Self {
            id: id.to_owned(),
            meta,
            transcript: Transcript::new(structured),
            seq: 0,
            done: Vec::new(),
            open: None,
            outcome: None,
        }
    }

    /// `response.created` and `response.in_progress`.
    pub(super) fn begin(&mut self) -> Vec<Value> {
        let response = object(&self.id, &self.meta, "in_progress", &[], None);
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    /// The events one of the run's events makes.
    pub(super) fn step(&mut self, event: &AgentEvent) -> Vec<Value> {
        if let AgentEvent::AwaitingApproval { pending, .. } = event {
            return self.client_calls(pending);
        }
        match self.transcript.piece(event) {
            Some(Piece::Text(text)) => self.delta(Kind::Message, &text),
            Some(Piece::Reasoning(text)) => self.delta(Kind::Reasoning, &text),
            None => Vec::new(),
        }
    }

    /// The events of the run's end: the structured answer, the open item
    /// done, the response's last event.
    pub(super) fn finish(&mut self, outcome: Outcome) -> Vec<Value> {
        let mut events = Vec::new();
        if let Some(json) = outcome
            .output
            .as_deref()
            .filter(|_| outcome.status != Status::Cancelled)
        {
            events.extend(self.delta(Kind::Message, json));
        }
        let item_status = match outcome.status {
            Status::Completed => "completed",
            _ => "incomplete",
        };
        events.extend(self.close(item_status));
        let kind = match outcome.status {
            Status::Completed => "response.completed",
            Status::Incomplete(_) => "response.incomplete",
            Status::Failed(_) | Status::Cancelled => "response.failed",
        };
        let response = object(
            &self.id,
            &self.meta,
            outcome.status.name(),
            &self.done,
            Some(&outcome),
        );
        self.outcome = Some(outcome);
        events.push(self.event(kind, json!({"response": response})));
        events
    }

    /// The response as it stands: `status` while it runs, the outcome's
    /// once finished; open items as they are so far.
    pub(super) fn object(&self, status: &str) -> Value {
        let mut output = self.done.clone();
        if let Some(open) = &self.open {
            output.push(item(open, "in_progress"));
        }
        match &self.outcome {
            Some(outcome) => object(
                &self.id,
                &self.meta,
                outcome.status.name(),
                &output,
                Some(outcome),
            ),
            None => object(&self.id, &self.meta, status, &output, None),
        }
    }

    /// How the run ended, once [`finish`](Self::finish) was called.
    pub(super) fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// A function call item, done, for each client tool call the run
    /// paused on (the open item done first).
    fn client_calls(&mut self, pending: &[loopwright_core::agent::PendingCall]) -> Vec<Value> {
        let mut events = Vec::new();
        for call in pending.iter().filter(|p| p.kind == PendingKind::ClientTool) {
            events.extend(self.close("completed"));
            let index = self.done.len();
            let arguments = call.arguments.to_string();
            let id = format!("fc_{}_{index}", self.id.trim_start_matches("resp_"));
            // Naming the response, so a client that replays its input
            // (no previous_response_id) continues it too.
            let call_id = crate::client_tools::exposed_id(&self.id, &call.call_id);
            let item = |status: &str, arguments: &str| {
                json!({"type": "function_call", "id": id, "call_id": call_id, "name": call.tool,
                    "arguments": arguments, "status": status})
            };
            let (added, done) = (item("in_progress", ""), item("completed", &arguments));
            events.push(self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            ));
            events.push(self.event(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": arguments}),
            ));
            events.push(self.event(
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": index, "arguments": arguments, "name": call.tool}),
            ));
            events.push(self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": done}),
            ));
            self.done.push(done);
        }
        events
    }

    fn event(&mut self, kind: &str, mut body: Value) -> Value {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.seq);
        self.seq += 1;
        body
    }

    /// Text for an item of `kind`: the open one, or a new one (the other
    /// kind's item done first).
    fn delta(&mut self, kind: Kind, text: &str) -> Vec<Value> {
        let mut events = Vec::new();
        if self.open.as_ref().is_some_and(|o| o.kind != kind) {
            events.extend(self.close("completed"));
        }
        let index = self.done.len();
        if self.open.is_none() {
            let prefix = match kind {
                Kind::Reasoning => "rs",
                Kind::Message => "msg",
            };
            let open = Open {
                kind,
                id: format!("{prefix}_{}_{index}", self.id.trim_start_matches("resp_")),
                text: String::new(),
            };
            let added = item(&open, "in_progress");
            let item_id = open.id.clone();
            self.open = Some(open);
            events.push(self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            ));
            events.push(match kind {
                Kind::Reasoning => self.event(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": item_id, "output_index": index, "summary_index": 0,
                        "part": {"type": "summary_text", "text": ""}}),
                ),
                Kind::Message => self.event(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": index, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
                ),
            });
        }
        let Some(open) = self.open.as_mut() else {
            return events;
        };
        open.text.push_str(text);
        let item_id = open.id.clone();
        events.push(match kind {
            Kind::Reasoning => self.event(
                "response.reasoning_summary_text.delta",
                json!({"item_id": item_id, "output_index": index, "summary_index": 0, "delta": text}),
            ),
            Kind::Message => self.event(
                "response.output_text.delta",
                json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": text,
                    "logprobs": []}),
            ),
        });
        events
    }

    /// The open item's done events, with the item at `status`.
    fn close(&mut self, status: &str) -> Vec<Value> {
        let Some(open) = self.open.take() else {
            return Vec::new();
        };
        let index = self.done.len();
        let text = open.text.clone();
        let mut events = match open.kind {
            Kind::Reasoning => vec![
                self.event(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": open.id, "output_index": index, "summary_index": 0, "text": text}),
                ),
                self.event(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": open.id, "output_index": index, "summary_index": 0,
                        "part": {"type": "summary_text", "text": text}}),
                ),
            ],
            Kind::Message => vec![
                self.event(
                    "response.output_text.done",
                    json!({"item_id": open.id, "output_index": index, "content_index": 0, "text": text,
                        "logprobs": []}),
                ),
                self.event(
                    "response.content_part.done",
                    json!({"item_id": open.id, "output_index": index, "content_index": 0,
                        "part": output_text(&text)}),
                ),
            ],
        };
        let done = item(&open, status);
        events.push(self.event(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        ));
        self.done.push(done);
        events
    }
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// An output item with its text so far.
fn item(open: &Open, status: &str) -> Value {
    match open.kind {
        Kind::Reasoning => json!({
            "id": open.id, "type": "reasoning", "status": status,
            "summary": if open.text.is_empty() && status == "in_progress" {
                json!([])
            } else {
                json!([{"type": "summary_text", "text": open.text}])
            },
        }),
        Kind::Message => json!({
            "id": open.id, "type": "message", "role": "assistant", "status": status,
            "content": if open.text.is_empty() && status == "in_progress" {
                json!([])
            } else {
                json!([output_text(&open.text)])
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::run::Tokens;

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    fn run(render: &mut Render, events: &[AgentEvent], outcome: Outcome) -> Vec<Value> {
        let mut out = render.begin();
        for e in events {
            out.extend(render.step(e));
        }
        out.extend(render.finish(outcome));
        out
    }

    fn completed() -> Outcome {
        Outcome {
            status: Status::Completed,
            output: None,
            usage: Tokens {
                input: 5,
                output: 3,
                ..Tokens::default()
            },
        }
    }

    #[test]
    fn reasoning_then_text_are_two_items_each_added_and_done() {
        let mut render = Render::new("resp_ab", Meta::default(), false);
        let events = run(
            &mut render,
            &[
                AgentEvent::StepStarted { step: 1 },
                AgentEvent::ReasoningDelta { text: "Hm".into() },
                AgentEvent::ReasoningDelta { text: "m.".into() },
                AgentEvent::TextDelta { text: "Hi".into() },
                AgentEvent::TextDelta { text: "!".into() },
            ],
            completed(),
        );
        assert_eq!(
            types(&events),
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let seqs: Vec<u64> = events
            .iter()
            .map(|e| e["sequence_number"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
        let last = &events.last().unwrap()["response"];
        assert_eq!(last["status"], "completed");
        assert_eq!(last["output"][0]["summary"][0]["text"], "Hmm.");
        assert_eq!(last["output"][1]["id"], "msg_ab_1");
        assert_eq!(last["output"][1]["content"][0]["text"], "Hi!");
        assert_eq!(last["usage"]["total_tokens"], 8);
        assert_eq!(render.object("in_progress"), *last);
    }

    #[test]
    fn structured_output_is_one_message_and_failures_end_failed() {
        let mut render = Render::new("resp_c", Meta::default(), true);
        let outcome = Outcome {
            output: Some("{\"n\":1}".into()),
            ..completed()
        };
        let events = run(
            &mut render,
            &[AgentEvent::TextDelta {
                text: "hidden".into(),
            }],
            outcome,
        );
        let last = &events.last().unwrap()["response"];
        assert_eq!(last["output"].as_array().unwrap().len(), 1);
        assert_eq!(last["output"][0]["content"][0]["text"], "{\"n\":1}");

        let mut render = Render::new("resp_d", Meta::default(), false);
        let failed = Outcome {
            status: Status::Failed("the model is down".into()),
            ..completed()
        };
        let events = run(
            &mut render,
            &[AgentEvent::TextDelta { text: "Par".into() }],
            failed,
        );
        assert_eq!(events.last().unwrap()["type"], "response.failed");
        let last = &events.last().unwrap()["response"];
        assert_eq!(last["error"]["message"], "the model is down");
        assert_eq!(last["output"][0]["status"], "incomplete");
    }
}
