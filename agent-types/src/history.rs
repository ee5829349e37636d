//! Checking a conversation someone else wrote before it goes to a model.
//!
//! Invariant: a history that passes [`check_history`] is one every provider
//! accepts as to its tool calls: each call id is unique, each call is
//! answered by exactly one result in the tool messages that follow its
//! assistant message (before the next user or assistant message), no
//! result answers a call that was not made, and the last message is not the
//! assistant's (the model would have nothing to answer). The errors name the
//! message by its index, as `messages[3]`, and the call by its id.

use std::collections::HashSet;

use crate::message::{ContentPart, Message, Role};

/// What is wrong with a history.
///
/// ```
/// use loopwright_types::{ContentPart, Message, Role, ToolCall, history::{check_history, HistoryError}};
/// let call = ToolCall { id: "c1".into(), name: "echo".into(), input: serde_json::json!({}), provider_data: None };
/// let history = vec![Message::user("hi"), Message::new(Role::Assistant, vec![ContentPart::ToolCall(call)])];
/// assert!(matches!(check_history(&history), Err(HistoryError::Unanswered { .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The history is empty.
    #[error("the conversation is empty")]
    Empty,
    /// Two tool calls share an id.
    #[error("messages[{index}]: tool call id {id:?} is used twice (ids must be unique)")]
    DuplicateCall {
        /// The message holding the second call.
        index: usize,
        /// The id.
        id: String,
    },
    /// A result answers no call made before it (or one already answered).
    #[error(
        "messages[{index}]: tool result for {id:?} answers no call made before it (each result follows the \
         assistant message with its call, once)"
    )]
    OrphanResult {
        /// The message holding the result.
        index: usize,
        /// The call id it names.
        id: String,
    },
    /// Calls were not answered before the conversation went on (or ended).
    #[error(
        "messages[{index}]: tool call(s) {ids:?} of the assistant message before it have no result (every call \
         needs one, in tool messages right after its assistant message)"
    )]
    Unanswered {
        /// The message the results were missing before (the history's
        /// length when it ended first).
        index: usize,
        /// The unanswered call ids.
        ids: Vec<String>,
    },
    /// A tool result in a message that is not a tool message.
    #[error("messages[{index}]: a tool result in a {role} message (results go in tool messages)")]
    MisplacedResult {
        /// The message.
        index: usize,
        /// Its role.
        role: String,
    },
    /// The last message is the assistant's.
    #[error(
        "messages[{index}]: the conversation ends with an assistant message, so there is nothing to answer"
    )]
    EndsWithAssistant {
        /// Its index.
        index: usize,
    },
}

/// Check that `messages` pair their tool calls and results and end where a
/// model can answer (see the module's invariant).
///
/// ```
/// use loopwright_types::{Message, history::check_history};
/// assert!(check_history(&[Message::user("What time is it?")]).is_ok());
/// ```
pub fn check_history(messages: &[Message]) -> Result<(), HistoryError> {
    let Some(last) = messages.last() else {
        return Err(HistoryError::Empty);
    };
    let mut seen = HashSet::new();
    // Calls of the last assistant message not answered yet, in call order.
    let mut pending: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool && !pending.is_empty() {
            return Err(HistoryError::Unanswered {
                index,
                ids: std::mem::take(&mut pending),
            });
        }
        for part in &message.content {
            match part {
                ContentPart::ToolCall(call) => {
                    if !seen.insert(call.id.as_str()) {
                        return Err(HistoryError::DuplicateCall {
                            index,
                            id: call.id.clone(),
                        });
                    }
                    pending.push(call.id.clone());
                }
                ContentPart::ToolResult(_) if message.role != Role::Tool => {
                    return Err(HistoryError::MisplacedResult {
                        index,
                        role: format!("{:?}", message.role).to_lowercase(),
                    });
                }
                ContentPart::ToolResult(result) => {
                    match pending.iter().position(|id| *id == result.call_id) {
                        Some(at) => {
                            pending.remove(at);
                        }
                        None => {
                            return Err(HistoryError::OrphanResult {
                                index,
                                id: result.call_id.clone(),
                            });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if !pending.is_empty() {
        return Err(HistoryError::Unanswered {
            index: messages.len(),
            ids: pending,
        });
    }
    if last.role == Role::Assistant {
        return Err(HistoryError::EndsWithAssistant {
            index: messages.len() - 1,
        });
    }
    Ok(())
}

/// The name of the tool whose call `messages[at]`'s result `call_id`
/// answers: the nearest call with that id before it.
#[doc(hidden)]
pub fn call_name<'a>(messages: &'a [Message], at: usize, call_id: &str) -> Option<&'a str> {
    messages[..at.min(messages.len())]
        .iter()
        .rev()
        .find_map(|m| m.tool_calls().find(|c| c.id == call_id))
        .map(|c| c.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolResult};
    use serde_json::json;

    fn call(id: &str) -> ContentPart {
        ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: "echo".into(),
            input: json!({}),
            provider_data: None,
        })
    }

    fn result(id: &str) -> ContentPart {
        ContentPart::ToolResult(ToolResult {
            call_id: id.into(),
            parts: Vec::new(),
            is_error: false,
        })
    }

    fn assistant(parts: Vec<ContentPart>) -> Message {
        Message::new(Role::Assistant, parts)
    }

    fn tool(parts: Vec<ContentPart>) -> Message {
        Message::new(Role::Tool, parts)
    }

    #[test]
    fn paired_calls_pass_in_one_or_several_tool_messages() {
        let ok = vec![
            Message::user("hi"),
            assistant(vec![call("a"), call("b")]),
            tool(vec![result("b")]),
            tool(vec![result("a")]),
            assistant(vec![ContentPart::text("done")]),
            Message::user("thanks"),
        ];
        assert_eq!(check_history(&ok), Ok(()));
        // Ending on the results is fine: the model answers them.
        assert_eq!(check_history(&ok[..4]), Ok(()));
    }

    #[test]
    fn every_fault_is_named_with_its_message() {
        let orphan = vec![Message::user("hi"), tool(vec![result("x")])];
        assert_eq!(
            check_history(&orphan),
            Err(HistoryError::OrphanResult {
                index: 1,
                id: "x".into()
            })
        );
        let unanswered = vec![
            Message::user("hi"),
            assistant(vec![call("a")]),
            Message::user("?"),
        ];
        assert_eq!(
            check_history(&unanswered),
            Err(HistoryError::Unanswered {
                index: 2,
                ids: vec!["a".into()]
            })
        );
        let at_end = vec![Message::user("hi"), assistant(vec![call("a")])];
        assert!(matches!(
            check_history(&at_end),
            Err(HistoryError::Unanswered { index: 2, .. })
        ));
        let duplicate = vec![
            Message::user("hi"),
            assistant(vec![call("a")]),
            tool(vec![result("a")]),
            assistant(vec![call("a")]),
            tool(vec![result("a")]),
        ];
        assert!(matches!(
            check_history(&duplicate),
            Err(HistoryError::DuplicateCall { index: 3, .. })
        ));
        let twice = vec![
            Message::user("hi"),
            assistant(vec![call("a")]),
            tool(vec![result("a"), result("a")]),
        ];
        assert!(matches!(
            check_history(&twice),
            Err(HistoryError::OrphanResult { index: 2, .. })
        ));
        let last = vec![Message::user("hi"), assistant(vec![ContentPart::text("hello")])];
        assert_eq!(
            check_history(&last),
            Err(HistoryError::EndsWithAssistant { index: 1 })
        );
        assert_eq!(check_history(&[]), Err(HistoryError::Empty));
        let misplaced = vec![Message::new(Role::User, vec![result("a")])];
        assert!(matches!(
            check_history(&misplaced),
            Err(HistoryError::MisplacedResult { index: 0, .. })
        ));
        let message = HistoryError::OrphanResult {
            index: 1,
            id: "x".into(),
        }
        .to_string();
        assert!(
            message.starts_with("messages[1]: tool result for \"x\""),
            "{message}"
        );
    }
}
