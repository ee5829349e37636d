//! The UI messages `useChat` posts, as the loop's history.
//!
//! Invariant: a part the route cannot read (a type it does not know, a
//! tool part without its output in any message but a continued one) is a
//! 400 naming the message and the part; nothing of the request is used
//! then.

use loopwright_core::message::{FileSource, ImageSource};
use loopwright_core::{ContentPart, Message, Role, ToolCall, ToolOutputPart, ToolResult};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::bad;
use crate::error::ApiError;

/// One UI message (its other keys, `metadata`, are ignored).
#[derive(Debug, Deserialize)]
pub(super) struct UiMessage {
    #[serde(default)]
    pub(super) id: String,
    pub(super) role: String,
    #[serde(default)]
    pub(super) parts: Vec<Value>,
}

/// The UI messages as the loop's history: user and system text, and each
/// assistant message's steps (text, then its tool calls, then their
/// results as a tool message).
pub(super) fn history(ui: &[UiMessage], first: usize) -> Result<Vec<Message>, ApiError> {
    let mut messages = Vec::new();
    for (i, message) in (first..).zip(ui) {
        let at = |part: usize| format!("messages[{i}] ({}) parts[{part}]", message.id);
        match message.role.as_str() {
            "user" | "system" => {
                let role = if message.role == "user" {
                    Role::User
                } else {
                    Role::System
                };
                let mut content = Vec::new();
                for (p, part) in message.parts.iter().enumerate() {
                    match kind(part) {
                        "text" => content.push(ContentPart::text(text_of(part))),
                        "file" => content.push(file(part).map_err(|why| bad(format!("{}: {why}", at(p))))?),
                        "step-start" => {}
                        k if k.starts_with("data-") || k.starts_with("source-") => {}
                        other => {
                            return Err(bad(format!(
                                "{}: a {role:?} part of type {other:?} is not supported",
                                at(p)
                            )));
                        }
                    }
                }
                messages.push(Message::new(role, content));
            }
            "assistant" => assistant(&mut messages, message, &at)?,
            other => {
                return Err(bad(format!(
                    "messages[{i}]: unknown role {other:?}: user, assistant or system"
                )));
            }
        }
    }
    Ok(messages)
}

/// One assistant UI message, as assistant and tool messages, one pair per
/// step.
fn assistant(
    messages: &mut Vec<Message>,
    message: &UiMessage,
    at: &dyn Fn(usize) -> String,
) -> Result<(), ApiError> {
    let mut content: Vec<ContentPart> = Vec::new();
    let mut results: Vec<ContentPart> = Vec::new();
    let mut flush = |content: &mut Vec<ContentPart>, results: &mut Vec<ContentPart>| {
        if !content.is_empty() {
            messages.push(Message::new(Role::Assistant, std::mem::take(content)));
        }
        if !results.is_empty() {
            messages.push(Message::new(Role::Tool, std::mem::take(results)));
        }
    };
    for (p, part) in message.parts.iter().enumerate() {
        match kind(part) {
            "step-start" => flush(&mut content, &mut results),
            "text" => content.push(ContentPart::text(text_of(part))),
            "reasoning" => {}
            // A tool's media, shown to the user (its result holds them).
            k if k.starts_with("data-") || k.starts_with("source-") || k == "file" => {}
            k if k.starts_with("tool-") || k == "dynamic-tool" => {
                let (call, result) = tool_part(part, k).map_err(|why| bad(format!("{}: {why}", at(p))))?;
                content.push(ContentPart::ToolCall(call));
                results.push(ContentPart::ToolResult(result));
            }
            other => {
                return Err(bad(format!(
                    "{}: an assistant part of type {other:?} is not supported",
                    at(p)
                )));
            }
        }
    }
    flush(&mut content, &mut results);
    Ok(())
}

/// A tool part with its output, as its call and result.
fn tool_part(part: &Value, kind: &str) -> Result<(ToolCall, ToolResult), String> {
    let name = match kind {
        "dynamic-tool" => part["toolName"].as_str().unwrap_or_default().to_owned(),
        _ => kind.trim_start_matches("tool-").to_owned(),
    };
    let id = part["toolCallId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or("a tool part without its toolCallId")?;
    let input = part.get("input").cloned().unwrap_or_else(|| json!({}));
    let (output, is_error) = match part["state"].as_str() {
        Some("output-available") => (value_text(&part["output"]), false),
        Some("output-error") => (part["errorText"].as_str().unwrap_or_default().to_owned(), true),
        Some("output-denied") => ("The call was denied.".to_owned(), true),
        state => return Err(format!("tool call {id} has no output yet (state {state:?})")),
    };
    let result = ToolResult {
        call_id: id.to_owned(),
        parts: vec![ToolOutputPart::text(output)],
        is_error,
    };
    Ok((ToolCall::new(id, name, input), result))
}

/// A `file` part (`{mediaType, url, filename?}`, the URL a `data:` URL or
/// one the provider fetches): an image part for an image, else a file.
fn file(part: &Value) -> Result<ContentPart, String> {
    let media_type = part["mediaType"]
        .as_str()
        .ok_or("a file part without its mediaType")?;
    let url = part["url"].as_str().ok_or("a file part without its url")?;
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .and_then(|(meta, data)| meta.strip_suffix(";base64").map(|_| data.to_owned()));
    if url.starts_with("data:") && inline.is_none() {
        return Err("a file part's data: URL must be base64 (data:TYPE;base64,...)".into());
    }
    let filename = part["filename"].as_str().map(str::to_owned);
    Ok(if media_type.starts_with("image/") {
        let image = match inline {
            Some(data) => ImageSource::Base64 {
                media_type: media_type.to_owned(),
                data,
            },
            None => ImageSource::Url { url: url.to_owned() },
        };
        ContentPart::Image { image }
    } else {
        let file = match inline {
            Some(data) => FileSource::Base64 {
                media_type: media_type.to_owned(),
                data,
            },
            None => FileSource::Url {
                url: url.to_owned(),
                media_type: Some(media_type.to_owned()),
            },
        };
        ContentPart::File { file, filename }
    })
}

pub(super) fn kind(part: &Value) -> &str {
    part["type"].as_str().unwrap_or("(none)")
}

fn text_of(part: &Value) -> String {
    part["text"].as_str().unwrap_or_default().to_owned()
}

/// A tool's output as the model reads it: text as is, other JSON written.
pub(super) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn file_parts_are_images_or_files() {
        let image =
            file(&json!({"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAAA"}))
                .unwrap();
        assert!(
            matches!(image, ContentPart::Image { image: ImageSource::Base64 { ref data, .. } } if data == "AAAA")
        );
        let pdf = file(
            &json!({"type": "file", "mediaType": "application/pdf", "url": "https://example.com/a.pdf",
            "filename": "a.pdf"}),
        )
        .unwrap();
        assert!(
            matches!(pdf, ContentPart::File { file: FileSource::Url { .. }, filename: Some(ref f) } if f == "a.pdf")
        );
        assert!(
            file(&json!({"mediaType": "text/plain", "url": "data:text/plain,hi"}))
                .unwrap_err()
                .contains("base64")
        );
        assert!(
            file(&json!({"url": "https://x"}))
                .unwrap_err()
                .contains("mediaType")
        );
    }
}
