//! Cutting oversized tool output: head and tail kept, the cut marked.

use crate::message::ToolOutputPart;
use crate::tool::{ToolOutput, render_parts_text};

/// A tool output beyond this many bytes is cut (head and tail kept): about
/// 12k tokens, which keeps one result from crowding out the conversation.
pub const DEFAULT_MAX_TOOL_OUTPUT_BYTES: usize = 50 * 1024;

/// Cut the text of `output` to at most about `max_bytes` bytes, keeping the
/// head and the tail and marking the cut with the original size. Images are
/// kept as they are. Output within the limit is returned unchanged.
///
/// ```
/// let out = loopwright_types::truncate_output(loopwright_types::ToolOutput::text("x".repeat(1000)), 100);
/// let text = out.as_text();
/// assert!(text.len() <= 100 + 120);
/// assert!(text.contains("1000 bytes"));
/// assert!(text.starts_with('x') && text.ends_with('x'));
/// ```
pub fn truncate_output(output: ToolOutput, max_bytes: usize) -> ToolOutput {
    let text_bytes: usize = output
        .parts
        .iter()
        .map(|p| match p {
            ToolOutputPart::Text { text } => text.len(),
            ToolOutputPart::Json { value } => value.to_string().len(),
            _ => 0,
        })
        .sum();
    if text_bytes <= max_bytes {
        return output;
    }
    let text = render_parts_text(&output.parts);
    let original = text.len();
    let half = max_bytes / 2;
    let head_end = floor_char_boundary(&text, half);
    let tail_start = ceil_char_boundary(&text, original - (max_bytes - half));
    let omitted = tail_start - head_end;
    let mut cut = String::with_capacity(max_bytes + 120);
    cut.push_str(&text[..head_end]);
    cut.push_str(&format!(
        "\n\n[... output truncated: {original} bytes in total, {omitted} bytes cut from the middle ...]\n\n"
    ));
    cut.push_str(&text[tail_start..]);
    let mut parts = vec![ToolOutputPart::Text { text: cut }];
    parts.extend(
        output
            .parts
            .into_iter()
            .filter(|p| !matches!(p, ToolOutputPart::Text { .. } | ToolOutputPart::Json { .. })),
    );
    ToolOutput {
        parts,
        is_error: output.is_error,
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_limit_is_unchanged() {
        let out = ToolOutput::text("short");
        assert_eq!(truncate_output(out.clone(), 10), out);
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let out = truncate_output(ToolOutput::text("é".repeat(500)), 101);
        let text = out.as_text();
        assert!(text.contains("1000 bytes in total"));
        assert!(text.starts_with('é') && text.ends_with('é'));
    }

    #[test]
    fn images_survive_and_error_flag_kept() {
        let mut out = ToolOutput::error("y".repeat(300));
        out.parts.push(ToolOutputPart::Image {
            image: crate::ImageSource::Url { url: "u".into() },
        });
        let cut = truncate_output(out, 50);
        assert!(cut.is_error);
        assert_eq!(cut.parts.len(), 2);
        assert!(cut.as_text().contains("300 bytes in total"));
    }
}
