//! What a background run's store record holds beyond the store's own
//! fields ([`Envelope`], kept as the record's `state`), and how a record
//! looks to clients ([`view`]).
//!
//! Invariants:
//! - everything a replica needs to continue, show or cancel a run is in its
//!   record (the paused state, the decisions so far, the next event's
//!   sequence number, the options the request changed, where the
//!   conversation is kept); nothing about a run lives only in one process;
//! - the run's input is not in the record: a running run has it in the
//!   memory of the replica driving it (a run is never continued from its
//!   record while it runs), a paused one in its paused state. The record
//!   stays small whatever the input, so the lease's rewrites, the cancel
//!   watch's reads and every `GET` of the run cost little, and the record
//!   is read without copying what it does not need ([`Envelope::of`]
//!   decodes from the stored value, [`surface`] takes only its part).

use loopwright_core::{AgentResult, ApprovalDecision, Outcome, RunState, agent::PendingCall};
use loopwright_store::{RunRecord, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::RunOptions;

/// A background run's own part of its record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Envelope {
    /// What the request changed of the agent's options.
    #[serde(default)]
    pub(crate) options: RunOptions,
    /// The paused state, while the run awaits approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paused: Option<Value>,
    /// The decisions recorded so far for the pending calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) decisions: Vec<Decided>,
    /// The sequence number of the run's next event.
    #[serde(default)]
    pub(crate) next_seq: u64,
    /// Where the run's conversation is kept when it completes.
    #[serde(default)]
    pub(crate) keep: Keep,
    /// A client asked to cancel it (the replica running it sees this).
    #[serde(default)]
    pub(crate) cancel_requested: bool,
    /// What the surface that started it keeps about it (a stored
    /// response's echo of its request), opaque here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) surface: Option<Value>,
    /// The run is a durable workflow (Restate's, see `crate::durable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) durable: Option<DurableInfo>,
}

/// What a durable run's record keeps about its workflow.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct DurableInfo {
    /// Restate's invocation id (for cancelling it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) invocation: Option<String>,
    /// Executions so far (the current one's attempt number).
    #[serde(default)]
    pub(crate) attempts: u32,
    /// The sequence number of the current execution's first event: what
    /// it asks for (its approval requests) is in the log from there on.
    #[serde(default)]
    pub(crate) from_seq: u64,
    /// The calls the run waits for decisions on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) pending: Vec<DurablePending>,
}

/// A call a durable run waits for a decision on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DurablePending {
    /// The loop's step (part of the decision's key).
    pub(crate) step: u32,
    pub(crate) call_id: String,
    pub(crate) tool: String,
    #[serde(default)]
    pub(crate) arguments: Value,
}

/// One decision for a pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Decided {
    pub(crate) call_id: String,
    pub(crate) agent_path: String,
    pub(crate) approve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// The call's output, given in place of running it (a client tool's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<loopwright_core::ToolOutput>,
}

impl Decided {
    /// As the core's decision.
    pub(crate) fn decision(&self) -> ApprovalDecision {
        if let Some(output) = &self.output {
            return ApprovalDecision::output(output.clone());
        }
        if self.approve {
            ApprovalDecision::Approve
        } else {
            ApprovalDecision::deny(
                self.reason
                    .clone()
                    .unwrap_or_else(|| "a person denied this call".to_owned()),
            )
        }
    }
}

/// Where a completed run's conversation goes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Keep {
    /// The session this run is a turn of, and the session's version when
    /// the turn began: the turn is appended at that version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    #[serde(default)]
    pub(crate) session_version: u64,
    /// Where the turn's own input starts in the run's input (after the
    /// history it continues): from there on, the run's input and its
    /// answer are the turn kept.
    #[serde(default)]
    pub(crate) turn_from: usize,
    /// The chain turn the turn is stored as (a stored response's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) chain: Option<ChainLink>,
}

/// A turn of a chain (a stored response's conversation): its id, and the
/// turn it continues.
///
/// ```
/// let link = loopwright_runs::ChainLink { id: "resp_2".into(), previous: Some("resp_1".into()) };
/// # drop(link);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainLink {
    /// The turn's id.
    pub id: String,
    /// The turn it continues, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

impl Envelope {
    /// The envelope of `record` (a record written by something else, or
    /// damaged, is an error naming the run).
    pub(crate) fn of(record: &RunRecord) -> Result<Self, String> {
        match &record.state {
            None => Ok(Self::default()),
            Some(value) => Self::deserialize(value)
                .map_err(|e| format!("run {}: its stored record is not a served run's: {e}", record.id)),
        }
    }

    /// As the record's state.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The paused state, decoded.
    pub(crate) fn paused_state(&self) -> Result<Option<RunState>, String> {
        self.paused
            .clone()
            .map(RunState::from_value)
            .transpose()
            .map_err(|e| format!("its paused state cannot be read: {e}"))
    }

    /// The calls still waiting for a decision.
    pub(crate) fn undecided(&self) -> Vec<PendingCall> {
        let pending = self
            .paused_state()
            .ok()
            .flatten()
            .map(|s| s.pending())
            .unwrap_or_default();
        pending
            .into_iter()
            .filter(|p| {
                !self
                    .decisions
                    .iter()
                    .any(|d| d.call_id == p.call_id && d.agent_path == p.agent_path)
            })
            .collect()
    }
}

/// What the surface that started run `record` keeps in it
/// ([`RunSpec::surface`](crate::RunSpec::surface)), read without decoding
/// the rest of the record.
///
/// ```
/// let record = loopwright_store::RunRecord::new("run_1", "helper")
///     .with_state(serde_json::json!({"surface": {"model": "helper"}}));
/// assert_eq!(loopwright_runs::surface(&record).unwrap()["model"], "helper");
/// ```
pub fn surface(record: &RunRecord) -> Option<&Value> {
    record.state.as_ref()?.get("surface").filter(|s| !s.is_null())
}

/// What a finished run's record keeps as its `result`.
pub(crate) fn result_value(result: &AgentResult) -> Value {
    json!({
        "text": result.text,
        "output": result.output,
        "usage": result.tree_usage,
        "exit": result.exit(),
        "steps": result.steps.len(),
    })
}

/// Why `result` is not an answer, as a client reads it (a failed run's
/// error); `None` when the agent answered, or was cut short by a step or
/// token limit (its answer so far stands).
///
/// ```
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
/// let result = agent.run(vec![loopwright_core::Message::user("Hi")]).await?;
/// if let Some(why) = loopwright_runs::shared::failure(&result) {
///     eprintln!("no answer: {why}");
/// }
/// # Ok(()) }
/// ```
pub fn failure(result: &AgentResult) -> Option<String> {
    Some(match &result.outcome {
        Outcome::Answered | Outcome::Stopped | Outcome::MaxSteps | Outcome::TokenLimit => return None,
        Outcome::OutputInvalid { error } => {
            format!("the agent's final answer did not match the requested schema: {error}")
        }
        Outcome::ModelFailed { error } => format!(
            "the agent's model failed: {}",
            loopwright_core::util::error_chain(error)
        ),
        Outcome::Cancelled { .. } => "the run was cancelled: the server is shutting down".into(),
        Outcome::PlanRejected { reason } => format!("the agent's plan was rejected: {reason}"),
        Outcome::Tripped { trip } => trip.to_string(),
        other => format!("the run ended without an answer ({:?})", other.exit()),
    })
}

/// An error as a record keeps it and clients read it.
pub(crate) fn error_value(kind: &str, message: &str) -> Value {
    json!({"type": kind, "message": message})
}

/// A run as `GET /v1/runs/{id}` shows it: its id, agent, session, status
/// and times; the calls it waits for a decision on while it awaits
/// approval, and the sequence number its log goes on at (`next_event`);
/// its result or error once it ended; `cancel_requested`,
/// `durable` (its execution's attempt) and `replica` (who drives it) when
/// they apply.
///
/// ```
/// let record = loopwright_store::RunRecord::new("run_1", "helper");
/// let shown = loopwright_runs::view(&record);
/// assert_eq!((shown["id"].as_str(), shown["status"].as_str()), (Some("run_1"), Some("running")));
/// ```
pub fn view(record: &RunRecord) -> Value {
    let envelope = Envelope::of(record).unwrap_or_default();
    let mut out = json!({
        "id": record.id,
        "agent": record.agent,
        "session": record.session,
        "status": record.status,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
    });
    if record.status == RunStatus::AwaitingApproval
        && let Some(durable) = &envelope.durable
    {
        out["pending_approvals"] = durable
            .pending
            .iter()
            .filter(|p| !envelope.decisions.iter().any(|d| d.call_id == p.call_id))
            .map(|p| json!({"call_id": p.call_id, "tool": p.tool, "arguments": p.arguments, "agent_path": "", "kind": "approval"}))
            .collect();
    } else if record.status == RunStatus::AwaitingApproval {
        out["pending_approvals"] = Value::Array(
            envelope
                .undecided()
                .iter()
                .map(|p| {
                    json!({
                        "call_id": p.call_id,
                        "tool": p.tool,
                        "arguments": p.arguments,
                        "agent_path": p.agent_path,
                        "kind": p.kind,
                    })
                })
                .collect(),
        );
    }
    if record.status == RunStatus::AwaitingApproval {
        // Where its log goes on once decided: follow it from here.
        out["next_event"] = json!(envelope.next_seq);
    }
    if let Some(result) = &record.result {
        out["result"] = result.clone();
    }
    if let Some(error) = &record.error {
        out["error"] = error.clone();
    }
    if record.status == RunStatus::Running && envelope.cancel_requested {
        out["cancel_requested"] = json!(true);
    }
    if let Some(durable) = &envelope.durable {
        out["durable"] = json!({"attempt": durable.attempts});
    }
    if let (Some(owner), false) = (&record.owner, record.status.is_finished()) {
        out["replica"] = json!(owner);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn an_envelope_round_trips_through_a_record() {
        let envelope = Envelope {
            next_seq: 7,
            decisions: vec![Decided {
                call_id: "c1".into(),
                agent_path: "main".into(),
                approve: false,
                reason: Some("not today".into()),
                output: None,
            }],
            ..Envelope::default()
        };
        let record = RunRecord::new("r1", "main").with_state(envelope.to_value());
        let back = Envelope::of(&record).unwrap();
        assert_eq!(back.next_seq, 7);
        assert_eq!(back.decisions[0].decision(), ApprovalDecision::deny("not today"));
        let damaged = RunRecord::new("r2", "main").with_state(json!({"next_seq": "seven"}));
        assert!(Envelope::of(&damaged).unwrap_err().contains("run r2"));
    }
}
