//! A history cut into the units compaction may keep or drop whole.
//!
//! Invariant: a unit is a system message, a user message, or a step: an
//! assistant message with the tool messages right after it (the results of
//! its calls). Compaction never splits a step, so a call keeps its result,
//! and reasoning signatures and encrypted items stay with their turn.

use loopwright_types::{Message, Role};

/// What a unit holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    System,
    User,
    Step,
}

/// Messages `start..end` of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

/// The units of `history`, in order. A tool message with no assistant
/// message before it joins the unit before it.
pub(crate) fn split(history: &[Message]) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for (i, message) in history.iter().enumerate() {
        let kind = match message.role {
            Role::System => Kind::System,
            Role::User => Kind::User,
            Role::Assistant => Kind::Step,
            Role::Tool => {
                match units.last_mut() {
                    Some(last) => last.end = i + 1,
                    None => units.push(Unit {
                        start: i,
                        end: i + 1,
                        kind: Kind::Step,
                    }),
                }
                continue;
            }
        };
        units.push(Unit {
            start: i,
            end: i + 1,
            kind,
        });
    }
    units
}

/// Where the kept tail starts: the first message of the last `keep_turns`
/// steps (at least one is always kept); 0 (everything kept) when there are
/// no more steps than that.
pub(crate) fn tail_start(units: &[Unit], keep_turns: usize) -> usize {
    units
        .iter()
        .rev()
        .filter(|u| u.kind == Kind::Step)
        .nth(keep_turns.max(1) - 1)
        .map_or(0, |u| u.start)
}

/// The index of the latest user message (never compacted); a summary
/// compaction wrote is not one.
pub(crate) fn latest_user(history: &[Message]) -> Option<usize> {
    history
        .iter()
        .rposition(|m| m.role == Role::User && !super::summarize::is_summary(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopwright_types::{ContentPart, ToolCall, ToolResult};

    fn step(id: &str) -> [Message; 2] {
        let call = ToolCall::new(id, "t", serde_json::json!({}));
        let result = ToolResult {
            call_id: id.into(),
            parts: Vec::new(),
            is_error: false,
        };
        [
            Message::new(Role::Assistant, vec![ContentPart::ToolCall(call)]),
            Message::new(Role::Tool, vec![ContentPart::ToolResult(result)]),
        ]
    }

    #[test]
    fn steps_keep_their_results_and_the_tail_is_whole_steps() {
        let mut history = vec![Message::system("s"), Message::user("go")];
        for id in ["a", "b", "c"] {
            history.extend(step(id));
        }
        let units = split(&history);
        let kinds: Vec<Kind> = units.iter().map(|u| u.kind).collect();
        assert_eq!(
            kinds,
            [Kind::System, Kind::User, Kind::Step, Kind::Step, Kind::Step]
        );
        assert_eq!((units[2].start, units[2].end), (2, 4));
        assert_eq!(tail_start(&units, 2), 4);
        assert_eq!(tail_start(&units, 0), 6);
        assert_eq!(tail_start(&units, 9), 0);
        assert_eq!(latest_user(&history), Some(1));
    }
}
