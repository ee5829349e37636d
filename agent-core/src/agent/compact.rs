//! The context budget as a policy of the loop ([`BudgetPolicy`]): before
//! each step it admits the request (compacting first, or making the step
//! the concluding one, or stopping the run), it asks the provider to
//! compact on its side above the threshold, it gates the step's tool
//! results, and it says when the provider compacted. Compaction itself:
//! the strategies in order, the summarising call, and the `compacted`
//! events (see [`crate::compaction`] for the strategies and their
//! invariants).
//!
//! Invariant: the history is replaced only by one the strategies built
//! from it (whole steps kept or replaced, every call answered once) that is
//! smaller; the guard forgets its per-position counts whenever it is.

use std::sync::Arc;

use async_trait::async_trait;

use super::drive::{Ending, LoopState, Run};
use super::events::AgentEvent;
use super::guard::Guard;
use super::guard::ResultsGate;
use super::options::CONCLUDE_INSTRUCTION;
use super::policy::{Flow, Policy, Step};
use super::step::StepFailure;
use super::step::StepOutput;
use crate::compaction::{Compaction, CompactionStrategy, clear, summarize};
use loopwright_types::Message;
use loopwright_types::Usage;
use loopwright_types::tool::ToolDefinition;
use loopwright_types::util::error_chain;
use loopwright_types::{LanguageModel, ModelRequest, ToolChoice};

/// Characters per token assumed when cutting the transcript into chunks
/// (fewer than the usual four: a chunk must fit whatever the tokenizer).
const CHUNK_CHARS_PER_TOKEN: u64 = 3;
/// Share of the budget's limit one chunk of transcript may take (the rest:
/// the instructions and the summary so far).
const CHUNK_SHARE: f64 = 0.6;
/// Smallest transcript chunk, in characters.
const MIN_CHUNK_CHARS: u64 = 4_000;

/// What the budget lets the next step do.
pub(super) enum Admit {
    /// Go on as planned.
    Go { compacted: bool },
    /// Go on, but as the concluding step.
    Conclude { compacted: bool },
    /// Stop: the history does not fit (exit `token_limit`), even after a
    /// compaction that may have replaced it (then the result carries it).
    Stop { compacted: bool },
}

/// The next step as the budget sees it.
pub(super) struct Admission<'a> {
    pub system: Option<&'a str>,
    pub tools: &'a Arc<Vec<ToolDefinition>>,
    pub concluding: bool,
}

/// What the next request holds besides the history.
pub(super) struct NextRequest<'a> {
    pub system: Option<&'a str>,
    pub tools: &'a Arc<Vec<ToolDefinition>>,
    /// Messages sent after the history (the concluding instruction).
    pub extra: &'a [Message],
}

/// The context budget (when the run has one) and compaction, for one run.
pub(super) struct BudgetPolicy {
    guard: Option<Guard>,
    compaction: Option<Compaction>,
}

impl BudgetPolicy {
    pub fn new(guard: Option<Guard>, compaction: Option<Compaction>) -> Self {
        Self { guard, compaction }
    }
}

#[async_trait]
impl Policy for BudgetPolicy {
    async fn admit(&mut self, run: &Run, lp: &mut LoopState, step: &mut Step) -> Flow {
        let Some(guard) = self.guard.as_mut() else {
            return Flow::Go;
        };
        let at = Admission {
            system: step.settings.system.as_deref(),
            tools: &step.tools.tools,
            concluding: step.concluding,
        };
        match run
            .admit(guard, at, &mut lp.history, &mut lp.progress.usage)
            .await
        {
            Admit::Go { compacted } => lp.compacted |= compacted,
            Admit::Conclude { compacted } => {
                lp.compacted |= compacted;
                step.concluding = true;
                lp.conclude_next = true;
            }
            Admit::Stop { compacted } => {
                lp.compacted |= compacted;
                return Flow::End(Ending::TokenLimit);
            }
        }
        Flow::Go
    }

    /// Above the compaction threshold (or target) of the limit the provider
    /// may compact on its side, when compaction includes the provider's own.
    fn shape(&self, _run: &Run, _step: &Step, request: &mut loopwright_types::ModelRequest) {
        let Some(compaction) = self.compaction.as_ref().filter(|c| c.uses_provider()) else {
            return;
        };
        let share = compaction.threshold.unwrap_or(compaction.target);
        request.compact_above = self.guard.as_ref().map(|g| (share * g.limit() as f64) as u64);
    }

    async fn answered(&mut self, run: &Run, lp: &LoopState, output: &StepOutput) {
        if let Some(cleared) = output.provider_compacted {
            // Boxed for the reason `Run::admit` boxes compacting.
            Box::pin(run.provider_compacted(self.guard.as_mut(), cleared, output.usage, &lp.history)).await;
        }
    }

    /// With compaction the next step makes room instead; the concluding
    /// step runs no tool.
    fn results_gate(&mut self, _run: &Run, lp: &LoopState, step: &Step) -> Option<ResultsGate> {
        if step.concluding || self.compaction.is_some() {
            return None;
        }
        let guard = self.guard.as_mut()?;
        let system = step.settings.system.as_deref();
        let projected = guard.project(system, &step.tools.tools, &lp.history, &[]);
        Some(guard.results_gate(projected))
    }

    fn executed(&mut self, lp: &mut LoopState, over_budget: bool) {
        if over_budget {
            if let Some(guard) = &self.guard {
                guard.record("tool_result", "result_replaced");
            }
            lp.conclude_next = true;
        }
    }
}

impl Run {
    /// Whether the next step fits the budget, compacting first when the
    /// run compacts; the summarising calls' usage is added to `usage`.
    pub(super) async fn admit(
        &self,
        guard: &mut Guard,
        at: Admission<'_>,
        history: &mut Arc<Vec<Message>>,
        usage: &mut Usage,
    ) -> Admit {
        let conclude = [Message::user(CONCLUDE_INSTRUCTION)];
        let extra: &[Message] = if at.concluding { &conclude } else { &[] };
        let mut compacted = false;
        if let Some(config) = &self.options.compaction {
            let next = NextRequest {
                system: at.system,
                tools: at.tools,
                extra,
            };
            // Boxed: compacting is a model call, and its future inline
            // would make every step's admission as large (and moved whole).
            compacted = Box::pin(self.compact(config, guard, &next, history, usage)).await;
        }
        if guard.project(at.system, at.tools, history, extra) <= guard.limit() {
            return Admit::Go { compacted };
        }
        if !at.concluding && guard.project(at.system, at.tools, history, &conclude) <= guard.limit() {
            guard.record("step", "forced_final");
            return Admit::Conclude { compacted };
        }
        guard.record("step", "token_limit");
        Admit::Stop { compacted }
    }

    /// Say that the provider compacted on its side: by the tokens it
    /// cleared, or (a compaction item) by the projection of what it reads
    /// from now on against what the step sent.
    pub(super) async fn provider_compacted(
        &self,
        guard: Option<&mut Guard>,
        cleared: Option<u64>,
        usage: Usage,
        history: &[Message],
    ) {
        let sent = usage.input_tokens.unwrap_or(0);
        let (before, after) = match (cleared, guard) {
            (Some(cleared), _) => (sent + cleared, sent),
            (None, Some(guard)) => {
                let none = Arc::default();
                (sent, guard.project(None, &none, history, &[]))
            }
            (None, None) => {
                let start = crate::compaction::provider_start(history, self.model.provider());
                let counter = loopwright_types::budget::CharEstimate;
                let after = history[start..]
                    .iter()
                    .map(|m| super::guard::message_tokens(&counter, m))
                    .sum();
                (sent, after)
            }
        };
        self.tell(AgentEvent::Compacted {
            strategy: CompactionStrategy::Provider.name().to_owned(),
            tokens_before: before,
            tokens_after: after,
        })
        .await;
    }

    /// Compact `history` when the next request would not fit (or is over
    /// the threshold); true when it changed. The summarising calls' usage
    /// is added to `usage`.
    pub(super) async fn compact(
        &self,
        config: &Compaction,
        guard: &mut Guard,
        next: &NextRequest<'_>,
        history: &mut Arc<Vec<Message>>,
        usage: &mut Usage,
    ) -> bool {
        let limit = guard.limit();
        let projected = guard.project(next.system, next.tools, history, next.extra);
        let over_threshold = config
            .threshold
            .is_some_and(|share| projected as f64 > share * limit as f64);
        if projected <= limit && !over_threshold {
            return false;
        }
        let target = (config.target * limit as f64) as u64;
        // Over the threshold only, a summary waits until it would replace
        // as many steps as are kept (else each step would pay for one).
        let min_steps = if projected > limit { 1 } else { config.keep_turns };
        let mut changed = false;
        // The configured turns kept first; one turn when that is not enough;
        // as a last resort, the results of the latest step too.
        let mut passes = vec![config.keep_turns];
        if config.keep_turns > 1 {
            passes.push(1);
        }
        for keep_turns in passes {
            for strategy in &config.strategies {
                let now = guard.project(next.system, next.tools, history, next.extra);
                if now <= target {
                    return changed;
                }
                let compacted = match strategy {
                    CompactionStrategy::ClearToolResults { keep_lines } => {
                        let units = crate::compaction::units::split(history);
                        let tail = crate::compaction::units::tail_start(&units, keep_turns);
                        clear::clear_results(history, tail, *keep_lines)
                    }
                    CompactionStrategy::Summarize { model, max_tokens } => {
                        let model = model.as_ref().unwrap_or(&self.model);
                        let region = summarize::region(history, keep_turns, min_steps);
                        match region {
                            Some(region) => {
                                self.summarize(history, region, model, *max_tokens, limit, usage)
                                    .await
                            }
                            None => None,
                        }
                    }
                    _ => None,
                };
                if let Some(compacted) = compacted {
                    changed |= self
                        .replace(guard, next, history, compacted, strategy.name(), now)
                        .await;
                }
            }
        }
        let now = guard.project(next.system, next.tools, history, next.extra);
        if now > limit
            && let Some(keep_lines) = config.strategies.iter().find_map(|s| match s {
                CompactionStrategy::ClearToolResults { keep_lines } => Some(*keep_lines),
                _ => None,
            })
            && let Some(compacted) = clear::clear_results(history, history.len(), keep_lines)
        {
            changed |= self
                .replace(guard, next, history, compacted, "clear_tool_results", now)
                .await;
        }
        changed
    }

    /// Put `compacted` in place of `history` and say so; refused (with a
    /// warning) when it is not smaller.
    async fn replace(
        &self,
        guard: &mut Guard,
        next: &NextRequest<'_>,
        history: &mut Arc<Vec<Message>>,
        compacted: Vec<Message>,
        strategy: &str,
        before: u64,
    ) -> bool {
        let kept = std::mem::replace(history, Arc::new(compacted));
        guard.forget_history();
        let after = guard.project(next.system, next.tools, history, next.extra);
        if after >= before {
            // A summary longer than the turns it replaces frees nothing.
            *history = kept;
            guard.forget_history();
            guard.record("compaction", "not_smaller");
            self.warn(&format!(
                "compaction ({strategy}) failed: the result ({after} tokens) is not smaller than the history it \
                 replaces ({before} tokens); the turns were kept"
            ))
            .await;
            return false;
        }
        guard.record("compaction", "compacted");
        self.tell(AgentEvent::Compacted {
            strategy: strategy.to_owned(),
            tokens_before: before,
            tokens_after: after,
        })
        .await;
        true
    }

    /// The history with `region` summarised by `model`; `None` when the
    /// call failed (a warning says why).
    async fn summarize(
        &self,
        history: &[Message],
        region: summarize::Region,
        model: &Arc<dyn LanguageModel>,
        max_tokens: u32,
        limit: u64,
        usage: &mut Usage,
    ) -> Option<Vec<Message>> {
        let chunk_tokens = (CHUNK_SHARE * limit as f64) as u64;
        let chunk_chars = (chunk_tokens * CHUNK_CHARS_PER_TOKEN).max(MIN_CHUNK_CHARS) as usize;
        let mut summary: Option<String> = None;
        for chunk in summarize::transcript(history, &region, chunk_chars) {
            let mut request = ModelRequest::default();
            request.system = Some(summarize::SUMMARY_SYSTEM.to_owned());
            request.messages = Arc::new(vec![Message::user(summarize::prompt(summary.as_deref(), &chunk))]);
            request.tool_choice = ToolChoice::None;
            request.max_output_tokens = Some(max_tokens);
            request.cancellation = self.cancel.child_token();
            match self
                .call_model_on(model.as_ref(), request, super::step::Show::Quiet, None)
                .await
            {
                Ok(output) if !output.text.trim().is_empty() => {
                    *usage += output.usage;
                    summary = Some(output.text);
                }
                Ok(output) => {
                    *usage += output.usage;
                    self.warn("compaction: the summarising call answered nothing; the turns were kept")
                        .await;
                    return None;
                }
                Err(failure) => {
                    let why = match failure {
                        StepFailure::Model(e) => error_chain(&e),
                        StepFailure::Budget(why) => why,
                        StepFailure::Cancelled | StepFailure::Detached | StepFailure::Tripped(_) => {
                            return None;
                        }
                    };
                    self.warn(&format!(
                        "compaction: the summarising call failed ({why}); the turns were kept"
                    ))
                    .await;
                    return None;
                }
            }
        }
        Some(summarize::apply(history, &region, summary.as_deref()?))
    }

    async fn warn(&self, message: &str) {
        tracing::warn!(target: "loopwright_core", "{message}");
        self.tell(AgentEvent::Warning {
            message: message.to_owned(),
        })
        .await;
    }
}
