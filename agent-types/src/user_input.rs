//! Asking the person behind a run for input in the middle of a tool call
//! (an MCP server's elicitation): the question a tool asks through
//! [`ToolContext::ask_user`](crate::ToolContext::ask_user), the
//! `input_requested` event that carries it to the application with a
//! [`UserInputResponder`], and the answer.
//!
//! Invariants:
//! - every question gets exactly one answer: the application's, or
//!   [`UserInputAnswer::Decline`] when nobody can answer (the call was not
//!   made by a run, every copy of the event was dropped unanswered) or
//!   nobody did within the timeout, or [`UserInputAnswer::Cancel`] when the
//!   call was cancelled meanwhile;
//! - an `input_resolved` event follows every `input_requested` event, with
//!   the action taken (the content itself is not repeated there).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How long a question waits for the application before it is declined,
/// unless the asking tool gives its own timeout (always within the call's
/// own deadline).
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

/// What a tool asks the person.
///
/// ```
/// let q = loopwright_types::UserInputRequest::form("github", "Which repository?", serde_json::json!({
///     "type": "object", "properties": {"repo": {"type": "string"}}, "required": ["repo"]
/// }));
/// assert_eq!(q.source, "github");
/// assert!(matches!(q.kind, loopwright_types::UserInputKind::Form { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserInputRequest {
    /// Who asks: the tool source (an MCP server's name).
    pub source: String,
    /// The question, for the person.
    pub message: String,
    /// What kind of answer is wanted.
    #[serde(flatten)]
    pub kind: UserInputKind,
}

impl UserInputRequest {
    /// A form: the answer is a JSON object matching `schema` (a flat JSON
    /// Schema object of strings, numbers, booleans and enums).
    pub fn form(source: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            kind: UserInputKind::Form { schema },
        }
    }

    /// A page the person should open (to sign in, pay, consent); accepting
    /// means they went there, the result comes out of band.
    ///
    /// ```
    /// let q = loopwright_types::UserInputRequest::url("pay", "Confirm the payment", "https://pay.example/confirm/1", "e-1");
    /// assert_eq!(serde_json::to_value(&q).unwrap()["mode"], "url");
    /// ```
    pub fn url(
        source: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
        id: impl Into<String>,
    ) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            kind: UserInputKind::Url {
                url: url.into(),
                id: id.into(),
            },
        }
    }
}

/// The kind of a [`UserInputRequest`], serialised under `"mode"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UserInputKind {
    /// Fill in a form.
    Form {
        /// The JSON Schema of the answer.
        schema: Value,
    },
    /// Open a page.
    Url {
        /// The page.
        url: String,
        /// The asker's id of this request.
        id: String,
    },
}

/// The person's answer.
///
/// ```
/// let a = loopwright_types::UserInputAnswer::Accept { content: Some(serde_json::json!({"repo": "x"})) };
/// assert_eq!(a.action(), "accept");
/// assert_eq!(loopwright_types::UserInputAnswer::Decline.action(), "decline");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum UserInputAnswer {
    /// Answered: the form's content (none for a URL request).
    Accept {
        /// The answer, an object matching the form's schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
    },
    /// Said no.
    Decline,
    /// Dismissed the question without choosing.
    Cancel,
}

impl UserInputAnswer {
    /// `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept { .. } => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// Answers one `input_requested` event (a [`Responder`](crate::Responder)
/// of [`UserInputAnswer`]).
///
/// ```
/// let (responder, _rx) = loopwright_types::UserInputResponder::new();
/// assert!(responder.respond(loopwright_types::UserInputAnswer::Decline));
/// ```
pub type UserInputResponder = crate::responder::Responder<UserInputAnswer>;
