//! The loop of one run: model -> tool calls -> results -> model, until the
//! model answers, the step limit's concluding call, a stop condition, a
//! model error, the context budget or a cancellation ends it.
//!
//! Invariants (see the module above): every tool call in the history gets
//! exactly one result; a step's calls run only after its stream completed;
//! [`AgentEvent::Finished`] is the last event, and the result is delivered
//! before it, so whoever has seen `Finished` can take the result.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::account::{Accountant, LlmAttempt};
use super::compact::{Admission, Admit};
use super::emit::Emitter;
use super::events::{AgentEvent, AgentResult, ExitReason};
use super::exec::{Batch, approval_requests, execute};
use super::guard::Guard;
use super::hooks::{StepContext, StepSummary};
use super::options::AgentOptions;
use super::paused::{PauseAt, PausedStep, StepEnd, paused_calls};
use super::plan::PlanOutcome;
use super::request::step_tools;
use super::resume::SharedDecisions;
use super::state::{Paused, RunState};
use super::step::{AttemptInfo, StepFailure, StepIo, StepOutput, run_step};
use super::structured::{Structured, Verdict};
use crate::accounting::EntryStatus;
use crate::output::OutputError;
use crate::telemetry::{self, ChatFailure};
use crate::tool_search::SearchRun;
use loopwright_types::Usage;
use loopwright_types::fallback::model_label;
use loopwright_types::toolset::{ToolCatalog, ToolSet};
use loopwright_types::util::error_chain;
use loopwright_types::{ContentPart, Message, Role};
use loopwright_types::{LanguageModel, ModelRequest};
use serde_json::Value;
use tracing::Instrument;

/// What a run starts from.
pub(crate) enum Start {
    /// A conversation (usually ending with a user message).
    Fresh(Vec<Message>),
    /// A paused run's state, with the (checked) decisions for its questions.
    Resume {
        state: Box<RunState>,
        decisions: SharedDecisions,
    },
}

pub(super) struct Run {
    pub model: Arc<dyn LanguageModel>,
    pub tools: Arc<ToolSet>,
    pub options: AgentOptions,
    pub cancel: CancellationToken,
    pub emit: Emitter,
    pub accountant: Accountant,
    /// This run's place in its tree of agents.
    pub scope: super::scope::SharedScope,
    /// Set by the run's deadline when it passes.
    pub stopped_by: super::limits::StoppedBy,
    /// Where steps and decisions go (straight through without an engine).
    pub journal: super::journal::Journal,
}

/// What the loop has gathered so far.
#[derive(Default)]
struct Progress {
    new_messages: Vec<Message>,
    usage: Usage,
    step_usage: Vec<Usage>,
    steps: u32,
    text: String,
    /// Kept only when a hook reads them.
    summaries: Vec<StepSummary>,
    /// The validated final answer (runs with an output schema).
    output: Option<Value>,
    /// Why the final answer never validated.
    output_error: Option<OutputError>,
    /// Why the pre-flight plan was rejected.
    plan_rejection: Option<String>,
    /// The limit of its own that stopped the run.
    stopped_by: Option<String>,
}

/// A resumed run's starting point.
struct Resumed {
    paused: Paused,
    decisions: SharedDecisions,
    retries_left: Option<u32>,
    conclude_next: bool,
    compacted: bool,
}

impl Progress {
    /// Add a message the run made to the history.
    fn add(&mut self, history: &mut Arc<Vec<Message>>, message: Message) {
        Arc::make_mut(history).push(message.clone());
        self.new_messages.push(message);
    }
}

/// The tool message answering a step's calls.
fn tool_message(results: Vec<loopwright_types::ToolResult>) -> Message {
    Message::new(
        Role::Tool,
        results.into_iter().map(ContentPart::ToolResult).collect(),
    )
}

impl Run {
    /// Run to the end; `deliver` gets the result just before the
    /// `finished` event goes out.
    pub async fn drive(&self, start: Start, deliver: impl FnOnce(AgentResult)) {
        let mut progress = Progress::default();
        let (input, input_len, mut resume) = match start {
            Start::Fresh(input) => {
                let len = input.len();
                (input, len, None)
            }
            Start::Resume { state, decisions } => {
                let state = *state;
                progress.new_messages = state.messages.get(state.input_len..).unwrap_or_default().to_vec();
                progress.steps = state.steps;
                progress.usage = state.usage;
                self.scope.add_child_usage(state.children_usage);
                let resumed = Resumed {
                    paused: state.paused,
                    decisions,
                    retries_left: state.output_retries_left,
                    conclude_next: state.conclude_next,
                    compacted: state.compacted,
                };
                (state.messages, state.input_len, Some(resumed))
            }
        };
        let mut history = Arc::new(input);
        // Whether the history was compacted (the result then carries it whole).
        let mut compacted = resume.as_ref().is_some_and(|r| r.compacted);
        // Listing tools may wait on a server; a cancelled run does not. The
        // empty catalog is never used: the loop sees the cancellation first.
        let mut base = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Arc::new(ToolCatalog::empty()),
            catalog = self.tools.catalog() => catalog,
        };
        self.announce(&base).await;
        let mut search = self.options.tool_search.clone().map(SearchRun::new);
        let budget = self.options.budget.as_ref();
        let mut catalog = search
            .as_mut()
            .map_or_else(|| base.clone(), |s| s.catalog(&base, budget));
        let mut structured = self.options.output.clone().map(|spec| {
            Structured::new(
                spec,
                self.model.as_ref(),
                !catalog.tools().is_empty(),
                self.options.max_output_retries,
            )
        });
        let mut guard = self
            .options
            .budget
            .clone()
            .map(|b| Guard::new(b, self.model.provider(), self.model.model_id()));
        // Set when the budget made the next step the concluding one.
        let mut budget_forced = resume.as_ref().is_some_and(|r| r.conclude_next);
        if let (Some(s), Some(left)) = (structured.as_mut(), resume.as_ref().and_then(|r| r.retries_left)) {
            s.set_retries_left(left);
        }
        // The state to resume with, once the run pauses.
        let mut paused_at: Option<Paused> = None;

        let (exit, error) = 'run: {
            // A plan to follow, whether the run proposes it now or a
            // resumed run's plan was decided.
            let planned = match resume.take() {
                Some(Resumed {
                    paused: Paused::Plan { plan },
                    decisions,
                    ..
                }) => Some(self.decide_plan(plan, &decisions).await),
                Some(Resumed {
                    paused:
                        Paused::ToolCalls {
                            step,
                            calls,
                            results,
                            pending,
                            suspended,
                        },
                    decisions,
                    ..
                }) => {
                    let paused = PausedStep {
                        step,
                        calls,
                        results,
                        pending,
                        suspended,
                    };
                    match self.finish_paused(paused, &decisions, &catalog).await {
                        StepEnd::Done(results) => progress.add(&mut history, tool_message(results)),
                        StepEnd::Paused(again) => {
                            paused_at = Some(again);
                            break 'run (ExitReason::AwaitingApproval, None);
                        }
                    }
                    None
                }
                None => match &self.options.preflight {
                    Some(preflight) => Some(
                        self.preflight(preflight, &history, &catalog, &mut progress.usage)
                            .await,
                    ),
                    None => None,
                },
            };
            if let Some(outcome) = planned {
                match outcome {
                    PlanOutcome::Approved(message) => progress.add(&mut history, message),
                    PlanOutcome::Rejected(reason) => {
                        progress.plan_rejection = Some(reason);
                        break 'run (ExitReason::PlanRejected, None);
                    }
                    PlanOutcome::Cancelled => break 'run (ExitReason::Cancelled, None),
                    PlanOutcome::Failed(e) => break 'run (ExitReason::ModelError, Some(e)),
                    PlanOutcome::Budget(why) => {
                        progress.stopped_by = Some(why);
                        break 'run (ExitReason::BudgetExhausted, None);
                    }
                    PlanOutcome::Deferred(plan) => {
                        paused_at = Some(Paused::Plan { plan });
                        break 'run (ExitReason::AwaitingApproval, None);
                    }
                }
            }
            loop {
                if self.cancel.is_cancelled() {
                    break (ExitReason::Cancelled, None);
                }
                let step = progress.steps + 1;
                let latest = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => break (ExitReason::Cancelled, None),
                    catalog = self.tools.catalog() => catalog,
                };
                if !Arc::ptr_eq(&latest, &base) {
                    base = latest;
                    catalog = search
                        .as_mut()
                        .map_or_else(|| base.clone(), |s| s.catalog(&base, budget));
                    self.warn_all(catalog.warnings()).await;
                }
                // `max_steps` steps may use tools (at least one, whatever the
                // field was set to); the one after concludes.
                let mut concluding = step > self.options.max_steps.max(1) || budget_forced;
                let mut settings = self.settings(&catalog);
                let mut step_tools = step_tools(search.as_mut(), &catalog, &history);
                // The budget decides first (compacting when it must), so the
                // hook is told whether this call concludes; text the hook
                // adds is not counted.
                if let Some(guard) = guard.as_mut() {
                    let system = settings.system.as_deref();
                    let at = Admission {
                        system,
                        tools: &step_tools.tools,
                        concluding,
                    };
                    let before = history.len();
                    match self.admit(guard, at, &mut history, &mut progress.usage).await {
                        Admit::Go { compacted: now } => compacted |= now,
                        Admit::Conclude { compacted: now } => {
                            compacted |= now;
                            concluding = true;
                            budget_forced = true;
                        }
                        Admit::Stop => break (ExitReason::TokenLimit, None),
                    }
                    if history.len() != before {
                        step_tools = self::step_tools(search.as_mut(), &catalog, &history);
                    }
                }
                if let Some(hook) = &self.options.hooks.prepare_step {
                    let ctx = StepContext {
                        step,
                        concluding,
                        messages: &history,
                        steps: &progress.summaries,
                    };
                    hook(&ctx, &mut settings);
                }
                let step_system = settings.system.clone();
                let compact_above = self.compact_above(guard.as_ref());
                let mut planned = self.plan(&history, &step_tools, settings, concluding, compact_above);
                if let Some(s) = &structured {
                    s.prepare(&mut planned.request, concluding);
                }
                self.tell(AgentEvent::StepStarted { step }).await;
                let output = match self.call_model(planned.request, false).await {
                    Ok(output) => output,
                    Err(StepFailure::Cancelled | StepFailure::Detached) => {
                        break (ExitReason::Cancelled, None);
                    }
                    Err(StepFailure::Model(e)) => break (ExitReason::ModelError, Some(e)),
                    Err(StepFailure::Budget(why)) => {
                        progress.stopped_by = Some(why);
                        break (ExitReason::BudgetExhausted, None);
                    }
                };
                progress.steps = step;
                progress.usage += output.usage;
                progress.step_usage.push(output.usage);
                progress.text = output.text.clone();
                self.tell(AgentEvent::StepFinished {
                    step,
                    finish_reason: output.finish_reason.clone(),
                    usage: output.usage,
                })
                .await;
                if let Some(message) = output.message() {
                    progress.add(&mut history, message);
                }
                if let Some(cleared) = output.provider_compacted {
                    self.provider_compacted(guard.as_mut(), cleared, output.usage, &history)
                        .await;
                }
                let mut answered = HashMap::new();
                let verdict = match structured.as_ref() {
                    Some(s) => s.judge(&output, &mut answered).await,
                    None => Verdict::NotFinal,
                };
                if output.calls.is_empty() {
                    match verdict {
                        Verdict::NotFinal => break (exit_after_answer(concluding, budget_forced), None),
                        Verdict::Accepted(value) => {
                            progress.output = Some(value);
                            break (exit_after_answer(concluding, budget_forced), None);
                        }
                        Verdict::Rejected(e) => {
                            // Only a run with an output schema rejects an answer.
                            let Some(s) = structured.as_mut() else {
                                break (exit_after_answer(concluding, budget_forced), None);
                            };
                            if !s.take_retry() {
                                progress.output_error = Some(e);
                                break (ExitReason::OutputInvalid, None);
                            }
                            progress.add(&mut history, s.retry_message(&e));
                            continue;
                        }
                    }
                }
                let results = {
                    // With compaction the next step makes room instead.
                    let gated = !concluding && self.options.compaction.is_none();
                    let gate = guard.as_mut().filter(|_| gated).map(|g| {
                        let projected = g.project(step_system.as_deref(), &step_tools.tools, &history, &[]);
                        g.results_gate(projected)
                    });
                    let mut batch = Batch {
                        step,
                        calls: &output.calls,
                        bad_json: &output.bad_json,
                        catalog: &catalog,
                        offered: planned.offered.as_ref(),
                        refuse: concluding.then_some(NOT_RUN_CONCLUDING),
                        answered: &answered,
                        denied: &HashMap::new(),
                        pre_approved: false,
                        resumes: None,
                        options: &self.options,
                        cancel: &self.cancel,
                        emit: &self.emit,
                        accountant: &self.accountant,
                        scope: &self.scope,
                        gate: gate.as_ref(),
                        journal: None,
                    };
                    // A durable run decides its approvals before the step,
                    // outside the journaled calls.
                    let decided;
                    if self.journal.is_durable() && self.options.approvals.is_some() {
                        let requests = approval_requests(&batch).await;
                        decided = self
                            .journal
                            .decide(step, requests, &self.emit, &self.cancel)
                            .await;
                        batch.denied = &decided;
                        batch.pre_approved = true;
                    }
                    batch.journal = Some(&self.journal);
                    let executed = execute(batch).await;
                    if let Some(e) = &executed.journal_error {
                        // The calls that ran keep their results; the others
                        // were not run.
                        self.journal_failed(e).await;
                        let mut results = executed.results;
                        let answered: HashSet<String> = results.iter().map(|r| r.call_id.clone()).collect();
                        let missing: Vec<_> = output
                            .calls
                            .iter()
                            .filter(|c| !answered.contains(&c.id))
                            .cloned()
                            .collect();
                        results.extend(not_run(&missing));
                        let order: HashMap<&str, usize> = output
                            .calls
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (c.id.as_str(), i))
                            .collect();
                        results.sort_by_key(|r| order.get(r.call_id.as_str()).copied().unwrap_or(usize::MAX));
                        progress.add(&mut history, tool_message(results));
                        break (ExitReason::Cancelled, None);
                    }
                    if executed.over_budget {
                        if let Some(g) = &guard {
                            g.record("tool_result", "result_replaced");
                        }
                        budget_forced = true;
                    }
                    if !executed.paused.is_empty() {
                        // Some calls wait for a person: the step is answered
                        // when the run is resumed.
                        paused_at = Some(paused_calls(
                            step,
                            &output.calls,
                            executed.results,
                            executed.paused,
                        ));
                        break (ExitReason::AwaitingApproval, None);
                    }
                    executed.results
                };
                if self.options.hooks.reads_steps() {
                    progress.summaries.push(StepSummary {
                        step,
                        text: output.text.clone(),
                        tool_calls: output.calls.clone(),
                        tool_results: results.clone(),
                        finish_reason: output.finish_reason.clone(),
                        usage: output.usage,
                    });
                }
                progress.add(&mut history, tool_message(results));
                match verdict {
                    Verdict::Accepted(value) => {
                        progress.output = Some(value);
                        break (exit_after_answer(concluding, budget_forced), None);
                    }
                    // The final-answer call's result told the model what to fix.
                    Verdict::Rejected(e) if !structured.as_mut().is_some_and(Structured::take_retry) => {
                        progress.output_error = Some(e);
                        break (ExitReason::OutputInvalid, None);
                    }
                    _ => {}
                }
                if concluding && structured.as_ref().is_none_or(|s| !s.via_tool()) {
                    break (exit_after_answer(true, budget_forced), None);
                }
                if let Some(stop) = &self.options.hooks.stop_when
                    && stop(&progress.summaries)
                {
                    break (ExitReason::Stopped, None);
                }
            }
        };
        self.journal.finish(&self.emit).await;
        debug_assert!(compacted || history.len() == input_len + progress.new_messages.len());
        let state = paused_at.map(|paused| {
            self.state(PauseAt {
                history: &history,
                input_len,
                steps: progress.steps,
                usage: progress.usage,
                output_retries_left: structured.as_ref().map(Structured::retries_left),
                conclude_next: budget_forced,
                compacted,
                paused,
            })
        });
        if let Some(state) = &state {
            self.tell_paused(state).await;
            // The history is in the state: a conversation must not keep
            // calls without their results.
            progress.new_messages.clear();
        }
        if exit == ExitReason::Cancelled
            && let Some(why) = self.stopped_by.get()
        {
            progress.stopped_by = Some(why.clone());
        }
        if let Some(value) = &progress.output {
            self.tell(AgentEvent::Output { value: value.clone() }).await;
        }
        let mut tree_usage = progress.usage;
        tree_usage += self.scope.children_usage();
        let finished = AgentEvent::Finished {
            exit,
            text: progress.text.clone(),
            usage: progress.usage,
            tree_usage,
            steps: progress.steps,
            error: error
                .as_ref()
                .map(|e| error_chain(e))
                .or_else(|| progress.output_error.as_ref().map(ToString::to_string))
                .or_else(|| {
                    progress
                        .plan_rejection
                        .as_ref()
                        .map(|r| format!("the plan was rejected: {r}"))
                })
                .or_else(|| progress.stopped_by.clone()),
        };
        crate::telemetry::record_run(&tracing::Span::current(), &progress.usage, failure_kind(exit));
        deliver(AgentResult {
            messages: progress.new_messages,
            text: progress.text,
            usage: progress.usage,
            tree_usage,
            step_usage: progress.step_usage,
            steps: progress.steps,
            exit,
            error,
            output: progress.output,
            output_error: progress.output_error,
            plan_rejection: progress.plan_rejection,
            stopped_by: progress.stopped_by,
            history: (compacted && state.is_none()).then(|| history.to_vec()),
            state,
        });
        self.tell(finished).await;
    }

    /// `run_started`, then `mcp_connected` and warnings about the tools.
    async fn announce(&self, catalog: &ToolCatalog) {
        self.tell(AgentEvent::RunStarted {
            provider: self.model.provider().to_owned(),
            model: self.model.model_id().to_owned(),
            tools: catalog.names().into_iter().map(str::to_owned).collect(),
        })
        .await;
        if let Some(report) = self.tools.connection_report() {
            self.tell(AgentEvent::McpConnected {
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
    }

    /// One model call, accounted (a fallback inside it accounts its own
    /// failed attempts). A `quiet` call streams no text or reasoning to the
    /// application (the pre-flight plan's JSON).
    pub(super) async fn call_model(
        &self,
        request: ModelRequest,
        quiet: bool,
    ) -> Result<StepOutput, StepFailure> {
        self.call_model_on(self.model.as_ref(), request, quiet).await
    }

    /// [`Self::call_model`] on another model (a summarising one).
    pub(super) async fn call_model_on(
        &self,
        model: &dyn LanguageModel,
        request: ModelRequest,
        quiet: bool,
    ) -> Result<StepOutput, StepFailure> {
        let budget = self.scope.lineage.budget.as_ref();
        if let Some(budget) = budget {
            budget.take_call().map_err(StepFailure::Budget)?;
        }
        let key = self.journal.next_model_call();
        let journaled = self
            .journal
            .step(key, &self.emit, self.model_call(model, request, quiet))
            .await;
        let outcome = match journaled {
            Ok(outcome) => outcome,
            Err(e) => {
                self.journal_failed(&e).await;
                Err(StepFailure::Cancelled)
            }
        };
        if let (Some(budget), Ok(output)) = (budget, &outcome) {
            budget.add(&output.usage);
        }
        outcome
    }

    /// The model call itself (one journaled step of a durable run, a
    /// summarising call included): the stream, its span and its accounting
    /// entry.
    async fn model_call(
        &self,
        model: &dyn LanguageModel,
        request: ModelRequest,
        quiet: bool,
    ) -> Result<StepOutput, StepFailure> {
        let mut attempt = AttemptInfo {
            label: model_label(model),
            started: Instant::now(),
        };
        let io = StepIo {
            cancel: &self.cancel,
            emit: &self.emit,
            accountant: &self.accountant,
            quiet,
        };
        let span = telemetry::chat(model, &request);
        let outcome = run_step(model, request, &mut attempt, io)
            .instrument(span.clone())
            .await;
        let traced = match &outcome {
            Ok(o) => Ok((&o.finish_reason, &o.usage)),
            Err(StepFailure::Model(e)) => Err(ChatFailure::Model(e)),
            Err(StepFailure::Cancelled | StepFailure::Detached | StepFailure::Budget(_)) => {
                Err(ChatFailure::Cancelled)
            }
        };
        telemetry::record_chat(&span, &attempt.label, traced);
        let (status, error) = match &outcome {
            Ok(_) => (EntryStatus::Ok, None),
            Err(StepFailure::Model(e)) => (EntryStatus::Error, Some(error_chain(e))),
            Err(StepFailure::Cancelled | StepFailure::Detached | StepFailure::Budget(_)) => {
                (EntryStatus::Cancelled, None)
            }
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
        outcome
    }

    /// The engine could not journal a step: the run stops (the engine runs
    /// it again, or was cancelling it).
    async fn journal_failed(&self, error: &crate::durable::DurableError) {
        if !matches!(error, crate::durable::DurableError::Cancelled) {
            let message = format!("the run stopped: {error}");
            tracing::warn!(target: "loopwright_core", "{message}");
            self.tell(AgentEvent::Warning { message }).await;
        }
        self.cancel.cancel();
    }

    /// The system prompt: the options' prompt, then the sources' instructions.
    pub(super) fn system_prompt(&self, catalog: &ToolCatalog) -> Option<String> {
        match (&self.options.system, catalog.instructions()) {
            (Some(s), Some(i)) => Some(format!("{s}\n\n{i}")),
            (Some(s), None) => Some(s.clone()),
            (None, Some(i)) => Some(i.to_owned()),
            (None, None) => None,
        }
    }

    /// Send an event. A closed receiver is handled where it matters: the
    /// drop guard has cancelled the run, and the next step sees it.
    pub(super) async fn tell(&self, event: AgentEvent) {
        let _ = self.emit.send(event).await;
    }

    async fn warn_all(&self, warnings: &[String]) {
        for message in warnings {
            tracing::warn!(target: "loopwright_core", "{message}");
            self.tell(AgentEvent::Warning {
                message: message.clone(),
            })
            .await;
        }
    }
}

/// The result of a call made on the concluding step, which runs no tool.
const NOT_RUN_CONCLUDING: &str =
    "Not run: tools are no longer available (the step limit or the context budget was reached).";

/// The results of calls a stopped run never ran.
fn not_run(calls: &[loopwright_types::ToolCall]) -> Vec<loopwright_types::ToolResult> {
    calls
        .iter()
        .map(|call| loopwright_types::ToolResult {
            call_id: call.id.clone(),
            parts: vec![loopwright_types::ToolOutputPart::text(
                "The tool call was cancelled.",
            )],
            is_error: true,
        })
        .collect()
}

/// How a run that got an answer (or reached its concluding step) ends.
fn exit_after_answer(concluding: bool, budget_forced: bool) -> ExitReason {
    match (concluding, budget_forced) {
        (_, true) => ExitReason::TokenLimit,
        (true, false) => ExitReason::MaxSteps,
        (false, false) => ExitReason::Completed,
    }
}

/// The `error.type` of a run that did not answer (its exit reason).
fn failure_kind(exit: ExitReason) -> Option<&'static str> {
    match exit {
        ExitReason::Completed | ExitReason::Stopped | ExitReason::MaxSteps => None,
        ExitReason::OutputInvalid => Some("output_invalid"),
        ExitReason::Cancelled => Some("cancelled"),
        ExitReason::ModelError => Some("model_error"),
        ExitReason::TokenLimit => Some("token_limit"),
        ExitReason::PlanRejected => Some("plan_rejected"),
        ExitReason::BudgetExhausted => Some("budget_exhausted"),
        ExitReason::AwaitingApproval => None,
    }
}
