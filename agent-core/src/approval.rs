//! Human-in-the-loop approval of tool calls.
//!
//! Each exposed tool has a tier: [`ApprovalTier::Auto`] runs at once,
//! [`ApprovalTier::Session`] asks once and is then remembered in an
//! [`ApprovalSession`], [`ApprovalTier::Always`] asks every time. The default
//! tier comes from the tool's annotations (read-only: auto; destructive:
//! always; anything else: session) and can be overridden per exposed name with
//! `*` wildcards.
//!
//! Invariants: with no [`Approvals`] installed every tier behaves as auto; a
//! call waiting for approval holds up no other call; no answer within the
//! timeout is a denial; with [`Approvals::defer`] nothing waits: a call that
//! needs approval is not run and the run pauses after its step with a
//! [`RunState`](crate::RunState) (the step's other calls run first); with no [`Approver`], an `approval_requested` event
//! dropped unanswered is a denial at once (nobody can answer it any more); a
//! denied call is never executed and its result tells the model it was
//! denied and why.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use loopwright_types::tool::ToolAnnotations;
use loopwright_types::toolset::wildcard_match;

/// How long a call waits for an answer before it counts as denied: long
/// enough for a person to read the call, short enough not to stall a run.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

/// When a tool call needs approval.
///
/// ```
/// use loopwright_core::{approval::ApprovalTier, tool::ToolAnnotations};
/// let read_only = ToolAnnotations::default().read_only(true);
/// assert_eq!(ApprovalTier::from_annotations(&read_only), ApprovalTier::Auto);
/// let destructive = ToolAnnotations::default().destructive(true);
/// assert_eq!(ApprovalTier::from_annotations(&destructive), ApprovalTier::Always);
/// assert_eq!(ApprovalTier::from_annotations(&ToolAnnotations::default()), ApprovalTier::Session);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalTier {
    /// Run without asking.
    Auto,
    /// Ask once; a "for the session" answer is remembered.
    Session,
    /// Ask every time.
    Always,
}

impl ApprovalTier {
    /// The default tier for a tool with these annotations.
    pub fn from_annotations(annotations: &ToolAnnotations) -> Self {
        if annotations.destructive {
            Self::Always
        } else if annotations.read_only {
            Self::Auto
        } else {
            Self::Session
        }
    }
}

/// Tiers per tool: overrides by exposed name (`*` wildcards, first match
/// wins), else a default tier, else the tier the tool's annotations give.
///
/// ```
/// use loopwright_core::{approval::ApprovalPolicy, approval::ApprovalTier, tool::ToolAnnotations};
/// let policy = ApprovalPolicy::default()
///     .tier("git__*", ApprovalTier::Always)
///     .tier("Read", ApprovalTier::Auto);
/// assert_eq!(policy.tier_for("git__push", &ToolAnnotations::default()), ApprovalTier::Always);
/// assert_eq!(policy.tier_for("other", &ToolAnnotations::default()), ApprovalTier::Session);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalPolicy {
    default: Option<ApprovalTier>,
    overrides: Vec<(String, ApprovalTier)>,
}

impl ApprovalPolicy {
    /// Use this tier for tools no override names, instead of the annotations.
    pub fn default_tier(mut self, tier: ApprovalTier) -> Self {
        self.default = Some(tier);
        self
    }

    /// Use this tier for exposed names matching `pattern`.
    pub fn tier(mut self, pattern: impl Into<String>, tier: ApprovalTier) -> Self {
        self.overrides.push((pattern.into(), tier));
        self
    }

    /// The tier of one tool.
    pub fn tier_for(&self, exposed_name: &str, annotations: &ToolAnnotations) -> ApprovalTier {
        self.overrides
            .iter()
            .find(|(pattern, _)| wildcard_match(pattern, exposed_name))
            .map(|(_, tier)| *tier)
            .or(self.default)
            .unwrap_or_else(|| ApprovalTier::from_annotations(annotations))
    }
}

/// A call waiting for a decision.
///
/// ```
/// let r = loopwright_core::approval::ApprovalRequest::new("c1", "Bash", serde_json::json!({"command": "ls"}))
///     .source("coding", "Bash")
///     .tier(loopwright_core::approval::ApprovalTier::Always);
/// assert_eq!(r.tool, "Bash");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call's id.
    pub call_id: String,
    /// The exposed tool name.
    pub tool: String,
    /// The tool's source.
    pub source: String,
    /// The tool's own name.
    pub original_name: String,
    /// The call's (validated) arguments.
    pub input: Value,
    /// Why approval is asked.
    pub tier: ApprovalTier,
}

impl ApprovalRequest {
    /// A request for a call of the exposed tool `tool` (its source and own
    /// name default to empty and `tool`; its tier to session).
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>, input: Value) -> Self {
        let tool = tool.into();
        Self {
            call_id: call_id.into(),
            original_name: tool.clone(),
            tool,
            source: String::new(),
            input,
            tier: ApprovalTier::Session,
        }
    }

    /// Set the tool's source and own name.
    pub fn source(mut self, source: impl Into<String>, original_name: impl Into<String>) -> Self {
        self.source = source.into();
        self.original_name = original_name.into();
        self
    }

    /// Set the tier.
    pub fn tier(mut self, tier: ApprovalTier) -> Self {
        self.tier = tier;
        self
    }
}

/// The answer to an [`ApprovalRequest`].
///
/// ```
/// let d = loopwright_core::ApprovalDecision::Deny { reason: "not on main".into() };
/// assert!(!d.approved());
/// assert!(loopwright_core::ApprovalDecision::ApproveForSession.approved());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call and every later call of the same tool in the session.
    ApproveForSession,
    /// Do not run it.
    Deny {
        /// Told to the model.
        reason: String,
    },
    /// Do not run it: this is its result (a [client tool](crate::agent::ClientTool)'s
    /// output, which the client ran; or an answer given in the tool's
    /// place).
    Output {
        /// The call's one result, as the model reads it.
        output: loopwright_types::ToolOutput,
    },
}

impl ApprovalDecision {
    /// A denial with this reason (told to the model).
    ///
    /// ```
    /// assert!(!loopwright_core::ApprovalDecision::deny("not on main").approved());
    /// ```
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// The output the call gets in place of running (a client tool's).
    ///
    /// ```
    /// let d = loopwright_core::ApprovalDecision::output(loopwright_core::ToolOutput::text("Paris"));
    /// assert!(!d.approved());
    /// ```
    pub fn output(output: loopwright_types::ToolOutput) -> Self {
        Self::Output { output }
    }

    /// Whether the call may run here.
    pub fn approved(&self) -> bool {
        matches!(self, Self::Approve | Self::ApproveForSession)
    }
}

/// Decides approval requests in code (a UI, a rule engine, a chat message).
///
/// ```
/// use loopwright_core::{ApprovalDecision, approval::ApprovalRequest, approval::Approver};
/// struct NoBash;
/// #[async_trait::async_trait]
/// impl Approver for NoBash {
///     async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
///         if request.tool == "Bash" {
///             ApprovalDecision::Deny { reason: "no shell here".into() }
///         } else {
///             ApprovalDecision::Approve
///         }
///     }
/// }
/// ```
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decide one request. Taking longer than the approval timeout denies it.
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// Tools approved for the session. Clone it to share it between runs: the
/// application keeps it as long as its session lasts.
///
/// ```
/// let session = loopwright_core::approval::ApprovalSession::default();
/// session.approve("Write");
/// assert!(session.is_approved("Write"));
/// assert!(!session.is_approved("Bash"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ApprovalSession {
    approved: Arc<Mutex<HashSet<String>>>,
}

impl ApprovalSession {
    /// Remember `tool` (exposed name) as approved.
    pub fn approve(&self, tool: &str) {
        if let Ok(mut set) = self.approved.lock() {
            set.insert(tool.to_owned());
        }
    }

    /// Whether `tool` was approved for the session.
    pub fn is_approved(&self, tool: &str) -> bool {
        self.approved
            .lock()
            .map(|set| set.contains(tool))
            .unwrap_or(false)
    }
}

/// Answers one `approval_requested` event (a [`Responder`](crate::user_input::Responder)
/// of [`ApprovalDecision`]). Cloning shares the same answer slot: the first
/// answer counts, later ones are ignored.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (responder, rx) = loopwright_core::approval::ApprovalResponder::new();
/// responder.respond(loopwright_core::ApprovalDecision::Approve);
/// assert_eq!(rx.await.unwrap(), loopwright_core::ApprovalDecision::Approve);
/// # }
/// ```
pub type ApprovalResponder = loopwright_types::Responder<ApprovalDecision>;

/// Where approval requests go.
#[derive(Clone)]
#[non_exhaustive]
pub enum ApprovalChannel {
    /// To an [`Approver`].
    Approver(Arc<dyn Approver>),
    /// To the application through `approval_requested` events, each carrying
    /// an [`ApprovalResponder`].
    Events,
    /// Nowhere now: the run pauses with a [`RunState`](crate::RunState), to
    /// be resumed with the decisions ([`Agent::resume`](crate::Agent::resume)).
    Deferred,
}

/// Approval settings for a run. Installing them turns approval on.
///
/// ```
/// use loopwright_core::{Approvals, approval::ApprovalPolicy, approval::ApprovalTier};
/// let approvals = Approvals::via_events()
///     .policy(ApprovalPolicy::default().tier("Read", ApprovalTier::Auto))
///     .timeout(std::time::Duration::from_secs(30));
/// # let _ = approvals;
/// ```
#[derive(Clone)]
#[must_use]
pub struct Approvals {
    pub(crate) channel: ApprovalChannel,
    pub(crate) policy: ApprovalPolicy,
    pub(crate) timeout: Duration,
    pub(crate) session: ApprovalSession,
}

impl Approvals {
    /// Ask an [`Approver`].
    pub fn with_approver(approver: impl Approver + 'static) -> Self {
        Self::new(ApprovalChannel::Approver(Arc::new(approver)))
    }

    /// Ask through `approval_requested` events.
    pub fn via_events() -> Self {
        Self::new(ApprovalChannel::Events)
    }

    /// Do not wait for anyone: the calls of a step that need no approval
    /// run, those that need it stay pending, and the run ends with exit
    /// `awaiting_approval` and a [`RunState`](crate::RunState) (in
    /// [`AgentResult::state`](crate::AgentResult::state)) that
    /// [`Agent::resume`](crate::Agent::resume) continues once someone
    /// decided, in this process or another.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .approvals(loopwright_core::Approvals::defer())
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn defer() -> Self {
        Self::new(ApprovalChannel::Deferred)
    }

    /// Whether calls that need approval pause the run ([`Approvals::defer`]).
    pub fn is_deferred(&self) -> bool {
        matches!(self.channel, ApprovalChannel::Deferred)
    }

    /// Whether requests go to `approval_requested` events
    /// ([`Approvals::via_events`]).
    pub fn is_via_events(&self) -> bool {
        matches!(self.channel, ApprovalChannel::Events)
    }

    /// The same policy, timeout and session, with requests sent to
    /// `approver` instead: how a server answers, on a surface that cannot
    /// pause, the calls an agent would ask a person about.
    ///
    /// ```
    /// use loopwright_core::{ApprovalDecision, approval::ApprovalRequest, Approvals};
    /// struct Refuse;
    /// #[async_trait::async_trait]
    /// impl loopwright_core::approval::Approver for Refuse {
    ///     async fn decide(&self, _: &ApprovalRequest) -> ApprovalDecision {
    ///         ApprovalDecision::deny("nobody can approve calls on this surface")
    ///     }
    /// }
    /// let approvals = Approvals::defer().route_to(Refuse);
    /// assert!(!approvals.is_deferred());
    /// ```
    pub fn route_to(mut self, approver: impl Approver + 'static) -> Self {
        self.channel = ApprovalChannel::Approver(Arc::new(approver));
        self
    }

    /// The same policy, timeout and session, with runs pausing on the calls
    /// that need approval ([`Approvals::defer`]).
    ///
    /// ```
    /// let approvals = loopwright_core::Approvals::via_events().deferred();
    /// assert!(approvals.is_deferred());
    /// ```
    pub fn deferred(mut self) -> Self {
        self.channel = ApprovalChannel::Deferred;
        self
    }

    fn new(channel: ApprovalChannel) -> Self {
        Self {
            channel,
            policy: ApprovalPolicy::default(),
            timeout: DEFAULT_APPROVAL_TIMEOUT,
            session: ApprovalSession::default(),
        }
    }

    /// Set the policy.
    pub fn policy(mut self, policy: ApprovalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Set how long to wait for an answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Share an application-owned session (remembered across runs).
    pub fn session(mut self, session: ApprovalSession) -> Self {
        self.session = session;
        self
    }
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let channel = match self.channel {
            ApprovalChannel::Approver(_) => "approver",
            ApprovalChannel::Events => "events",
            ApprovalChannel::Deferred => "deferred",
        };
        f.debug_struct("Approvals")
            .field("channel", &channel)
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
