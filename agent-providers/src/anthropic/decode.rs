//! Decoding Anthropic's typed stream events into [`ModelEvent`]s: text,
//! thinking (with its signature), tool calls assembled from input deltas,
//! usage with cache tokens, the stop reason, and the tokens context
//! management cleared.

use std::collections::HashMap;

use loopwright_types::{FinishReason, ModelError, ModelEvent, Usage};
use serde_json::{Value, json};

use crate::driver::{Decoder, truncated};
use crate::error::{invalid, stream_error};
use crate::sse::Frame;
use crate::tools::{PendingCall, complete, finish_reason, num};

/// An open content block.
#[derive(Debug)]
enum Block {
    Text,
    Thinking { signature: Option<String> },
    Tool { call: PendingCall, initial: Value },
    Other,
}

/// Decoder of Anthropic stream events.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    blocks: HashMap<u64, Block>,
    usage: Usage,
    stop: Option<FinishReason>,
    done: bool,
}

impl AnthropicDecoder {
    fn set_usage(&mut self, u: &Value, out: &mut Vec<ModelEvent>) {
        let cache_read = num(u, "cache_read_input_tokens");
        let cache_write = num(u, "cache_creation_input_tokens");
        if let Some(input) = num(u, "input_tokens") {
            let total_input = input + cache_read.unwrap_or(0) + cache_write.unwrap_or(0);
            self.usage.input_tokens = Some(total_input);
        }
        if cache_read.is_some() {
            self.usage.cached_input_tokens = cache_read;
        }
        if cache_write.is_some() {
            self.usage.cache_write_tokens = cache_write;
        }
        if let Some(output) = num(u, "output_tokens") {
            self.usage.output_tokens = Some(output);
        }
        out.push(ModelEvent::Usage { usage: self.usage });
    }

    fn block_start(&mut self, index: u64, block: &Value, out: &mut Vec<ModelEvent>) {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        let entry = match kind {
            "text" => {
                if let Some(text) = block
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ModelEvent::TextDelta {
                        text: text.to_owned(),
                    });
                }
                Block::Text
            }
            "thinking" => Block::Thinking { signature: None },
            "redacted_thinking" => {
                let data = block.get("data").cloned().unwrap_or(Value::Null);
                out.push(ModelEvent::ReasoningDone {
                    signature: None,
                    provider_data: Some(json!({"redacted_thinking": data})),
                });
                Block::Other
            }
            "tool_use" => {
                let call = PendingCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    name: block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    started: true,
                    ..PendingCall::default()
                };
                out.push(ModelEvent::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                Block::Tool {
                    call,
                    initial: block.get("input").cloned().unwrap_or(Value::Null),
                }
            }
            _ => Block::Other,
        };
        self.blocks.insert(index, entry);
    }

    fn block_delta(
        &mut self,
        index: u64,
        delta: Delta,
        raw: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let text = |t: Option<String>| t.unwrap_or_default();
        match (delta.kind.as_str(), self.blocks.get_mut(&index)) {
            ("text_delta", _) => {
                let t = text(delta.text);
                if !t.is_empty() {
                    out.push(ModelEvent::TextDelta { text: t });
                }
            }
            ("thinking_delta", _) => {
                let t = text(delta.thinking);
                if !t.is_empty() {
                    out.push(ModelEvent::ReasoningDelta { text: t });
                }
            }
            ("signature_delta", Some(Block::Thinking { signature })) => {
                signature
                    .get_or_insert_with(String::new)
                    .push_str(&text(delta.signature));
            }
            ("input_json_delta", Some(Block::Tool { call, .. })) => {
                let t = text(delta.partial_json);
                if !t.is_empty() {
                    call.args.push_str(&t);
                    out.push(ModelEvent::ToolCallDelta {
                        id: call.id.clone(),
                        delta: t,
                    });
                }
            }
            ("input_json_delta" | "signature_delta", None) => {
                return Err(invalid(format!("{} for unknown block {index}", delta.kind), raw));
            }
            _ => {}
        }
        Ok(())
    }

    fn block_stop(&mut self, index: u64, out: &mut Vec<ModelEvent>) {
        match self.blocks.remove(&index) {
            Some(Block::Thinking { signature }) => out.push(ModelEvent::ReasoningDone {
                signature,
                provider_data: None,
            }),
            Some(Block::Tool { mut call, initial }) => {
                if call.args.trim().is_empty() && initial.as_object().is_some_and(|o| !o.is_empty()) {
                    call.args = initial.to_string();
                }
                out.push(complete(call));
            }
            _ => {}
        }
    }
}

/// A `content_block_delta` event, the bulk of every stream: read straight
/// into these fields, without building a JSON tree.
#[derive(Debug, serde::Deserialize)]
struct DeltaEvent {
    #[serde(default)]
    index: u64,
    delta: Delta,
}

/// The `delta` of a `content_block_delta` event.
#[derive(Debug, Default, serde::Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: String,
    text: Option<String>,
    thinking: Option<String>,
    partial_json: Option<String>,
    signature: Option<String>,
}

impl Decoder for AnthropicDecoder {
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = frame.data.trim();
        if frame.event.as_deref() == Some("content_block_delta") {
            let event: DeltaEvent =
                serde_json::from_str(data).map_err(|e| invalid(format!("unparseable event: {e}"), data))?;
            return self.block_delta(event.index, event.delta, data, out);
        }
        let mut event: Value =
            serde_json::from_str(data).map_err(|e| invalid(format!("unparseable event: {e}"), data))?;
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .or(frame.event.as_deref())
            .unwrap_or_default()
            .to_owned();
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        // Parts are taken out of the parsed event, never deep-copied.
        let mut take = |key: &str| event.get_mut(key).map(Value::take).unwrap_or(Value::Null);
        match kind.as_str() {
            "message_start" => {
                if let Some(u) = event.pointer("/message/usage") {
                    self.set_usage(u, out);
                }
            }
            "content_block_start" => {
                let block = take("content_block");
                self.block_start(index, &block, out);
            }
            "content_block_delta" => {
                // Without an `event:` name (a proxy dropped it): the same, from the tree.
                let delta: Delta = serde_json::from_value(take("delta"))
                    .map_err(|e| invalid(format!("unparseable delta: {e}"), data))?;
                self.block_delta(index, delta, data, out)?;
            }
            "content_block_stop" => self.block_stop(index, out),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(match reason {
                        "pause_turn" => FinishReason::Other(reason.to_owned()),
                        other => finish_reason(other),
                    });
                }
                if let Some(u) = event.get("usage") {
                    self.set_usage(u, out);
                }
                if let Some(edits) = event
                    .pointer("/context_management/applied_edits")
                    .and_then(Value::as_array)
                    .filter(|e| !e.is_empty())
                {
                    let cleared = edits.iter().filter_map(|e| num(e, "cleared_input_tokens")).sum();
                    out.push(ModelEvent::Compacted {
                        item: None,
                        cleared_tokens: Some(cleared),
                    });
                }
            }
            "message_stop" => {
                let ids: Vec<u64> = self.blocks.keys().copied().collect();
                for i in ids {
                    self.block_stop(i, out);
                }
                let reason = self.stop.take().unwrap_or(FinishReason::Stop);
                out.push(ModelEvent::Finish {
                    reason,
                    usage: self.usage,
                });
                self.done = true;
            }
            "error" => {
                let err = take("error");
                let message = err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("stream error")
                    .to_owned();
                let kind = err.get("type").and_then(Value::as_str).unwrap_or_default();
                return Err(stream_error(kind, message));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        Err(truncated("message_stop"))
    }
}
