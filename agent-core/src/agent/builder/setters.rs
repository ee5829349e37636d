//! The setters of single options on [`AgentBuilder`]: each sets its
//! field of [`AgentOptions`] and nothing else.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The setters of single options; each sets its field of
/// [`AgentOptions`].
impl AgentBuilder {
    /// The agent's name: its segment of agent paths
    /// (`coordinator/researcher`) in accounting entries, metrics and
    /// `sub_agent` events, and the default name of its
    /// [`AgentTool`].
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).name("researcher").build();
    /// assert_eq!(agent.name(), "researcher");
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = Some(name.into());
        self
    }

    /// How deep sub-agents may nest below a run of this agent: a sub-agent
    /// at depth `depth` (its parent is at `depth - 1`, the run the
    /// application started at 0) may start only while `depth <= n`; a call
    /// beyond gets an error result and no model call. A sub-agent's runs
    /// use the limit of the root of their tree, not their own.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_depth(1).build(); // sub-agents, none of their own
    /// assert_eq!(agent.options().max_depth, 1);
    /// ```
    pub fn max_depth(mut self, n: u32) -> Self {
        self.options.max_depth = n;
        self
    }

    /// The system prompt (the tool sources' instructions follow it).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).system("Be brief.").build();
    /// assert_eq!(agent.options().system.as_deref(), Some("Be brief."));
    /// ```
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.options.system = Some(text.into());
        self
    }

    /// The step limit: at most `steps` model calls may use tools (at least
    /// 1). When the model still calls tools on step `steps`, those calls
    /// run, their results go back, and one more call, without tools and
    /// told to conclude, gives the answer; the run then ends
    /// [`Outcome::MaxSteps`](crate::Outcome::MaxSteps). A run thus makes at
    /// most `steps + 1` model calls.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_steps(1).build();
    /// assert_eq!(agent.options().max_steps, 1);
    /// ```
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.options.max_steps = steps.max(1);
        self
    }

    /// The timeout of each tool call (a tool with a timeout of its own gets
    /// that, plus a grace).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).tool_timeout(std::time::Duration::from_secs(5)).build();
    /// assert_eq!(agent.options().tool_timeout.as_secs(), 5);
    /// ```
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.options.tool_timeout = timeout;
        self
    }

    /// How many tool calls run at once (at least 1).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).tool_concurrency(4).build();
    /// assert_eq!(agent.options().tool_concurrency, 4);
    /// ```
    pub fn tool_concurrency(mut self, n: usize) -> Self {
        self.options.tool_concurrency = n.max(1);
        self
    }

    /// How many bytes of a tool's output are kept (head and tail).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_tool_output_bytes(10_000).build();
    /// assert_eq!(agent.options().max_tool_output_bytes, 10_000);
    /// ```
    pub fn max_tool_output_bytes(mut self, bytes: usize) -> Self {
        self.options.max_tool_output_bytes = bytes;
        self
    }

    /// The sampling temperature.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).temperature(0.2).build();
    /// assert_eq!(agent.options().temperature, Some(0.2));
    /// ```
    pub fn temperature(mut self, t: f32) -> Self {
        self.options.temperature = Some(t);
        self
    }

    /// Nucleus sampling.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).top_p(0.9).build();
    /// assert_eq!(agent.options().top_p, Some(0.9));
    /// ```
    pub fn top_p(mut self, p: f32) -> Self {
        self.options.top_p = Some(p);
        self
    }

    /// The output token limit per step.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_output_tokens(512).build();
    /// assert_eq!(agent.options().max_output_tokens, Some(512));
    /// ```
    pub fn max_output_tokens(mut self, n: u32) -> Self {
        self.options.max_output_tokens = Some(n);
        self
    }

    /// How the model may use the tools (every step but the concluding one).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::ToolChoice;
    /// let agent = loopwright_core::Agent::builder(model).tool_choice(ToolChoice::Required).build();
    /// assert_eq!(agent.options().tool_choice, ToolChoice::Required);
    /// ```
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.options.tool_choice = choice;
        self
    }

    /// Whether the model may call several tools per step (on by default).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).parallel_tool_calls(false).build();
    /// assert!(!agent.options().parallel_tool_calls);
    /// ```
    pub fn parallel_tool_calls(mut self, on: bool) -> Self {
        self.options.parallel_tool_calls = on;
        self
    }

    /// Ask before running tool calls, as these settings say (see
    /// [`Approvals`]: which calls ask depends on their tier, and your own
    /// tools without annotations are treated as able to change things).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).approvals(loopwright_core::Approvals::via_events()).build();
    /// assert!(agent.options().approvals.is_some());
    /// ```
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.options.approvals = Some(approvals);
        self
    }

    /// Propose a plan before the first tool call: one model call without
    /// tools returns a [`Plan`](crate::preflight::Plan), sent as a
    /// `plan_proposed` event and decided by the preflight's approver or the
    /// event's responder. Approved (or edited), the plan joins the
    /// conversation as a user message and the run goes on; rejected, or
    /// unanswered within the timeout, the run ends
    /// [`Outcome::PlanRejected`](crate::Outcome::PlanRejected) without
    /// running any tool. Each run proposes its own plan.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::preflight::{Plan, PlanDecision, Preflight};
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .preflight(Preflight::with_approver(|_: &Plan| PlanDecision::Approve))
    ///     .build();
    /// assert!(agent.options().preflight.is_some());
    /// ```
    pub fn preflight(mut self, preflight: Preflight) -> Self {
        self.options.preflight = Some(preflight);
        self
    }

    /// Also write accounting entries to this sink (such as a
    /// [`JsonlSink`](crate::accounting::JsonlSink)).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// # let dir = tempfile::tempdir().unwrap();
    /// let sink = loopwright_core::accounting::JsonlSink::open(dir.path().join("usage.jsonl")).unwrap();
    /// let agent = loopwright_core::Agent::builder(model).accounting(std::sync::Arc::new(sink)).build();
    /// assert!(agent.options().accounting.is_some());
    /// ```
    pub fn accounting(mut self, sink: Arc<dyn AccountingSink>) -> Self {
        self.options.accounting = Some(sink);
        self
    }

    /// Guard the model's context window with this budget: a request that
    /// would not fit is made the concluding one, or the run ends
    /// [`Outcome::TokenLimit`](crate::Outcome::TokenLimit) (with
    /// [`AgentBuilder::compaction`], the history is compacted first).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).budget(loopwright_core::ContextBudget::new(128_000)).build();
    /// assert!(agent.options().budget.is_some());
    /// ```
    pub fn budget(mut self, budget: ContextBudget) -> Self {
        self.options.budget = Some(budget);
        self
    }

    /// Model calls the whole run tree may make: this run's and those of
    /// every sub-agent run below it, counted together before each call. A
    /// call over it ends the run
    /// [`Outcome::BudgetExhausted`](crate::Outcome::BudgetExhausted), which
    /// says why. A sub-agent's runs take from the tree's budget.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_model_calls(50).build();
    /// assert_eq!(agent.options().max_model_calls, Some(50));
    /// ```
    pub fn max_model_calls(mut self, n: u64) -> Self {
        self.options.max_model_calls = Some(n);
        self
    }

    /// Tokens (input plus output) the whole run tree may use, counted after
    /// each model call; once used up, the next call of any run of the tree
    /// is refused as with [`AgentBuilder::max_model_calls`].
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_tree_tokens(1_000_000).build();
    /// assert_eq!(agent.options().max_tree_tokens, Some(1_000_000));
    /// ```
    pub fn max_tree_tokens(mut self, n: u64) -> Self {
        self.options.max_tree_tokens = Some(n);
        self
    }

    /// Cancel a run that has gone on this long: it ends
    /// [`Outcome::Cancelled`](crate::Outcome::Cancelled) with the deadline
    /// as its reason; its sub-agents and tools are cancelled with it.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).run_timeout(std::time::Duration::from_secs(600)).build();
    /// assert!(agent.options().run_timeout.is_some());
    /// ```
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.options.run_timeout = Some(timeout);
        self
    }

    /// End the run with a final answer that is JSON matching `spec`: it is
    /// validated against the schema, and an answer that does not match goes
    /// back to the model with the validator's errors, at most
    /// [`AgentBuilder::max_output_retries`] times. Tools may be called on
    /// the steps before. The spec says how the model is made to answer
    /// ([`OutputMode`](crate::output::OutputMode): its provider's native structured
    /// output, a `final_answer` tool, or the best the model supports).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { ok: bool, reason: String }
    /// let agent = loopwright_core::Agent::builder(model).output(loopwright_core::OutputSpec::of::<Verdict>()).build();
    /// assert!(agent.options().output.is_some());
    /// ```
    pub fn output(mut self, spec: OutputSpec) -> Self {
        self.options.output = Some(spec);
        self
    }

    /// How often a final answer that does not match the output schema is
    /// sent back to be fixed.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).max_output_retries(0).build();
    /// assert_eq!(agent.options().max_output_retries, 0);
    /// ```
    pub fn max_output_retries(mut self, retries: u32) -> Self {
        self.options.max_output_retries = retries;
        self
    }

    /// The reasoning effort (and, with a [`ReasoningConfig`], a token
    /// budget). Models that cannot reason get nothing added.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::{model::ReasoningConfig, ReasoningEffort};
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .reasoning(ReasoningConfig::from(ReasoningEffort::Low).budget_tokens(2_048))
    ///     .build();
    /// assert_eq!(agent.options().reasoning.unwrap().budget(), Some(2_048));
    /// ```
    pub fn reasoning(mut self, reasoning: impl Into<ReasoningConfig>) -> Self {
        self.options.reasoning = Some(reasoning.into());
        self
    }

    /// Mark the stable prefix of each request for the provider's prompt
    /// cache where it needs marking (Anthropic); on by default.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).prompt_caching(false).build();
    /// assert!(!agent.options().prompt_caching);
    /// ```
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.options.prompt_caching = on;
        self
    }

    /// Use `model` instead of the one the builder was made with (for a run
    /// of an agent on another model: `agent.to_builder().model(other)`).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// # let other = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).build();
    /// let on_other = agent.to_builder().model(other).build();
    /// assert_eq!(on_other.model().provider(), "scripted");
    /// ```
    pub fn model(mut self, model: impl IntoModel) -> Self {
        self.model = model.into_model();
        self
    }

    /// Put the conversation in the trace spans (off by default: it may
    /// hold personal data): each model call's system prompt, messages and
    /// answer, each tool call's arguments and result, as the OpenTelemetry
    /// GenAI conventions name them, for a trace viewer that shows them.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).trace_content(true).build();
    /// assert!(agent.options().trace_content);
    /// ```
    pub fn trace_content(mut self, on: bool) -> Self {
        self.options.trace_content = on;
        self
    }

    /// Merge `options` (a JSON object) into `provider`'s request bodies, for
    /// what this library does not model. Keys given again replace earlier
    /// ones.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .provider_options("openai", serde_json::json!({"service_tier": "flex"}))
    ///     .provider_options("openai", serde_json::json!({"store": false}))
    ///     .build();
    /// assert_eq!(agent.options().provider_options["openai"], serde_json::json!({"service_tier": "flex", "store": false}));
    /// ```
    pub fn provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        loopwright_types::util::merge_provider_options(
            &mut self.options.provider_options,
            provider.into(),
            options,
        );
        self
    }

    /// Compact the history instead of stopping when it no longer fits the
    /// budget's window (or above the compaction's threshold): old tool
    /// results cleared, older turns summarised, or the provider's own
    /// compaction, as `compaction` says (see [`crate::compaction`]). Needs
    /// a [`budget`](AgentBuilder::budget). Off by default in the library;
    /// the `loopwright` command and agents built from configuration or
    /// agent files turn [`Compaction::default`] on.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::{ContextBudget, compaction::Compaction};
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .budget(ContextBudget::new(128_000))
    ///     .compaction(Compaction::default())
    ///     .build();
    /// assert!(agent.options().compaction.is_some());
    /// ```
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.options.compaction = Some(compaction);
        self
    }

    /// Offer a catalog above `search`'s thresholds through a `search_tools`
    /// tool (and the always-on tools) instead of whole; the tools the model
    /// finds are offered from the next step on (see
    /// [`crate::tool_search`]). Off by default in the library; the
    /// `loopwright` command and agents built from configuration or agent
    /// files turn [`ToolSearch::default`] on.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::tool_search::ToolSearch;
    /// let agent = loopwright_core::Agent::builder(model).tool_search(ToolSearch::default().max_tools(40)).build();
    /// assert_eq!(agent.options().tool_search.as_ref().unwrap().max_tools, 40);
    /// ```
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.options.tool_search = Some(search);
        self
    }

    /// Guardrails: checks at the input, the output (streamed text is held
    /// back until they passed over it), tool arguments and tool results
    /// (see [`crate::guardrail`]). They replace any set before.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::guardrail::{Guardrails, Pii};
    /// let agent = loopwright_core::Agent::builder(model).guardrails(Guardrails::new().guard(Pii::redact())).build();
    /// assert_eq!(agent.options().guardrails.as_ref().unwrap().len(), 1);
    /// ```
    pub fn guardrails(mut self, guardrails: crate::guardrail::Guardrails) -> Self {
        self.options.guardrails = (!guardrails.is_empty()).then(|| std::sync::Arc::new(guardrails));
        self
    }

    /// Add one guardrail (with the defaults of
    /// [`Guardrails::new`](crate::guardrail::Guardrails::new), or those set
    /// before).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::guardrail::Pattern;
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .guardrail(Pattern::block("secret", "(?i)top secret").unwrap())
    ///     .build();
    /// assert!(agent.options().guardrails.is_some());
    /// ```
    pub fn guardrail(mut self, guard: impl crate::guardrail::Guardrail + 'static) -> Self {
        let rails = self
            .options
            .guardrails
            .take()
            .map(|r| (*r).clone())
            .unwrap_or_default();
        self.options.guardrails = Some(std::sync::Arc::new(rails.guard(guard)));
        self
    }

    /// What a provider does with a file or audio part of a user message it
    /// cannot take: fail before sending (the default) or send its
    /// placeholder.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::model::MediaFallback;
    /// let agent = loopwright_core::Agent::builder(model).unsupported_media(MediaFallback::Placeholder).build();
    /// assert_eq!(agent.options().unsupported_media, MediaFallback::Placeholder);
    /// ```
    pub fn unsupported_media(mut self, fallback: MediaFallback) -> Self {
        self.options.unsupported_media = fallback;
        self
    }

    /// Also cancel every run when `token` is cancelled (tokens set earlier
    /// still count; cancelling a run never cancels them).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let shutdown = loopwright_core::CancellationToken::new();
    /// let agent = loopwright_core::Agent::builder(model).cancellation(shutdown).build();
    /// assert_eq!(agent.options().cancellation.len(), 1);
    /// ```
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.options.cancellation.push(token);
        self
    }

    /// Before each model call, let `hook` change the request: the system
    /// text, which tools are offered (by exposed name), the tool choice and
    /// the sampling settings. On the concluding call tools stay withheld
    /// whatever the hook sets.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::ToolChoice;
    /// // Make the model use a tool on the first step only.
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .prepare_step(|ctx, settings| {
    ///         if ctx.step == 1 {
    ///             settings.tool_choice = ToolChoice::Required;
    ///         }
    ///     })
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn prepare_step(
        mut self,
        hook: impl Fn(&StepContext<'_>, &mut StepSettings) + Send + Sync + 'static,
    ) -> Self {
        self.options.hooks.prepare_step = Some(Arc::new(hook) as Arc<PrepareStep>);
        self
    }

    /// End the run after a step whose tool calls ran when `predicate`,
    /// given every step so far, says so: it ends
    /// [`Outcome::Stopped`](crate::Outcome::Stopped), its history ending
    /// with that step's tool results.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// // Stop as soon as the `submit` tool was called.
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .stop_when(|steps| steps.last().is_some_and(|s| s.tool_calls.iter().any(|c| c.name == "submit")))
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn stop_when(mut self, predicate: impl Fn(&[StepSummary]) -> bool + Send + Sync + 'static) -> Self {
        self.options.hooks.stop_when = Some(Arc::new(predicate));
        self
    }

    /// Rewrite each tool result before the model (and the `tool_result`
    /// event) sees it; error results (denied, invalid input, timeouts) too.
    /// The output cap and the context budget apply to what the hook returns.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// // Hide a secret from the model.
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .on_tool_result(|_ctx, output| output.map_text(|text| text.replace("hunter2", "[redacted]")))
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn on_tool_result(
        mut self,
        hook: impl Fn(&ToolResultContext<'_>, ToolOutput) -> ToolOutput + Send + Sync + 'static,
    ) -> Self {
        self.options.hooks.on_tool_result = Some(Arc::new(hook));
        self
    }

    /// Give runs an id and, with an engine, make them durable (see
    /// [`crate::durable`]): each model call and each tool call is
    /// journaled, approvals wait for durable decisions. Set per run (an id
    /// names one run), on a builder made from the agent
    /// ([`Agent::to_builder`]).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).build();
    /// let run_1 = agent.to_builder().durable(loopwright_core::durable::DurableRun::new("run-1")).build();
    /// assert!(run_1.options().durable.is_some());
    /// ```
    pub fn durable(mut self, durable: crate::durable::DurableRun) -> Self {
        self.options.durable = Some(durable);
        self
    }
}
