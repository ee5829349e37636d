//! The loop's side of pausing: the state a run leaves when it pauses on
//! questions, and finishing a paused step when the run is resumed.
//!
//! Invariants: a paused step's calls are answered exactly once across the
//! pause: the results of the calls that ran before it are kept in the
//! state and never recomputed; on resume an approved call runs (once), a
//! denied one gets the denial as its error result, a paused sub-agent
//! continues with its own decisions; the step's tool message then holds one
//! result per call, in the model's order, as if the step had never paused.
//! A step can pause again (a sub-agent asking a new question): its state
//! then keeps everything answered so far.

use std::collections::HashMap;
use std::sync::Arc;

use super::drive::{Ending, LoopState, Run, tool_message};
use super::events::AgentEvent;
use super::exec::{Batch, Pause, execute};
use super::gate;
use super::policy::Flow;
use super::resume::SharedDecisions;
use super::state::{PLAN_CALL_ID, Paused, PendingCall, RunState, SuspendedCall, new_state_id};
use crate::approval::ApprovalDecision;
use crate::preflight::{Plan, PlanDecision};
use loopwright_types::Usage;
use loopwright_types::toolset::ToolCatalog;
use loopwright_types::{Message, ToolCall, ToolResult};

/// What a run needs to write its state when it pauses.
pub(super) struct PauseAt<'a> {
    pub history: &'a [Message],
    pub input_len: usize,
    pub steps: u32,
    pub usage: Usage,
    pub output_retries_left: Option<u32>,
    pub conclude_next: bool,
    pub compacted: bool,
    pub paused: Paused,
}

/// A paused step, as the loop resumes it.
pub(super) struct PausedStep {
    pub step: u32,
    pub calls: Vec<ToolCall>,
    pub results: Vec<ToolResult>,
    pub pending: Vec<PendingCall>,
    pub suspended: Vec<SuspendedCall>,
}

/// How finishing a paused step ended.
pub(super) enum StepEnd {
    /// Every call has its result, in call order.
    Done(Vec<ToolResult>),
    /// Some calls paused again.
    Paused(Paused),
    /// A guardrail stopped the run as the approved calls were checked
    /// again: every call has its result (those not run, "not run").
    Tripped(Vec<ToolResult>, crate::guardrail::Trip),
}

/// The paused calls of a step that ran: split into questions and sub-agents.
pub(super) fn paused_calls(
    step: u32,
    calls: &[ToolCall],
    results: Vec<ToolResult>,
    paused: Vec<Pause>,
) -> Paused {
    let mut pending = Vec::new();
    let mut suspended = Vec::new();
    for pause in paused {
        match pause {
            Pause::Deferred(call) => pending.push(call),
            Pause::Suspended(call) => suspended.push(call),
        }
    }
    Paused::ToolCalls {
        step,
        calls: calls.to_vec(),
        results,
        pending,
        suspended,
    }
}

impl Run {
    /// Continue a resumed run where it paused: its plan decided, or its
    /// paused step's calls answered.
    pub(super) async fn reopen(
        &self,
        lp: &mut LoopState,
        paused: Paused,
        decisions: &SharedDecisions,
    ) -> Flow {
        match paused {
            Paused::Plan { plan } => self.decide_plan(plan, decisions).await.apply(lp),
            Paused::ToolCalls {
                step,
                calls,
                results,
                pending,
                suspended,
            } => {
                let paused = PausedStep {
                    step,
                    calls,
                    results,
                    pending,
                    suspended,
                };
                let catalog = lp.catalog.clone();
                match self.finish_paused(paused, decisions, &catalog).await {
                    StepEnd::Done(results) => {
                        lp.add(tool_message(results));
                        Flow::Go
                    }
                    StepEnd::Paused(again) => Flow::End(Ending::Paused(again)),
                    StepEnd::Tripped(results, trip) => {
                        lp.add(tool_message(results));
                        Flow::End(Ending::Tripped(trip))
                    }
                }
            }
        }
    }

    /// The state of this run, paused as `at` says.
    pub(super) fn state(&self, at: PauseAt<'_>) -> RunState {
        RunState {
            version: super::state::RUN_STATE_VERSION,
            id: new_state_id(),
            agent_path: self.scope.path.clone(),
            messages: at.history.to_vec(),
            input_len: at.input_len,
            steps: at.steps,
            usage: at.usage,
            children_usage: self.scope.children_usage(),
            output_retries_left: at.output_retries_left,
            conclude_next: at.conclude_next,
            compacted: at.compacted,
            guardrails: self.accountant.guard_entries(),
            paused: at.paused,
            resumed: Default::default(),
        }
    }

    /// Tell the application what waits, before the `finished` event.
    pub(super) async fn tell_paused(&self, state: &RunState) {
        self.tell(AgentEvent::AwaitingApproval {
            state_id: state.id.clone(),
            pending: state.pending(),
        })
        .await;
    }

    /// This run's decision for `call_id` (checked present by
    /// [`Resume::run`](super::Resume::run)).
    fn decision(&self, decisions: &SharedDecisions, call_id: &str) -> ApprovalDecision {
        decisions
            .get(&self.scope.path, call_id)
            .cloned()
            .unwrap_or_else(|| ApprovalDecision::deny("no decision was given for this call"))
    }

    /// The decision on a paused plan, as the plan approver's would be.
    pub(super) async fn decide_plan(
        &self,
        plan: Plan,
        decisions: &SharedDecisions,
    ) -> super::plan::PlanOutcome {
        let decision = match self.decision(decisions, PLAN_CALL_ID) {
            ApprovalDecision::Deny { reason } => PlanDecision::reject(reason),
            _ => PlanDecision::Approve,
        };
        self.settle_plan(plan, Some(decision)).await
    }

    /// The pending calls' decisions, each told (`approval_resolved`): the
    /// calls answered without running (denied, or given their output) with
    /// the result each gets, the ids of the approved ones.
    async fn decide_pending<'p>(
        &self,
        pending: &'p [PendingCall],
        decisions: &SharedDecisions,
    ) -> (HashMap<String, gate::Refusal>, Vec<&'p str>) {
        let mut decided = HashMap::new();
        let mut to_run: Vec<&str> = Vec::new();
        for call in pending {
            let (approved, reason, instead) = match self.decision(decisions, &call.call_id) {
                ApprovalDecision::Deny { reason } => {
                    let refusal = gate::denied(&call.tool, &reason);
                    (false, Some(reason), Some(refusal))
                }
                ApprovalDecision::Output { output } => (
                    false,
                    Some("answered in the tool's place".to_owned()),
                    Some(gate::Refusal::answered(output)),
                ),
                ApprovalDecision::ApproveForSession => {
                    if let Some(approvals) = &self.options.approvals {
                        approvals.session.approve(&call.tool);
                    }
                    (true, None, None)
                }
                _ => (true, None, None),
            };
            self.tell(AgentEvent::ApprovalResolved {
                call_id: call.call_id.clone(),
                approved,
                reason,
            })
            .await;
            match instead {
                Some(refusal) => {
                    decided.insert(call.call_id.clone(), refusal);
                }
                None => to_run.push(&call.call_id),
            }
        }
        (decided, to_run)
    }

    /// Answer every call of a paused step: approved ones run, denied ones
    /// get their denial, paused sub-agents continue.
    pub(super) async fn finish_paused(
        &self,
        paused: PausedStep,
        decisions: &SharedDecisions,
        catalog: &Arc<ToolCatalog>,
    ) -> StepEnd {
        let (decided, to_run) = self.decide_pending(&paused.pending, decisions).await;
        let approved: Vec<ToolCall> = paused
            .calls
            .iter()
            .filter(|c| to_run.contains(&c.id.as_str()))
            .cloned()
            .collect();
        let rechecked = super::guardrail::recheck_approved(self, paused.step, &approved).await;
        let trip = rechecked.as_ref().and_then(|g| g.trip.clone());
        let no_rejections = HashMap::new();
        let states: HashMap<String, Box<RunState>> = paused
            .suspended
            .iter()
            .map(|s| (s.call_id.clone(), s.state.clone()))
            .collect();
        // The calls still to answer, in the model's order.
        let open: Vec<ToolCall> = paused
            .calls
            .iter()
            .filter(|c| {
                decided.contains_key(&c.id) || to_run.contains(&c.id.as_str()) || states.contains_key(&c.id)
            })
            .cloned()
            .collect();
        let executed = execute(Batch {
            step: paused.step,
            calls: &open,
            bad_json: &[],
            catalog,
            offered: None,
            refuse: trip.is_some().then_some("Not run: a guardrail stopped the run."),
            answered: &HashMap::new(),
            decided: &decided,
            rejected: rechecked.as_ref().map_or(&no_rejections, |g| &g.rejected),
            result_guards: self
                .options
                .guardrails
                .clone()
                .filter(|rails| rails.checks(crate::guardrail::GuardPoint::ToolResult)),
            options: &self.options,
            cancel: &self.cancel,
            emit: &self.emit,
            accountant: &self.accountant,
            scope: &self.scope,
            gate: None,
            pre_approved: true,
            resumes: Some((&states, decisions)),
            journal: None,
            // Their `tool_call` events went out before the pause.
            announced: true,
        })
        .await;
        let trip = trip.or(executed.trip);
        let mut results = paused.results;
        results.extend(executed.results);
        if trip.is_none() && !executed.paused.is_empty() {
            return StepEnd::Paused(paused_calls(paused.step, &paused.calls, results, executed.paused));
        }
        in_order(&paused.calls, results, trip)
    }
}

/// One result per call, in the model's order: the step done, or tripped
/// (a call that paused again then gets "not run").
fn in_order(calls: &[ToolCall], results: Vec<ToolResult>, trip: Option<crate::guardrail::Trip>) -> StepEnd {
    let mut by_id: HashMap<String, ToolResult> =
        results.into_iter().map(|r| (r.call_id.clone(), r)).collect();
    let ordered = calls
        .iter()
        .filter_map(|call| match by_id.remove(&call.id) {
            Some(result) => Some(result),
            None if trip.is_some() => Some(ToolResult {
                call_id: call.id.clone(),
                parts: vec![loopwright_types::ToolOutputPart::text(
                    "Not run: a guardrail stopped the run.",
                )],
                is_error: true,
            }),
            None => None,
        })
        .collect();
    match trip {
        Some(trip) => StepEnd::Tripped(ordered, trip),
        None => StepEnd::Done(ordered),
    }
}
