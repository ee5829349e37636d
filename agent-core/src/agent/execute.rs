//! Phase 4, execute the step's calls: validated, each through its approval
//! gate, run concurrently within the run's limits, each under its timeout
//! (see [`super::exec`] for the executor). A durable run decides its
//! approvals before the step and journals each call; a call the journal
//! holds is replayed, not run again.
//!
//! Invariants: every call gets exactly one result, in call order, whatever
//! happens (a call the engine could not journal, and the ones after it,
//! get a "cancelled" result and the run stops); a call that paused for a
//! person gets none now: the run pauses with the step, and the results of
//! the calls that ran are kept in its state, never recomputed.

use std::collections::{HashMap, HashSet};

use loopwright_types::{ToolCall, ToolOutputPart, ToolResult};

use super::admit::approval_requests;
use super::drive::{Ending, LoopState, Run, tool_message};
use super::exec::{Batch, Executed, execute};
use super::judge::Judged;
use super::paused::paused_calls;
use super::policy::{Policies, Step};
use super::step::StepOutput;

/// The result of each call of a step whose arguments a guardrail stopped
/// the run at.
const NOT_RUN_TRIPPED: &str = "Not run: a guardrail stopped the run.";

/// The result of a call made on the concluding step, which runs no tool.
const NOT_RUN_CONCLUDING: &str =
    "Not run: tools are no longer available (the step limit or the context budget was reached).";

impl Run {
    /// Run the step's calls: their results in call order, or why the run
    /// ends (it pauses, or its journal failed).
    pub(super) async fn execute(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
        step: &Step,
        output: &StepOutput,
        judged: &Judged,
    ) -> Result<Vec<ToolResult>, Ending> {
        let guarded = policies.guard_calls(self, lp, step.number, &output.calls).await;
        if let Some(guarded) = guarded.as_ref().filter(|g| g.replaced) {
            self.rewrite_calls(lp, &guarded.calls);
        }
        let calls = guarded.as_ref().map_or(&output.calls, |g| &g.calls);
        let trip = guarded.as_ref().and_then(|g| g.trip.clone());
        let refuse = if trip.is_some() {
            Some(NOT_RUN_TRIPPED)
        } else {
            step.concluding.then_some(NOT_RUN_CONCLUDING)
        };
        let gate = policies.results_gate(self, lp, step);
        let no_rejections = HashMap::new();
        let mut batch = Batch {
            step: step.number,
            calls,
            bad_json: &output.bad_json,
            catalog: &lp.catalog,
            offered: step.offered.as_ref(),
            refuse,
            answered: &judged.answered,
            decided: &HashMap::new(),
            rejected: guarded.as_ref().map_or(&no_rejections, |g| &g.rejected),
            result_guards: policies.result_guards(),
            pre_approved: false,
            resumes: None,
            options: &self.options,
            cancel: &self.cancel,
            emit: &self.emit,
            accountant: &self.accountant,
            scope: &self.scope,
            gate: gate.as_ref(),
            journal: None,
            announced: false,
        };
        // A durable run decides its approvals before the step, outside the
        // journaled calls.
        let decided;
        if self.journal.is_durable() && self.options.approvals.is_some() {
            let requests = approval_requests(&batch).await;
            decided = self
                .journal
                .decide(step.number, requests, &self.emit, &self.cancel)
                .await;
            batch.decided = &decided;
            batch.pre_approved = true;
        }
        batch.journal = Some(&self.journal);
        let executed = execute(batch).await;
        let results = self.after_batch(lp, policies, step, output, executed).await?;
        match trip {
            // Every call has its "not run" result; then the run trips.
            Some(trip) => {
                lp.add(tool_message(results));
                Err(Ending::Tripped(trip))
            }
            None => Ok(results),
        }
    }

    /// What the batch's outcome means for the run.
    async fn after_batch(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
        step: &Step,
        output: &StepOutput,
        executed: Executed,
    ) -> Result<Vec<ToolResult>, Ending> {
        if let Some(e) = &executed.journal_error {
            // The calls that ran keep their results; the others were not run.
            self.journal_failed(e).await;
            let results = in_call_order(&output.calls, executed.results);
            lp.add(tool_message(results));
            return Err(Ending::Cancelled);
        }
        if let Some(trip) = executed.trip {
            // The calls' results (the tripping one withheld) close the
            // step; then the run trips.
            lp.add(tool_message(in_call_order(&output.calls, executed.results)));
            return Err(Ending::Tripped(trip));
        }
        policies.executed(lp, executed.over_budget);
        if !executed.paused.is_empty() {
            // Some calls wait for a person: the step is answered when the
            // run is resumed.
            return Err(Ending::Paused(paused_calls(
                step.number,
                &output.calls,
                executed.results,
                executed.paused,
            )));
        }
        Ok(executed.results)
    }
}

/// `results` completed with a "cancelled" result for each call without
/// one, in the calls' order.
fn in_call_order(calls: &[ToolCall], mut results: Vec<ToolResult>) -> Vec<ToolResult> {
    let answered: HashSet<String> = results.iter().map(|r| r.call_id.clone()).collect();
    results.extend(
        calls
            .iter()
            .filter(|c| !answered.contains(&c.id))
            .map(|call| ToolResult {
                call_id: call.id.clone(),
                parts: vec![ToolOutputPart::text("The tool call was cancelled.")],
                is_error: true,
            }),
    );
    let order: HashMap<&str, usize> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    results.sort_by_key(|r| order.get(r.call_id.as_str()).copied().unwrap_or(usize::MAX));
    results
}
