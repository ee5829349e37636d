//! What differs between a request and a recorded one, in words, and which
//! recorded request is nearest.
//!
//! Fields are compared in a fixed order (model, system prompt, each
//! message, the tools, the tool choice, the settings); the first difference
//! is the one reported, so the words point at what changed first.

use serde_json::Value;

use super::request::RequestSummary;
use loopwright_types::{ContentPart, Message};

/// Characters of a differing text shown on each side of the first
/// differing character.
pub const DIFF_CONTEXT_CHARS: usize = 40;

/// The first difference between `recorded` and `actual`, in words, or
/// `None` when they are equal.
///
/// ```
/// use loopwright_types::{Message, ModelRequest};
/// use loopwright_testing::replay::{RequestSummary, first_difference};
/// let recorded = RequestSummary::of("local/m", &ModelRequest::new(vec![Message::user("What time is it?")]));
/// let actual = RequestSummary::of("local/m", &ModelRequest::new(vec![Message::user("What time is it now?")]));
/// assert_eq!(first_difference(&recorded, &actual).unwrap(),
///     r#"message 1 (user) text differs: recorded "What time is it?" vs "What time is it now?""#);
/// ```
pub fn first_difference(recorded: &RequestSummary, actual: &RequestSummary) -> Option<String> {
    if recorded.model != actual.model {
        return Some(format!(
            "model differs: recorded {} vs {}",
            recorded.model, actual.model
        ));
    }
    if recorded.system != actual.system {
        return Some(match (&recorded.system, &actual.system) {
            (Some(a), Some(b)) => format!("system prompt differs: {}", texts(a, b)),
            (None, Some(b)) => format!("system prompt is new: {}", quote(b)),
            (Some(a), None) => format!("system prompt is gone: recorded {}", quote(a)),
            (None, None) => String::new(),
        });
    }
    for (i, (a, b)) in recorded.messages.iter().zip(&actual.messages).enumerate() {
        if let Some(d) = message_difference(i + 1, a, b) {
            return Some(d);
        }
    }
    let (n_rec, n_act) = (recorded.messages.len(), actual.messages.len());
    if n_rec != n_act {
        let extra = if n_act > n_rec {
            let m = &actual.messages[n_rec];
            format!(
                "message {} ({}) is new: {}",
                n_rec + 1,
                role(m),
                quote(&summary(m))
            )
        } else {
            let m = &recorded.messages[n_act];
            format!(
                "message {} ({}) is missing: recorded {}",
                n_act + 1,
                role(m),
                quote(&summary(m))
            )
        };
        return Some(format!(
            "{extra} (recorded {n_rec} messages, this request has {n_act})"
        ));
    }
    if recorded.tools != actual.tools {
        return Some(tools_difference(recorded, actual));
    }
    if recorded.tool_choice != actual.tool_choice {
        return Some(format!(
            "tool choice differs: recorded {} vs {}",
            json(&recorded.tool_choice),
            json(&actual.tool_choice)
        ));
    }
    if recorded.settings != actual.settings {
        let a = serde_json::to_value(&recorded.settings).unwrap_or(Value::Null);
        let b = serde_json::to_value(&actual.settings).unwrap_or(Value::Null);
        return Some(object_difference("settings", &a, &b));
    }
    None
}

/// How far `actual` agrees with `recorded`: the number of leading fields
/// (in the order above) that are equal, then the number of equal fields
/// overall. Larger is nearer.
pub(crate) fn agreement(recorded: &RequestSummary, actual: &RequestSummary) -> (usize, usize) {
    let mut equal = vec![recorded.model == actual.model, recorded.system == actual.system];
    let n = recorded.messages.len().max(actual.messages.len());
    for i in 0..n {
        equal.push(recorded.messages.get(i) == actual.messages.get(i));
    }
    equal.push(recorded.tools == actual.tools);
    equal.push(recorded.tool_choice == actual.tool_choice);
    equal.push(recorded.settings == actual.settings);
    let prefix = equal.iter().take_while(|e| **e).count();
    let total = equal.iter().filter(|e| **e).count();
    (prefix, total)
}

fn role(m: &Message) -> String {
    json(&m.role).trim_matches('"').to_owned()
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A message in one line: its text, else its parts.
fn summary(m: &Message) -> String {
    let text = m.text();
    if text.is_empty() {
        m.content.iter().map(part_summary).collect::<Vec<_>>().join(", ")
    } else {
        text
    }
}

fn part_summary(p: &ContentPart) -> String {
    match p {
        ContentPart::Text { text } => text.clone(),
        ContentPart::Image { .. } => "an image".into(),
        ContentPart::Reasoning(_) => "reasoning".into(),
        ContentPart::ToolCall(c) => format!("call {} {}", c.name, c.input),
        ContentPart::ToolResult(r) => format!("result for {}: {}", r.call_id, r.text()),
        ContentPart::File { .. } => "a file".into(),
        ContentPart::Audio { .. } => "an audio clip".into(),
        ContentPart::Compaction(_) => "a compaction item".into(),
        _ => "a part".into(),
    }
}

fn part_kind(p: &ContentPart) -> &'static str {
    match p {
        ContentPart::Text { .. } => "text",
        ContentPart::Image { .. } => "image",
        ContentPart::Reasoning(_) => "reasoning",
        ContentPart::ToolCall(_) => "tool call",
        ContentPart::ToolResult(_) => "tool result",
        ContentPart::File { .. } => "file",
        ContentPart::Audio { .. } => "audio",
        ContentPart::Compaction(_) => "compaction",
        _ => "part",
    }
}

fn message_difference(n: usize, a: &Message, b: &Message) -> Option<String> {
    if a == b {
        return None;
    }
    if a.role != b.role {
        return Some(format!(
            "message {n} role differs: recorded {} vs {}",
            role(a),
            role(b)
        ));
    }
    let at = format!("message {n} ({})", role(a));
    // Text messages compare as their whole text.
    let only_text = |m: &Message| m.content.iter().all(|p| matches!(p, ContentPart::Text { .. }));
    if only_text(a) && only_text(b) {
        return Some(format!("{at} text differs: {}", texts(&a.text(), &b.text())));
    }
    for (j, (pa, pb)) in a.content.iter().zip(&b.content).enumerate() {
        if pa == pb {
            continue;
        }
        let part = format!("{at} part {}", j + 1);
        return Some(match (pa, pb) {
            (ContentPart::Text { text: x }, ContentPart::Text { text: y }) => {
                format!("{at} text differs: {}", texts(x, y))
            }
            (ContentPart::ToolCall(x), ContentPart::ToolCall(y)) => format!(
                "{at} tool call {} differs: recorded {} {} vs {} {}",
                j + 1,
                x.name,
                x.input,
                y.name,
                y.input
            ),
            (ContentPart::ToolResult(x), ContentPart::ToolResult(y)) if x.call_id != y.call_id => format!(
                "{at} result {} answers another call: recorded {} vs {}",
                j + 1,
                x.call_id,
                y.call_id
            ),
            (ContentPart::ToolResult(x), ContentPart::ToolResult(y)) => format!(
                "{at} result for {} differs: {}",
                x.call_id,
                texts(&x.text(), &y.text())
            ),
            (x, y) if part_kind(x) != part_kind(y) => {
                format!("{part} differs: recorded {} vs {}", part_kind(x), part_kind(y))
            }
            (x, y) => format!(
                "{part} ({}) differs: recorded {} vs {}",
                part_kind(x),
                json(x),
                json(y)
            ),
        });
    }
    Some(format!(
        "{at} has {} parts, recorded {}",
        b.content.len(),
        a.content.len()
    ))
}

fn tools_difference(recorded: &RequestSummary, actual: &RequestSummary) -> String {
    let names = |r: &RequestSummary| r.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let (a, b) = (names(recorded), names(actual));
    if a != b {
        let gone: Vec<&String> = a.iter().filter(|n| !b.contains(n)).collect();
        let new: Vec<&String> = b.iter().filter(|n| !a.contains(n)).collect();
        let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        return match (gone.is_empty(), new.is_empty()) {
            (false, false) => format!(
                "tools differ: {} not offered any more, {} new",
                list(&gone),
                list(&new)
            ),
            (false, true) => format!("tools differ: {} not offered any more", list(&gone)),
            (true, false) => format!("tools differ: {} new", list(&new)),
            (true, true) => format!(
                "tools differ in order: recorded {} vs {}",
                a.join(", "),
                b.join(", ")
            ),
        };
    }
    for (x, y) in recorded.tools.iter().zip(&actual.tools) {
        if x.description != y.description {
            return format!(
                "tool {} description differs: {}",
                x.name,
                texts(&x.description, &y.description)
            );
        }
        if x.input_schema != y.input_schema {
            let d = object_difference("input schema", &x.input_schema, &y.input_schema);
            return format!("tool {} {d}", x.name);
        }
        if x.output_schema != y.output_schema {
            return format!("tool {} output schema differs", x.name);
        }
    }
    "tools differ".into()
}

/// The first key whose value differs between two JSON values.
fn object_difference(what: &str, a: &Value, b: &Value) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return format!("{what} differ: {key} recorded {p} vs {q}"),
                    (Some(p), None) => return format!("{what} differ: {key} recorded {p}, now unset"),
                    (None, Some(q)) => return format!("{what} differ: {key} is new: {q}"),
                    (None, None) => {}
                }
            }
            format!("{what} differ")
        }
        _ => format!("{what} differ: recorded {a} vs {b}"),
    }
}

/// Two texts quoted, cut around their first difference when long.
fn texts(a: &str, b: &str) -> String {
    let first = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    format!(
        "recorded {} vs {}",
        quote(&window(a, first)),
        quote(&window(b, first))
    )
}

/// `text` cut to [`DIFF_CONTEXT_CHARS`] around char `at`, with `…` where cut.
fn window(text: &str, at: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let start = at.saturating_sub(DIFF_CONTEXT_CHARS);
    let end = (at + DIFF_CONTEXT_CHARS).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use loopwright_types::ModelRequest;
    use loopwright_types::{Role, ToolCall};

    fn summary_of(messages: Vec<Message>) -> RequestSummary {
        RequestSummary::of("local/m", &ModelRequest::new(messages))
    }

    #[test]
    fn each_kind_of_difference_is_said_in_words() {
        let a = summary_of(vec![Message::user("hi")]);
        assert_eq!(first_difference(&a, &a), None);
        let mut b = a.clone();
        b.model = "local/n".into();
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            "model differs: recorded local/m vs local/n"
        );
        let b = summary_of(vec![Message::user("hi"), Message::assistant("hello")]);
        assert_eq!(
            first_difference(&a, &b).unwrap(),
            r#"message 2 (assistant) is new: "hello" (recorded 1 messages, this request has 2)"#
        );
        let call = |input| {
            Message::new(
                Role::Assistant,
                vec![ContentPart::ToolCall(ToolCall::new("c1", "echo", input))],
            )
        };
        let x = summary_of(vec![Message::user("hi"), call(serde_json::json!({"text": "a"}))]);
        let y = summary_of(vec![Message::user("hi"), call(serde_json::json!({"text": "b"}))]);
        assert_eq!(
            first_difference(&x, &y).unwrap(),
            r#"message 2 (assistant) tool call 1 differs: recorded echo {"text":"a"} vs echo {"text":"b"}"#
        );
        let mut t = a.clone();
        t.settings.temperature = Some(0.5);
        assert_eq!(
            first_difference(&a, &t).unwrap(),
            "settings differ: temperature is new: 0.5"
        );
    }

    #[test]
    fn long_texts_are_cut_around_the_difference() {
        let long = "x".repeat(200);
        let a = summary_of(vec![Message::user(format!("{long}a{long}"))]);
        let b = summary_of(vec![Message::user(format!("{long}b{long}"))]);
        let d = first_difference(&a, &b).unwrap();
        let cut = format!(
            "\"…{}a{}…\"",
            "x".repeat(DIFF_CONTEXT_CHARS),
            "x".repeat(DIFF_CONTEXT_CHARS - 1)
        );
        assert!(d.contains(&cut), "{d}");
    }

    #[test]
    fn the_nearest_agrees_longest() {
        let actual = summary_of(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ]);
        let near = summary_of(vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("d"),
        ]);
        let far = summary_of(vec![
            Message::user("x"),
            Message::assistant("b"),
            Message::user("c"),
        ]);
        assert!(agreement(&near, &actual) > agreement(&far, &actual));
    }
}
