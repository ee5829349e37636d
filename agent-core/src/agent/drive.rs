//! The loop of one run, as a short driver over named phases: each step is
//! [prepared](super::prepare) (its tools, the budget, its request), the
//! model is [called](super::call), its answer [judged](super::judge), its
//! tool calls [executed](super::execute) and their results
//! [settled](super::settle) into the history, until a phase ends the run.
//! The policies (tool search, the budget and compaction, structured
//! output, the pre-flight plan) plug into the phases through one seam
//! ([`super::policy`]).
//!
//! Invariants (see the module above): every tool call in the history gets
//! exactly one result; a step's calls run only after its stream completed;
//! a completed step is never repeated (a durable run replays it from its
//! journal); cancellation reaches the model call and every running tool;
//! [`AgentEvent::Finished`] is the last event, and the result is delivered
//! before it, so whoever has seen `Finished` can take the result.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::account::Accountant;
use super::emit::Emitter;
use super::events::{AgentEvent, ExitReason};
use super::hooks::StepSummary;
use super::judge::Next;
use super::options::AgentOptions;
use super::outcome::{AgentResult, Outcome};
use super::policy::{Flow, Policies};
use super::resume::SharedDecisions;
use super::state::{Paused, RunState};
use crate::output::OutputError;
use loopwright_types::toolset::{ToolCatalog, ToolSet};
use loopwright_types::{ContentPart, LanguageModel, Message, ModelError, Role, ToolResult, Usage};
use serde_json::Value;

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

/// How a run ended, as the phase that ended it says.
pub(super) enum Ending {
    /// The model answered (on the concluding step, or not).
    Answered {
        concluding: bool,
    },
    /// The `stop_when` hook stopped it after a step.
    Stopped,
    Cancelled,
    ModelFailed(ModelError),
    /// The run tree's budget refused a model call: why.
    BudgetExhausted(String),
    /// The history no longer fits the context window.
    TokenLimit,
    OutputInvalid(OutputError),
    PlanRejected(String),
    /// It waits for a person: what it waits on.
    Paused(Paused),
    /// A guardrail stopped it.
    Tripped(crate::guardrail::Trip),
}

/// What a resumed run continues from.
struct Resumed {
    paused: Paused,
    decisions: SharedDecisions,
    compacted: bool,
    conclude_next: bool,
    retries_left: Option<u32>,
}

/// What the loop has gathered so far.
#[derive(Default)]
pub(super) struct Progress {
    pub new_messages: Vec<Message>,
    pub usage: Usage,
    pub steps: u32,
    pub text: String,
    pub summaries: Vec<StepSummary>,
    /// The validated final answer (runs with an output schema).
    pub output: Option<Value>,
}

/// What one run holds while it loops.
pub(super) struct LoopState {
    pub history: Arc<Vec<Message>>,
    /// Messages of the history that are the run's input.
    pub input_len: usize,
    pub progress: Progress,
    /// The tool sets' catalog, and the one the run offers (tool search's).
    pub base: Arc<ToolCatalog>,
    pub catalog: Arc<ToolCatalog>,
    /// Whether the history was compacted (the result then carries it whole).
    pub compacted: bool,
    /// The budget made the next step the concluding one.
    pub conclude_next: bool,
}

impl LoopState {
    /// Add a message the run made to the history.
    pub fn add(&mut self, message: Message) {
        Arc::make_mut(&mut self.history).push(message.clone());
        self.progress.new_messages.push(message);
    }
}

/// The tool message answering a step's calls.
pub(super) fn tool_message(results: Vec<ToolResult>) -> Message {
    Message::new(
        Role::Tool,
        results.into_iter().map(ContentPart::ToolResult).collect(),
    )
}

impl Run {
    /// Run to the end; `deliver` gets the result just before the
    /// `finished` event goes out.
    pub async fn drive(&self, start: Start, deliver: impl FnOnce(AgentResult)) {
        let (mut lp, mut policies, resumed) = self.begin(start).await;
        let ending = 'run: {
            let opened = match resumed {
                Some((paused, decisions)) => self.reopen(&mut lp, paused, &decisions).await,
                None => policies.open(self, &mut lp).await,
            };
            if let Flow::End(end) = opened {
                break 'run end;
            }
            loop {
                let mut prepared = match self.prepare(&mut lp, &mut policies).await {
                    Ok(prepared) => prepared,
                    Err(end) => break 'run end,
                };
                let output = match self.call(&mut lp, &mut policies, &mut prepared).await {
                    Ok(output) => output,
                    Err(Next::End(end)) => break 'run end,
                    Err(Next::Retry) => continue,
                };
                let step = prepared.step;
                let judged = match self.judge(&mut lp, &mut policies, &step, &output).await {
                    Ok(judged) => judged,
                    Err(Next::End(end)) => break 'run end,
                    Err(Next::Retry) => continue,
                };
                let results = match self
                    .execute(&mut lp, &mut policies, &step, &output, &judged)
                    .await
                {
                    Ok(results) => results,
                    Err(end) => break 'run end,
                };
                if let Some(end) = self.settle(&mut lp, &mut policies, &step, judged, results) {
                    break 'run end;
                }
            }
        };
        self.finish(lp, &policies, ending, deliver).await;
    }

    /// `run_started` and the tools announced; the loop's state and
    /// policies; the paused step or plan of a resumed run.
    async fn begin(&self, start: Start) -> (LoopState, Policies, Option<(Paused, SharedDecisions)>) {
        let mut progress = Progress::default();
        let (history, input_len, resumed) = match start {
            Start::Fresh(input) => {
                let len = input.len();
                (input, len, None)
            }
            Start::Resume { state, decisions } => {
                let state = *state;
                progress.new_messages = state.messages.get(state.input_len..).unwrap_or_default().to_vec();
                progress.steps = state.steps;
                progress.usage = state.usage;
                self.accountant.resume_guards(state.guardrails.clone());
                self.scope.add_child_usage(state.children_usage);
                let resumed = Resumed {
                    paused: state.paused,
                    decisions,
                    compacted: state.compacted,
                    conclude_next: state.conclude_next,
                    retries_left: state.output_retries_left,
                };
                (state.messages, state.input_len, Some(resumed))
            }
        };
        // Listing tools may wait on a server; a cancelled run does not. The
        // empty catalog is never used: the loop sees the cancellation first.
        let base = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Arc::new(ToolCatalog::empty()),
            catalog = self.tools.catalog() => catalog,
        };
        let (policies, catalog) = self.policies(&base, resumed.as_ref().and_then(|r| r.retries_left));
        self.announce(&base, policies.output_mode()).await;
        let lp = LoopState {
            history: Arc::new(history),
            input_len,
            progress,
            base,
            catalog,
            compacted: resumed.as_ref().is_some_and(|r| r.compacted),
            conclude_next: resumed.as_ref().is_some_and(|r| r.conclude_next),
        };
        (lp, policies, resumed.map(|r| (r.paused, r.decisions)))
    }

    /// The run's policies, in the order they are asked, and the catalog
    /// the run offers (tool search's).
    fn policies(&self, base: &Arc<ToolCatalog>, retries_left: Option<u32>) -> (Policies, Arc<ToolCatalog>) {
        let options = &self.options;
        let mut search = options
            .tool_search
            .clone()
            .map(|config| super::search::SearchPolicy::new(config, options.budget.clone()));
        let catalog = search
            .as_mut()
            .and_then(|s| super::policy::Policy::catalog(s, base))
            .unwrap_or_else(|| base.clone());
        let guard = options
            .budget
            .clone()
            .map(|budget| super::guard::Guard::new(budget, self.model.provider(), self.model.model_id()));
        let budget = super::compact::BudgetPolicy::new(guard, options.compaction.clone());
        let structured = options.output.clone().map(|spec| {
            let has_tools = !catalog.tools().is_empty();
            let mut s = super::structured::Structured::new(
                spec,
                self.model.as_ref(),
                has_tools,
                options.max_output_retries,
            );
            if let Some(left) = retries_left {
                s.set_retries_left(left);
            }
            s
        });
        let preflight = options.preflight.clone().map(super::plan::PreflightPolicy);
        let guardrails = options
            .guardrails
            .clone()
            .map(super::guardrail::GuardrailPolicy::new);
        let list: Vec<Option<Box<dyn super::policy::Policy>>> = vec![
            guardrails.map(|p| Box::new(p) as _),
            search.map(|p| Box::new(p) as _),
            Some(Box::new(budget)),
            structured.map(|p| Box::new(p) as _),
            preflight.map(|p| Box::new(p) as _),
        ];
        (Policies::new(list), catalog)
    }

    /// The end: the state of a paused run, `awaiting_approval`, `output`,
    /// the result delivered, then `finished`.
    async fn finish(
        &self,
        lp: LoopState,
        policies: &Policies,
        ending: Ending,
        deliver: impl FnOnce(AgentResult),
    ) {
        self.journal.finish(&self.emit).await;
        debug_assert!(lp.compacted || lp.history.len() == lp.input_len + lp.progress.new_messages.len());
        let outcome = self.outcome(ending, &lp, policies);
        let LoopState {
            history,
            mut progress,
            compacted,
            ..
        } = lp;
        if let Outcome::AwaitingApproval { state } = &outcome {
            self.tell_paused(state).await;
            // The history is in the state: a conversation must not keep
            // calls without their results.
            progress.new_messages.clear();
        }
        if let Outcome::Tripped { trip } = &outcome {
            self.tell(AgentEvent::GuardrailTripped { trip: trip.clone() })
                .await;
        }
        if let Some(value) = &progress.output {
            self.tell(AgentEvent::Output { value: value.clone() }).await;
        }
        let mut tree_usage = progress.usage;
        tree_usage += self.scope.children_usage();
        let exit = outcome.exit();
        let finished = AgentEvent::Finished {
            exit,
            text: progress.text.clone(),
            usage: progress.usage,
            tree_usage,
            steps: progress.steps,
            error: outcome.message(),
        };
        crate::telemetry::record_run(&tracing::Span::current(), &progress.usage, failure_kind(exit));
        let paused = matches!(outcome, Outcome::AwaitingApproval { .. });
        deliver(AgentResult {
            outcome,
            text: progress.text,
            output: progress.output,
            messages: progress.new_messages,
            history: (compacted && !paused).then(|| history.to_vec()),
            usage: progress.usage,
            tree_usage,
            steps: progress.summaries,
            guardrails: self.accountant.guard_entries(),
        });
        self.tell(finished).await;
    }

    /// The outcome of `ending` (a paused run's state built here).
    fn outcome(&self, ending: Ending, lp: &LoopState, policies: &Policies) -> Outcome {
        match ending {
            Ending::Answered { concluding } => match (concluding, lp.conclude_next) {
                (_, true) => Outcome::TokenLimit,
                (true, false) => Outcome::MaxSteps,
                (false, false) => Outcome::Answered,
            },
            Ending::Stopped => Outcome::Stopped,
            Ending::Cancelled => Outcome::Cancelled {
                reason: self.stopped_by.get().cloned(),
            },
            Ending::ModelFailed(error) => Outcome::ModelFailed { error },
            Ending::BudgetExhausted(reason) => Outcome::BudgetExhausted { reason },
            Ending::TokenLimit => Outcome::TokenLimit,
            Ending::OutputInvalid(error) => Outcome::OutputInvalid { error },
            Ending::PlanRejected(reason) => Outcome::PlanRejected { reason },
            Ending::Tripped(trip) => Outcome::Tripped { trip },
            Ending::Paused(paused) => Outcome::AwaitingApproval {
                state: Box::new(self.state(super::paused::PauseAt {
                    history: &lp.history,
                    input_len: lp.input_len,
                    steps: lp.progress.steps,
                    usage: lp.progress.usage,
                    output_retries_left: policies.retries_left(),
                    conclude_next: lp.conclude_next,
                    compacted: lp.compacted,
                    paused,
                })),
            },
        }
    }

    /// `run_started`, then `mcp_connected` and warnings about the tools.
    async fn announce(&self, catalog: &ToolCatalog, output_mode: Option<crate::output::OutputMode>) {
        self.tell(AgentEvent::RunStarted {
            provider: self.model.provider().to_owned(),
            model: self.model.model_id().to_owned(),
            tools: catalog.names().into_iter().map(str::to_owned).collect(),
            output_mode,
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

    pub(super) async fn warn_all(&self, warnings: &[String]) {
        for message in warnings {
            tracing::warn!(target: "loopwright_core", "{message}");
            self.tell(AgentEvent::Warning {
                message: message.clone(),
            })
            .await;
        }
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
        ExitReason::Tripped => Some("tripped"),
    }
}
