//! The agent loop: model -> tool calls -> validation -> concurrent execution
//! -> results -> model, until the model answers.
//!
//! A run is a spawned task that streams [`AgentEvent`]s to an [`AgentRun`].
//! Invariants:
//! - every tool call in the history gets exactly one result, whether the call
//!   ran, failed validation, timed out, was denied or was cancelled;
//! - results join the history in the order the model made the calls;
//! - a step's tool calls run only after the step's stream completed, so a
//!   failed stream never runs a tool;
//! - dropping the [`AgentRun`] (or calling [`AgentRun::cancel`]) cancels the
//!   model request and every running tool; [`AgentEvent::Finished`] is
//!   always the last event, and the result is ready once it was sent.

mod account;
mod admit;
mod builder;
mod call;
mod client_tool;
mod compact;
mod conversation;
mod drive;
mod emit;
mod events;
mod exec;
mod execute;
mod gate;
mod guard;
mod guardrail;
mod hold;
mod hooks;
mod journal;
mod judge;
mod limits;
mod options;
mod outcome;
mod paused;
mod plan;
mod policy;
mod prepare;
mod resume;
mod run;
mod scope;
mod search;
mod settle;
mod state;
mod step;
mod structured;
mod sub_agent;

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use builder::{APP_SOURCE, AgentBuilder, CLIENT_SOURCE};
pub use client_tool::ClientTool;
pub use conversation::{Conversation, Turn, TurnInput};
pub use events::{AgentEvent, ExitReason};
pub use exec::CANCEL_GRACE;
pub use hooks::{
    Hooks, OnToolResult, PrepareStep, StepContext, StepSettings, StepSummary, StopWhen, ToolResultContext,
};
pub use loopwright_types::truncate_output;
pub use options::{
    AgentOptions, CONCLUDE_INSTRUCTION, DEFAULT_AGENT_NAME, DEFAULT_MAX_DEPTH, DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TOOL_OUTPUT_BYTES, DEFAULT_TOOL_CONCURRENCY, DEFAULT_TOOL_TIMEOUT,
};
pub use outcome::{AgentResult, Outcome};
pub use resume::{Decisions, Resume, ResumeError};
pub use run::{AgentRun, RunAborted, RunError};
pub use scope::AGENT_PATH_SEPARATOR;
pub use state::{
    PLAN_CALL_ID, Paused, PendingCall, PendingKind, RUN_STATE_VERSION, RunState, RunStateError, SuspendedCall,
};
pub use sub_agent::{
    AgentSlot, AgentTool, DEFAULT_SUB_AGENT_TIMEOUT, SUB_AGENT_SOURCE, default_input_schema,
};

use account::Accountant;
use drive::Run;
use emit::Emitter;
use scope::{Lineage, Scope};

use loopwright_types::Message;
use loopwright_types::toolset::ToolSet;
use loopwright_types::{IntoModel, LanguageModel};

/// A model, its tools and options: runs as many conversations as you like.
/// Cloning is cheap (the model and tools are shared).
///
/// ```no_run
/// use loopwright_core::{Agent, AgentEvent, LanguageModel, ToolSet};
/// use futures::StreamExt;
///
/// # async fn demo(model: std::sync::Arc<dyn LanguageModel>, tools: ToolSet) -> Result<(), loopwright_core::RunError> {
/// let agent = Agent::builder(model).tools(tools).system("Be brief.").max_steps(10).build();
/// let mut run = agent.run("What is in README.md?");
/// while let Some(event) = run.next().await {
///     if let AgentEvent::TextDelta { text } = event {
///         print!("{text}");
///     }
/// }
/// let result = run.await?; // Err unless the model answered
/// println!("\n{} steps", result.steps.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    options: AgentOptions,
    /// Identity for the sub-agent self-call guard: one per `build()`, kept
    /// by clones and by [`Agent::to_builder`].
    id: AgentId,
}

/// An agent's identity: the allocation itself (no counter, no global).
#[derive(Clone, Debug, Default)]
pub(crate) struct AgentId(Arc<()>);

impl AgentId {
    pub fn same(&self, other: &AgentId) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a run starts from: a prompt, a message or a whole conversation
/// (usually ending with a user message).
///
/// ```
/// use loopwright_core::{Message, RunInput};
/// let _: RunInput = "Summarise the logs".into();
/// let _: RunInput = vec![Message::system("Be brief."), Message::user("Hi")].into();
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput(pub(crate) Vec<Message>);

impl From<&str> for RunInput {
    fn from(prompt: &str) -> Self {
        Self(vec![Message::user(prompt)])
    }
}

impl From<String> for RunInput {
    fn from(prompt: String) -> Self {
        Self(vec![Message::user(prompt)])
    }
}

impl From<&String> for RunInput {
    fn from(prompt: &String) -> Self {
        Self(vec![Message::user(prompt.as_str())])
    }
}

impl From<Message> for RunInput {
    fn from(message: Message) -> Self {
        Self(vec![message])
    }
}

impl From<Vec<Message>> for RunInput {
    fn from(messages: Vec<Message>) -> Self {
        Self(messages)
    }
}

impl Agent {
    /// A builder for an agent using this model: any [`LanguageModel`], a
    /// shared one (`Arc`), or a provider's model builder as it is.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).name("writer").build();
    /// assert_eq!(agent.name(), "writer");
    /// ```
    pub fn builder(model: impl IntoModel) -> AgentBuilder {
        AgentBuilder::new(model.into_model())
    }

    /// A builder holding this agent's model, tools, options and identity:
    /// change some settings and `build()` for this agent with them (a
    /// request's own output schema, temperature or cancellation). Cheap: the
    /// model and tools are shared.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// let agent = loopwright_core::Agent::builder(model).name("writer").build();
    /// let cooler = agent.to_builder().temperature(0.2).build();
    /// assert_eq!(cooler.options().temperature, Some(0.2));
    /// assert_eq!(cooler.name(), "writer");
    /// ```
    pub fn to_builder(&self) -> AgentBuilder {
        AgentBuilder::from_agent(self)
    }

    /// The agent's name ([`AgentOptions::name`], or [`DEFAULT_AGENT_NAME`]).
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// let agent = loopwright_core::Agent::builder(model).name("researcher").build();
    /// assert_eq!(agent.name(), "researcher");
    /// ```
    pub fn name(&self) -> &str {
        self.options.name.as_deref().unwrap_or(DEFAULT_AGENT_NAME)
    }

    /// The options.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn LanguageModel> {
        &self.model
    }

    /// The tools.
    pub fn tools(&self) -> &Arc<ToolSet> {
        &self.tools
    }

    /// Start a run: the one way to start one. Its events come as a stream;
    /// awaiting it gives the result. Must be called inside a tokio runtime:
    /// the run is a spawned task.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), loopwright_core::RunError> {
    /// use loopwright_testing::{ScriptedModel, ScriptedStep};
    /// let model = ScriptedModel::new(vec![ScriptedStep::text("Hello.")]);
    /// let agent = loopwright_core::Agent::builder(model).build();
    /// let result = agent.run("Hi").await?;
    /// assert_eq!(result.text, "Hello.");
    /// # Ok(()) }
    /// ```
    pub fn run(&self, input: impl Into<RunInput>) -> AgentRun {
        let lineage = Lineage::root(self.name(), self.id.clone(), &self.options);
        start(
            self.model.clone(),
            self.tools.clone(),
            drive::Start::Fresh(input.into().0),
            self.options.clone(),
            lineage,
        )
    }
}

/// Start a run from a model, its tools, the input and the options: the
/// free-function form of `Agent::builder(model).options(options).build().run(input)`,
/// which it is.
///
/// Must be called inside a tokio runtime.
pub fn run_agent(
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    input: impl Into<RunInput>,
    options: AgentOptions,
) -> AgentRun {
    Agent::builder(model)
        .shared_tools(tools)
        .options(options)
        .build()
        .run(input)
}

/// Start the run that continues `state` with `decisions` (checked by
/// [`Resume::run`]), at its place in a tree of agents.
fn start_resumed(agent: &Agent, state: RunState, decisions: resume::Decisions, lineage: Lineage) -> AgentRun {
    start(
        agent.model.clone(),
        agent.tools.clone(),
        drive::Start::Resume {
            state: Box::new(state),
            decisions: Arc::new(decisions),
        },
        agent.options.clone(),
        lineage,
    )
}

/// Start a run at its place in a tree of agents; entries go to the tree's
/// sink (the root's) when it has one, else to the run's own.
fn start(
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    input: drive::Start,
    options: AgentOptions,
    lineage: Lineage,
) -> AgentRun {
    let cancel = run_token(&options.cancellation);
    let stopped_by = limits::StoppedBy::default();
    if let Some(timeout) = options.run_timeout {
        limits::deadline(timeout, cancel.clone(), stopped_by.clone());
    }
    let journal = journal::Journal::new(options.durable.as_ref());
    let (emit, events) = if let Some(attempt) = journal.attempt() {
        Emitter::holding(attempt)
    } else {
        Emitter::new()
    };
    let (result_tx, result_rx) = oneshot::channel();
    let sink = lineage.sink.clone().or_else(|| options.accounting.clone());
    // A child of the current span: a sub-agent's run nests under the
    // `execute_tool` span of the call that started it.
    let span = crate::telemetry::invoke_agent(
        lineage.names.last().map_or(DEFAULT_AGENT_NAME, String::as_str),
        model.as_ref(),
    );
    let holds_output = options
        .guardrails
        .as_ref()
        .is_some_and(|rails| rails.checks(crate::guardrail::GuardPoint::Output));
    let scope = Arc::new(Scope::new(lineage, emit.downgrade()).holding_output(holds_output));
    let accountant = Accountant::new(emit.clone(), sink, &scope.path);
    let run = Run {
        model,
        tools,
        options,
        cancel: cancel.clone(),
        emit,
        accountant,
        scope,
        stopped_by,
        journal,
    };
    tokio::spawn(async move {
        // The receiver may be gone; the result is then not wanted. It goes
        // out before the `finished` event (and so before the events close),
        // so a reader who saw either finds it.
        run.drive(input, |result| {
            let _ = result_tx.send(result);
        })
        .instrument(span)
        .await;
        // The run's span closed with the statement above; only now do the
        // events close (with `run`, which holds their sender), so a reader
        // who saw them end (and flushes its telemetry) finds the span ended.
        drop(run);
    });
    AgentRun {
        events,
        result: result_rx,
        cancel: cancel.clone(),
        _guard: cancel.drop_guard(),
    }
}

/// A run's token: cancelled when any parent is, never cancelling one. A
/// single parent gives a child token; several are watched by a task that
/// ends with the run's token.
fn run_token(parents: &[CancellationToken]) -> CancellationToken {
    match parents {
        [] => CancellationToken::new(),
        [parent] => parent.child_token(),
        [first, rest @ ..] => {
            let token = first.child_token();
            let (watched, rest) = (token.clone(), rest.to_vec());
            tokio::spawn(async move {
                let any = futures::future::select_all(rest.iter().map(|p| Box::pin(p.cancelled())));
                tokio::select! {
                    _ = any => watched.cancel(),
                    () = watched.cancelled() => {}
                }
            });
            token
        }
    }
}
