//! What the terminal is shown of text that came from a model, a tool or a
//! server: its control and bidirectional-override characters made visible
//! instead of obeyed.
//!
//! Invariant: nothing from outside reaches a terminal able to move the
//! cursor, clear the screen, change colours, retitle the window, rewrite a
//! line (`\r`) or reorder what is read (bidi overrides and isolates): a
//! hostile or prompt-injected model cannot forge a "✓ Read README.md" line
//! or hide text. Each such character is shown as `\x1b` or `\u{202e}`.
//! [`line`] also escapes line breaks (a name, a one-line status); [`text`]
//! keeps `\n` and `\t` (an answer); [`message`] keeps `\n` and indents the
//! lines after the first, so they cannot pass for lines of our own.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char) -> bool {
    c.is_control() // C0, DEL and C1, \n \r \t included
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| unsafe_char(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !unsafe_char(c) || keep(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `s` on one line: every control and bidi character escaped.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// `s` as text: line breaks and tabs kept, the rest escaped.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// A plan as [`Plan::render`](loopwright::preflight::Plan::render) shows it,
/// each step's text and each warning escaped as one line: its line breaks
/// are the plan's own.
pub fn plan(plan: &loopwright::preflight::Plan) -> String {
    let mut shown = plan.clone();
    for step in &mut shown.steps {
        step.description = line(&step.description).into_owned();
        step.tool = step.tool.as_deref().map(|t| line(t).into_owned());
    }
    for warning in &mut shown.warnings {
        *warning = line(warning).into_owned();
    }
    shown.render()
}

/// `s` as a message of several lines: each line escaped, the lines after
/// the first indented by two spaces.
pub fn message(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, l) in s.split('\n').enumerate() {
        if i > 0 {
            out.push_str("\n  ");
        }
        out.push_str(&line(l.strip_suffix('\r').unwrap_or(l)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_are_shown_not_obeyed() {
        assert_eq!(line("plain ✓ text"), "plain ✓ text");
        assert_eq!(line("a\x1b[2J\nb\r"), "a\\x1b[2J\\x0ab\\x0d");
        assert_eq!(line("x\u{202e}y\u{2066}z\u{9b}"), "x\\u{202e}y\\u{2066}z\\x9b");
        assert_eq!(text("one\n\ttwo\x07"), "one\n\ttwo\\x07");
        assert_eq!(message("bad\n✓ Read README.md"), "bad\n  ✓ Read README.md");
        assert_eq!(message("a\x1b]0;title\x07"), "a\\x1b]0;title\\x07");
    }
}
