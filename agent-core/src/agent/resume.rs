//! Continuing a paused run: [`Agent::resume`] takes a [`RunState`] and the
//! decisions for its pending questions, checks them against the agent, and
//! starts a run that goes on exactly where the state stopped.
//!
//! Invariants: nothing runs until every check passed (the state's version,
//! every pending call decided and no decision for a call that is not
//! pending, every tool the state names present in the agent, sub-agents
//! included); an approved call runs once, a denied one gets one error
//! result the model reads; a state is resumed at most once (a second
//! resume of the state, or of a clone of it, is
//! [`ResumeError::AlreadyResumed`]; a copy read again from its JSON is a
//! new state, and a store's claim keeps it from being resumed twice).

use std::collections::HashMap;
use std::sync::Arc;

use super::Agent;
use super::run::AgentRun;
use super::scope::Lineage;
use super::state::{Paused, PendingKind, RunState};
use crate::approval::ApprovalDecision;

/// Decisions for the questions of a paused run tree, by the asking agent's
/// path and the call's id.
///
/// ```
/// let d = loopwright_core::agent::Decisions::default()
///     .with("lead", "c1", loopwright_core::ApprovalDecision::Approve);
/// assert!(d.get("lead", "c1").unwrap().approved());
/// assert!(d.get("lead", "c2").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decisions {
    by_call: HashMap<(String, String), ApprovalDecision>,
}

impl Decisions {
    /// Add the decision for call `call_id` of the agent at `agent_path`.
    #[must_use]
    pub fn with(mut self, agent_path: &str, call_id: &str, decision: ApprovalDecision) -> Self {
        self.insert(agent_path, call_id, decision);
        self
    }

    fn insert(&mut self, agent_path: &str, call_id: &str, decision: ApprovalDecision) {
        self.by_call
            .insert((agent_path.to_owned(), call_id.to_owned()), decision);
    }

    /// The decision for call `call_id` of the agent at `agent_path`.
    pub fn get(&self, agent_path: &str, call_id: &str) -> Option<&ApprovalDecision> {
        self.by_call.get(&(agent_path.to_owned(), call_id.to_owned()))
    }

    fn len(&self) -> usize {
        self.by_call.len()
    }
}

/// Why a paused run could not be resumed (nothing ran).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The state could not be read.
    #[error(transparent)]
    State(#[from] super::state::RunStateError),
    /// This state was resumed already: resuming it again could run a tool
    /// twice.
    #[error("run state {state_id} was resumed already; a state is resumed once (load the newer state)")]
    AlreadyResumed {
        /// The state's id.
        state_id: String,
    },
    /// The agent lacks a tool a pending or paused call names.
    #[error("the agent at {agent_path} has no tool {tool}, which the paused run's call {call_id} names")]
    MissingTool {
        /// The exposed tool name.
        tool: String,
        /// The call.
        call_id: String,
        /// The agent that should have it.
        agent_path: String,
    },
    /// A paused call's tool cannot continue a call (it is not a sub-agent).
    #[error("the tool {tool} of {agent_path} cannot continue a paused call")]
    NotResumable {
        /// The tool.
        tool: String,
        /// Its agent.
        agent_path: String,
    },
    /// A decision names a call that is not pending.
    #[error("call {call_id} is not pending in this run state (pending: {pending})")]
    NotPending {
        /// The call named.
        call_id: String,
        /// What is pending, as `path:call`.
        pending: String,
    },
    /// A call id is pending in two agents of the tree: say which.
    #[error("call {call_id} is pending in several agents ({paths}): decide it with decide_at(path, ...)")]
    Ambiguous {
        /// The call id.
        call_id: String,
        /// The agents' paths.
        paths: String,
    },
    /// A decision of the wrong kind for its call: an approval for a client
    /// tool's call (nothing here can run it), an output for a plan.
    #[error("call {call_id} ({tool}) cannot be decided so: {expected}")]
    Mismatched {
        /// The call.
        call_id: String,
        /// Its tool (`plan` for a plan).
        tool: String,
        /// What it takes.
        expected: String,
    },
    /// Pending calls have no decision.
    #[error("no decision for pending call(s) {call_ids}: decide every pending call")]
    Undecided {
        /// The undecided calls, as `path:call`.
        call_ids: String,
    },
}

/// A paused run about to be resumed: add decisions, then [`Resume::run`].
///
/// ```no_run
/// # async fn demo(agent: loopwright_core::Agent, text: &str) -> Result<(), Box<dyn std::error::Error>> {
/// let state = loopwright_core::RunState::from_json(text)?;
/// let result = agent
///     .resume(state)
///     .approve("call_1")
///     .deny("call_2", "not on the main branch")
///     .run()
///     .await?
///     .await?;
/// println!("{}", result.text);
/// # Ok(()) }
/// ```
#[must_use = "a Resume does nothing until run"]
pub struct Resume {
    agent: Agent,
    state: RunState,
    /// (agent path or none, call id, decision), in the order given.
    asked: Vec<(Option<String>, String, ApprovalDecision)>,
}

impl Agent {
    /// Continue `state` (a run of this agent that paused on questions to a
    /// person, see [`Approvals::defer`](crate::Approvals::defer)) once its
    /// pending calls are decided.
    pub fn resume(&self, state: RunState) -> Resume {
        Resume {
            agent: self.clone(),
            state,
            asked: Vec::new(),
        }
    }
}

impl Resume {
    /// Run the pending call `call_id` (a plan: follow it).
    pub fn approve(self, call_id: impl Into<String>) -> Self {
        self.decide(call_id, ApprovalDecision::Approve)
    }

    /// Do not run the pending call `call_id`; the model is told `reason`
    /// (a plan: the run ends, rejected).
    pub fn deny(self, call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        self.decide(call_id, ApprovalDecision::deny(reason))
    }

    /// Answer the pending call `call_id` with `output` instead of running
    /// it: a [client tool](super::ClientTool)'s call, with what the client
    /// ran; any other call, with an answer given in the tool's place.
    ///
    /// ```no_run
    /// # async fn demo(agent: loopwright_core::Agent, state: loopwright_core::RunState) -> Result<(), Box<dyn std::error::Error>> {
    /// let run = agent
    ///     .resume(state)
    ///     .output("call_7", loopwright_core::ToolOutput::text(r#"{"city": "Paris"}"#))
    ///     .run()
    ///     .await?;
    /// # drop(run); Ok(()) }
    /// ```
    pub fn output(self, call_id: impl Into<String>, output: loopwright_types::ToolOutput) -> Self {
        self.decide(call_id, ApprovalDecision::output(output))
    }

    /// Decide the pending call `call_id`, wherever in the tree it waits.
    pub fn decide(mut self, call_id: impl Into<String>, decision: ApprovalDecision) -> Self {
        self.asked.push((None, call_id.into(), decision));
        self
    }

    /// Decide call `call_id` of the agent at `agent_path` (when two agents
    /// of the tree wait on calls with one id).
    pub fn decide_at(
        mut self,
        agent_path: impl Into<String>,
        call_id: impl Into<String>,
        decision: ApprovalDecision,
    ) -> Self {
        self.asked
            .push((Some(agent_path.into()), call_id.into(), decision));
        self
    }

    /// The pending questions of the state being resumed.
    pub fn pending(&self) -> Vec<super::state::PendingCall> {
        self.state.pending()
    }

    /// Check everything, then start the run where the state stopped.
    pub async fn run(self) -> Result<AgentRun, ResumeError> {
        let decisions = self.decisions()?;
        check_tools(&self.agent, &self.state).await?;
        if !self.state.resumed.take() {
            return Err(ResumeError::AlreadyResumed {
                state_id: self.state.id,
            });
        }
        let lineage = Lineage::root(self.agent.name(), self.agent.id.clone(), &self.agent.options);
        Ok(super::start_resumed(&self.agent, self.state, decisions, lineage))
    }

    /// The decisions, each matched to exactly one pending call; every
    /// pending call decided.
    fn decisions(&self) -> Result<Decisions, ResumeError> {
        let pending = self.state.pending();
        let listed = || {
            pending
                .iter()
                .map(|p| format!("{}:{}", p.agent_path, p.call_id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut decisions = Decisions::default();
        for (path, call_id, decision) in &self.asked {
            let matches: Vec<&super::state::PendingCall> = pending
                .iter()
                .filter(|p| p.call_id == *call_id && path.as_ref().is_none_or(|path| *path == p.agent_path))
                .collect();
            match matches.as_slice() {
                [] => {
                    return Err(ResumeError::NotPending {
                        call_id: call_id.clone(),
                        pending: listed(),
                    });
                }
                [one] => {
                    fits(one, decision)?;
                    decisions.insert(&one.agent_path, call_id, decision.clone());
                }
                many => {
                    return Err(ResumeError::Ambiguous {
                        call_id: call_id.clone(),
                        paths: many
                            .iter()
                            .map(|p| p.agent_path.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
        let undecided: Vec<String> = pending
            .iter()
            .filter(|p| decisions.get(&p.agent_path, &p.call_id).is_none())
            .map(|p| format!("{}:{}", p.agent_path, p.call_id))
            .collect();
        if !undecided.is_empty() {
            return Err(ResumeError::Undecided {
                call_ids: undecided.join(", "),
            });
        }
        debug_assert!(decisions.len() <= pending.len());
        Ok(decisions)
    }
}

/// Whether `decision` is one `call` can take: a client tool's call an
/// output or a denial, a plan an approval or a denial.
pub(crate) fn fits(call: &super::state::PendingCall, decision: &ApprovalDecision) -> Result<(), ResumeError> {
    let expected = match (call.kind, decision) {
        (PendingKind::ClientTool, ApprovalDecision::Approve | ApprovalDecision::ApproveForSession) => {
            "its output (a client tool runs in the client), or a denial"
        }
        (PendingKind::Plan, ApprovalDecision::Output { .. }) => "an approval or a denial (it is a plan)",
        _ => return Ok(()),
    };
    Err(ResumeError::Mismatched {
        call_id: call.call_id.clone(),
        tool: call.tool.clone(),
        expected: expected.to_owned(),
    })
}

/// Every tool the state's pending and paused calls name is in `agent`'s
/// catalog; a paused sub-agent checks its own state.
pub(crate) async fn check_tools(agent: &Agent, state: &RunState) -> Result<(), ResumeError> {
    let Paused::ToolCalls {
        pending, suspended, ..
    } = &state.paused
    else {
        return Ok(());
    };
    let catalog = agent.tools.catalog().await;
    let missing = |tool: &str, call_id: &str| ResumeError::MissingTool {
        tool: tool.to_owned(),
        call_id: call_id.to_owned(),
        agent_path: state.agent_path.clone(),
    };
    for call in pending.iter().filter(|p| p.kind == PendingKind::ToolCall) {
        if catalog.get(&call.tool).is_none() {
            return Err(missing(&call.tool, &call.call_id));
        }
    }
    for call in suspended {
        let exposed = catalog
            .get(&call.tool)
            .ok_or_else(|| missing(&call.tool, &call.call_id))?;
        match super::sub_agent::sub_agent(exposed.tool.as_ref()) {
            Some(sub) => sub.check_resume(&call.state).await?,
            None => {
                return Err(ResumeError::NotResumable {
                    tool: exposed.name.clone(),
                    agent_path: call.state.agent_path.clone(),
                });
            }
        }
    }
    Ok(())
}

/// A state of this run tree as it is decided: shared with the sub-agents
/// that take their own decisions from it.
pub(crate) type SharedDecisions = Arc<Decisions>;
