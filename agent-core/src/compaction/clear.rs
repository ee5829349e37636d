//! Clearing old tool results: every call keeps its result, cut to its
//! first lines with a note saying what was cleared.
//!
//! Invariants: only results before the kept tail change; each keeps its
//! call id, its error flag and its tool references (a `search_tools`
//! result still loads its tools); media becomes its placeholder; a result
//! cleared before, or already short, is left as it is, so clearing twice
//! changes nothing.

use loopwright_types::{ContentPart, Message, ToolOutputPart, ToolResult};

/// Lines of a cleared result kept by default.
pub const DEFAULT_KEEP_LINES: usize = 5;
/// Characters of a cleared result's kept lines, at most.
const MAX_KEPT_CHARS: usize = 600;
/// The start of the note that ends a cleared result (how a cleared result
/// is recognised).
pub const CLEARED_NOTE: &str = "[cleared by compaction:";

/// `history` with the results before `tail` cleared (see the module's
/// invariants); `None` when no result changed.
pub(crate) fn clear_results(history: &[Message], tail: usize, keep_lines: usize) -> Option<Vec<Message>> {
    let mut out = history.to_vec();
    let mut changed = false;
    for message in &mut out[..tail.min(history.len())] {
        for part in &mut message.content {
            if let ContentPart::ToolResult(result) = part
                && let Some(cleared) = cleared(result, keep_lines)
            {
                *result = cleared;
                changed = true;
            }
        }
    }
    changed.then_some(out)
}

/// `result` cleared, or `None` when it is short or cleared already.
fn cleared(result: &ToolResult, keep_lines: usize) -> Option<ToolResult> {
    let text = result.text_with_image_placeholders();
    if text.contains(CLEARED_NOTE) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let has_media = result.parts.iter().any(ToolOutputPart::is_media);
    if !has_media && lines.len() <= keep_lines && text.chars().count() <= MAX_KEPT_CHARS {
        return None;
    }
    let mut kept: String = lines
        .iter()
        .take(keep_lines)
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
        .take(MAX_KEPT_CHARS)
        .collect();
    let dropped_lines = lines.len().saturating_sub(keep_lines);
    let dropped_chars = text.chars().count().saturating_sub(kept.chars().count());
    if !kept.is_empty() {
        kept.push('\n');
    }
    kept.push_str(&format!(
        "{CLEARED_NOTE} {dropped_lines} more line(s), {} of this result were removed to free the context window; \
         call the tool again if you need them]",
        loopwright_types::util::human_size(dropped_chars)
    ));
    let mut parts = vec![ToolOutputPart::text(kept)];
    parts.extend(
        result
            .parts
            .iter()
            .filter(|p| matches!(p, ToolOutputPart::ToolReference { .. }))
            .cloned(),
    );
    Some(ToolResult {
        call_id: result.call_id.clone(),
        parts,
        is_error: result.is_error,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use loopwright_types::{Role, ToolCall};

    fn step(id: &str, text: &str) -> [Message; 2] {
        let call = ToolCall::new(id, "Read", serde_json::json!({"file_path": "a"}));
        let result = ToolResult {
            call_id: id.into(),
            parts: vec![
                ToolOutputPart::text(text),
                ToolOutputPart::ToolReference { tool: "x".into() },
            ],
            is_error: id == "a",
        };
        [
            Message::new(Role::Assistant, vec![ContentPart::ToolCall(call)]),
            Message::new(Role::Tool, vec![ContentPart::ToolResult(result)]),
        ]
    }

    #[test]
    fn old_results_keep_their_first_lines_and_say_what_was_cleared() {
        let long: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let mut history = vec![Message::user("go")];
        history.extend(step("a", &long));
        history.extend(step("b", &long));
        let cleared = clear_results(&history, 3, 2).unwrap();
        let ContentPart::ToolResult(first) = &cleared[2].content[0] else {
            unreachable!()
        };
        let text = first.text();
        assert!(
            text.starts_with("line 1\nline 2\n[cleared by compaction: 38 more line(s)"),
            "{text}"
        );
        assert!(first.is_error);
        assert_eq!(first.call_id, "a");
        assert!(matches!(first.parts[1], ToolOutputPart::ToolReference { .. }));
        // The tail is untouched, and clearing again changes nothing.
        assert_eq!(cleared[3..], history[3..]);
        assert_eq!(clear_results(&cleared, 3, 2), None);
        assert_eq!(loopwright_types::history::check_history(&cleared), Ok(()));
    }
}
