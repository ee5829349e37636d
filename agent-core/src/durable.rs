//! Durable runs: the seam between the loop and a durable-execution engine
//! (Restate, Temporal, DBOS), so a run survives the death of its process.
//!
//! A run with a [`DurableRun`] in its options
//! ([`AgentOptions::durable`](crate::agent::AgentOptions::durable)) passes two kinds
//! of work through its [`Durability`] engine:
//!
//! - **steps**: each model call (its assembled message, usage and finish
//!   reason, or its error) and each tool call (its result) is run once
//!   under a [`StepKey`] and its value journaled as JSON. A step's calls
//!   still run concurrently; they are journaled in call order, each as soon
//!   as it and the calls before it have ended, so an execution after a
//!   crash skips the calls journaled (a prefix of the batch) and runs the
//!   rest again, concurrently;
//! - **decisions**: a call that needs approval waits for a decision the
//!   engine keeps ([`DecisionKey`]), however long it takes and whichever
//!   process is running the run when it comes; the engine says when it
//!   starts waiting ([`Waiting::now`]), and a decision it has at once (one
//!   made in an earlier execution) is replayed like a step: the request's
//!   events are not sent again unless a later step runs.
//!
//! Semantics, for every engine:
//! - a step that completed is never run again: when a run is executed again
//!   (after a crash, on another process), the engine returns the journaled
//!   value ([`StepRecord::Replayed`]) and the step's closure is not called;
//! - a step that was interrupted runs again (at least once), with the same
//!   idempotency key: the run id, the step and the call id, in the tool's
//!   [`ToolContext`](crate::ToolContext) and, for MCP tools, in the request's
//!   `_meta`;
//! - events: while the engine replays journaled steps the run's events are
//!   held, and dropped when the next step turns out to be journaled too (its
//!   events went out the first time, and a replayed step streams no deltas);
//!   the first step that runs, any decision waited for and the end of the run
//!   release them. So an execution after a crash sends again only the events
//!   from the last journaled step on, after an
//!   [`AgentEvent::Resumed`](crate::AgentEvent::Resumed) carrying its attempt
//!   number ([`Durability::attempt`]): an interrupted model call's step from
//!   its `step_started`, or, for an interrupted tool call, its step's
//!   `step_finished` and then the calls not journaled. A client keeps, for
//!   each step (by its number) and each tool call (by its `call_id`), what
//!   the highest attempt sent.
//!
//! With no engine (the default, and [`DurableRun::new`] alone) nothing is
//! journaled, nothing is held, and a step costs one branch.
//!
//! ```
//! use loopwright_core::durable::DurableRun;
//! let durable = DurableRun::new("run-42");
//! assert_eq!(durable.run_id(), "run-42");
//! assert_eq!(durable.idempotency_key(3, "call_1"), "run-42/3/call_1");
//! ```

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;

use loopwright_types::tool::idempotency_key;
pub use loopwright_types::tool::{IDEMPOTENCY_KEY_SEPARATOR, MCP_META_IDEMPOTENCY_KEY};

/// What a durable step is: a model call or one tool call.
///
/// ```
/// use loopwright_core::durable::{StepKey, StepKind};
/// let key = StepKey::new(StepKind::Model, 3);
/// assert_eq!(key.to_string(), "model-3");
/// assert_eq!(StepKey::tool_call(3, 0).to_string(), "tool-3-0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepKind {
    /// One model call (numbered by the run's model calls, from 1).
    Model,
    /// One tool call: `index` is the loop's step, `call` the call's place
    /// in the step's batch (from 0).
    ToolCall,
}

/// The name of a durable step, the same in every execution of a run: an
/// engine matches it against its journal (Restate refuses a journal whose
/// names differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StepKey {
    /// What the step does.
    pub kind: StepKind,
    /// Its number, from 1 (a tool call's: its loop step's).
    pub index: u32,
    /// A tool call's place in its step's batch, from 0 (0 for a model call).
    pub call: u32,
}

impl StepKey {
    /// The key of the `index`th step of `kind`.
    ///
    /// ```
    /// let key = loopwright_core::durable::StepKey::new(loopwright_core::durable::StepKind::Model, 1);
    /// assert_eq!(key.index, 1);
    /// ```
    pub fn new(kind: StepKind, index: u32) -> Self {
        Self { kind, index, call: 0 }
    }

    /// The key of call `call` (its place in the batch, from 0) of loop step
    /// `step`.
    ///
    /// ```
    /// let key = loopwright_core::durable::StepKey::tool_call(2, 1);
    /// assert_eq!((key.index, key.call), (2, 1));
    /// ```
    pub fn tool_call(step: u32, call: u32) -> Self {
        Self {
            kind: StepKind::ToolCall,
            index: step,
            call,
        }
    }
}

impl fmt::Display for StepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            StepKind::Model => write!(f, "model-{}", self.index),
            StepKind::ToolCall => write!(f, "tool-{}-{}", self.index, self.call),
        }
    }
}

/// The name of a durable decision: the approval of one tool call of one
/// step (some providers number calls afresh each step).
///
/// ```
/// let key = loopwright_core::durable::DecisionKey::approval(2, "call_1");
/// assert_eq!(key.to_string(), "approval-2-call_1");
/// assert_eq!((key.step(), key.call_id()), (2, "call_1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DecisionKey {
    step: u32,
    call_id: String,
}

impl DecisionKey {
    /// The approval of call `call_id` of step `step`.
    pub fn approval(step: u32, call_id: impl Into<String>) -> Self {
        Self {
            step,
            call_id: call_id.into(),
        }
    }

    /// The step of the call it decides.
    pub fn step(&self) -> u32 {
        self.step
    }

    /// The call it decides.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }
}

impl fmt::Display for DecisionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "approval-{}-{}", self.step, self.call_id)
    }
}

/// How a step's value came back.
///
/// ```
/// let r = loopwright_core::durable::StepRecord::Replayed(serde_json::json!(1));
/// assert!(r.replayed());
/// assert_eq!(r.into_value(), serde_json::json!(1));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum StepRecord {
    /// The closure ran now and this is its value, journaled.
    Ran(Value),
    /// The journal had the value: the closure did not run.
    Replayed(Value),
}

impl StepRecord {
    /// Whether the value came from the journal.
    pub fn replayed(&self) -> bool {
        matches!(self, Self::Replayed(_))
    }

    /// The value.
    pub fn into_value(self) -> Value {
        match self {
            Self::Ran(v) | Self::Replayed(v) => v,
        }
    }
}

/// Why a durable step or decision has no value.
///
/// ```
/// let e = loopwright_core::durable::DurableError::engine("journal unavailable");
/// assert!(e.to_string().contains("journal unavailable"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DurableError {
    /// The engine cancelled the run (the run ends `cancelled`).
    #[error("the durable run was cancelled")]
    Cancelled,
    /// The engine failed (it retries the run, or gave up on it).
    #[error("durable engine: {message}")]
    Engine {
        /// What went wrong.
        message: String,
    },
    /// A journaled value did not read back as what the step returns: the
    /// journal is from another version of the loop.
    #[error("the journaled value of {step} does not read back: {message}")]
    Journal {
        /// The step's name.
        step: String,
        /// The serde error.
        message: String,
    },
}

impl DurableError {
    /// An engine failure.
    pub fn engine(message: impl Into<String>) -> Self {
        Self::Engine {
            message: message.into(),
        }
    }
}

/// An engine's word to the loop that a decision is not known yet and it
/// starts waiting for it (see [`Durability::decision`]).
///
/// ```
/// let mut waiting = loopwright_core::durable::Waiting::detached();
/// waiting.now(); // nobody listens: nothing happens
/// waiting.now(); // once is enough; later calls do nothing
/// ```
#[derive(Debug)]
pub struct Waiting(Option<tokio::sync::oneshot::Sender<()>>);

impl Waiting {
    /// A signal and what hears it.
    pub(crate) fn new() -> (Self, tokio::sync::oneshot::Receiver<()>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (Self(Some(tx)), rx)
    }

    /// A signal nobody hears (for an engine's own tests).
    pub fn detached() -> Self {
        Self(None)
    }

    /// The engine waits now (the first call counts).
    pub fn now(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// A step's work, called at most once by the engine, when the journal does
/// not hold the step's value yet. Its value is always `Ok` for the loop's own
/// steps (their failures are values too); an `Err` is the engine's to retry.
pub type StepFn<'a> = Box<dyn FnOnce() -> BoxFuture<'a, Result<Value, DurableError>> + Send + 'a>;

/// A durable-execution engine for one run: journals its steps and keeps its
/// decisions. Implemented by an engine adapter (loopwright-serve's Restate
/// workflow, feature `restate`); the loop only calls it.
///
/// An implementation must return, for a key whose step completed in an
/// earlier execution of the run, the value journaled then (without calling
/// `run`), and otherwise call `run` once and journal its value before
/// returning it. Steps come one at a time, in the same order in every
/// execution.
///
/// An engine whose journal keeps its entries in order (a later entry
/// confirmed means every earlier one is) may return a tool call's value
/// ([`StepKind::ToolCall`]) before its journal confirms it, as long as the
/// value is in the journal's hands before the engine takes the next step:
/// the next step (the batch's next call, or the next model call) then
/// overlaps that confirmation, and a crash in between may lose both (the
/// call runs again, as an interrupted step does). A model call's value is
/// returned only once confirmed: the tools it asks for act on it, and a
/// crash must not give them a different answer to act on.
///
/// ```
/// use loopwright_core::durable::{DecisionKey, Durability, DurableError, StepFn, StepKey, StepRecord, Waiting};
///
/// /// Journals nothing: every step runs (what a run without an engine does).
/// struct Forgetful;
///
/// #[async_trait::async_trait]
/// impl Durability for Forgetful {
///     async fn step(&self, _key: StepKey, run: StepFn<'_>) -> Result<StepRecord, DurableError> {
///         Ok(StepRecord::Ran(run().await?))
///     }
///     async fn decision(&self, _key: &DecisionKey, _request: serde_json::Value, _waiting: Waiting)
///         -> Result<serde_json::Value, DurableError> {
///         Err(DurableError::engine("nobody decides here"))
///     }
/// }
/// ```
#[async_trait]
pub trait Durability: Send + Sync {
    /// Run the step `key` once: its journaled value, or `run`'s (journaled).
    async fn step(&self, key: StepKey, run: StepFn<'_>) -> Result<StepRecord, DurableError>;

    /// Wait for the decision `key` (the [`ApprovalDecision`](crate::ApprovalDecision)
    /// of a call, as JSON) until someone makes it, across restarts.
    /// `request` is the [`ApprovalRequest`](crate::approval::ApprovalRequest), as JSON.
    /// Call [`waiting.now()`](Waiting::now) before waiting: the loop then
    /// lets the run's events out (the request among them); a decision known
    /// at once (made in an earlier execution) is returned without it, and
    /// the loop keeps the events held, as for a replayed step.
    async fn decision(
        &self,
        key: &DecisionKey,
        request: Value,
        waiting: Waiting,
    ) -> Result<Value, DurableError>;

    /// Which execution of the run this is, from 1 (the default): an
    /// execution after a crash or a retry is a later one, and its events
    /// start with [`AgentEvent::Resumed`](crate::AgentEvent::Resumed).
    fn attempt(&self) -> u32 {
        1
    }
}

/// A run's identity, and the engine that makes it durable (none: the run is
/// in-process, only its tools see the run id).
///
/// ```
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// use loopwright_core::durable::DurableRun;
/// let agent = loopwright_core::Agent::builder(model).build();
/// let run = agent.to_builder().durable(DurableRun::new("run-7")).build();
/// assert_eq!(run.options().durable.as_ref().map(DurableRun::run_id), Some("run-7"));
/// ```
#[derive(Clone)]
pub struct DurableRun {
    run_id: Arc<str>,
    engine: Option<Arc<dyn Durability>>,
}

impl DurableRun {
    /// A run named `run_id`, without an engine.
    pub fn new(run_id: impl Into<String>) -> Self {
        Self {
            run_id: Arc::from(run_id.into()),
            engine: None,
        }
    }

    /// The same run, journaled by `engine`.
    ///
    /// ```
    /// # use loopwright_core::durable::*;
    /// # struct E;
    /// # #[async_trait::async_trait] impl Durability for E {
    /// #   async fn step(&self, _: StepKey, run: StepFn<'_>) -> Result<StepRecord, DurableError> { Ok(StepRecord::Ran(run().await?)) }
    /// #   async fn decision(&self, _: &DecisionKey, _: serde_json::Value, _: Waiting) -> Result<serde_json::Value, DurableError> { Err(DurableError::Cancelled) }
    /// # }
    /// let run = DurableRun::new("run-1").engine(std::sync::Arc::new(E));
    /// assert!(run.is_journaled());
    /// ```
    pub fn engine(mut self, engine: Arc<dyn Durability>) -> Self {
        self.engine = Some(engine);
        self
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether an engine journals the run.
    pub fn is_journaled(&self) -> bool {
        self.engine.is_some()
    }

    /// The idempotency key of call `call_id` of step `step` of this run.
    pub fn idempotency_key(&self, step: u32, call_id: &str) -> String {
        idempotency_key(&self.run_id, step, call_id)
    }

    pub(crate) fn engine_ref(&self) -> Option<&Arc<dyn Durability>> {
        self.engine.as_ref()
    }

    pub(crate) fn shared_id(&self) -> Arc<str> {
        self.run_id.clone()
    }
}

impl fmt::Debug for DurableRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableRun")
            .field("run_id", &self.run_id)
            .field("journaled", &self.engine.is_some())
            .finish()
    }
}
