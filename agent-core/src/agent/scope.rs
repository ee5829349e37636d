//! Where a run sits in a tree of agents: its path from the root, the
//! identities of its ancestors, the root's depth limit and accounting sink,
//! and where its sub-agents' events and usage go.
//!
//! Invariants: a run started by the application is a root (depth 0, path =
//! its agent's name); a sub-agent's run is one level deeper, its path is its
//! parent's path, `/`, its own name, and it inherits the root's depth limit
//! and sink; the usage of every run of a subtree is added to its parent's
//! `children_usage` exactly once, when the sub-agent's run has ended.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loopwright_types::{CancellationToken, RunScope, UserInputAnswer, UserInputRequest, UserInputResponder};

use super::emit::WeakEmitter;
use super::events::AgentEvent;
use super::limits::TreeBudget;
use super::options::AgentOptions;
use crate::accounting::AccountingSink;
use loopwright_types::Usage;

/// Separates the agent names of a path (`coordinator/researcher`).
pub const AGENT_PATH_SEPARATOR: char = '/';

/// What a run inherits from the run that started it (or, for a root, from
/// its own agent).
#[derive(Clone)]
pub(crate) struct Lineage {
    /// Agent names, root first, ending with this run's agent.
    pub names: Vec<String>,
    /// Agent identities in the same order.
    pub ids: Vec<super::AgentId>,
    /// The root's depth limit.
    pub max_depth: u32,
    /// The root's accounting sink, shared by the whole tree.
    pub sink: Option<Arc<dyn AccountingSink>>,
    /// The tree's budget of model calls and tokens (the root's), if any.
    pub budget: Option<Arc<TreeBudget>>,
    /// The root run's id ([`DurableRun`](crate::durable::DurableRun)).
    pub run_id: Option<Arc<str>>,
    /// What this run's tools' idempotency keys start with: the root's run
    /// id, then, for a sub-agent, the ids of the calls that started it
    /// (`run/call_3/call_1`), so calls of two sub-agent runs never share a
    /// key even when their models number calls alike.
    pub key_prefix: Option<Arc<str>>,
    /// The root put the conversation in its spans: so does the whole tree.
    pub trace_content: bool,
}

impl Lineage {
    /// The lineage of a root run of agent `id` named `name` with `options`.
    pub fn root(name: &str, id: super::AgentId, options: &AgentOptions) -> Self {
        Self {
            names: vec![name.to_owned()],
            ids: vec![id],
            max_depth: options.max_depth,
            sink: options.accounting.clone(),
            budget: TreeBudget::from_options(options),
            run_id: options
                .durable
                .as_ref()
                .map(crate::durable::DurableRun::shared_id),
            key_prefix: options
                .durable
                .as_ref()
                .map(crate::durable::DurableRun::shared_id),
            trace_content: options.trace_content,
        }
    }

    /// The path, `/`-separated.
    pub fn path(&self) -> String {
        self.names.join(&AGENT_PATH_SEPARATOR.to_string())
    }

    /// 0 for a root.
    pub fn depth(&self) -> usize {
        self.names.len().saturating_sub(1)
    }
}

/// A running agent's place in its tree, handed to its tools through their
/// [`ToolContext`](crate::ToolContext).
pub(crate) struct Scope {
    pub lineage: Lineage,
    /// `lineage.path()`, computed once.
    pub path: String,
    /// The run's own event stream, where sub-agents' events are forwarded.
    /// Weak: the scope lives as long as any tool context holding it (a tool
    /// may keep one in a detached task), and must not keep the stream open
    /// after the run has ended, or its reader would wait for ever.
    pub emit: WeakEmitter,
    /// Usage of the sub-agent runs this run started, their subtrees
    /// included. Locked only to add or read, never across an `.await`.
    pub children_usage: Mutex<Usage>,
    /// The run's output guardrails hold its text back: its sub-agents'
    /// deltas are not forwarded (their answers come back as results, which
    /// its result guards see).
    pub holds_output: bool,
}

impl Scope {
    pub fn new(lineage: Lineage, emit: WeakEmitter) -> Self {
        Self {
            path: lineage.path(),
            lineage,
            emit,
            children_usage: Mutex::new(Usage::default()),
            holds_output: false,
        }
    }

    /// [`Scope::holds_output`] set.
    pub fn holding_output(mut self, holds: bool) -> Self {
        self.holds_output = holds;
        self
    }

    /// Add a finished sub-agent run's usage (its subtree's).
    pub fn add_child_usage(&self, usage: Usage) {
        let mut total = self
            .children_usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *total += usage;
    }

    pub fn children_usage(&self) -> Usage {
        *self
            .children_usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("path", &self.path)
            .field("max_depth", &self.lineage.max_depth)
            .finish_non_exhaustive()
    }
}

/// Shared by a run's tool contexts.
pub(crate) type SharedScope = Arc<Scope>;

/// Why a question was answered without the application.
const TIMED_OUT: &str = "timeout";
const UNANSWERED: &str = "unanswered";
const CANCELLED: &str = "cancelled";

/// What a tool's [`ToolContext`](loopwright_types::ToolContext) reads of
/// its run; [`RunScope::ask_user`] asks through the run's event stream (an
/// `input_requested` event with a responder, then `input_resolved`).
#[async_trait::async_trait]
impl RunScope for Scope {
    fn agent_path(&self) -> &str {
        &self.path
    }

    fn run_id(&self) -> Option<&str> {
        self.lineage.run_id.as_deref()
    }

    fn key_prefix(&self) -> Option<&str> {
        self.lineage.key_prefix.as_deref()
    }

    async fn ask_user(
        &self,
        call_id: &str,
        request: UserInputRequest,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> UserInputAnswer {
        let (responder, answer) = UserInputResponder::new();
        let sent = self
            .emit
            .send(AgentEvent::InputRequested {
                call_id: call_id.to_owned(),
                request,
                responder,
            })
            .await;
        if sent.is_err() {
            return UserInputAnswer::Decline;
        }
        let (answer, reason) = tokio::select! {
            biased;
            () = cancel.cancelled() => (UserInputAnswer::Cancel, Some(CANCELLED)),
            got = tokio::time::timeout(wait, answer) => match got {
                Ok(Ok(answer)) => (answer, None),
                // Every copy of the event was dropped unanswered.
                Ok(Err(_)) => (UserInputAnswer::Decline, Some(UNANSWERED)),
                Err(_) => (UserInputAnswer::Decline, Some(TIMED_OUT)),
            },
        };
        // A run no longer listening has nobody to tell.
        let _ = self
            .emit
            .send(AgentEvent::InputResolved {
                call_id: call_id.to_owned(),
                action: answer.action().to_owned(),
                reason: reason.map(str::to_owned),
            })
            .await;
        answer
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// The engine's scope of a tool call's context, when a run of this crate
/// made the call.
pub(crate) fn of(ctx: &loopwright_types::ToolContext) -> Option<SharedScope> {
    ctx.scope()?.clone().into_any().downcast::<Scope>().ok()
}
