//! AG-UI's `RunAgentInput`, checked: the thread's messages as the loop's
//! history, the frontend tools, the context as system text, and what
//! continues a paused run (resume entries for its interrupts, the tool
//! messages it ends with for its frontend calls).
//!
//! Invariant: an input the surface cannot read is a 400 naming the
//! message, part, tool or entry, before anything runs.

use loopwright_core::{ContentPart, Message, Role, ToolCall, ToolDefinition, ToolOutputPart, ToolResult};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::bad;
use crate::error::ApiError;

/// What `HttpAgent` posts (unknown keys are allowed and ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    messages: Vec<Value>,
    #[serde(default)]
    tools: Vec<Value>,
    #[serde(default)]
    context: Vec<Value>,
    #[serde(default)]
    resume: Vec<ResumeEntry>,
    #[serde(default)]
    state: Value,
}

/// An answer to an interrupt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResumeEntry {
    pub(super) interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub(super) status: String,
    #[serde(default)]
    pub(super) payload: Value,
}

/// A tool message the input ends with.
#[derive(Debug, Clone)]
pub(super) struct ToolAnswer {
    pub(super) tool_call_id: String,
    pub(super) content: String,
    pub(super) is_error: bool,
}

/// An input, checked.
#[derive(Debug)]
pub(super) struct Input {
    pub(super) thread_id: String,
    pub(super) run_id: String,
    /// The conversation up to the tool messages it ends with.
    pub(super) history: Vec<Message>,
    /// System texts from `context`.
    pub(super) context: Vec<String>,
    pub(super) tools: Vec<ToolDefinition>,
    pub(super) resume: Vec<ResumeEntry>,
    /// The tool messages the thread ends with.
    pub(super) answers: Vec<ToolAnswer>,
    /// The thread's messages as the client sent them (its activity
    /// messages left out): what a messages snapshot starts with.
    pub(super) raw: Vec<Value>,
    /// The page's state, when it sent one that is not empty: the agent
    /// reads it (a system text) and the run's state snapshot echoes it.
    pub(super) state: Option<Value>,
}

/// Check a request body.
pub(super) fn read(body: &[u8]) -> Result<Input, ApiError> {
    let input: RunAgentInput = serde_json::from_slice(body).map_err(|e| {
        bad(format!(
            "the body must be AG-UI's RunAgentInput (threadId, runId, messages): {e}"
        ))
    })?;
    let mut history = Vec::new();
    for (i, message) in input.messages.iter().enumerate() {
        push_message(&mut history, i, message)?;
    }
    let answers = match history.last() {
        Some(last) if last.role == Role::Tool => trailing_answers(&mut history),
        _ => Vec::new(),
    };
    let raw = input
        .messages
        .into_iter()
        .filter(|m| m["role"] != "activity")
        .collect();
    let state = Some(input.state).filter(|s| match s {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    });
    let mut context = context(&input.context);
    if let Some(state) = &state {
        context.push(format!(
            "The page's current state (AG-UI shared state, read-only here): {state}"
        ));
    }
    Ok(Input {
        raw,
        state,
        thread_id: input.thread_id,
        run_id: input.run_id,
        history,
        context,
        tools: tools(&input.tools)?,
        resume: input.resume,
        answers,
    })
}

/// One thread message into the history.
fn push_message(history: &mut Vec<Message>, i: usize, message: &Value) -> Result<(), ApiError> {
    let role = message["role"].as_str().unwrap_or_default();
    match role {
        "user" => history.push(Message::new(Role::User, content(i, &message["content"])?)),
        "system" | "developer" => history.push(Message::new(Role::System, content(i, &message["content"])?)),
        "assistant" => {
            let mut parts = content(i, &message["content"])?;
            for (j, call) in message["toolCalls"].as_array().into_iter().flatten().enumerate() {
                parts.push(ContentPart::ToolCall(tool_call(i, j, call)?));
            }
            history.push(Message::new(Role::Assistant, parts));
        }
        "tool" => {
            let id = message["toolCallId"]
                .as_str()
                .ok_or_else(|| bad(format!("messages[{i}] is a tool message without its toolCallId")))?;
            let error = message["error"].as_str();
            let text = match error {
                Some(error) => error.to_owned(),
                None => Message::new(Role::Tool, content(i, &message["content"])?).text(),
            };
            let result = ContentPart::ToolResult(ToolResult {
                call_id: id.to_owned(),
                parts: vec![ToolOutputPart::text(text)],
                is_error: error.is_some(),
            });
            match history.last_mut() {
                Some(last) if last.role == Role::Tool => last.content.push(result),
                _ => history.push(Message::new(Role::Tool, vec![result])),
            }
        }
        // The model does not read earlier reasoning or the UI's activity again.
        "reasoning" | "activity" => {}
        other => {
            return Err(bad(format!(
                "messages[{i}] has role {other:?}: user, assistant, system, developer, tool, reasoning or activity"
            )));
        }
    }
    Ok(())
}

/// A message's content: a string, or text and image parts.
fn content(i: usize, content: &Value) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => Ok(vec![ContentPart::text(text.clone())]),
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(j, part)| match part["type"].as_str() {
                Some("text") => Ok(ContentPart::text(part["text"].as_str().unwrap_or_default())),
                Some("image") => image(&part["source"])
                    .map(|image| ContentPart::Image { image })
                    .ok_or_else(|| bad(format!("messages[{i}].content[{j}].source must be data or url"))),
                other => Err(bad(format!(
                    "messages[{i}].content[{j}] has type {other:?}; supported: text, image"
                ))),
            })
            .collect(),
        _ => Err(bad(format!("messages[{i}].content must be a string or parts"))),
    }
}

fn image(source: &Value) -> Option<loopwright_core::message::ImageSource> {
    use loopwright_core::message::ImageSource;
    let value = source["value"].as_str()?;
    match source["type"].as_str()? {
        "data" => Some(ImageSource::Base64 {
            media_type: source["mimeType"].as_str()?.to_owned(),
            data: value.to_owned(),
        }),
        "url" => Some(ImageSource::Url {
            url: value.to_owned(),
        }),
        _ => None,
    }
}

/// An assistant message's tool call.
fn tool_call(i: usize, j: usize, call: &Value) -> Result<ToolCall, ApiError> {
    let at = || format!("messages[{i}].toolCalls[{j}]");
    let id = call["id"]
        .as_str()
        .ok_or_else(|| bad(format!("{} has no id", at())))?;
    let name = call["function"]["name"]
        .as_str()
        .ok_or_else(|| bad(format!("{} has no function.name", at())))?;
    let input = match call["function"]["arguments"].as_str() {
        None => json!({}),
        Some(text) if text.trim().is_empty() => json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| bad(format!("{}.function.arguments is not JSON: {e}", at())))?,
    };
    Ok(ToolCall::new(id, name, input))
}

/// The tool messages the thread ends with, taken off it.
fn trailing_answers(history: &mut Vec<Message>) -> Vec<ToolAnswer> {
    let Some(last) = history.pop() else {
        return Vec::new();
    };
    last.content
        .into_iter()
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some(ToolAnswer {
                content: r.text(),
                tool_call_id: r.call_id,
                is_error: r.is_error,
            }),
            _ => None,
        })
        .collect()
}

/// `context` as system texts (`description: value`).
fn context(context: &[Value]) -> Vec<String> {
    context
        .iter()
        .filter_map(|c| {
            let value = c["value"].as_str()?;
            Some(match c["description"].as_str() {
                Some(description) if !description.is_empty() => format!("{description}: {value}"),
                _ => value.to_owned(),
            })
        })
        .collect()
}

/// The frontend tools (`{name, description, parameters}`).
fn tools(tools: &[Value]) -> Result<Vec<ToolDefinition>, ApiError> {
    let declared = tools
        .iter()
        .map(|t| crate::client_tools::Declared {
            name: t["name"].as_str().unwrap_or_default().to_owned(),
            description: t["description"].as_str().unwrap_or_default().to_owned(),
            schema: t.get("parameters").cloned(),
        })
        .collect();
    crate::client_tools::definitions(declared, "tools").map_err(bad)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_thread_reads_as_history_and_its_trailing_tool_messages_as_answers() {
        let body = json!({"threadId": "t1", "runId": "r2", "state": {}, "forwardedProps": {},
        "tools": [{"name": "get_location", "description": "Where.", "parameters": {"type": "object"}}],
        "context": [{"description": "Page", "value": "checkout"}],
        "messages": [
            {"id": "m1", "role": "user", "content": "Where am I?"},
            {"id": "m2", "role": "assistant", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_location", "arguments": "{}"}}]},
            {"id": "m3", "role": "tool", "toolCallId": "c1", "content": "Lisbon"},
        ]});
        let input = read(body.to_string().as_bytes()).unwrap();
        assert_eq!(input.tools[0].name, "get_location");
        assert_eq!(input.context, ["Page: checkout"]);
        assert_eq!(input.history.len(), 2);
        assert_eq!(input.answers[0].tool_call_id, "c1");
        assert_eq!(input.answers[0].content, "Lisbon");
        let bad_role = json!({"threadId": "t", "runId": "r", "messages": [{"id": "x", "role": "robot"}]});
        let e = read(bad_role.to_string().as_bytes()).unwrap_err();
        assert!(
            e.message.contains("messages[0] has role \"robot\""),
            "{}",
            e.message
        );
        let no_thread = read(br#"{"runId": "r", "messages": []}"#).unwrap_err();
        assert!(no_thread.message.contains("threadId"), "{}", no_thread.message);
    }
}
