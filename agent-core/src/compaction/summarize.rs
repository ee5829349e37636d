//! Summarising older turns: the messages before the kept tail (system
//! messages and the latest user message aside) become one summary, written
//! by a model from a transcript of them.
//!
//! Invariants: the summary replaces whole units (see the `units` module), so
//! the history it leaves pairs every call with its result; system messages
//! stay (first, in their order), the latest user message stays, the tail
//! stays as it was; an earlier summary is folded into the new one. The
//! transcript is text, so any model can write the summary (no tool
//! definitions, no signatures needed); it is cut into chunks that fit the
//! summarising call, each summarised with the summary so far.

use loopwright_types::{ContentPart, Message, Role};

use super::units;

/// How a summary message starts (how an earlier one is recognised).
pub const SUMMARY_HEADER: &str = "[Summary of the earlier part of this conversation, written to free the context \
window; the messages it replaces are gone.]";

/// The summarising call's instructions.
pub const SUMMARY_SYSTEM: &str = "You compact the history of an AI agent's working session so that the agent can \
go on with its task in a smaller context window. Write a summary the agent will read instead of the messages: the \
user's requests and constraints, what was done and found (files, commands, tool results that matter, with exact \
names, paths, values and errors), decisions taken and why, and what is still left to do. Be concise but complete; \
keep identifiers exact; write no preamble.";

/// Characters of one tool result kept in the transcript.
const RESULT_CHARS: usize = 2_000;
/// Characters of one tool call's arguments kept in the transcript.
const ARGUMENT_CHARS: usize = 500;

/// The part of a history to summarise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    /// Indices of the messages the summary replaces, in order.
    pub replaced: Vec<usize>,
    /// Where the kept tail starts.
    pub tail: usize,
}

/// What to summarise in `history` keeping the last `keep_turns` steps;
/// `None` when nothing before them can go, or fewer than `min_steps` steps
/// would (a summary is a model call: not worth it for a step or two unless
/// the request does not fit otherwise).
pub(crate) fn region(history: &[Message], keep_turns: usize, min_steps: usize) -> Option<Region> {
    let units = units::split(history);
    let tail = units::tail_start(&units, keep_turns);
    let latest_user = units::latest_user(history);
    let replaced: Vec<usize> = (0..tail)
        .filter(|&i| history[i].role != Role::System && Some(i) != latest_user)
        .collect();
    let steps = replaced
        .iter()
        .filter(|&&i| history[i].role == Role::Assistant)
        .count();
    (steps >= min_steps.max(1)).then_some(Region { replaced, tail })
}

/// Whether `message` is a summary this module wrote.
pub(crate) fn is_summary(message: &Message) -> bool {
    message.role == Role::User && message.text().starts_with(SUMMARY_HEADER)
}

/// `history` with the region replaced by `summary`: system messages, then
/// the latest user message if it was before the tail, then the summary,
/// then the tail.
pub(crate) fn apply(history: &[Message], region: &Region, summary: &str) -> Vec<Message> {
    let latest_user = units::latest_user(history).filter(|&i| i < region.tail);
    let mut out: Vec<Message> = history[..region.tail]
        .iter()
        .filter(|m| m.role == Role::System)
        .cloned()
        .collect();
    if let Some(i) = latest_user {
        out.push(history[i].clone());
    }
    out.push(Message::user(format!("{SUMMARY_HEADER}\n\n{}", summary.trim())));
    out.extend(history[region.tail..].iter().cloned());
    out
}

/// The region's messages as text chunks of at most `chunk_chars`
/// characters each (a message longer than that is a chunk of its own, cut).
pub(crate) fn transcript(history: &[Message], region: &Region, chunk_chars: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    for &i in &region.replaced {
        let mut piece = render(history, i);
        if piece.chars().count() > chunk_chars {
            piece = piece.chars().take(chunk_chars).collect();
        }
        if !current.is_empty() && current.chars().count() + piece.chars().count() > chunk_chars {
            chunks.push(std::mem::take(&mut current));
        }
        current.push_str(&piece);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// The request text of one summarising call.
pub(crate) fn prompt(previous: Option<&str>, chunk: &str) -> String {
    match previous {
        Some(summary) => format!(
            "The summary so far:\n\n{summary}\n\nThe transcript continues below. Write the summary of the whole \
             session so far.\n\n{chunk}"
        ),
        None => format!("The transcript of the session so far:\n\n{chunk}\n\nWrite its summary."),
    }
}

fn cut(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept} [... {} more characters]", count - max)
}

/// One message as transcript text.
fn render(history: &[Message], i: usize) -> String {
    let message = &history[i];
    if is_summary(message) {
        let text = message.text();
        let body = text.trim_start_matches(SUMMARY_HEADER).trim();
        return format!("## Summary of what came before\n{body}\n\n");
    }
    let role = match message.role {
        Role::System => "System",
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::Tool => "Tool results",
    };
    let mut out = format!("## {role}\n");
    for part in &message.content {
        match part {
            ContentPart::Text { text } if !text.is_empty() => {
                out.push_str(text);
                out.push('\n');
            }
            ContentPart::ToolCall(call) => {
                let args = cut(&call.input.to_string(), ARGUMENT_CHARS);
                out.push_str(&format!("[called {} ({}) with {args}]\n", call.name, call.id));
            }
            ContentPart::ToolResult(result) => {
                let name =
                    loopwright_types::history::call_name(history, i, &result.call_id).unwrap_or("a tool");
                let status = if result.is_error { "error" } else { "result" };
                let text = cut(&result.text_with_image_placeholders(), RESULT_CHARS);
                out.push_str(&format!("[{status} of {name} ({})]\n{text}\n", result.call_id));
            }
            other => {
                if let Some(placeholder) = other.placeholder() {
                    out.push_str(&placeholder);
                    out.push('\n');
                }
            }
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use loopwright_types::{ToolCall, ToolOutputPart, ToolResult};

    fn step(id: &str) -> [Message; 2] {
        let call = ToolCall::new(id, "Read", serde_json::json!({"file_path": id}));
        let result = ToolResult {
            call_id: id.into(),
            parts: vec![ToolOutputPart::text(format!("contents of {id}"))],
            is_error: false,
        };
        [
            Message::new(
                Role::Assistant,
                vec![ContentPart::text("Reading."), ContentPart::ToolCall(call)],
            ),
            Message::new(Role::Tool, vec![ContentPart::ToolResult(result)]),
        ]
    }

    #[test]
    fn the_summary_replaces_whole_turns_and_keeps_system_prompt_latest_user_and_tail() {
        let mut history = vec![Message::system("rules"), Message::user("fix it")];
        for id in ["a", "b", "c", "d"] {
            history.extend(step(id));
        }
        assert_eq!(
            region(&history, 2, 3),
            None,
            "two steps are not worth a summary here"
        );
        let region = region(&history, 2, 1).unwrap();
        assert_eq!(region.tail, 6);
        assert_eq!(region.replaced, [2, 3, 4, 5]);
        let chunks = transcript(&history, &region, 10_000);
        assert_eq!(chunks.len(), 1);
        assert!(
            chunks[0].contains("[called Read (a) with {\"file_path\":\"a\"}]"),
            "{}",
            chunks[0]
        );
        assert!(
            chunks[0].contains("[result of Read (b)]\ncontents of b"),
            "{}",
            chunks[0]
        );
        let compacted = apply(&history, &region, "Read a and b.");
        assert_eq!(compacted.len(), 2 + 1 + 4);
        assert_eq!(compacted[..2], history[..2]);
        assert!(is_summary(&compacted[2]));
        assert_eq!(compacted[3..], history[6..]);
        assert_eq!(loopwright_types::history::check_history(&compacted), Ok(()));
        // Nothing but the summary before the tail: nothing to summarise.
        assert_eq!(super::region(&compacted, 2, 1), None);
        let small = transcript(&history, &region, 60);
        assert!(small.len() > 1 && small.iter().all(|c| c.chars().count() <= 60));
    }
}
