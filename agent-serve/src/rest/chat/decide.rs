//! A continued chat turn: the client's last assistant message (the paused
//! run's, by its id) answers the run's pending calls: an approval part
//! (`approval-responded`, AI SDK 6 and later) decides a call that waits for
//! approval; a client tool's part with its output (`output-available`,
//! `output-error`) answers a call the client ran.
//!
//! Invariant: every pending call is answered by a part of that message,
//! or the request is a 400 naming the call and what it waits for, and
//! nothing is decided.

use serde_json::Value;

use super::super::bad;
use super::chunks::Decided;
use super::history::{UiMessage, value_text};
use crate::error::ApiError;
use loopwright_runs::Decision;

/// The decisions `message` gives for the run's `pending` calls (as the
/// run's view lists them), and which calls they deny or answer.
pub(super) fn decisions(
    message: &UiMessage,
    pending: &[Value],
) -> Result<(Vec<Decision>, Decided), ApiError> {
    let mut decisions = Vec::with_capacity(pending.len());
    let mut decided = Decided::default();
    for call in pending {
        let id = call["call_id"].as_str().unwrap_or_default();
        let tool = call["tool"].as_str().unwrap_or_default();
        let client = call["kind"] == "client_tool";
        let part = message
            .parts
            .iter()
            .find(|p| p["toolCallId"].as_str() == Some(id));
        let decision = part.and_then(|part| answer(part, id, client));
        let Some(decision) = decision else {
            let wanted = if client {
                "the client tool's output (addToolOutput)"
            } else {
                "an approval response (addToolApprovalResponse)"
            };
            return Err(bad(format!(
                "messages: the last message ({}) leaves call {id} of {tool} unanswered: it waits for {wanted}",
                message.id
            )));
        };
        if decision.approve == Some(false) {
            decided.denied.insert(id.to_owned());
        }
        if decision.output.is_some() {
            decided.answered.insert(id.to_owned());
        }
        decisions.push(decision);
    }
    Ok((decisions, decided))
}

/// The decision a tool part gives its call, if it gives one.
fn answer(part: &Value, id: &str, client: bool) -> Option<Decision> {
    let approval = &part["approval"];
    match part["state"].as_str()? {
        "approval-responded" | "output-denied" if approval["approved"] == Value::Bool(true) && !client => {
            Some(Decision::approve(id))
        }
        "approval-responded" | "output-denied" => {
            let reason = approval["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
                .unwrap_or("the user denied it");
            Some(Decision::deny(id, reason))
        }
        "output-available" if client => {
            Some(Decision::output(id, Value::String(value_text(&part["output"]))))
        }
        "output-error" if client => Some(Decision {
            is_error: true,
            ..Decision::output(
                id,
                Value::String(part["errorText"].as_str().unwrap_or("the tool failed").to_owned()),
            )
        }),
        _ => None,
    }
}
