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
mod builder;
mod call;
mod compact;
mod conversation;
mod drive;
mod emit;
mod events;
mod exec;
mod execute;
mod gate;
mod guard;
mod hooks;
mod journal;
mod judge;
mod limits;
mod options;
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

pub use builder::{APP_SOURCE, AgentBuilder};
pub use conversation::{Conversation, Turn};
pub use events::{AgentEvent, AgentResult, ExitReason};
pub use exec::CANCEL_GRACE;
pub use hooks::{
    Hooks, OnToolResult, PrepareStep, StepContext, StepSettings, StepSummary, StopWhen, ToolResultContext,
};
pub use loopwright_types::truncate_output;
pub use options::{
    AgentOptions, CONCLUDE_INSTRUCTION, DEFAULT_AGENT_NAME, DEFAULT_MAX_DEPTH, DEFAULT_MAX_STEPS,
    DEFAULT_MAX_TOOL_OUTPUT_BYTES, DEFAULT_TOOL_CONCURRENCY, DEFAULT_TOOL_TIMEOUT,
};
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

use loopwright_types::LanguageModel;
use loopwright_types::Message;
use loopwright_types::toolset::ToolSet;

/// A model, its tools and options: runs as many conversations as you like.
/// Cloning is cheap (the model and tools are shared).
///
/// ```no_run
/// use std::sync::Arc;
/// use loopwright_core::{Agent, AgentEvent, LanguageModel, ToolSet};
/// use futures::StreamExt;
///
/// # async fn demo(model: Arc<dyn LanguageModel>, tools: ToolSet) -> Result<(), loopwright_core::RunError> {
/// let agent = Agent::builder(model).tools(tools).system("Be brief.").max_steps(10).build();
/// let mut run = agent.prompt("What is in README.md?");
/// while let Some(event) = run.next().await {
///     if let AgentEvent::TextDelta { text } = event {
///         print!("{text}");
///     }
/// }
/// let result = run.into_result().await?; // Err when the model failed
/// println!("\n{:?} after {} steps", result.exit, result.steps);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    options: AgentOptions,
    /// Identity for the sub-agent self-call guard: unique per `build()`,
    /// kept by clones and by [`Agent::with_cancellation`].
    id: u64,
}

/// Identities of built agents; 0 is never given out.
static NEXT_AGENT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_agent_id() -> u64 {
    NEXT_AGENT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Agent {
    /// A builder for an agent using this model.
    pub fn builder(model: Arc<dyn LanguageModel>) -> AgentBuilder {
        AgentBuilder::new(model)
    }

    /// The agent's name ([`AgentOptions::name`], or [`DEFAULT_AGENT_NAME`]).
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
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

    /// This agent, with runs that are also cancelled when `token` is (a
    /// parent agent's tool call, a request's lifetime), besides the tokens
    /// it already had. Cheap: the model and tools are shared.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
    /// let shutdown = loopwright_core::CancellationToken::new();
    /// let agent = loopwright_core::Agent::builder(model).cancellation(shutdown).build();
    /// let request = loopwright_core::CancellationToken::new();
    /// let scoped = agent.with_cancellation(request.clone());
    /// assert_eq!(scoped.options().cancellation.len(), 2);
    /// ```
    pub fn with_cancellation(&self, token: CancellationToken) -> Agent {
        Agent {
            options: self.options.clone().cancellation(token),
            ..self.clone()
        }
    }

    /// This agent with its options changed by `change`: the same model,
    /// tools and identity (a served request's own output schema or
    /// temperature, say). Cheap: the model and tools are shared.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
    /// let agent = loopwright_core::Agent::builder(model).name("writer").build();
    /// let cooler = agent.map_options(|o| o.temperature(0.2));
    /// assert_eq!(cooler.options().temperature, Some(0.2));
    /// assert_eq!(cooler.name(), "writer");
    /// ```
    pub fn map_options(&self, change: impl FnOnce(AgentOptions) -> AgentOptions) -> Agent {
        Agent {
            options: change(self.options.clone()),
            ..self.clone()
        }
    }

    /// Start a run on this conversation (usually ending with a user message).
    /// Must be called inside a tokio runtime: the run is a spawned task.
    pub fn run(&self, messages: Vec<Message>) -> AgentRun {
        let lineage = Lineage::root(self.name(), self.id, &self.options);
        start(
            self.model.clone(),
            self.tools.clone(),
            drive::Start::Fresh(messages),
            self.options.clone(),
            lineage,
        )
    }

    /// Start a run on one user prompt.
    pub fn prompt(&self, text: impl Into<String>) -> AgentRun {
        self.run(vec![Message::user(text)])
    }

    /// Run one prompt whose final answer is a `T`: the schema comes from
    /// `T` (in the mode of the agent's own output spec, if it has one), the
    /// answer is validated (and sent back to be fixed, see
    /// [`AgentOptions::output`]), then read as a `T`.
    ///
    /// ```no_run
    /// # async fn demo(agent: loopwright_core::Agent) -> Result<(), loopwright_core::RunError> {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Capital { city: String, population: u64 }
    ///
    /// let capital: Capital = agent.prompt_typed("The capital of Portugal?").await?;
    /// println!("{} ({})", capital.city, capital.population);
    /// # Ok(()) }
    /// ```
    pub async fn prompt_typed<T>(&self, text: impl Into<String>) -> Result<T, RunError>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let mode = self
            .options
            .output
            .as_ref()
            .map(crate::output::OutputSpec::output_mode);
        let spec = crate::output::OutputSpec::of::<T>().mode(mode.unwrap_or_default());
        let agent = Agent {
            options: self.options.clone().output(spec),
            ..self.clone()
        };
        let result = agent.prompt(text).await?;
        match result.output::<T>() {
            Ok(value) => Ok(value),
            Err(error) => Err(RunError::Output {
                error,
                result: Box::new(result),
            }),
        }
    }
}

/// Start a run: the free-function form of [`Agent::run`].
///
/// Must be called inside a tokio runtime.
pub fn run_agent(
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    messages: Vec<Message>,
    options: AgentOptions,
) -> AgentRun {
    let name = options.name.as_deref().unwrap_or(DEFAULT_AGENT_NAME);
    let lineage = Lineage::root(name, 0, &options);
    start(model, tools, drive::Start::Fresh(messages), options, lineage)
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
    let scope = Arc::new(Scope::new(lineage, emit.downgrade()));
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
    tokio::spawn(
        async move {
            // The receiver may be gone; the result is then not wanted. It goes
            // out before the `finished` event (and so before the events close),
            // so a reader who saw either finds it.
            run.drive(input, |result| {
                let _ = result_tx.send(result);
            })
            .await;
        }
        .instrument(span),
    );
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

impl AgentResult {
    /// Whether the run ended with the model's own answer.
    pub fn completed(&self) -> bool {
        self.exit == ExitReason::Completed
    }

    /// The model error, if the run ended with one.
    pub fn model_error(&self) -> Option<&loopwright_types::model_error::ModelError> {
        self.error.as_ref()
    }

    /// The validated final answer read as a `T` (runs with an output
    /// schema).
    ///
    /// ```
    /// # fn demo(result: loopwright_core::AgentResult) -> Result<(), loopwright_core::OutputError> {
    /// #[derive(serde::Deserialize)]
    /// struct Verdict { ok: bool }
    /// let verdict: Verdict = result.output()?;
    /// # let _ = verdict; Ok(()) }
    /// ```
    pub fn output<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::output::OutputError> {
        match &self.output {
            Some(value) => crate::output::typed(value),
            None => Err(crate::output::OutputError::new(
                "the run has no structured output (set an output schema)",
                self.text.clone(),
            )),
        }
    }
}
