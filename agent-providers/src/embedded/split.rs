//! The model's text as the loop's events: `<think>...</think>` is
//! reasoning, `<tool_call>{"name", "arguments"}</tool_call>` (Hermes-style,
//! as Qwen and SmolLM2 write them) a tool call, the rest the answer.
//!
//! Invariants: text is never lost or repeated: what could be the start of a
//! tag is held until the next piece says whether it is one; a tool call's
//! JSON streams as tool-input deltas and completes with its arguments as
//! written, so a malformed call reaches the loop's schema check (which tells
//! the model what to fix) instead of being dropped; an unclosed call at the
//! end is completed with what was written.

use loopwright_types::ModelEvent;
use serde_json::Value;

const THINK: (&str, &str) = ("<think>", "</think>");
const CALL: (&str, &str) = ("<tool_call>", "</tool_call>");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Think,
    Call,
}

/// Splits the streamed text.
#[derive(Debug)]
pub(crate) struct Splitter {
    mode: Mode,
    held: String,
    call: String,
    calls: usize,
    prefix: String,
}

impl Splitter {
    /// A splitter whose calls get ids `{prefix}{n}`.
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            mode: Mode::Text,
            held: String::new(),
            call: String::new(),
            calls: 0,
            prefix: prefix.to_owned(),
        }
    }

    /// How many tool calls were made.
    pub(crate) fn calls(&self) -> usize {
        self.calls
    }

    /// The events `piece` completes.
    pub(crate) fn push(&mut self, piece: &str) -> Vec<ModelEvent> {
        self.held.push_str(piece);
        let mut out = Vec::new();
        loop {
            let close = match self.mode {
                Mode::Text => None,
                Mode::Think => Some(THINK.1),
                Mode::Call => Some(CALL.1),
            };
            let tags: Vec<&str> = match close {
                Some(close) => vec![close],
                None => vec![THINK.0, CALL.0],
            };
            let found = tags
                .iter()
                .filter_map(|t| self.held.find(t).map(|at| (at, *t)))
                .min();
            match found {
                Some((at, tag)) => {
                    let before: String = self.held.drain(..at).collect();
                    self.held.drain(..tag.len());
                    self.emit(&before, &mut out);
                    self.switch(tag, &mut out);
                }
                None => {
                    // Keep what could be the start of a tag.
                    let keep = tags
                        .iter()
                        .map(|t| partial_suffix(&self.held, t))
                        .max()
                        .unwrap_or(0);
                    let cut = self.held.len() - keep;
                    let ready: String = self.held.drain(..cut).collect();
                    self.emit(&ready, &mut out);
                    return out;
                }
            }
        }
    }

    /// The events of what is left at the end.
    pub(crate) fn finish(&mut self) -> Vec<ModelEvent> {
        let rest = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        self.emit(&rest, &mut out);
        if self.mode == Mode::Call {
            self.complete(&mut out);
        }
        self.mode = Mode::Text;
        out
    }

    fn emit(&mut self, text: &str, out: &mut Vec<ModelEvent>) {
        if text.is_empty() {
            return;
        }
        match self.mode {
            Mode::Text => out.push(ModelEvent::TextDelta {
                text: text.to_owned(),
            }),
            Mode::Think => out.push(ModelEvent::ReasoningDelta {
                text: text.to_owned(),
            }),
            Mode::Call => self.call.push_str(text),
        }
    }

    fn switch(&mut self, tag: &str, out: &mut Vec<ModelEvent>) {
        self.mode = match tag {
            t if t == THINK.0 => Mode::Think,
            t if t == CALL.0 => {
                self.call.clear();
                Mode::Call
            }
            t if t == CALL.1 => {
                self.complete(out);
                Mode::Text
            }
            _ => {
                out.push(ModelEvent::ReasoningDone {
                    signature: None,
                    provider_data: None,
                });
                Mode::Text
            }
        };
    }

    /// The call written so far, as the loop's tool call.
    fn complete(&mut self, out: &mut Vec<ModelEvent>) {
        let written = std::mem::take(&mut self.call);
        let written = written.trim();
        self.calls += 1;
        let id = format!("{}{}", self.prefix, self.calls);
        let (name, arguments) = match serde_json::from_str::<Value>(written) {
            Ok(Value::Object(call)) => {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = match call.get("arguments") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => "{}".to_owned(),
                };
                (name, arguments)
            }
            // Not the JSON the format asks for: the name if it can be read,
            // the arguments as written, for the loop to tell the model.
            _ => salvage(written),
        };
        out.push(ModelEvent::ToolCallStart {
            id: id.clone(),
            name: name.clone(),
        });
        out.push(ModelEvent::ToolCallDelta {
            id: id.clone(),
            delta: arguments.clone(),
        });
        out.push(ModelEvent::ToolCallComplete {
            id,
            name,
            input_json: arguments,
            provider_data: None,
        });
    }
}

/// The name and the arguments' text of a call whose JSON does not parse.
fn salvage(written: &str) -> (String, String) {
    let after = |key: &str| written.find(key).map(|at| written[at + key.len()..].trim_start());
    let name = after("\"name\"")
        .and_then(|rest| rest.strip_prefix(':'))
        .and_then(|rest| rest.trim_start().strip_prefix('"'))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned();
    let arguments = after("\"arguments\"")
        .and_then(|rest| rest.strip_prefix(':'))
        .map_or(written, str::trim)
        .to_owned();
    (name, arguments)
}

/// How many of `text`'s last bytes are a proper prefix of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run(pieces: &[&str]) -> Vec<ModelEvent> {
        let mut splitter = Splitter::new("call_");
        let mut out: Vec<ModelEvent> = pieces.iter().flat_map(|p| splitter.push(p)).collect();
        out.extend(splitter.finish());
        out
    }

    fn text(events: &[ModelEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn calls(events: &[ModelEvent]) -> Vec<(String, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallComplete { name, input_json, .. } => {
                    Some((name.clone(), input_json.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_call_split_across_pieces_is_one_call_and_the_text_around_it_stays() {
        let events = run(&[
            "Let me look.<to",
            "ol_call>\n{\"name\": \"weather\", ",
            "\"arguments\": {\"city\": \"Paris\"}}\n</tool",
            "_call>",
        ]);
        assert_eq!(text(&events), "Let me look.");
        assert_eq!(
            calls(&events),
            [("weather".to_owned(), "{\"city\":\"Paris\"}".to_owned())]
        );
    }

    #[test]
    fn two_calls_get_their_own_ids_and_thinking_is_reasoning() {
        let events = run(&[
            "<think>hmm</think>",
            "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
            "<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>",
        ]);
        assert!(matches!(&events[0], ModelEvent::ReasoningDelta { text } if text == "hmm"));
        let ids: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallComplete { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ["call_1", "call_2"]);
        assert_eq!(calls(&events)[1], ("b".to_owned(), "{\"x\": 1}".to_owned()));
    }

    #[test]
    fn malformed_and_unclosed_calls_reach_the_loop_as_written() {
        let events = run(&["<tool_call>{\"name\": \"weather\", \"arguments\": {\"city\": "]);
        assert_eq!(calls(&events), [("weather".to_owned(), "{\"city\":".to_owned())]);
        let events = run(&["a < b and <tool", " x"]);
        assert_eq!(text(&events), "a < b and <tool x");
        assert!(calls(&events).is_empty());
    }
}
