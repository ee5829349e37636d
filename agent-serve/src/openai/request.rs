//! A Chat Completions request, checked: its conversation (system texts
//! apart, earlier tool rounds as calls and results), what it changes of
//! the agent's options, the client's own `tools`, and the tool results it
//! ends with when it answers a paused run's client calls.
//!
//! Invariant: a request the surface cannot read is a 400 naming the
//! message, part or tool, before anything runs.

use axum::body::Bytes;
use loopwright_core::{
    ContentPart, Message, Role, ToolCall, ToolOutputPart, ToolResult, message::ImageSource,
};
use loopwright_runs::{OutputRequest, RunOptions};
use serde::Deserialize;
use serde_json::{Value, json};

use super::bad;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
struct ChatRequest {
    model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    response_format: Option<Value>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    functions: Option<Vec<Value>>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

/// What a request asks of a run, checked.
pub(super) struct Prepared {
    pub(super) model: String,
    /// The conversation up to the tool results it ends with, if any.
    pub(super) history: Vec<Message>,
    /// What the request changes of the agent's options.
    pub(super) options: RunOptions,
    /// The tool results the request ends with: (call id, output).
    pub(super) results: Vec<(String, String)>,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
}

impl Prepared {
    /// Whether the answer is structured output.
    pub(super) fn structured(&self) -> bool {
        self.options.output.is_some()
    }
}

/// Check a request body.
pub(super) fn prepare(body: &Bytes) -> Result<Prepared, ApiError> {
    let request: ChatRequest = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not a valid chat request: {e}")))?;
    let mut declared = tools(request.tools.as_deref().unwrap_or_default(), "tools")?;
    declared.extend(functions(request.functions.as_deref().unwrap_or_default())?);
    let client_tools = crate::client_tools::definitions(declared, "tools").map_err(bad)?;
    let (history, system, results) = conversation(&request.messages)?;
    let options = RunOptions {
        system,
        output: output_request(request.response_format.as_ref())?,
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens: request.max_completion_tokens.or(request.max_tokens),
        client_tools,
        ..RunOptions::default()
    };
    options
        .check()
        .map_err(|e| bad(format!("response_format.json_schema.schema: {e}")))?;
    Ok(Prepared {
        model: request.model,
        history,
        options,
        results,
        stream: request.stream,
        include_usage: request.stream_options.is_some_and(|o| o.include_usage),
    })
}

/// The function tools of `tools` (`{type: "function", function: {name,
/// description, parameters}}`).
fn tools(tools: &[Value], what: &str) -> Result<Vec<crate::client_tools::Declared>, ApiError> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| match tool["type"].as_str() {
            Some("function") => Ok(declared(&tool["function"])),
            other => Err(bad(format!(
                "{what}[{i}] has type {other:?}: only function tools are supported"
            ))),
        })
        .collect()
}

/// The legacy `functions` (`{name, description, parameters}`).
fn functions(functions: &[Value]) -> Result<Vec<crate::client_tools::Declared>, ApiError> {
    Ok(functions.iter().map(declared).collect())
}

fn declared(function: &Value) -> crate::client_tools::Declared {
    crate::client_tools::Declared {
        name: function["name"].as_str().unwrap_or_default().to_owned(),
        description: function["description"].as_str().unwrap_or_default().to_owned(),
        schema: function.get("parameters").cloned(),
    }
}

/// The text and images of a message's `content` (a string or parts).
fn content_parts(index: usize, content: Option<&Value>) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![ContentPart::text(text.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, part)| match part.get("type").and_then(Value::as_str) {
                Some("text") => Ok(ContentPart::text(part["text"].as_str().unwrap_or_default())),
                Some("image_url") => {
                    let url = part["image_url"]["url"].as_str().ok_or_else(|| {
                        bad(format!("messages[{index}].content[{j}].image_url.url is missing"))
                    })?;
                    Ok(ContentPart::Image {
                        image: image_source(url),
                    })
                }
                other => Err(bad(format!(
                    "messages[{index}].content[{j}] has type {other:?}; supported: text, image_url"
                ))),
            })
            .collect(),
        Some(_) => Err(bad(format!(
            "messages[{index}].content must be a string or an array of parts"
        ))),
    }
}

/// A `data:` URL as inline bytes, any other URL as is.
pub(crate) fn image_source(url: &str) -> ImageSource {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((meta, data)) = rest.split_once(',')
        && let Some(media_type) = meta.strip_suffix(";base64")
    {
        return ImageSource::Base64 {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
        };
    }
    ImageSource::Url { url: url.to_owned() }
}

/// The conversation and the extra system text of a request, and the tool
/// results it ends with (answers to a paused run's calls).
type Conversation = (Vec<Message>, Vec<String>, Vec<(String, String)>);

fn conversation(messages: &[ChatMessage]) -> Result<Conversation, ApiError> {
    let mut history = Vec::new();
    let mut system = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let mut parts = content_parts(i, m.content.as_ref())?;
        match m.role.as_str() {
            "system" | "developer" => system.push(Message::new(Role::System, parts).text()),
            "user" => history.push(Message::new(Role::User, parts)),
            "assistant" => {
                for (j, call) in m.tool_calls.iter().flatten().enumerate() {
                    parts.push(ContentPart::ToolCall(tool_call(i, j, call)?));
                }
                history.push(Message::new(Role::Assistant, parts));
            }
            "tool" => {
                let id = m.tool_call_id.clone().ok_or_else(|| {
                    bad(format!(
                        "messages[{i}] is a tool message without its tool_call_id"
                    ))
                })?;
                let result = ContentPart::ToolResult(ToolResult {
                    call_id: id,
                    parts: vec![ToolOutputPart::text(Message::new(Role::Tool, parts).text())],
                    is_error: false,
                });
                // Consecutive results are one tool message.
                match history.last_mut() {
                    Some(last) if last.role == Role::Tool => last.content.push(result),
                    _ => history.push(Message::new(Role::Tool, vec![result])),
                }
            }
            "function" => {
                return Err(bad(format!(
                    "messages[{i}] has the legacy role \"function\": send tool messages with their tool_call_id"
                )));
            }
            other => return Err(bad(format!("messages[{i}] has an unknown role {other:?}"))),
        }
    }
    let results = match history.last() {
        Some(last) if last.role == Role::Tool => trailing_results(&mut history),
        Some(last) if last.role == Role::User => Vec::new(),
        _ => return Err(bad("the last message must be a user message, or tool results")),
    };
    Ok((history, system, results))
}

/// The tool results the conversation ends with, taken off it.
fn trailing_results(history: &mut Vec<Message>) -> Vec<(String, String)> {
    let Some(last) = history.pop() else {
        return Vec::new();
    };
    last.content
        .into_iter()
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some((r.call_id.clone(), r.text())),
            _ => None,
        })
        .collect()
}

/// An assistant message's tool call.
fn tool_call(i: usize, j: usize, call: &Value) -> Result<ToolCall, ApiError> {
    let at = || format!("messages[{i}].tool_calls[{j}]");
    let id = call["id"]
        .as_str()
        .ok_or_else(|| bad(format!("{} has no id", at())))?;
    let name = call["function"]["name"]
        .as_str()
        .ok_or_else(|| bad(format!("{} has no function.name", at())))?;
    let input = match &call["function"]["arguments"] {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => serde_json::from_str(text)
            .map_err(|e| bad(format!("{}.function.arguments is not JSON: {e}", at())))?,
        Value::Null => json!({}),
        other => other.clone(),
    };
    Ok(ToolCall::new(id, name, input))
}

/// The structured answer `response_format` asks for.
fn output_request(format: Option<&Value>) -> Result<Option<OutputRequest>, ApiError> {
    let Some(format) = format else { return Ok(None) };
    match format.get("type").and_then(Value::as_str) {
        None | Some("text") => Ok(None),
        Some("json_object") => Ok(Some(OutputRequest {
            name: "json_object".into(),
            schema: json!({"type": "object"}),
        })),
        Some("json_schema") => {
            let spec = &format["json_schema"];
            let name = spec.get("name").and_then(Value::as_str).unwrap_or("response");
            let schema = spec
                .get("schema")
                .cloned()
                .ok_or_else(|| bad("response_format.json_schema.schema is missing"))?;
            Ok(Some(OutputRequest {
                name: name.to_owned(),
                schema,
            }))
        }
        Some(other) => Err(bad(format!(
            "response_format.type {other:?} is not supported; use text, json_object or json_schema"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn prepared(body: Value) -> Result<Prepared, ApiError> {
        prepare(&Bytes::from(body.to_string()))
    }

    #[test]
    fn system_messages_add_and_assistant_turns_are_history() {
        let p = prepared(json!({"model": "a", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": [{"type": "text", "text": "And "}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        ]}))
        .ok()
        .unwrap();
        assert_eq!(p.options.system, ["Be brief."]);
        assert_eq!(p.history.len(), 3);
        assert_eq!(p.history[1].role, Role::Assistant);
        assert!(
            matches!(&p.history[2].content[1], ContentPart::Image { image: ImageSource::Base64 { media_type, .. } } if media_type == "image/png")
        );
        assert!(p.results.is_empty());
    }

    #[test]
    fn client_tools_and_the_results_a_request_ends_with_are_read() {
        let p = prepared(json!({"model": "a", "messages": [
            {"role": "user", "content": "Where am I?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "where", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Lisbon"},
        ], "tools": [{"type": "function", "function": {"name": "where", "parameters": {"type": "object"}}}]}))
        .ok()
        .unwrap();
        assert_eq!(p.options.client_tools[0].name, "where");
        assert_eq!(p.results, [("c1".to_owned(), "Lisbon".to_owned())]);
        assert_eq!(p.history.last().unwrap().role, Role::Assistant);
    }

    #[test]
    fn bad_tools_and_bad_requests_are_named() {
        let e = prepared(
            json!({"model": "a", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "function", "function": {"name": "f g"}}]}),
        )
        .err()
        .unwrap();
        assert_eq!(e.status(), 400);
        assert!(e.message.contains("tools[0] (\"f g\")"), "{}", e.message);
        let e = prepared(
            json!({"model": "a", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search"}]}),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("only function tools"), "{}", e.message);
        let e = prepared(json!({"messages": []})).err().unwrap();
        assert!(e.message.contains("missing field `model`"), "{}", e.message);
        let e = prepared(json!({"model": "a", "messages": [{"role": "tool", "content": "1"}]}))
            .err()
            .unwrap();
        assert!(
            e.message.contains("messages[0] is a tool message without"),
            "{}",
            e.message
        );
        let e = prepared(
            json!({"model": "a", "messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "n"}}}),
        )
        .err()
        .unwrap();
        assert!(
            e.message.contains("json_schema.schema is missing"),
            "{}",
            e.message
        );
    }
}
