//! The seam the loop's phases ask: every policy of a run (tool search, the
//! context budget with its compaction, structured output, the pre-flight
//! plan) is a [`Policy`], asked at fixed points of the phases, in a fixed
//! order ([`Policies::new`]). Approvals are asked by each tool call's gate
//! in the executor (a call waits for its own decision, not its step).
//!
//! Invariants: a policy changes the run only through what a hook hands it
//! (the history while a step is admitted, the step's request, results for
//! calls it answers itself); a hook that ends the run says how
//! ([`Flow::End`]); the order is the one the hooks' documentation gives, so
//! a run with the same options asks the same policies the same questions.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::tool::{ToolDefinition, ToolOutput};
use loopwright_types::toolset::ToolCatalog;
use loopwright_types::{Message, ModelRequest};

use super::drive::{Ending, LoopState, Run};
use super::guard::ResultsGate;
use super::guardrail::GuardedCalls;
use super::hold::StepGuard;
use super::hooks::StepSettings;
use super::step::StepOutput;
use super::structured::Verdict;
use crate::guardrail::Guardrails;
use crate::output::{OutputError, OutputMode};
use loopwright_types::ToolCall;

/// Whether the run goes on after a hook.
pub(super) enum Flow {
    Go,
    End(Ending),
}

/// The tools of one step: those declared, and those tool search holds back
/// (sent as deferred tools where the provider can load them).
#[derive(Clone)]
pub(super) struct StepTools {
    pub tools: Arc<Vec<ToolDefinition>>,
    pub deferred: Arc<Vec<ToolDefinition>>,
}

impl StepTools {
    /// Every tool of `catalog`, none deferred.
    pub fn all(catalog: &ToolCatalog) -> Self {
        Self {
            tools: catalog.definitions().clone(),
            deferred: Arc::default(),
        }
    }
}

/// A step as it is prepared.
pub(super) struct Step {
    /// 1-based.
    pub number: u32,
    /// The concluding call: tools withheld, the run ends after it.
    pub concluding: bool,
    /// What the request carries; the `prepare_step` hook may change it.
    pub settings: StepSettings,
    pub tools: StepTools,
    /// Exposed names offered this step, when the hook narrowed them.
    pub offered: Option<HashSet<String>>,
}

/// What a rejected final answer leads to.
pub(super) enum Rejection {
    /// The model tries again, told what to fix by this message (`None`:
    /// the final-answer call's result told it).
    Retry(Option<Message>),
    /// No retry is left.
    End(OutputError),
}

/// One policy of a run. Each hook has a default that does nothing; the
/// loop asks every policy at each point, in [`Policies`]' order.
#[async_trait]
pub(super) trait Policy: Send + Sync {
    /// Prepare: the catalog the run offers, from its tool sets' own (tool
    /// search puts its search tool in place of most tools).
    fn catalog(&mut self, _base: &Arc<ToolCatalog>) -> Option<Arc<ToolCatalog>> {
        None
    }

    /// Before the first step of a run that starts fresh (the pre-flight
    /// plan): the run may end here.
    async fn open(&mut self, _run: &Run, _lp: &mut LoopState) -> Flow {
        Flow::Go
    }

    /// Prepare: the tools this step offers, from the catalog and the
    /// history (tool search's offer).
    fn offer(&mut self, _catalog: &Arc<ToolCatalog>, _history: &[Message]) -> Option<StepTools> {
        None
    }

    /// Prepare: whether the step goes ahead. It may compact the history,
    /// make the step the concluding one, or end the run (the context
    /// budget).
    async fn admit(&mut self, _run: &Run, _lp: &mut LoopState, _step: &mut Step) -> Flow {
        Flow::Go
    }

    /// Prepare: the request as it goes out.
    fn shape(&self, _run: &Run, _step: &Step, _request: &mut ModelRequest) {}

    /// Call: the guardrails of the step's stream (its held output, the
    /// parallel input gate).
    fn stream_guard(&mut self, _lp: &LoopState, _step: &Step) -> Option<StepGuard> {
        None
    }

    /// Call: an output guard sends the model back, telling it `feedback`
    /// (in the next request only).
    fn retry_answer(&mut self, _feedback: &str) {}

    /// Execute: the step's calls as the argument guards leave them.
    async fn guard_calls(
        &mut self,
        _run: &Run,
        _lp: &LoopState,
        _step: u32,
        _calls: &[ToolCall],
    ) -> Option<GuardedCalls> {
        None
    }

    /// Execute: the guards of the calls' results.
    fn result_guards(&self) -> Option<Arc<Guardrails>> {
        None
    }

    /// Call: the model answered (the answer is in the history).
    async fn answered(&mut self, _run: &Run, _lp: &LoopState, _output: &StepOutput) {}

    /// Judge: whether the answer is final, and the results of the calls
    /// the policy answers itself (the final-answer tool).
    async fn judge(
        &mut self,
        _output: &StepOutput,
        _answered: &mut HashMap<String, ToolOutput>,
    ) -> Option<Verdict> {
        None
    }

    /// Judge and settle: what a rejected final answer leads to; `told`
    /// when the model was told why in a call's result already.
    fn rejected(&mut self, _error: &OutputError, _told: bool) -> Option<Rejection> {
        None
    }

    /// Execute: a gate admitting this step's tool results against the
    /// context window.
    fn results_gate(&mut self, _run: &Run, _lp: &LoopState, _step: &Step) -> Option<ResultsGate> {
        None
    }

    /// Settle: the step's calls ran; `over_budget` when a result was
    /// replaced because the window would overflow.
    fn executed(&mut self, _lp: &mut LoopState, _over_budget: bool) {}

    /// Settle: whether a concluding step goes on (its final answer comes as
    /// a tool call).
    fn continues_concluding(&self) -> bool {
        false
    }

    /// What a paused run's state keeps of the policy: the output retries
    /// left.
    fn retries_left(&self) -> Option<u32> {
        None
    }

    /// The structured output mode the run uses (native or tool).
    fn output_mode(&self) -> Option<OutputMode> {
        None
    }
}

/// A run's policies, in the order they are asked.
pub(super) struct Policies(Vec<Box<dyn Policy>>);

impl Policies {
    /// The guardrails (a blocked input starts nothing), then tool search,
    /// then the context budget (which needs the step's tools to count
    /// them), then structured output (which adds its tool to the request
    /// last), then the pre-flight plan.
    pub fn new(list: Vec<Option<Box<dyn Policy>>>) -> Self {
        Self(list.into_iter().flatten().collect())
    }

    /// The structured output mode the run uses, if it has an output schema.
    pub fn output_mode(&self) -> Option<OutputMode> {
        self.0.iter().find_map(|p| p.output_mode())
    }

    /// The tool whose calls no event shows (the final-answer tool, in tool
    /// mode: the answer is the `output` event).
    pub fn hidden_tool(&self) -> Option<&'static str> {
        (self.output_mode() == Some(OutputMode::Tool)).then_some(crate::output::FINAL_ANSWER_TOOL)
    }

    pub fn catalog(&mut self, base: &Arc<ToolCatalog>) -> Arc<ToolCatalog> {
        let mut catalog = base.clone();
        for policy in &mut self.0 {
            if let Some(swapped) = policy.catalog(&catalog) {
                catalog = swapped;
            }
        }
        catalog
    }

    pub async fn open(&mut self, run: &Run, lp: &mut LoopState) -> Flow {
        for policy in &mut self.0 {
            if let Flow::End(end) = policy.open(run, lp).await {
                return Flow::End(end);
            }
        }
        Flow::Go
    }

    pub fn offer(&mut self, catalog: &Arc<ToolCatalog>, history: &[Message]) -> StepTools {
        let mut tools = None;
        for policy in &mut self.0 {
            tools = policy.offer(catalog, history).or(tools);
        }
        tools.unwrap_or_else(|| StepTools::all(catalog))
    }

    pub async fn admit(&mut self, run: &Run, lp: &mut LoopState, step: &mut Step) -> Flow {
        for policy in &mut self.0 {
            if let Flow::End(end) = policy.admit(run, lp, step).await {
                return Flow::End(end);
            }
        }
        Flow::Go
    }

    pub fn shape(&self, run: &Run, step: &Step, request: &mut ModelRequest) {
        for policy in &self.0 {
            policy.shape(run, step, request);
        }
    }

    pub fn stream_guard(&mut self, lp: &LoopState, step: &Step) -> Option<StepGuard> {
        self.0.iter_mut().find_map(|p| p.stream_guard(lp, step))
    }

    pub fn retry_answer(&mut self, feedback: &str) {
        for policy in &mut self.0 {
            policy.retry_answer(feedback);
        }
    }

    pub async fn guard_calls(
        &mut self,
        run: &Run,
        lp: &LoopState,
        step: u32,
        calls: &[ToolCall],
    ) -> Option<GuardedCalls> {
        for policy in &mut self.0 {
            if let Some(guarded) = policy.guard_calls(run, lp, step, calls).await {
                return Some(guarded);
            }
        }
        None
    }

    pub fn result_guards(&self) -> Option<Arc<Guardrails>> {
        self.0.iter().find_map(|p| p.result_guards())
    }

    pub async fn answered(&mut self, run: &Run, lp: &LoopState, output: &StepOutput) {
        for policy in &mut self.0 {
            policy.answered(run, lp, output).await;
        }
    }

    pub async fn judge(
        &mut self,
        output: &StepOutput,
        answered: &mut HashMap<String, ToolOutput>,
    ) -> Verdict {
        for policy in &mut self.0 {
            if let Some(verdict) = policy.judge(output, answered).await {
                return verdict;
            }
        }
        Verdict::NotFinal
    }

    /// What a rejected answer leads to; the run ends with it when no
    /// policy retries (only a run with an output schema rejects one).
    pub fn rejected(&mut self, error: OutputError, told: bool) -> Rejection {
        for policy in &mut self.0 {
            if let Some(rejection) = policy.rejected(&error, told) {
                return rejection;
            }
        }
        Rejection::End(error)
    }

    pub fn results_gate(&mut self, run: &Run, lp: &LoopState, step: &Step) -> Option<ResultsGate> {
        self.0.iter_mut().find_map(|p| p.results_gate(run, lp, step))
    }

    pub fn executed(&mut self, lp: &mut LoopState, over_budget: bool) {
        for policy in &mut self.0 {
            policy.executed(lp, over_budget);
        }
    }

    pub fn continues_concluding(&self) -> bool {
        self.0.iter().any(|p| p.continues_concluding())
    }

    pub fn retries_left(&self) -> Option<u32> {
        self.0.iter().find_map(|p| p.retries_left())
    }
}
