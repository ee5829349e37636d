//! Pre-flight plans: before a run's first tool call, one model call without
//! tools proposes a [`Plan`], and the application approves, edits or rejects
//! it (the same two ways tool calls are approved: a [`PlanApprover`] in code,
//! or the [`PlanResponder`] carried by the `plan_proposed` event).
//!
//! Invariants: with a [`Preflight`] installed, no tool runs before the plan
//! was approved; a rejected plan ends the run after that one model call
//! (exit [`ExitReason::PlanRejected`](crate::ExitReason::PlanRejected)); no
//! answer within the timeout is a rejection, and so is a `plan_proposed`
//! event dropped unanswered when no approver is installed (then at once);
//! an approved (or edited) plan joins the conversation as one user message
//! ([`Plan::approved_message`]), so the model follows what was approved.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a plan waits for an answer before it counts as rejected: long
/// enough for a person to read a plan of a dozen steps.
pub const DEFAULT_PLAN_TIMEOUT: Duration = Duration::from_secs(300);

/// Told to the model, after the conversation, on the plan call.
pub const PLAN_INSTRUCTION: &str = "Before doing anything, write a plan for this task for the user to approve. \
Do not call any tool now and do not start the work. Answer with only a JSON object: \"steps\", the steps in \
order, each with a \"description\" of what you will do, the \"tool\" it uses (its exact name, if it uses one) \
and its \"risk\" (\"low\": reads only; \"medium\": changes something that can be undone; \"high\": changes \
that are hard to undo, or that reach outside this machine); and \"warnings\", anything the user should know \
before approving (an empty list if nothing).";

/// How risky a step is.
///
/// ```
/// assert_eq!(serde_json::to_value(loopwright_core::preflight::Risk::High).unwrap(), "high");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Low,
    /// Changes something that can be undone.
    Medium,
    /// Hard to undo, or reaches outside this machine.
    High,
}

impl Risk {
    /// `low`, `medium` or `high`.
    ///
    /// ```
    /// assert_eq!(loopwright_core::preflight::Risk::Medium.as_str(), "medium");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// One step of a plan.
///
/// ```
/// use loopwright_core::preflight::{PlanStep, Risk};
/// let step = PlanStep::new("Read the failing test", Risk::Low).tool("Read");
/// assert_eq!(step.tool.as_deref(), Some("Read"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct PlanStep {
    /// What the step does.
    pub description: String,
    /// The exposed name of the tool it uses, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How risky it is.
    pub risk: Risk,
}

impl PlanStep {
    /// A step using no tool.
    pub fn new(description: impl Into<String>, risk: Risk) -> Self {
        Self {
            description: description.into(),
            tool: None,
            risk,
        }
    }

    /// Set the tool the step uses.
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }
}

/// What the model proposes to do.
///
/// ```
/// use loopwright_core::preflight::{Plan, PlanStep, Risk};
/// let plan = Plan::new(vec![PlanStep::new("Run the tests", Risk::Low).tool("Bash")])
///     .warning("The tests take a minute.");
/// assert_eq!(plan.highest_risk(), Some(Risk::Low));
/// assert!(plan.render().contains("1. Run the tests (tool: Bash, risk: low)"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
    /// What the user should know before approving.
    #[serde(default)]
    pub warnings: Vec<String>,
}

impl Plan {
    /// A plan of these steps, without warnings.
    pub fn new(steps: Vec<PlanStep>) -> Self {
        Self {
            steps,
            warnings: Vec::new(),
        }
    }

    /// Add a warning.
    pub fn warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }

    /// The riskiest step's risk (`None` for a plan without steps).
    pub fn highest_risk(&self) -> Option<Risk> {
        self.steps.iter().map(|s| s.risk).max()
    }

    /// The plan as numbered lines, then its warnings (what a terminal shows
    /// and what the model is told).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let _ = match &step.tool {
                Some(tool) => writeln!(
                    out,
                    "{}. {} (tool: {tool}, risk: {})",
                    i + 1,
                    step.description,
                    step.risk.as_str()
                ),
                None => writeln!(
                    out,
                    "{}. {} (risk: {})",
                    i + 1,
                    step.description,
                    step.risk.as_str()
                ),
            };
        }
        if !self.warnings.is_empty() {
            out.push_str("Warnings:\n");
            for w in &self.warnings {
                let _ = writeln!(out, "- {w}");
            }
        }
        out
    }

    /// The user message an approved plan joins the conversation as.
    ///
    /// ```
    /// # use loopwright_core::preflight::{Plan, PlanStep, Risk};
    /// let plan = Plan::new(vec![PlanStep::new("Say hello", Risk::Low)]);
    /// assert!(plan.approved_message(false).starts_with("The user approved this plan."));
    /// assert!(plan.approved_message(true).starts_with("The user edited your plan"));
    /// ```
    pub fn approved_message(&self, edited: bool) -> String {
        let head = if edited {
            "The user edited your plan and approved it as follows. Carry out exactly these steps, in order; do \
             not do what was removed."
        } else {
            "The user approved this plan. Carry it out, step by step."
        };
        format!("{head}\n\n{}", self.render())
    }
}

/// The answer to a proposed plan.
///
/// ```
/// use loopwright_core::preflight::PlanDecision;
/// assert!(PlanDecision::Approve.approved());
/// assert!(!PlanDecision::reject("too risky").approved());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanDecision {
    /// Go ahead with the plan as proposed.
    Approve,
    /// Go ahead with this plan instead (steps removed or changed).
    Edit {
        /// The plan to follow.
        plan: Plan,
    },
    /// Do not run: the run ends.
    Reject {
        /// Why (in the run's result and events).
        reason: String,
    },
}

impl PlanDecision {
    /// A rejection with this reason.
    pub fn reject(reason: impl Into<String>) -> Self {
        Self::Reject {
            reason: reason.into(),
        }
    }

    /// Whether the run goes on.
    pub fn approved(&self) -> bool {
        !matches!(self, Self::Reject { .. })
    }
}

/// Decides proposed plans in code (a UI, a policy, a chat message). Taking
/// longer than the plan timeout rejects the plan.
///
/// Closures `Fn(&Plan) -> PlanDecision` are approvers too:
///
/// ```
/// use loopwright_core::preflight::{Plan, PlanDecision, Preflight, Risk};
/// let preflight = Preflight::with_approver(|plan: &Plan| {
///     if plan.highest_risk() == Some(Risk::High) {
///         PlanDecision::reject("no high-risk steps without a person")
///     } else {
///         PlanDecision::Approve
///     }
/// });
/// # let _ = preflight;
/// ```
#[async_trait]
pub trait PlanApprover: Send + Sync {
    /// Decide one plan.
    async fn review(&self, plan: &Plan) -> PlanDecision;
}

#[async_trait]
impl<F> PlanApprover for F
where
    F: Fn(&Plan) -> PlanDecision + Send + Sync,
{
    async fn review(&self, plan: &Plan) -> PlanDecision {
        self(plan)
    }
}

/// Answers one `plan_proposed` event (a [`Responder`](crate::user_input::Responder) of
/// [`PlanDecision`]). Cloning shares the answer slot: the first answer
/// counts.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (responder, rx) = loopwright_core::preflight::PlanResponder::new();
/// assert!(responder.respond(loopwright_core::preflight::PlanDecision::Approve));
/// assert!(!responder.respond(loopwright_core::preflight::PlanDecision::Approve));
/// assert_eq!(rx.await.unwrap(), loopwright_core::preflight::PlanDecision::Approve);
/// # }
/// ```
pub type PlanResponder = loopwright_types::Responder<PlanDecision>;

/// Pre-flight settings: installing them makes every run propose a plan
/// before its first tool call.
///
/// ```
/// use loopwright_core::preflight::Preflight;
/// // Answered through each run's `plan_proposed` event:
/// let preflight = Preflight::via_events().timeout(std::time::Duration::from_secs(60));
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// let agent = loopwright_core::Agent::builder(model).preflight(preflight).build();
/// # let _ = agent;
/// ```
#[derive(Clone)]
#[must_use]
pub struct Preflight {
    pub(crate) approver: Option<Arc<dyn PlanApprover>>,
    pub(crate) timeout: Duration,
    /// Nobody is asked now: the run pauses with the plan pending.
    pub(crate) deferred: bool,
}

impl Preflight {
    /// Plans are answered through `plan_proposed` events' responders.
    pub fn via_events() -> Self {
        Self {
            approver: None,
            timeout: DEFAULT_PLAN_TIMEOUT,
            deferred: false,
        }
    }

    /// Nobody is asked now: the run pauses with the plan pending (exit
    /// `awaiting_approval`, the plan under call id
    /// [`PLAN_CALL_ID`](crate::agent::PLAN_CALL_ID) in its
    /// [`RunState`](crate::RunState)), and
    /// [`Agent::resume`](crate::Agent::resume) follows or rejects it, as
    /// [`Approvals::defer`](crate::Approvals::defer) does for tool calls.
    pub fn defer() -> Self {
        Self {
            deferred: true,
            ..Self::via_events()
        }
    }

    /// Plans are decided by `approver` (an answer through the event's
    /// responder counts too; the first answer wins).
    pub fn with_approver(approver: impl PlanApprover + 'static) -> Self {
        Self {
            approver: Some(Arc::new(approver)),
            timeout: DEFAULT_PLAN_TIMEOUT,
            deferred: false,
        }
    }

    /// Set how long to wait for an answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl std::fmt::Debug for Preflight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preflight")
            .field("approver", &self.approver.is_some())
            .field("timeout", &self.timeout)
            .field("deferred", &self.deferred)
            .finish()
    }
}
