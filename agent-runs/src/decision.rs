//! A decision for a paused run's call, as requests give it, and matching
//! decisions to the calls a run waits for.
//!
//! Invariant: a decision names one pending call, decides it once, and is
//! of a kind that call takes (a client tool's call is answered by its
//! output or denied; a plan approved or denied); anything else is refused
//! naming the call, and nothing is recorded.

use serde::Deserialize;

use crate::RunsError;
use crate::record::{Decided, Envelope};

/// A decision for one of a paused run's calls, as `POST
/// /v1/runs/{id}/approvals` takes it: `approve` (run it, or deny it with a
/// `reason` the model reads), or the call's `output` (a client tool's,
/// which the client ran; `is_error` when it failed).
///
/// ```
/// let decision: loopwright_runs::Decision =
///     serde_json::from_value(serde_json::json!({"call_id": "call_1", "approve": false, "reason": "not on main"}))?;
/// assert_eq!(decision.approve, Some(false));
/// let output: loopwright_runs::Decision =
///     serde_json::from_value(serde_json::json!({"call_id": "call_2", "output": {"city": "Paris"}}))?;
/// assert!(output.output.is_some());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The call decided.
    pub call_id: String,
    /// Run it (`true`) or deny it; absent when `output` answers it.
    #[serde(default)]
    pub approve: Option<bool>,
    /// Why it was denied (the model reads it).
    #[serde(default)]
    pub reason: Option<String>,
    /// The call's output, in place of running it: text as it is, other
    /// JSON as its text.
    #[serde(default)]
    pub output: Option<serde_json::Value>,
    /// Whether `output` reports a failure.
    #[serde(default)]
    pub is_error: bool,
    /// Which agent's call, when a call id is pending in several.
    #[serde(default)]
    pub agent_path: Option<String>,
}

impl Decision {
    /// Run call `call_id`.
    ///
    /// ```
    /// assert_eq!(loopwright_runs::Decision::approve("call_1").approve, Some(true));
    /// ```
    pub fn approve(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            approve: Some(true),
            ..Self::default()
        }
    }

    /// Deny call `call_id`, telling the model `reason`.
    ///
    /// ```
    /// let d = loopwright_runs::Decision::deny("call_1", "not on main");
    /// assert_eq!((d.approve, d.reason.as_deref()), (Some(false), Some("not on main")));
    /// ```
    pub fn deny(call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            approve: Some(false),
            reason: Some(reason.into()),
            ..Self::default()
        }
    }

    /// Answer call `call_id` with `output` (a client tool's).
    ///
    /// ```
    /// let d = loopwright_runs::Decision::output("call_2", serde_json::json!({"city": "Paris"}));
    /// assert!(d.approve.is_none() && !d.is_error);
    /// ```
    pub fn output(call_id: impl Into<String>, output: serde_json::Value) -> Self {
        Self {
            call_id: call_id.into(),
            output: Some(output),
            ..Self::default()
        }
    }

    /// As stored for call `call_id` of `agent_path`: an error naming the
    /// call when it gives both an approval and an output, or neither.
    pub(crate) fn decided(&self, call_id: &str, agent_path: &str) -> Result<Decided, RunsError> {
        let output = match (&self.output, self.approve) {
            (Some(_), Some(_)) => {
                return Err(RunsError::invalid(format!(
                    "call {call_id}: give \"approve\" or \"output\", not both"
                )));
            }
            (None, None) => {
                return Err(RunsError::invalid(format!(
                    "call {call_id}: give \"approve\" (true or false) or the call's \"output\""
                )));
            }
            (Some(value), None) => Some(output_of(value, self.is_error)),
            (None, Some(_)) => None,
        };
        Ok(Decided {
            call_id: call_id.to_owned(),
            agent_path: agent_path.to_owned(),
            approve: self.approve == Some(true),
            reason: self.reason.clone(),
            output,
        })
    }

    /// [`Decision::decided`] for `call`, refused when `call` cannot take
    /// it (a client tool's call is answered by its output or denied; a
    /// plan approved or denied).
    fn decided_for(&self, call: &loopwright_core::agent::PendingCall) -> Result<Decided, RunsError> {
        use loopwright_core::agent::PendingKind;
        let decided = self.decided(&call.call_id, &call.agent_path)?;
        let id = &call.call_id;
        if call.kind == PendingKind::ClientTool && decided.approve {
            return Err(RunsError::invalid(format!(
                "call {id} is to the client tool {}: the client runs it; give its \"output\" (or deny it)",
                call.tool
            )));
        }
        if call.kind == PendingKind::Plan && decided.output.is_some() {
            return Err(RunsError::invalid(format!(
                "call {id} is a plan: approve or deny it"
            )));
        }
        Ok(decided)
    }
}

/// A client's output as the model reads it: text as it is, other JSON as
/// its text.
fn output_of(value: &serde_json::Value, is_error: bool) -> loopwright_core::ToolOutput {
    let text = match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if is_error {
        loopwright_core::ToolOutput::error(text)
    } else {
        loopwright_core::ToolOutput::text(text)
    }
}

/// The decisions of a request, checked against what is pending: each names
/// a pending, undecided call, once.
pub(crate) fn match_decisions(
    id: &str,
    envelope: &Envelope,
    pending: &[loopwright_core::agent::PendingCall],
    decisions: &[Decision],
) -> Result<Vec<Decided>, RunsError> {
    let mut added: Vec<Decided> = Vec::new();
    for decision in decisions {
        let candidates: Vec<_> = pending
            .iter()
            .filter(|p| p.call_id == decision.call_id)
            .filter(|p| {
                decision
                    .agent_path
                    .as_ref()
                    .is_none_or(|path| &p.agent_path == path)
            })
            .collect();
        let call = match candidates.as_slice() {
            [one] => *one,
            [] => {
                let names: Vec<&str> = pending.iter().map(|p| p.call_id.as_str()).collect();
                return Err(RunsError::conflict(format!(
                    "call {} is not pending in run {id} (pending: {})",
                    decision.call_id,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            several => {
                let paths: Vec<&str> = several.iter().map(|p| p.agent_path.as_str()).collect();
                return Err(RunsError::invalid(format!(
                    "call {} is pending in several agents ({}): add \"agent_path\"",
                    decision.call_id,
                    paths.join(", ")
                )));
            }
        };
        let seen = |d: &Decided| d.call_id == call.call_id && d.agent_path == call.agent_path;
        if envelope.decisions.iter().any(seen) {
            return Err(RunsError::conflict(format!(
                "call {} of run {id} was already decided",
                call.call_id
            )));
        }
        if added.iter().any(seen) {
            return Err(RunsError::invalid(format!(
                "call {} is decided twice in this request",
                call.call_id
            )));
        }
        added.push(decision.decided_for(call)?);
    }
    Ok(added)
}

/// The decisions recorded and `decisions`, matched to `pending` calls:
/// every one decided, or an error naming the ones that are not.
pub(crate) fn decide_whole(
    id: &str,
    envelope: &Envelope,
    pending: &[loopwright_core::agent::PendingCall],
    decisions: &[Decision],
) -> Result<Vec<Decided>, RunsError> {
    let mut decided = envelope.decisions.clone();
    decided.extend(match_decisions(id, envelope, pending, decisions)?);
    let undecided: Vec<String> = pending
        .iter()
        .filter(|p| {
            !decided
                .iter()
                .any(|d| d.call_id == p.call_id && d.agent_path == p.agent_path)
        })
        .map(|p| format!("{} ({})", p.call_id, p.tool))
        .collect();
    if !undecided.is_empty() {
        return Err(RunsError::invalid(format!(
            "run {id} also waits for call(s) {}: decide every call",
            undecided.join(", ")
        )));
    }
    Ok(decided)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use loopwright_core::agent::{PendingCall, PendingKind};

    fn pending(kind: PendingKind) -> PendingCall {
        serde_json::from_value(serde_json::json!({
            "kind": kind, "call_id": "c1", "tool": "get_location", "arguments": {},
            "tier": "always", "agent_path": "main",
        }))
        .unwrap()
    }

    #[test]
    fn a_decision_fits_its_call_or_says_what_it_takes() {
        let client = pending(PendingKind::ClientTool);
        let given = Decision::output("c1", serde_json::json!({"city": "Paris"}))
            .decided_for(&client)
            .unwrap();
        assert_eq!(
            given.decision(),
            loopwright_core::ApprovalDecision::output(loopwright_core::ToolOutput::text(
                r#"{"city":"Paris"}"#
            ))
        );
        let approved = Decision::approve("c1").decided_for(&client).unwrap_err();
        assert!(
            approved.to_string().contains("client tool get_location"),
            "{approved}"
        );
        let both = Decision {
            output: Some("x".into()),
            ..Decision::approve("c1")
        };
        assert!(
            both.decided_for(&client)
                .unwrap_err()
                .to_string()
                .contains("not both")
        );
        let neither = Decision {
            call_id: "c1".into(),
            ..Decision::default()
        };
        assert!(
            neither
                .decided_for(&client)
                .unwrap_err()
                .to_string()
                .contains("\"approve\"")
        );
        let plan = pending(PendingKind::Plan);
        assert!(Decision::output("c1", "ok".into()).decided_for(&plan).is_err());
        let denied = Decision::deny("c1", "no").decided_for(&client).unwrap();
        assert!(!denied.decision().approved());
    }
}
