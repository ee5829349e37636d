//! What a span says of the conversation when the application opts in
//! ([`AgentOptions::trace_content`](crate::agent::AgentOptions::trace_content)):
//! the GenAI conventions' `gen_ai.system_instructions`,
//! `gen_ai.input.messages` and `gen_ai.output.messages` on a model call's
//! span, `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result` on a
//! tool call's, each a JSON string.
//!
//! Invariant: off unless asked for (messages may hold personal data); an
//! image, clip or file is named by its kind and media type, never copied
//! into a span (a span is not a blob store); text is written whole.

use serde_json::{Value, json};

use loopwright_types::{ContentPart, Message, Role, ToolCall, ToolOutputPart};

/// The parts of a message as the conventions write them.
fn parts(message: &Message) -> Vec<Value> {
    message.content.iter().filter_map(part).collect()
}

fn part(part: &ContentPart) -> Option<Value> {
    Some(match part {
        ContentPart::Text { text } => json!({"type": "text", "content": text}),
        ContentPart::Reasoning(r) => json!({"type": "reasoning", "content": r.text}),
        ContentPart::ToolCall(call) => tool_call(call),
        ContentPart::ToolResult(result) => {
            json!({"type": "tool_call_response", "id": result.call_id, "response": result.text()})
        }
        ContentPart::Image { .. } => json!({"type": "blob", "modality": "image"}),
        ContentPart::Audio { .. } => json!({"type": "blob", "modality": "audio"}),
        ContentPart::File { filename, .. } => json!({"type": "file", "name": filename}),
        // A provider's compaction item is opaque.
        _ => return None,
    })
}

fn tool_call(call: &ToolCall) -> Value {
    json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.input})
}

fn role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `gen_ai.input.messages`: the request's conversation.
pub(crate) fn input_messages(messages: &[Message]) -> String {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| json!({"role": role(m.role), "parts": parts(m)}))
        .collect();
    Value::Array(messages).to_string()
}

/// `gen_ai.system_instructions`: the request's system prompt.
pub(crate) fn system_instructions(system: &str) -> String {
    json!([{"type": "text", "content": system}]).to_string()
}

/// `gen_ai.output.messages`: what one model call answered.
pub(crate) fn output_messages(text: &str, calls: &[ToolCall], finish_reason: &str) -> String {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"type": "text", "content": text}));
    }
    parts.extend(calls.iter().map(tool_call));
    json!([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]).to_string()
}

/// `gen_ai.tool.call.result`: a tool's output as the model reads it.
pub(crate) fn tool_result(parts: &[ToolOutputPart]) -> String {
    loopwright_types::tool::render_parts_text(parts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn messages_are_written_in_the_conventions_shape() {
        let call = ToolCall::new("c1", "weather", json!({"city": "Lisbon"}));
        let messages = vec![
            Message::user("Weather in Lisbon?"),
            Message::new(Role::Assistant, vec![ContentPart::ToolCall(call.clone())]),
        ];
        let written: Value = serde_json::from_str(&input_messages(&messages)).unwrap();
        assert_eq!(
            written[0],
            json!({"role": "user", "parts": [{"type": "text", "content": "Weather in Lisbon?"}]})
        );
        assert_eq!(written[1]["parts"][0]["arguments"]["city"], "Lisbon");
        let out: Value = serde_json::from_str(&output_messages("Sunny.", &[call], "tool_calls")).unwrap();
        assert_eq!(out[0]["parts"][0]["content"], "Sunny.");
        assert_eq!(out[0]["parts"][1]["name"], "weather");
        assert_eq!(out[0]["finish_reason"], "tool_calls");
    }
}
