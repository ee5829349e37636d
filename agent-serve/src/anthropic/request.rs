//! A Messages request, checked: its conversation (earlier tool rounds as
//! calls and results), what it changes of the agent's options, the
//! client's own `tools`, and the `tool_result` blocks it ends with when it
//! answers a paused run's client calls.
//!
//! Invariant: a request the surface cannot read is a 400 naming the
//! message, block or tool, before anything runs.

use axum::body::Bytes;
use loopwright_core::{
    ContentPart, Message, Role, ToolCall, ToolOutputPart, ToolResult, message::ImageSource,
};
use loopwright_runs::{OutputRequest, RunOptions};
use serde::Deserialize;
use serde_json::Value;

use super::bad;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
struct MessagesRequest {
    model: String,
    messages: Vec<InMessage>,
    #[serde(default)]
    system: Option<Value>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    output_config: Option<Value>,
    /// The beta spelling of `output_config.format`.
    #[serde(default)]
    output_format: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct InMessage {
    role: String,
    content: Value,
}

/// One `tool_result` the request ends with.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answered {
    pub(super) tool_use_id: String,
    pub(super) text: String,
    pub(super) is_error: bool,
}

/// A request, checked.
pub(super) struct Prepared {
    pub(super) model: String,
    pub(super) history: Vec<Message>,
    pub(super) options: RunOptions,
    /// The tool results the request ends with (answers to a paused run).
    pub(super) results: Vec<Answered>,
    pub(super) stream: bool,
}

impl Prepared {
    /// Whether the answer is structured output.
    pub(super) fn structured(&self) -> bool {
        self.options.output.is_some()
    }
}

/// Check a request body.
pub(super) fn prepare(body: &Bytes) -> Result<Prepared, ApiError> {
    let request: MessagesRequest = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not a valid messages request: {e}")))?;
    let client_tools = client_tools(request.tools.as_deref().unwrap_or_default())?;
    let mut history = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        match m.role.as_str() {
            "user" => user(&mut history, i, &m.content)?,
            "assistant" => history.push(Message::new(
                Role::Assistant,
                blocks(i, &m.content, Role::Assistant)?,
            )),
            other => {
                return Err(bad(format!(
                    "messages[{i}].role {other:?} must be user or assistant"
                )));
            }
        }
    }
    let results = match history.last().map(|m| m.role) {
        Some(Role::User) => Vec::new(),
        Some(Role::Tool) => trailing_results(&mut history),
        _ => return Err(bad("the last message must be a user message")),
    };
    let options = RunOptions {
        system: system_texts(request.system.as_ref())?,
        output: output_request(&request)?,
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens: request.max_tokens,
        client_tools,
        ..RunOptions::default()
    };
    options
        .check()
        .map_err(|e| bad(format!("output_config.format.schema: {e}")))?;
    Ok(Prepared {
        model: request.model,
        history,
        options,
        results,
        stream: request.stream,
    })
}

/// The client's tools (`{name, description, input_schema}`; a server tool,
/// one with a `type`, is refused).
fn client_tools(tools: &[Value]) -> Result<Vec<loopwright_core::ToolDefinition>, ApiError> {
    let declared = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| match tool.get("type").and_then(Value::as_str) {
            None | Some("custom") => Ok(crate::client_tools::Declared {
                name: tool["name"].as_str().unwrap_or_default().to_owned(),
                description: tool["description"].as_str().unwrap_or_default().to_owned(),
                schema: tool.get("input_schema").cloned(),
            }),
            Some(other) => Err(bad(format!(
                "tools[{i}] is a {other} server tool: only the client's own tools (name, input_schema) are \
                 supported; the agent runs its own"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    crate::client_tools::definitions(declared, "tools").map_err(bad)
}

/// A user message: its `tool_result` blocks as a tool message, its other
/// blocks as the user's.
fn user(history: &mut Vec<Message>, i: usize, content: &Value) -> Result<(), ApiError> {
    let mut results = Vec::new();
    let mut own = Vec::new();
    for part in blocks(i, content, Role::User)? {
        match part {
            ContentPart::ToolResult(_) => results.push(part),
            other => own.push(other),
        }
    }
    if !results.is_empty() {
        history.push(Message::new(Role::Tool, results));
    }
    if !own.is_empty() {
        history.push(Message::new(Role::User, own));
    }
    Ok(())
}

/// The tool results the conversation ends with, taken off it.
fn trailing_results(history: &mut Vec<Message>) -> Vec<Answered> {
    let Some(last) = history.pop() else {
        return Vec::new();
    };
    last.content
        .into_iter()
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some(Answered {
                text: r.text(),
                tool_use_id: r.call_id,
                is_error: r.is_error,
            }),
            _ => None,
        })
        .collect()
}

fn blocks(index: usize, content: &Value, role: Role) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        Value::String(text) => Ok(vec![ContentPart::text(text.clone())]),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (j, block) in blocks.iter().enumerate() {
                if let Some(part) = block_part(index, j, block, role)? {
                    parts.push(part);
                }
            }
            Ok(parts)
        }
        _ => Err(bad(format!(
            "messages[{index}].content must be a string or an array of blocks"
        ))),
    }
}

/// One content block (`None`: one the model does not read again).
fn block_part(index: usize, j: usize, block: &Value, role: Role) -> Result<Option<ContentPart>, ApiError> {
    let at = || format!("messages[{index}].content[{j}]");
    Ok(Some(match (block.get("type").and_then(Value::as_str), role) {
        (Some("text"), _) => ContentPart::text(block["text"].as_str().unwrap_or_default()),
        (Some("image"), _) => ContentPart::Image {
            image: image(&block["source"])
                .ok_or_else(|| bad(format!("{}.source must be base64 or url", at())))?,
        },
        // Earlier reasoning is the served agent's own business.
        (Some("thinking" | "redacted_thinking"), _) => return Ok(None),
        (Some("tool_use"), Role::Assistant) => {
            let id = block["id"]
                .as_str()
                .ok_or_else(|| bad(format!("{} has no id", at())))?;
            let name = block["name"]
                .as_str()
                .ok_or_else(|| bad(format!("{} has no name", at())))?;
            ContentPart::ToolCall(ToolCall::new(
                id,
                name,
                block.get("input").cloned().unwrap_or_default(),
            ))
        }
        (Some("tool_result"), Role::User) => {
            let id = block["tool_use_id"]
                .as_str()
                .ok_or_else(|| bad(format!("{} has no tool_use_id", at())))?;
            ContentPart::ToolResult(ToolResult {
                call_id: id.to_owned(),
                parts: vec![ToolOutputPart::text(result_text(&block["content"]))],
                is_error: block["is_error"].as_bool().unwrap_or(false),
            })
        }
        (Some(kind @ ("tool_use" | "tool_result" | "server_tool_use")), _) => {
            return Err(bad(format!(
                "{} is a {kind} block, which a {} message does not carry",
                at(),
                if role == Role::User { "user" } else { "assistant" }
            )));
        }
        (other, _) => {
            return Err(bad(format!(
                "{} has type {other:?}; supported: text, image, tool_use, tool_result",
                at()
            )));
        }
    }))
}

/// A `tool_result`'s content as text (a string, or text blocks).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn image(source: &Value) -> Option<ImageSource> {
    match source.get("type").and_then(Value::as_str)? {
        "base64" => Some(ImageSource::Base64 {
            media_type: source["media_type"].as_str()?.to_owned(),
            data: source["data"].as_str()?.to_owned(),
        }),
        "url" => Some(ImageSource::Url {
            url: source["url"].as_str()?.to_owned(),
        }),
        _ => None,
    }
}

fn system_texts(system: Option<&Value>) -> Result<Vec<String>, ApiError> {
    match system {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect()),
        Some(_) => Err(bad("system must be a string or an array of text blocks")),
    }
}

fn output_request(request: &MessagesRequest) -> Result<Option<OutputRequest>, ApiError> {
    let format = request
        .output_config
        .as_ref()
        .and_then(|c| c.get("format"))
        .or(request.output_format.as_ref());
    let Some(format) = format.filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match format.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = format
                .get("schema")
                .cloned()
                .ok_or_else(|| bad("output_config.format.schema is missing"))?;
            Ok(Some(OutputRequest {
                name: "output".into(),
                schema,
            }))
        }
        other => Err(bad(format!(
            "output_config.format.type {other:?} is not supported; use json_schema"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn prepared(body: Value) -> Result<Prepared, ApiError> {
        prepare(&Bytes::from(body.to_string()))
    }

    #[test]
    fn system_blocks_history_and_refusals() {
        let p = prepared(json!({"model": "a", "max_tokens": 100, "system": [{"type": "text", "text": "Be brief."}],
            "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "text", "text": "Hello"}]},
                         {"role": "user", "content": "Again"}]}))
        .ok()
        .unwrap();
        assert_eq!(p.options.system, ["Be brief."]);
        assert_eq!(p.history[1].text(), "Hello");
        let e = prepared(
            json!({"model": "a", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
        )
        .err()
        .unwrap();
        assert!(
            e.message
                .contains("tools[0] is a web_search_20250305 server tool"),
            "{}",
            e.message
        );
        assert_eq!(e.body()["error"]["type"], "invalid_request_error");
        let e = prepared(json!({"model": "a", "max_tokens": 1, "messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "x"}]}]})).err().unwrap();
        assert!(
            e.message.contains("messages[0].content[0] is a tool_result"),
            "{}",
            e.message
        );
    }

    #[test]
    fn tool_rounds_are_history_and_trailing_results_answer_the_paused_run() {
        let p = prepared(json!({"model": "a", "max_tokens": 100,
            "tools": [{"name": "where", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "Where am I?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "where", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "Lisbon"}]}]},
            ]}))
        .ok()
        .unwrap();
        assert_eq!(p.options.client_tools[0].name, "where");
        assert_eq!(
            p.results,
            [Answered {
                tool_use_id: "t1".into(),
                text: "Lisbon".into(),
                is_error: false
            }]
        );
        assert_eq!(p.history.len(), 2);
    }
}
