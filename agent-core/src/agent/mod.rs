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
//!   always the last event.

mod account;
mod emit;
mod events;
mod exec;
mod gate;
mod guard;
mod options;
mod step;
mod truncate;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

pub use events::{AgentEvent, AgentResult, ExitReason};
pub use exec::CANCEL_GRACE;
pub use options::{
    AgentOptions, CONCLUDE_INSTRUCTION, DEFAULT_MAX_STEPS, DEFAULT_MAX_TOOL_OUTPUT_BYTES,
    DEFAULT_TOOL_CONCURRENCY, DEFAULT_TOOL_TIMEOUT,
};
pub use truncate::truncate_output;

use account::{Accountant, LlmAttempt};
use emit::Emitter;
use exec::{Batch, execute, not_run};
use guard::Guard;
use step::{AttemptInfo, StepFailure, StepIo, run_step};
use tokio::time::Instant;

use crate::accounting::EntryStatus;
use crate::fallback::model_label;

use crate::message::{ContentPart, Message, Role};
use crate::model::{LanguageModel, ModelError, ModelRequest, ToolChoice};
use crate::toolset::{ToolCatalog, ToolSet};
use crate::usage::Usage;

/// A model, its tools and options: runs as many conversations as you like.
///
/// ```no_run
/// use std::sync::Arc;
/// use agent_core::{Agent, AgentEvent, LanguageModel, Message, ToolSet};
/// use futures::StreamExt;
///
/// # async fn demo(model: Arc<dyn LanguageModel>, tools: ToolSet) {
/// let agent = Agent::builder(model).tools(tools).system("Be brief.").max_steps(10).build();
/// let mut run = agent.run(vec![Message::user("What is in README.md?")]);
/// while let Some(event) = run.next().await {
///     if let AgentEvent::TextDelta { text } = event {
///         print!("{text}");
///     }
/// }
/// let result = run.into_result().await.unwrap();
/// println!("\n{:?} after {} steps", result.exit, result.steps);
/// # }
/// ```
#[derive(Clone)]
pub struct Agent {
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    options: AgentOptions,
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    options: AgentOptions,
}

impl AgentBuilder {
    /// Use these tools (default: none).
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = Arc::new(tools);
        self
    }

    /// Use a shared tool set.
    pub fn shared_tools(mut self, tools: Arc<ToolSet>) -> Self {
        self.tools = tools;
        self
    }

    /// Replace all options.
    pub fn options(mut self, options: AgentOptions) -> Self {
        self.options = options;
        self
    }

    /// Set the system prompt.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.options = self.options.system(text);
        self
    }

    /// Set the step limit.
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.options = self.options.max_steps(steps);
        self
    }

    /// Set the tool timeout.
    pub fn tool_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.options = self.options.tool_timeout(timeout);
        self
    }

    /// The agent.
    pub fn build(self) -> Agent {
        Agent {
            model: self.model,
            tools: self.tools,
            options: self.options,
        }
    }
}

impl Agent {
    /// A builder for an agent using this model.
    pub fn builder(model: Arc<dyn LanguageModel>) -> AgentBuilder {
        AgentBuilder {
            model,
            tools: Arc::new(ToolSet::empty()),
            options: AgentOptions::default(),
        }
    }

    /// The options.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// Start a run on this conversation (usually ending with a user message).
    /// Must be called inside a tokio runtime: the run is a spawned task.
    pub fn run(&self, messages: Vec<Message>) -> AgentRun {
        run_agent(
            self.model.clone(),
            self.tools.clone(),
            messages,
            self.options.clone(),
        )
    }

    /// Start a run on one user prompt.
    pub fn prompt(&self, text: impl Into<String>) -> AgentRun {
        self.run(vec![Message::user(text)])
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
    let cancel = CancellationToken::new();
    let (emit, events) = Emitter::new();
    let (result_tx, result_rx) = oneshot::channel();
    let accountant = Accountant::new(emit.clone(), options.accounting.clone());
    let run = Run {
        model,
        tools,
        options,
        cancel: cancel.clone(),
        emit,
        accountant,
    };
    tokio::spawn(async move {
        let result = run.drive(messages).await;
        // The receiver may be gone; the result is then not wanted.
        let _ = result_tx.send(result);
    });
    AgentRun {
        events,
        result: result_rx,
        cancel: cancel.clone(),
        _guard: cancel.drop_guard(),
    }
}

/// A running conversation: a stream of [`AgentEvent`]s ending with
/// [`AgentEvent::Finished`], then [`AgentRun::into_result`].
///
/// Dropping it cancels the run.
pub struct AgentRun {
    events: mpsc::Receiver<AgentEvent>,
    result: oneshot::Receiver<AgentResult>,
    cancel: CancellationToken,
    _guard: DropGuard,
}

/// The run's task ended without a result (it panicked or was aborted).
#[derive(Debug, thiserror::Error)]
#[error("the agent run ended without a result")]
pub struct RunAborted;

impl AgentRun {
    /// Cancel the run: the model request and every running tool are
    /// cancelled; the run then finishes with [`ExitReason::Cancelled`].
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels the run (for another task, a signal handler...).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Drain the events not read yet and return the result.
    pub async fn into_result(mut self) -> Result<AgentResult, RunAborted> {
        while self.events.recv().await.is_some() {}
        (&mut self.result).await.map_err(|_| RunAborted)
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.events.poll_recv(cx)
    }
}

struct Run {
    model: Arc<dyn LanguageModel>,
    tools: Arc<ToolSet>,
    options: AgentOptions,
    cancel: CancellationToken,
    emit: Emitter,
    accountant: Accountant,
}

/// What the loop has gathered so far.
struct Progress {
    new_messages: Vec<Message>,
    usage: Usage,
    step_usage: Vec<Usage>,
    steps: u32,
    text: String,
}

impl Run {
    async fn drive(self, input: Vec<Message>) -> AgentResult {
        let mut history = Arc::new(input);
        let input_len = history.len();
        let mut progress = Progress {
            new_messages: Vec::new(),
            usage: Usage::default(),
            step_usage: Vec::new(),
            steps: 0,
            text: String::new(),
        };
        // Listing tools may wait on a server; a cancelled run does not. The
        // empty catalog is never used: the loop sees the cancellation first.
        let mut catalog = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Arc::new(ToolCatalog::empty()),
            catalog = self.tools.catalog() => catalog,
        };
        // A closed receiver is handled where it matters: the drop guard has
        // cancelled the run, and the next step sees it.
        let _ = self
            .emit
            .send(AgentEvent::RunStarted {
                provider: self.model.provider().to_owned(),
                model: self.model.model_id().to_owned(),
                tools: catalog.names().into_iter().map(str::to_owned).collect(),
            })
            .await;
        if let Some(report) = self.tools.connection_report() {
            let _ = self
                .emit
                .send(AgentEvent::McpConnected {
                    servers: report.servers.clone(),
                    failed: report.failed.clone(),
                })
                .await;
            let failures: Vec<String> = report
                .failed
                .iter()
                .map(|f| format!("mcp server {} is not connected: {}", f.server, f.error))
                .collect();
            self.warn_all(&failures).await;
        }
        self.warn_all(catalog.warnings()).await;
        let mut guard = self
            .options
            .budget
            .clone()
            .map(|b| Guard::new(b, self.model.provider(), self.model.model_id()));
        // Set when the budget made the next step the concluding one.
        let mut budget_forced = false;

        let (exit, error) = loop {
            if self.cancel.is_cancelled() {
                break (ExitReason::Cancelled, None);
            }
            let step = progress.steps + 1;
            let latest = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break (ExitReason::Cancelled, None),
                catalog = self.tools.catalog() => catalog,
            };
            if !Arc::ptr_eq(&latest, &catalog) {
                catalog = latest;
                self.warn_all(catalog.warnings()).await;
            }
            let mut concluding = step >= self.options.max_steps || budget_forced;
            if let Some(guard) = guard.as_mut() {
                let system = self.system_prompt(&catalog);
                let conclude = [Message::user(options::CONCLUDE_INSTRUCTION)];
                let extra: &[Message] = if concluding { &conclude } else { &[] };
                if guard.project(system.as_deref(), &catalog, &history, extra) > guard.limit() {
                    if !concluding
                        && guard.project(system.as_deref(), &catalog, &history, &conclude) <= guard.limit()
                    {
                        guard.record("step", "forced_final");
                        concluding = true;
                        budget_forced = true;
                    } else {
                        guard.record("step", "token_limit");
                        break (ExitReason::TokenLimit, None);
                    }
                }
            }
            let request = self.request(&history, &catalog, concluding);
            let _ = self.emit.send(AgentEvent::StepStarted { step }).await;
            let mut attempt = AttemptInfo {
                label: model_label(self.model.as_ref()),
                started: Instant::now(),
            };
            let io = StepIo {
                cancel: &self.cancel,
                emit: &self.emit,
                accountant: &self.accountant,
            };
            let outcome = run_step(self.model.as_ref(), request, &mut attempt, io).await;
            let (status, error) = match &outcome {
                Ok(_) => (EntryStatus::Ok, None),
                Err(StepFailure::Model(e)) => (EntryStatus::Error, Some(e.to_string())),
                Err(StepFailure::Cancelled | StepFailure::Detached) => (EntryStatus::Cancelled, None),
            };
            self.accountant
                .llm(LlmAttempt {
                    label: &attempt.label,
                    status,
                    latency: attempt.started.elapsed(),
                    usage: outcome.as_ref().map(|o| o.usage).unwrap_or_default(),
                    stop_reason: outcome.as_ref().ok().map(|o| &o.finish_reason),
                    error,
                })
                .await;
            let output = match outcome {
                Ok(output) => output,
                Err(StepFailure::Cancelled | StepFailure::Detached) => break (ExitReason::Cancelled, None),
                Err(StepFailure::Model(e)) => break (ExitReason::ModelError, Some(e)),
            };
            progress.steps = step;
            progress.usage += output.usage;
            progress.step_usage.push(output.usage);
            progress.text = output.text.clone();
            let _ = self
                .emit
                .send(AgentEvent::StepFinished {
                    step,
                    finish_reason: output.finish_reason.clone(),
                    usage: output.usage,
                })
                .await;
            if let Some(message) = output.message() {
                Arc::make_mut(&mut history).push(message.clone());
                progress.new_messages.push(message);
            }
            if output.calls.is_empty() {
                break (Self::exit_after_answer(concluding, budget_forced), None);
            }
            let results = if concluding {
                not_run(
                    &output.calls,
                    "Not run: tools are no longer available (the step limit or the context budget was reached).",
                )
            } else {
                let gate = guard.as_mut().map(|g| {
                    let system = self.system_prompt(&catalog);
                    let projected = g.project(system.as_deref(), &catalog, &history, &[]);
                    g.results_gate(projected)
                });
                let executed = execute(Batch {
                    calls: &output.calls,
                    bad_json: &output.bad_json,
                    catalog: &catalog,
                    options: &self.options,
                    cancel: &self.cancel,
                    emit: &self.emit,
                    accountant: &self.accountant,
                    gate: gate.as_ref(),
                })
                .await;
                if executed.over_budget {
                    if let Some(g) = &guard {
                        g.record("tool_result", "result_replaced");
                    }
                    budget_forced = true;
                }
                executed.results
            };
            let message = Message::new(
                Role::Tool,
                results.into_iter().map(ContentPart::ToolResult).collect(),
            );
            Arc::make_mut(&mut history).push(message.clone());
            progress.new_messages.push(message);
            if concluding {
                break (Self::exit_after_answer(true, budget_forced), None);
            }
        };
        debug_assert_eq!(history.len(), input_len + progress.new_messages.len());
        let _ = self
            .emit
            .send(AgentEvent::Finished {
                exit,
                text: progress.text.clone(),
                usage: progress.usage,
                steps: progress.steps,
                error: error.as_ref().map(ToString::to_string),
            })
            .await;
        AgentResult {
            messages: progress.new_messages,
            text: progress.text,
            usage: progress.usage,
            step_usage: progress.step_usage,
            steps: progress.steps,
            exit,
            error,
        }
    }

    /// How a run that got an answer (or reached its concluding step) ends.
    fn exit_after_answer(concluding: bool, budget_forced: bool) -> ExitReason {
        match (concluding, budget_forced) {
            (_, true) => ExitReason::TokenLimit,
            (true, false) => ExitReason::MaxSteps,
            (false, false) => ExitReason::Completed,
        }
    }

    /// The system prompt: the options' prompt, then the sources' instructions.
    fn system_prompt(&self, catalog: &ToolCatalog) -> Option<String> {
        match (&self.options.system, catalog.instructions()) {
            (Some(s), Some(i)) => Some(format!("{s}\n\n{i}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(i)) => Some(i.to_owned()),
            (None, None) => None,
        }
    }

    fn request(&self, history: &Arc<Vec<Message>>, catalog: &ToolCatalog, concluding: bool) -> ModelRequest {
        let system = self.system_prompt(catalog);
        // Tools stay declared on the concluding step (Anthropic rejects a
        // history holding tool calls without them); `ToolChoice::None`
        // withholds them.
        let mut request = ModelRequest {
            system,
            temperature: self.options.temperature,
            top_p: self.options.top_p,
            max_output_tokens: self.options.max_output_tokens,
            cancellation: self.cancel.child_token(),
            tools: catalog.definitions().clone(),
            ..ModelRequest::default()
        };
        if concluding {
            let mut messages = Vec::clone(history);
            messages.push(Message::user(options::CONCLUDE_INSTRUCTION));
            request.messages = Arc::new(messages);
            request.tool_choice = ToolChoice::None;
        } else {
            request.messages = history.clone();
            request.tool_choice = self.options.tool_choice.clone();
            request.parallel_tool_calls = Some(self.options.parallel_tool_calls);
        }
        request
    }

    async fn warn_all(&self, warnings: &[String]) {
        for message in warnings {
            tracing::warn!(target: "agent_core", "{message}");
            let _ = self
                .emit
                .send(AgentEvent::Warning {
                    message: message.clone(),
                })
                .await;
        }
    }
}

/// Convenience for [`ModelError`] results in tests and applications.
impl AgentResult {
    /// Whether the run ended with the model's own answer.
    pub fn completed(&self) -> bool {
        self.exit == ExitReason::Completed
    }

    /// The model error, if the run ended with one.
    pub fn model_error(&self) -> Option<&ModelError> {
        self.error.as_ref()
    }
}
