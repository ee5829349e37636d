//! The loop's side of pre-flight plans (see [`crate::preflight`]): the plan
//! call, the question to the application, and what the run does with the
//! answer.
//!
//! Invariants: the plan call offers no tools and its text is not streamed
//! to the application (it is JSON for the approver, shown through
//! `plan_proposed`); it is accounted like any model call; a plan that never
//! matches the plan schema (after `max_output_retries`) is rejected, so no
//! tool runs without an approved plan.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use super::drive::{Ending, LoopState, Run};
use super::events::AgentEvent;
use super::policy::{Flow, Policy};
use super::step::StepFailure;
use crate::output::{OutputSpec, answer_json};
use crate::preflight::{PLAN_INSTRUCTION, Plan, PlanDecision, PlanResponder, Preflight};
use loopwright_types::Message;
use loopwright_types::ResponseFormat;
use loopwright_types::Usage;
use loopwright_types::model_error::ModelError;
use loopwright_types::toolset::ToolCatalog;
use loopwright_types::{ModelRequest, ToolChoice};

/// Characters of a tool's description listed in the plan instruction.
const MAX_TOOL_DESCRIPTION_CHARS: usize = 200;

/// The rejection reason when the `plan_proposed` event was dropped without
/// an answer and no approver is installed.
pub(crate) const NOBODY_ANSWERS_PLAN: &str = "nobody can answer: the plan_proposed event was dropped unanswered \
(answer it through its responder, or install a PlanApprover)";

/// How the pre-flight ended.
pub(super) enum PlanOutcome {
    /// Go on: this message (the approved plan) joins the conversation.
    Approved(Message),
    /// The run ends: rejected, or no valid plan.
    Rejected(String),
    Cancelled,
    Failed(ModelError),
    /// The run tree's budget refused the call: why.
    Budget(String),
    /// Nobody is asked now ([`Preflight::defer`]): the run pauses with it.
    Deferred(Plan),
}

/// The pre-flight plan as a policy of the loop: before the first step of a
/// fresh run, a plan is proposed and decided.
pub(super) struct PreflightPolicy(pub Preflight);

#[async_trait::async_trait]
impl Policy for PreflightPolicy {
    async fn open(&mut self, run: &Run, lp: &mut LoopState) -> Flow {
        let outcome = run
            .preflight(&self.0, &lp.history, &lp.catalog, &mut lp.progress.usage)
            .await;
        outcome.apply(lp)
    }
}

impl PlanOutcome {
    /// What the outcome means for the run: an approved plan joins the
    /// history and the run goes on; anything else ends it.
    pub(super) fn apply(self, lp: &mut LoopState) -> Flow {
        match self {
            PlanOutcome::Approved(message) => {
                lp.add(message);
                Flow::Go
            }
            PlanOutcome::Rejected(reason) => Flow::End(Ending::PlanRejected(reason)),
            PlanOutcome::Cancelled => Flow::End(Ending::Cancelled),
            PlanOutcome::Failed(e) => Flow::End(Ending::ModelFailed(e)),
            PlanOutcome::Budget(why) => Flow::End(Ending::BudgetExhausted(why)),
            PlanOutcome::Deferred(plan) => Flow::End(Ending::Paused(super::state::Paused::Plan { plan })),
        }
    }
}

impl Run {
    /// Propose a plan for `history` and wait for the decision; `usage`
    /// gets the plan calls' usage.
    pub(super) async fn preflight(
        &self,
        preflight: &Preflight,
        history: &Arc<Vec<Message>>,
        catalog: &ToolCatalog,
        usage: &mut Usage,
    ) -> PlanOutcome {
        let plan = match self.propose(history, catalog, usage).await {
            Ok(plan) => plan,
            Err(outcome) => return outcome,
        };
        if preflight.deferred {
            return PlanOutcome::Deferred(plan);
        }
        let decision = self.ask(preflight, &plan).await;
        self.settle_plan(plan, decision).await
    }

    /// Tell how the plan was decided; what the run does next.
    pub(super) async fn settle_plan(&self, plan: Plan, decision: Option<PlanDecision>) -> PlanOutcome {
        let (approved, edited, followed, reason) = match decision {
            None => return PlanOutcome::Cancelled,
            Some(PlanDecision::Approve) => (true, false, plan, None),
            Some(PlanDecision::Edit { plan }) => (true, true, plan, None),
            Some(PlanDecision::Reject { reason }) => (false, false, plan, Some(reason)),
        };
        self.tell(AgentEvent::PlanResolved {
            approved,
            edited,
            plan: followed.clone(),
            reason: reason.clone(),
        })
        .await;
        match reason {
            None => PlanOutcome::Approved(Message::user(followed.approved_message(edited))),
            Some(reason) => PlanOutcome::Rejected(reason),
        }
    }

    /// The plan call (and its retries while the answer does not validate).
    async fn propose(
        &self,
        history: &Arc<Vec<Message>>,
        catalog: &ToolCatalog,
        usage: &mut Usage,
    ) -> Result<Plan, PlanOutcome> {
        let spec = OutputSpec::of::<Plan>();
        let mut messages = Vec::clone(history);
        messages.push(Message::user(instruction(catalog)));
        let mut retries = self.options.max_output_retries;
        // No tools are offered; they are declared (and withheld with
        // `ToolChoice::None`) only when the history holds tool calls, which
        // some providers (Anthropic) refuse without their tools.
        let holds_calls = history.iter().any(|m| m.tool_calls().next().is_some());
        let tools = if holds_calls {
            catalog.definitions().clone()
        } else {
            Arc::default()
        };
        loop {
            let mut request = ModelRequest::default();
            request.system = self.system_prompt(catalog);
            request.messages = Arc::new(messages.clone());
            request.tools = tools.clone();
            request.tool_choice = ToolChoice::None;
            request.temperature = self.options.temperature;
            request.top_p = self.options.top_p;
            request.max_output_tokens = self.options.max_output_tokens;
            request.cancellation = self.cancel.child_token();
            request.provider_options = self.options.provider_options.clone();
            request.reasoning = self.options.reasoning;
            request.prompt_caching = self.options.prompt_caching;
            request.response_format = self
                .model
                .capabilities()
                .structured_output
                .then(|| ResponseFormat::json_schema(spec.name(), spec.wire_schema().clone()));
            let output = match self.call_model(request, super::step::Show::Quiet).await {
                Ok(output) => output,
                Err(StepFailure::Cancelled | StepFailure::Detached | StepFailure::Tripped(_)) => {
                    return Err(PlanOutcome::Cancelled);
                }
                Err(StepFailure::Model(e)) => return Err(PlanOutcome::Failed(e)),
                Err(StepFailure::Budget(why)) => return Err(PlanOutcome::Budget(why)),
            };
            *usage += output.usage;
            let error = match read_plan(&spec, &output.text) {
                Ok(plan) => return Ok(plan),
                Err(error) => error,
            };
            if retries == 0 {
                return Err(PlanOutcome::Rejected(format!(
                    "the model's plan did not match the plan schema: {error}"
                )));
            }
            retries -= 1;
            messages.push(Message::assistant(output.text));
            messages.push(Message::user(format!(
                "Your plan does not match the required JSON schema: {error}. Answer again with only the \
                 corrected JSON object, nothing else."
            )));
        }
    }

    /// Send `plan_proposed` and wait for the first answer: the approver's,
    /// the responder's, or the timeout's (a rejection). `None` when the run
    /// was cancelled meanwhile.
    async fn ask(&self, preflight: &Preflight, plan: &Plan) -> Option<PlanDecision> {
        // As for tool approval, the event holds the only responder: once it
        // is dropped unanswered and no approver is installed, nobody can
        // answer, and the plan is rejected at once.
        let (responder, answer) = PlanResponder::new();
        let _ = self
            .emit
            .send(AgentEvent::PlanProposed {
                plan: plan.clone(),
                responder,
            })
            .await;
        let from_approver = async {
            match &preflight.approver {
                // A panicking approver rejects (the run's task must not die).
                Some(approver) => std::panic::AssertUnwindSafe(approver.review(plan))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| PlanDecision::reject("the plan approver panicked")),
                None => std::future::pending().await,
            }
        };
        let has_approver = preflight.approver.is_some();
        let from_events = async {
            match answer.await {
                Ok(decision) => decision,
                Err(_) if !has_approver => PlanDecision::reject(NOBODY_ANSWERS_PLAN),
                Err(_) => std::future::pending().await,
            }
        };
        let timeout = preflight.timeout;
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => None,
            d = from_approver => Some(d),
            d = from_events => Some(d),
            _ = tokio::time::sleep(timeout) => Some(PlanDecision::reject(format!("no answer within {timeout:?}"))),
        }
    }
}

/// The plan instruction, with the tools the plan may use.
fn instruction(catalog: &ToolCatalog) -> String {
    let definitions = catalog.definitions();
    if definitions.is_empty() {
        return format!("{PLAN_INSTRUCTION}\n\nNo tools are available for this task.");
    }
    let mut text = format!("{PLAN_INSTRUCTION}\n\nThe tools you will be able to use:");
    for d in definitions.iter() {
        let first_line = d.description.lines().next().unwrap_or_default();
        let short: String = first_line.chars().take(MAX_TOOL_DESCRIPTION_CHARS).collect();
        text.push_str(&format!("\n- {}: {short}", d.name));
    }
    text
}

/// The plan in the model's answer, validated; else what is wrong.
fn read_plan(spec: &OutputSpec, text: &str) -> Result<Plan, String> {
    let value: Value = answer_json(text).map_err(|e| e.to_string())?;
    spec.validate(&value).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn plans_are_read_from_fenced_or_bare_json_and_checked() {
        let spec = OutputSpec::of::<Plan>();
        let plan = read_plan(
            &spec,
            "```json\n{\"steps\": [{\"description\": \"Read\", \"tool\": \"Read\", \"risk\": \"low\"}], \"warnings\": []}\n```",
        )
        .unwrap();
        assert_eq!(plan.steps[0].tool.as_deref(), Some("Read"));
        let err = read_plan(&spec, r#"{"steps": [{"description": "x", "risk": "extreme"}]}"#).unwrap_err();
        assert!(err.contains("extreme"), "{err}");
        assert!(read_plan(&spec, "I will read the file.").is_err());
    }
}
