//! [`RunState`]: a run paused on a question to a person, as plain data that
//! another process can resume.
//!
//! Invariants: a state holds what the loop needs to go on exactly where it
//! stopped (the history up to the step that asked, the results of that
//! step's calls that ran, the calls waiting for a decision, the step count,
//! the usage, the output retries left) and nothing else: no secret, no
//! process handle, no model or tool, which come from the agent that resumes
//! it. Its format has a version ([`RUN_STATE_VERSION`]); a state of another
//! version is refused with [`RunStateError::UnknownVersion`], never read
//! half-way. A sub-agent that asked holds the parent's call open, and the
//! parent's state holds the child's ([`SuspendedCall`]).

use std::hash::{BuildHasher, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalTier;
use crate::preflight::Plan;
use loopwright_types::Usage;
use loopwright_types::{Message, ToolCall, ToolResult};

/// The format version this build writes and reads.
pub const RUN_STATE_VERSION: u32 = 1;

/// The call id under which a paused pre-flight plan is decided.
pub const PLAN_CALL_ID: &str = "plan";

/// A run paused until a person answers: serialise it (`serde_json`), keep it
/// anywhere, and continue it with [`Agent::resume`](crate::Agent::resume),
/// in this process or another.
///
/// ```
/// let text = r#"{"version": 99, "id": "x"}"#;
/// let err = loopwright_core::RunState::from_json(text).unwrap_err();
/// assert_eq!(err.to_string(), "run state format version 99 is not one this build reads (it reads version 1)");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunState {
    /// The format version ([`RUN_STATE_VERSION`]).
    pub version: u32,
    /// This state's id: each pause has its own, and a state is resumed at
    /// most once.
    pub id: String,
    /// The path of the agent that paused (`coordinator`, or
    /// `coordinator/researcher` for a sub-agent's own state).
    pub agent_path: String,
    /// The history so far: the run's input, then what it added, up to the
    /// assistant message whose calls are waiting.
    pub messages: Vec<Message>,
    /// How many of `messages` were the run's input (the rest are its own).
    pub input_len: usize,
    /// Model calls with tools taken so far.
    pub steps: u32,
    /// Usage of the run's own model calls so far.
    pub usage: Usage,
    /// Usage of its sub-agents' finished runs so far.
    pub children_usage: Usage,
    /// Output retries left (runs with an output schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_retries_left: Option<u32>,
    /// Whether the context budget made the next step the concluding one.
    #[serde(default)]
    pub conclude_next: bool,
    /// Whether `messages` was compacted (the resumed run's result then
    /// carries its whole history, [`AgentResult::history`](crate::AgentResult::history)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compacted: bool,
    /// The guardrails' checks so far (see
    /// [`AgentResult::guardrails`](crate::AgentResult::guardrails)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guardrails: Vec<crate::accounting::GuardEntry>,
    /// Where the run stopped.
    pub paused: Paused,
    /// Set once the state (or a clone of it) was resumed in this process.
    #[serde(skip)]
    pub(crate) resumed: ResumeMark,
}

/// Whether a state was resumed: shared by the state's clones, never
/// serialised (a store's claim keeps a state from being resumed twice
/// across processes).
#[derive(Clone, Default)]
pub(crate) struct ResumeMark(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl ResumeMark {
    /// Mark it; false when it was marked already.
    pub fn take(&self) -> bool {
        !self.0.swap(true, std::sync::atomic::Ordering::SeqCst)
    }
}

impl PartialEq for ResumeMark {
    /// Two states are equal whatever was resumed.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for ResumeMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResumeMark")
    }
}

/// Where a run stopped to ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Paused {
    /// A step's tool calls: some ran, some wait for a decision (or for a
    /// sub-agent's).
    ToolCalls {
        /// The step (1-based) whose calls these are.
        step: u32,
        /// Every call of the step, in the model's order.
        calls: Vec<ToolCall>,
        /// The results of the calls that ran.
        results: Vec<ToolResult>,
        /// Calls waiting for this agent's decision.
        pending: Vec<PendingCall>,
        /// Calls to sub-agents that are themselves waiting.
        suspended: Vec<SuspendedCall>,
    },
    /// The pre-flight plan, before any tool ran.
    Plan {
        /// The plan proposed.
        plan: Plan,
    },
}

/// A question waiting for a person: a tool call needing approval, or a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// What is asked.
    pub kind: PendingKind,
    /// The call's id ([`PLAN_CALL_ID`] for a plan).
    pub call_id: String,
    /// The exposed tool name (`plan` for a plan).
    pub tool: String,
    /// The call's arguments (the plan, for a plan).
    pub arguments: Value,
    /// Why it asks.
    pub tier: ApprovalTier,
    /// The path of the agent that asks.
    pub agent_path: String,
}

/// What a [`PendingCall`] asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PendingKind {
    /// May this tool call run?
    ToolCall,
    /// May the run follow this plan?
    Plan,
    /// What is this call's output? (A [`ClientTool`](super::ClientTool):
    /// the client runs it and answers with its output.)
    ClientTool,
}

/// A call to a sub-agent whose run is paused: the parent's call stays open
/// until the child is resumed and ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SuspendedCall {
    /// The parent's call id.
    pub call_id: String,
    /// The exposed name of the sub-agent's tool.
    pub tool: String,
    /// The child's state.
    pub state: Box<RunState>,
}

/// Why a run state could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunStateError {
    /// Written by a build with another format.
    #[error("run state format version {found} is not one this build reads (it reads version {supported})")]
    UnknownVersion {
        /// The state's version.
        found: u64,
        /// The version this build reads.
        supported: u32,
    },
    /// Not a run state: truncated, corrupt, or another document.
    #[error("not a valid run state: {detail}")]
    Corrupt {
        /// What is wrong, as the JSON reader saw it.
        detail: String,
    },
}

impl RunState {
    /// Read a state from JSON, its version checked first.
    pub fn from_json(text: &str) -> Result<Self, RunStateError> {
        let value: Value = serde_json::from_str(text).map_err(|e| RunStateError::Corrupt {
            detail: e.to_string(),
        })?;
        Self::from_value(value)
    }

    /// Read a state from a JSON value, its version checked first.
    pub fn from_value(value: Value) -> Result<Self, RunStateError> {
        match value.get("version").and_then(Value::as_u64) {
            Some(v) if v == u64::from(RUN_STATE_VERSION) => {}
            Some(found) => {
                return Err(RunStateError::UnknownVersion {
                    found,
                    supported: RUN_STATE_VERSION,
                });
            }
            None => {
                return Err(RunStateError::Corrupt {
                    detail: "no `version` number".into(),
                });
            }
        }
        serde_json::from_value(value).map_err(|e| RunStateError::Corrupt {
            detail: e.to_string(),
        })
    }

    /// The state as JSON.
    pub fn to_json(&self) -> String {
        // A state is plain data: serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Every question waiting in the tree: this run's, then its paused
    /// sub-agents' (each naming its agent's path).
    pub fn pending(&self) -> Vec<PendingCall> {
        let mut out = Vec::new();
        self.collect_pending(&mut out);
        out
    }

    fn collect_pending(&self, out: &mut Vec<PendingCall>) {
        match &self.paused {
            Paused::Plan { plan } => out.push(PendingCall {
                kind: PendingKind::Plan,
                call_id: PLAN_CALL_ID.to_owned(),
                tool: "plan".to_owned(),
                arguments: serde_json::to_value(plan).unwrap_or(Value::Null),
                tier: ApprovalTier::Always,
                agent_path: self.agent_path.clone(),
            }),
            Paused::ToolCalls {
                pending, suspended, ..
            } => {
                out.extend(pending.iter().cloned());
                for call in suspended {
                    call.state.collect_pending(out);
                }
            }
        }
    }
}

/// A fresh state id: 128 random bits from the standard library's hasher
/// seeds (the ids only need to be unique).
pub(crate) fn new_state_id() -> String {
    let random = || {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    format!("rs_{:016x}{:016x}", random(), random())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn state() -> RunState {
        RunState {
            version: RUN_STATE_VERSION,
            id: new_state_id(),
            agent_path: "lead".into(),
            messages: vec![Message::user("go")],
            input_len: 1,
            steps: 1,
            usage: Usage::new(10, 5),
            children_usage: Usage::default(),
            output_retries_left: None,
            conclude_next: false,
            compacted: false,
            guardrails: Vec::new(),
            paused: Paused::ToolCalls {
                step: 1,
                calls: Vec::new(),
                results: Vec::new(),
                pending: vec![PendingCall {
                    kind: PendingKind::ToolCall,
                    call_id: "c1".into(),
                    tool: "Write".into(),
                    arguments: serde_json::json!({"path": "a"}),
                    tier: ApprovalTier::Always,
                    agent_path: "lead".into(),
                }],
                suspended: Vec::new(),
            },
            resumed: Default::default(),
        }
    }

    #[test]
    fn a_state_round_trips_and_bad_ones_are_named() {
        let s = state();
        assert_eq!(RunState::from_json(&s.to_json()).unwrap(), s);
        assert_ne!(new_state_id(), new_state_id());
        let truncated = &s.to_json()[..40];
        assert!(matches!(
            RunState::from_json(truncated),
            Err(RunStateError::Corrupt { .. })
        ));
        let mut newer: Value = serde_json::from_str(&s.to_json()).unwrap();
        newer["version"] = serde_json::json!(2);
        assert_eq!(
            RunState::from_value(newer),
            Err(RunStateError::UnknownVersion {
                found: 2,
                supported: 1
            })
        );
        let mut broken: Value = serde_json::from_str(&s.to_json()).unwrap();
        broken["paused"]["at"] = serde_json::json!("somewhere");
        assert!(matches!(
            RunState::from_value(broken),
            Err(RunStateError::Corrupt { .. })
        ));
    }

    #[test]
    fn pending_lists_the_tree() {
        let child = state();
        let mut parent = state();
        parent.agent_path = "top".into();
        if let Paused::ToolCalls { suspended, .. } = &mut parent.paused {
            suspended.push(SuspendedCall {
                call_id: "s1".into(),
                tool: "agent__lead".into(),
                state: Box::new(child),
            });
        }
        let ids: Vec<String> = parent.pending().into_iter().map(|p| p.call_id).collect();
        assert_eq!(ids, ["c1", "c1"]);
    }
}
