//! Phase 3, judge the answer: whether it is final (structured output's
//! verdict; the final-answer tool's calls get their results here), and
//! what a step without tool calls means: the run's answer, or an answer
//! that did not validate and goes back to the model while retries are left.
//!
//! Invariant: a run with an output schema ends with an answer only when
//! that answer validated.

use std::collections::HashMap;

use loopwright_types::tool::ToolOutput;

use super::drive::{Ending, LoopState, Run};
use super::policy::{Policies, Rejection, Step};
use super::step::StepOutput;
use super::structured::Verdict;

/// A step whose calls are to be run, as judged.
pub(super) struct Judged {
    pub verdict: Verdict,
    /// Results of the calls a policy answered itself, by call id.
    pub answered: HashMap<String, ToolOutput>,
}

/// What judging a step decided, when its calls are not run.
pub(super) enum Next {
    /// The run ends.
    End(Ending),
    /// The next step (the model tries its answer again).
    Retry,
}

impl Run {
    /// Judge the step's answer: `Ok` when its calls are to be run.
    pub(super) async fn judge(
        &self,
        lp: &mut LoopState,
        policies: &mut Policies,
        step: &Step,
        output: &StepOutput,
    ) -> Result<Judged, Next> {
        let mut answered = HashMap::new();
        let verdict = policies.judge(output, &mut answered).await;
        if !output.calls.is_empty() {
            return Ok(Judged { verdict, answered });
        }
        let answer = Ending::Answered {
            concluding: step.concluding,
        };
        match verdict {
            Verdict::NotFinal => Err(Next::End(answer)),
            Verdict::Accepted(value) => {
                lp.progress.output = Some(value);
                Err(Next::End(answer))
            }
            Verdict::Rejected(error) => match policies.rejected(error, false) {
                Rejection::Retry(message) => {
                    if let Some(message) = message {
                        lp.add(message);
                    }
                    Err(Next::Retry)
                }
                Rejection::End(error) => Err(Next::End(Ending::OutputInvalid(error))),
            },
        }
    }
}
