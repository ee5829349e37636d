//! Run options and their defaults.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::hooks::{Hooks, PrepareStep, StepContext, StepSettings, StepSummary, ToolResultContext};
use crate::accounting::AccountingSink;
use crate::approval::Approvals;
use crate::compaction::Compaction;
use crate::output::{DEFAULT_MAX_OUTPUT_RETRIES, OutputSpec};
use crate::preflight::Preflight;
use crate::tool_search::ToolSearch;
use loopwright_types::ReasoningConfig;
use loopwright_types::budget::ContextBudget;
use loopwright_types::tool::ToolOutput;
use loopwright_types::{MediaFallback, ToolChoice};

/// Lays `theirs` over `mine`: an option field counts as set when it is
/// `Some` (`set:`) or differs from its default (`changed:`); lists add up
/// (`added:`); each hook counts when it is `Some`. The destructuring names
/// every field of both structs, so a field added to [`AgentOptions`] or
/// [`Hooks`] and not listed here does not compile.
macro_rules! merge_fields {
    ($mine:ident, $theirs:ident, $defaults:ident;
     set: $($set:ident),*; changed: $($changed:ident),*; added: $($added:ident),*;
     hooks: $($hook:ident),*) => {
        let AgentOptions { $($set,)* $($changed,)* $($added,)* hooks } = $theirs;
        let Hooks { $($hook,)* } = hooks;
        $(if $set.is_some() { $mine.$set = $set; })*
        $(if $changed != $defaults.$changed { $mine.$changed = $changed; })*
        $($mine.$added.extend($added);)*
        $(if $hook.is_some() { $mine.hooks.$hook = $hook; })*
    };
}

/// Steps that may call tools before the run is made to conclude: enough for
/// real multi-tool tasks, bounded so a looping model cannot run forever.
pub const DEFAULT_MAX_STEPS: u32 = 30;
/// Per tool call: long enough for a slow search or build step, short enough
/// that a hung server does not stall the run.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Tool calls running at once: parallel enough for fan-out steps, bounded so
/// 100 calls do not open 100 connections.
pub const DEFAULT_TOOL_CONCURRENCY: usize = 16;
pub use loopwright_types::DEFAULT_MAX_TOOL_OUTPUT_BYTES;
/// How deep sub-agents may nest below the agent the application runs (a
/// coordinator, its sub-agents, theirs): enough for real delegation,
/// bounded so agents that call each other cannot recurse without end.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// The name of an agent not given one (in accounting entries and paths).
pub const DEFAULT_AGENT_NAME: &str = "agent";
/// Told to the model on the concluding call, when tools are withheld.
pub const CONCLUDE_INSTRUCTION: &str = "You have reached the maximum number of steps for this task, and tools \
are no longer available. Do not call any tool. Answer now with what you have found so far, and say what is \
left undone.";

/// How a run behaves. Built with chained setters from the defaults above;
/// [`AgentBuilder`](crate::AgentBuilder) has the same setters.
///
/// ```
/// use loopwright_core::AgentOptions;
/// let opts = AgentOptions::default()
///     .system("You are terse.")
///     .max_steps(5)
///     .tool_timeout(std::time::Duration::from_secs(10));
/// assert_eq!(opts.max_steps, 5);
/// assert_eq!(opts.tool_concurrency, loopwright_core::agent::DEFAULT_TOOL_CONCURRENCY);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct AgentOptions {
    /// The agent's name: its segment of agent paths (`coordinator/researcher`)
    /// in accounting entries, metrics and `sub_agent` events, and the default
    /// name of its [`AgentTool`](crate::AgentTool); `None` is
    /// [`DEFAULT_AGENT_NAME`].
    pub name: Option<String>,
    /// How deep sub-agents may nest below a run of this agent; see
    /// [`AgentOptions::max_depth`].
    pub max_depth: u32,
    /// The system prompt.
    pub system: Option<String>,
    /// Model calls that may use tools; see [`AgentOptions::max_steps`].
    pub max_steps: u32,
    /// Timeout of each tool call.
    pub tool_timeout: Duration,
    /// Tool calls running at once.
    pub tool_concurrency: usize,
    /// Bytes of tool output kept (head and tail).
    pub max_tool_output_bytes: usize,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit per step.
    pub max_output_tokens: Option<u32>,
    /// Tool choice on every step but the last.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools per step.
    pub parallel_tool_calls: bool,
    /// Approval of tool calls; `None` runs every call without asking.
    pub approvals: Option<Approvals>,
    /// A plan proposed and approved before the first tool call; see
    /// [`AgentOptions::preflight`].
    pub preflight: Option<Preflight>,
    /// Where accounting entries go besides `accounting` events.
    pub accounting: Option<Arc<dyn AccountingSink>>,
    /// The model's context-window budget; `None` leaves requests unchecked.
    pub budget: Option<ContextBudget>,
    /// Model calls the whole run tree may make (this run and every
    /// sub-agent run below it); see [`AgentOptions::max_model_calls`].
    pub max_model_calls: Option<u64>,
    /// Tokens (input plus output) the whole run tree may use; see
    /// [`AgentOptions::max_tree_tokens`].
    pub max_tree_tokens: Option<u64>,
    /// How long a run may go on before it is cancelled; see
    /// [`AgentOptions::run_timeout`].
    pub run_timeout: Option<Duration>,
    /// Runs are cancelled when any of these tokens is (an application-wide
    /// shutdown, a request's lifetime, a parent agent's call); cancelling a
    /// run never cancels them.
    pub cancellation: Vec<CancellationToken>,
    /// Hooks into each step: [`AgentOptions::prepare_step`],
    /// [`AgentOptions::stop_when`], [`AgentOptions::on_tool_result`].
    pub hooks: Hooks,
    /// The schema the final answer must match; see [`AgentOptions::output`].
    pub output: Option<OutputSpec>,
    /// Retries after a final answer that does not match the output schema.
    pub max_output_retries: u32,
    /// Reasoning effort (and budget) for models that reason.
    pub reasoning: Option<ReasoningConfig>,
    /// Mark the stable prefix of each request for the provider's prompt
    /// cache where it needs marking (Anthropic); on by default.
    pub prompt_caching: bool,
    /// Raw options merged into a provider's request body, keyed by
    /// provider name (`openai`, `anthropic`, `google`, `ollama`, or a
    /// configured compatible provider's name).
    pub provider_options: BTreeMap<String, Value>,
    /// How the history is compacted when it no longer fits the context
    /// window; see [`AgentOptions::compaction`]. Off by default.
    pub compaction: Option<Compaction>,
    /// Tool search over a big catalog; see [`AgentOptions::tool_search`].
    /// Off by default.
    pub tool_search: Option<ToolSearch>,
    /// What a provider does with a file or audio part of a user message
    /// it cannot take (default: fail before sending).
    pub unsupported_media: MediaFallback,
    /// The run's id and durable engine; see [`AgentOptions::durable`].
    pub durable: Option<crate::durable::DurableRun>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            name: None,
            max_depth: DEFAULT_MAX_DEPTH,
            system: None,
            max_steps: DEFAULT_MAX_STEPS,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            tool_concurrency: DEFAULT_TOOL_CONCURRENCY,
            max_tool_output_bytes: DEFAULT_MAX_TOOL_OUTPUT_BYTES,
            temperature: None,
            top_p: None,
            max_output_tokens: None,
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: true,
            approvals: None,
            preflight: None,
            accounting: None,
            budget: None,
            max_model_calls: None,
            max_tree_tokens: None,
            run_timeout: None,
            cancellation: Vec::new(),
            hooks: Hooks::default(),
            output: None,
            max_output_retries: DEFAULT_MAX_OUTPUT_RETRIES,
            reasoning: None,
            prompt_caching: true,
            provider_options: BTreeMap::new(),
            compaction: None,
            tool_search: None,
            unsupported_media: MediaFallback::Error,
            durable: None,
        }
    }
}

impl AgentOptions {
    /// Set the agent's name (see [`AgentOptions::name`]).
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().name("researcher");
    /// assert_eq!(opts.name.as_deref(), Some("researcher"));
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Set how deep sub-agents may nest below a run of this agent: a
    /// sub-agent at depth `depth` (its parent is at `depth - 1`, the run
    /// the application started at 0) may start only while `depth <= n`; a
    /// call beyond gets an error result and no model call. A sub-agent's
    /// runs use the limit of the root of their tree, not their own.
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().max_depth(1); // sub-agents, but none of their own
    /// assert_eq!(opts.max_depth, 1);
    /// assert_eq!(loopwright_core::AgentOptions::default().max_depth, loopwright_core::agent::DEFAULT_MAX_DEPTH);
    /// ```
    pub fn max_depth(mut self, n: u32) -> Self {
        self.max_depth = n;
        self
    }

    /// Set the system prompt.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Set the step limit: at most `steps` model calls may use tools (at
    /// least 1). When the model still calls tools on step `steps`, those
    /// calls run, their results go back, and one more call, without tools
    /// and told to conclude, gives the answer; the run then ends with
    /// [`ExitReason::MaxSteps`](crate::ExitReason::MaxSteps). A run thus
    /// makes at most `steps + 1` model calls. A model that answers earlier
    /// ends the run then ([`ExitReason::Completed`](crate::ExitReason::Completed)).
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().max_steps(1);
    /// // One model call with tools; if it calls any, one concluding call.
    /// assert_eq!(opts.max_steps, 1);
    /// ```
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// Set the tool timeout.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Set how many tool calls run at once (at least 1).
    pub fn tool_concurrency(mut self, n: usize) -> Self {
        self.tool_concurrency = n.max(1);
        self
    }

    /// Set the tool output cap in bytes.
    pub fn max_tool_output_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_output_bytes = bytes;
        self
    }

    /// Set the temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Set top_p.
    pub fn top_p(mut self, p: f32) -> Self {
        self.top_p = Some(p);
        self
    }

    /// Set the output token limit per step.
    pub fn max_output_tokens(mut self, n: u32) -> Self {
        self.max_output_tokens = Some(n);
        self
    }

    /// Set the tool choice (applies to every step but the concluding one).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Ask before running tool calls, as these settings say.
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().approvals(loopwright_core::Approvals::via_events());
    /// assert!(opts.approvals.is_some());
    /// ```
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// Also write accounting entries to this sink (such as a
    /// [`JsonlSink`](crate::JsonlSink)).
    pub fn accounting(mut self, sink: Arc<dyn AccountingSink>) -> Self {
        self.accounting = Some(sink);
        self
    }

    /// Guard the context window with this budget.
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().budget(loopwright_core::ContextBudget::new(128_000));
    /// assert!(opts.budget.is_some());
    /// ```
    pub fn budget(mut self, budget: ContextBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Model calls the whole run tree may make: this run's and those of
    /// every sub-agent run below it, counted together before each call
    /// (default: no limit beyond `max_steps` and `max_depth`). A call over
    /// it ends the run with [`ExitReason::BudgetExhausted`](crate::ExitReason::BudgetExhausted),
    /// the reason in [`AgentResult::stopped_by`](crate::AgentResult::stopped_by).
    /// A sub-agent's runs take from the tree's budget, never their own.
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default().max_model_calls(50);
    /// assert_eq!(opts.max_model_calls, Some(50));
    /// ```
    pub fn max_model_calls(mut self, n: u64) -> Self {
        self.max_model_calls = Some(n);
        self
    }

    /// Tokens (input plus output) the whole run tree may use, counted after
    /// each model call; once used up, the next call of any run of the tree
    /// is refused as with [`AgentOptions::max_model_calls`].
    pub fn max_tree_tokens(mut self, n: u64) -> Self {
        self.max_tree_tokens = Some(n);
        self
    }

    /// Cancel a run that has gone on this long (default: none). It ends
    /// `cancelled`, with the deadline in
    /// [`AgentResult::stopped_by`](crate::AgentResult::stopped_by) and its
    /// `finished` event's `error`; its sub-agents and tools are cancelled
    /// with it.
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = Some(timeout);
        self
    }

    /// Allow or forbid several tool calls per step.
    pub fn parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = on;
        self
    }

    /// End the run with a final answer that is JSON matching `spec`: it is
    /// validated against the schema, and an answer that does not match goes
    /// back to the model with the validator's errors, at most
    /// [`AgentOptions::max_output_retries`] times. Tools may be called on
    /// the steps before.
    ///
    /// ```
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { ok: bool, reason: String }
    /// let opts = loopwright_core::AgentOptions::default().output(loopwright_core::OutputSpec::of::<Verdict>());
    /// assert!(opts.output.is_some());
    /// ```
    pub fn output(mut self, spec: OutputSpec) -> Self {
        self.output = Some(spec);
        self
    }

    /// Propose a plan before the first tool call: one model call without
    /// tools returns a [`Plan`](crate::preflight::Plan), sent as a
    /// `plan_proposed` event and decided by the preflight's approver or
    /// the event's responder. Approved (or edited), the plan joins the
    /// conversation as a user message and the run goes on; rejected, or
    /// unanswered within the timeout, the run ends with
    /// [`ExitReason::PlanRejected`](crate::ExitReason::PlanRejected)
    /// without running any tool. Each run (each turn of a conversation)
    /// proposes its own plan.
    ///
    /// ```
    /// use loopwright_core::preflight::{PlanDecision, Preflight};
    /// let opts = loopwright_core::AgentOptions::default()
    ///     .preflight(Preflight::with_approver(|_: &loopwright_core::preflight::Plan| PlanDecision::Approve));
    /// assert!(opts.preflight.is_some());
    /// ```
    pub fn preflight(mut self, preflight: Preflight) -> Self {
        self.preflight = Some(preflight);
        self
    }

    /// Set how often a final answer that does not match the output schema
    /// is sent back to be fixed (default [`DEFAULT_MAX_OUTPUT_RETRIES`]).
    pub fn max_output_retries(mut self, retries: u32) -> Self {
        self.max_output_retries = retries;
        self
    }

    /// Set the reasoning effort (and, with a [`ReasoningConfig`], a token
    /// budget). Models that cannot reason get nothing added.
    ///
    /// ```
    /// use loopwright_core::{AgentOptions, ReasoningConfig, ReasoningEffort};
    /// let opts = AgentOptions::default().reasoning(ReasoningEffort::High);
    /// let budgeted = AgentOptions::default().reasoning(ReasoningConfig::from(ReasoningEffort::Low).budget_tokens(2_048));
    /// assert_eq!(budgeted.reasoning.unwrap().budget(), Some(2_048));
    /// # let _ = opts;
    /// ```
    pub fn reasoning(mut self, reasoning: impl Into<ReasoningConfig>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Turn prompt-cache marking on or off (on by default).
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Merge `options` (a JSON object) into `provider`'s request bodies, for
    /// what this library does not model. Keys given again replace earlier
    /// ones.
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default()
    ///     .provider_options("openai", serde_json::json!({"service_tier": "flex"}))
    ///     .provider_options("openai", serde_json::json!({"store": false}));
    /// assert_eq!(opts.provider_options["openai"], serde_json::json!({"service_tier": "flex", "store": false}));
    /// ```
    pub fn provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        loopwright_types::util::merge_provider_options(&mut self.provider_options, provider.into(), options);
        self
    }

    /// Compact the history instead of stopping when it no longer fits the
    /// budget's window (or above the compaction's threshold): old tool
    /// results cleared, older turns summarised, or the provider's own
    /// compaction, as `compaction` says (see [`crate::compaction`]). Needs
    /// a [`budget`](AgentOptions::budget). Off by default in the library;
    /// the `loopwright` command and agents built from configuration or
    /// agent files turn [`Compaction::default`] on.
    ///
    /// ```
    /// use loopwright_core::{AgentOptions, ContextBudget, compaction::Compaction};
    /// let opts = AgentOptions::default().budget(ContextBudget::new(128_000)).compaction(Compaction::default());
    /// assert!(opts.compaction.is_some());
    /// ```
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Offer a catalog above `search`'s thresholds through a
    /// `search_tools` tool (and the always-on tools) instead of whole; the
    /// tools the model finds are offered from the next step on (see
    /// [`crate::tool_search`]). Off by default in the library; the
    /// `loopwright` command and agents built from configuration or agent
    /// files turn [`ToolSearch::default`] on.
    ///
    /// ```
    /// use loopwright_core::{AgentOptions, tool_search::ToolSearch};
    /// let opts = AgentOptions::default().tool_search(ToolSearch::default().max_tools(40));
    /// assert_eq!(opts.tool_search.unwrap().max_tools, 40);
    /// ```
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.tool_search = Some(search);
        self
    }

    /// Set what a provider does with a file or audio part of a user message
    /// it cannot take: fail before sending (the default) or send its
    /// placeholder.
    ///
    /// ```
    /// use loopwright_core::{AgentOptions, MediaFallback};
    /// let opts = AgentOptions::default().unsupported_media(MediaFallback::Placeholder);
    /// assert_eq!(opts.unsupported_media, MediaFallback::Placeholder);
    /// ```
    pub fn unsupported_media(mut self, fallback: MediaFallback) -> Self {
        self.unsupported_media = fallback;
        self
    }

    /// Also cancel every run when `token` is cancelled (tokens set earlier
    /// still count; cancelling a run never cancels them).
    ///
    /// ```
    /// let shutdown = loopwright_core::CancellationToken::new();
    /// let opts = loopwright_core::AgentOptions::default().cancellation(shutdown.clone());
    /// assert_eq!(opts.cancellation.len(), 1);
    /// ```
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation.push(token);
        self
    }

    /// Before each model call, let `hook` change the request: the system
    /// text, which tools are offered (by exposed name), the tool choice and
    /// the sampling settings. On the concluding call tools stay withheld
    /// whatever the hook sets.
    ///
    /// ```
    /// use loopwright_core::{AgentOptions, ToolChoice};
    /// // Make the model use a tool on the first step only.
    /// let opts = AgentOptions::default().prepare_step(|ctx, settings| {
    ///     if ctx.step == 1 {
    ///         settings.tool_choice = ToolChoice::Required;
    ///     }
    /// });
    /// # let _ = opts;
    /// ```
    pub fn prepare_step(
        mut self,
        hook: impl Fn(&StepContext<'_>, &mut StepSettings) + Send + Sync + 'static,
    ) -> Self {
        self.hooks.prepare_step = Some(Arc::new(hook) as Arc<PrepareStep>);
        self
    }

    /// End the run after a step whose tool calls ran when `predicate`, given
    /// every step so far, says so. The run ends with
    /// [`ExitReason::Stopped`](crate::ExitReason::Stopped), its history ending
    /// with that step's tool results.
    ///
    /// ```
    /// // Stop as soon as the `submit` tool was called.
    /// let opts = loopwright_core::AgentOptions::default()
    ///     .stop_when(|steps| steps.last().is_some_and(|s| s.tool_calls.iter().any(|c| c.name == "submit")));
    /// # let _ = opts;
    /// ```
    pub fn stop_when(mut self, predicate: impl Fn(&[StepSummary]) -> bool + Send + Sync + 'static) -> Self {
        self.hooks.stop_when = Some(Arc::new(predicate));
        self
    }

    /// Rewrite each tool result before the model (and the `tool_result`
    /// event) sees it; error results (denied, invalid input, timeouts) too.
    /// The output cap and the context budget apply to what the hook returns.
    ///
    /// ```
    /// // Hide a secret from the model.
    /// let opts = loopwright_core::AgentOptions::default()
    ///     .on_tool_result(|_ctx, output| output.map_text(|text| text.replace("hunter2", "[redacted]")));
    /// # let _ = opts;
    /// ```
    pub fn on_tool_result(
        mut self,
        hook: impl Fn(&ToolResultContext<'_>, ToolOutput) -> ToolOutput + Send + Sync + 'static,
    ) -> Self {
        self.hooks.on_tool_result = Some(Arc::new(hook));
        self
    }

    /// Give runs an id and, with an engine, make them durable (see
    /// [`crate::durable`]): each model call and each tool call is
    /// journaled, approvals wait for durable decisions. Set per run (an id
    /// names one run), usually with [`Agent::map_options`](crate::Agent::map_options).
    ///
    /// ```
    /// let opts = loopwright_core::AgentOptions::default()
    ///     .durable(loopwright_core::durable::DurableRun::new("run-1"));
    /// assert!(opts.durable.is_some());
    /// ```
    pub fn durable(mut self, durable: crate::durable::DurableRun) -> Self {
        self.durable = Some(durable);
        self
    }

    /// These options with every setting that `other` sets laid over them.
    /// A setting counts as set when it is `Some` (system prompt, sampling,
    /// approvals, accounting, budget, each hook) or differs from its default
    /// (step limit, timeouts, limits, tool choice, parallel calls); settings
    /// `other` leaves alone keep their value here, so `other` cannot put a
    /// setting back to its default. Cancellation tokens add up.
    ///
    /// ```
    /// use loopwright_core::AgentOptions;
    /// let mine = AgentOptions::default().system("Be brief.").max_steps(5);
    /// let merged = mine.merge(AgentOptions::default().temperature(0.2));
    /// assert_eq!(merged.system.as_deref(), Some("Be brief."));
    /// assert_eq!((merged.max_steps, merged.temperature), (5, Some(0.2)));
    /// ```
    pub fn merge(mut self, other: AgentOptions) -> AgentOptions {
        let defaults = AgentOptions::default();
        // Every field is named (no `..`): a new option must be merged here too.
        merge_fields!(self, other, defaults;
            set: name, system, temperature, top_p, max_output_tokens, approvals, preflight, accounting, budget, output,
                reasoning, max_model_calls, max_tree_tokens, run_timeout, compaction, tool_search, durable;
            changed: max_depth, max_steps, tool_timeout, tool_concurrency, max_tool_output_bytes, tool_choice, parallel_tool_calls,
                max_output_retries, prompt_caching, unsupported_media;
            added: cancellation, provider_options;
            hooks: prepare_step, stop_when, on_tool_result);
        self
    }
}
