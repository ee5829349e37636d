//! Shared pieces of request building and tool-call assembly.

use loopwright_types::schema::flatten_schema;
use loopwright_types::{FinishReason, ModelEvent, ToolDefinition};
use serde_json::{Map, Value};

/// A tool's input schema with `$ref`/`$defs` inlined, `$schema` dropped and
/// an object schema given `properties` (some providers require it).
pub(crate) fn object_schema(tool: &ToolDefinition) -> Value {
    let mut schema = flatten_schema(&tool.input_schema);
    if let Value::Object(map) = &mut schema
        && map.get("type").and_then(Value::as_str) == Some("object")
        && !map.contains_key("properties")
    {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    schema
}

/// One tool call being assembled from deltas.
#[derive(Debug, Clone, Default)]
pub(crate) struct PendingCall {
    pub index: Option<u64>,
    pub id: String,
    pub name: String,
    pub args: String,
    pub started: bool,
    pub provider_data: Option<Value>,
}

/// Tool calls of one step, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct CallAssembler {
    pub calls: Vec<PendingCall>,
}

impl CallAssembler {
    /// Route a delta to its call: by index, by id when the index is missing
    /// or reused with another id, else the last call. Returns its position.
    pub fn route(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let id = id.filter(|s| !s.is_empty());
        let found = match (index, id) {
            (_, Some(id)) if self.calls.iter().any(|c| c.id == id) => {
                self.calls.iter().position(|c| c.id == id)
            }
            (Some(i), Some(_)) => self
                .calls
                .iter()
                .position(|c| c.index == Some(i) && c.id.is_empty()),
            (Some(i), None) => self.calls.iter().rposition(|c| c.index == Some(i)),
            (None, Some(_)) => None,
            (None, None) => self.calls.len().checked_sub(1),
        };
        if let Some(pos) = found {
            if let (Some(id), true) = (id, self.calls[pos].id.is_empty()) {
                self.calls[pos].id = id.to_owned();
            }
            return pos;
        }
        self.calls.push(PendingCall {
            index,
            id: id.unwrap_or_default().to_owned(),
            ..PendingCall::default()
        });
        self.calls.len() - 1
    }

    /// Add a name part and argument text to call `pos`, pushing
    /// `ToolCallStart` once its name is known and `ToolCallDelta`s after.
    pub fn update(&mut self, pos: usize, name: Option<&str>, args: Option<&str>, out: &mut Vec<ModelEvent>) {
        let call = &mut self.calls[pos];
        if let Some(name) = name.filter(|n| !n.is_empty())
            && !call.started
        {
            call.name.push_str(name);
        }
        if call.id.is_empty() {
            call.id = format!("call_{pos}");
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            if !call.args.is_empty() {
                out.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    delta: call.args.clone(),
                });
            }
        }
        if let Some(args) = args.filter(|a| !a.is_empty()) {
            call.args.push_str(args);
            if call.started {
                out.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    delta: args.to_owned(),
                });
            }
        }
    }

    /// Complete every call (the provider said the step is done).
    pub fn complete_all(&mut self, out: &mut Vec<ModelEvent>) {
        for call in self.calls.drain(..) {
            out.push(complete(call));
        }
    }
}

/// The `ToolCallComplete` for a finished call (empty arguments mean `{}`).
pub(crate) fn complete(call: PendingCall) -> ModelEvent {
    let input_json = if call.args.trim().is_empty() {
        "{}".to_owned()
    } else {
        call.args
    };
    ModelEvent::ToolCallComplete {
        id: call.id,
        name: call.name,
        input_json,
        provider_data: call.provider_data,
    }
}

/// Map a provider's finish reason text.
pub(crate) fn finish_reason(text: &str) -> FinishReason {
    match text {
        "stop" | "end_turn" | "STOP" | "stop_sequence" | "completed" => FinishReason::Stop,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "length" | "max_tokens" | "MAX_TOKENS" | "incomplete" => FinishReason::Length,
        "content_filter" | "SAFETY" | "RECITATION" | "refusal" | "PROHIBITED_CONTENT" | "BLOCKLIST" => {
            FinishReason::ContentFilter
        }
        "error" => FinishReason::Error,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A number field as `u64`.
pub(crate) fn num(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Merge the free-form options given for `provider` into a request body.
pub(crate) fn merge_options(body: &mut Value, options: Option<&Value>) {
    if let (Value::Object(target), Some(Value::Object(extra))) = (body, options) {
        for (k, v) in extra {
            target.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_of_every_provider() {
        assert_eq!(finish_reason("stop"), FinishReason::Stop);
        assert_eq!(finish_reason("end_turn"), FinishReason::Stop);
        assert_eq!(finish_reason("STOP"), FinishReason::Stop);
        assert_eq!(finish_reason("tool_use"), FinishReason::ToolCalls);
        assert_eq!(finish_reason("MAX_TOKENS"), FinishReason::Length);
        assert_eq!(finish_reason("SAFETY"), FinishReason::ContentFilter);
        assert_eq!(finish_reason("error"), FinishReason::Error);
        assert_eq!(
            finish_reason("pause_turn"),
            FinishReason::Other("pause_turn".into())
        );
    }

    #[test]
    fn calls_route_by_index_then_id() {
        let mut a = CallAssembler::default();
        let mut out = Vec::new();
        let first = a.route(Some(0), Some("a"));
        a.update(first, Some("f"), Some("{"), &mut out);
        assert_eq!(a.route(Some(0), None), first);
        assert_eq!(a.route(None, Some("a")), first);
        assert_eq!(a.route(None, None), first);
        let second = a.route(Some(0), Some("b"));
        assert_ne!(second, first);
        a.update(second, Some("g"), None, &mut out);
        a.update(first, None, Some("}"), &mut out);
        a.complete_all(&mut out);
        let done: Vec<_> = out
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCallComplete { id, input_json, .. } => {
                    Some((id.as_str(), input_json.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(done, vec![("a", "{}"), ("b", "{}")]);
    }
}
