//! Phase 5, settle the results: the step's summary for the hooks, its tool
//! message in the history, the final verdict of a step that gave its
//! answer through a tool call, the end of a concluding step, and the
//! `stop_when` hook.
//!
//! Invariant: the tool message holds one result per call, in the model's
//! order; it is added before anything can end the run, so the history
//! never holds a call without its result.

use loopwright_types::ToolResult;

use super::drive::{Ending, LoopState, Run, tool_message};
use super::judge::Judged;
use super::policy::{Policies, Rejection, Step};
use super::structured::Verdict;

impl Run {
    /// Settle the step; why the run ends, if it does.
    pub(super) fn settle(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
        step: &Step,
        judged: Judged,
        results: Vec<ToolResult>,
    ) -> Option<Ending> {
        if let Some(summary) = lp.progress.summaries.last_mut() {
            summary.tool_results.clone_from(&results);
        }
        lp.add(tool_message(results));
        let answer = Ending::Answered {
            concluding: step.concluding,
        };
        match judged.verdict {
            Verdict::Accepted(value) => {
                lp.progress.output = Some(value);
                return Some(answer);
            }
            // The final-answer call's result told the model what to fix.
            Verdict::Rejected(error) => {
                if let Rejection::End(error) = policies.rejected(error, true) {
                    return Some(Ending::OutputInvalid(error));
                }
            }
            Verdict::NotFinal => {}
        }
        if step.concluding && !policies.continues_concluding() {
            return Some(answer);
        }
        if let Some(stop) = &self.options.hooks.stop_when
            && stop(&lp.progress.summaries)
        {
            return Some(Ending::Stopped);
        }
        None
    }
}
