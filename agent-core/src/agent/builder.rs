//! [`AgentBuilder`]: a model, tools and options, set in any order.
//!
//! Invariant: setters compose. Every option has a setter here, and
//! [`AgentBuilder::options`] merges (settings it leaves unset keep what the
//! builder already has), so no setting is silently lost whatever the order.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Agent;
use super::hooks::{StepContext, StepSettings, StepSummary, ToolResultContext};
use super::options::AgentOptions;
use super::sub_agent::{AgentTool, SUB_AGENT_SOURCE};
use crate::accounting::AccountingSink;
use crate::approval::Approvals;
use crate::output::OutputSpec;
use loopwright_types::IntoTool;
use loopwright_types::ReasoningConfig;
use loopwright_types::StaticToolSource;
use loopwright_types::budget::ContextBudget;
use loopwright_types::tool::{Tool, ToolOutput};
use loopwright_types::toolset::{Naming, SourceOptions, ToolSet};
use loopwright_types::{LanguageModel, ToolChoice};

/// Name of the native source holding the tools given to
/// [`AgentBuilder::tool`].
pub const APP_SOURCE: &str = "app";

/// Builds an [`Agent`].
///
/// ```
/// use loopwright_core::{tool_fn, Agent};
/// # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct City { city: String }
///
/// let agent = Agent::builder(model)
///     .system("Be brief.")
///     .tool(tool_fn("weather", "Weather in a city.", |c: City| async move { Ok(format!("Sunny in {}", c.city)) }))
///     .max_steps(10)
///     .build();
/// assert_eq!(agent.options().max_steps, 10);
/// ```
///
/// A builder left unbuilt is reported by the compiler:
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # fn demo(model: std::sync::Arc<dyn loopwright_core::LanguageModel>) {
/// loopwright_core::Agent::builder(model).system("Be brief.");
/// # }
/// ```
#[must_use = "a builder does nothing until `build()`"]
pub struct AgentBuilder {
    model: Arc<dyn LanguageModel>,
    tools: Option<Arc<ToolSet>>,
    own_tools: Vec<Arc<dyn Tool>>,
    sub_agents: Vec<Arc<dyn Tool>>,
    options: AgentOptions,
}

/// Builder setters that forward to the [`AgentOptions`] setter of the same
/// name.
macro_rules! option_setters {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            $(#[$doc])*
            #[doc = concat!("\n\nSee [`AgentOptions::", stringify!($name), "`].")]
            pub fn $name(mut self, $($arg: $ty),*) -> Self {
                self.options = self.options.$name($($arg),*);
                self
            }
        )*
    };
}

impl AgentBuilder {
    pub(super) fn new(model: Arc<dyn LanguageModel>) -> Self {
        Self {
            model,
            tools: None,
            own_tools: Vec::new(),
            sub_agents: Vec::new(),
            options: AgentOptions::default(),
        }
    }

    /// Add one tool: a [`Tool`], a [`TypedTool`](crate::TypedTool), or a
    /// shared `Arc<dyn Tool>`. The builder's tools form a native source
    /// named [`APP_SOURCE`] (bare names, winning clashes) beside the set
    /// given to [`AgentBuilder::tools`].
    pub fn tool<M>(mut self, tool: impl IntoTool<M>) -> Self {
        self.own_tools.push(tool.into_tool());
        self
    }

    /// Add a sub-agent: the model sees it as `agent__<name>` (the native
    /// source [`SUB_AGENT_SOURCE`], namespaced; the usual sanitising and
    /// clash rules apply). See [`AgentTool`].
    ///
    /// ```
    /// # let model = || std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
    /// let coder = loopwright_core::Agent::builder(model()).name("coder").build();
    /// let lead = loopwright_core::Agent::builder(model()).sub_agent(coder.as_tool().description("Writes patches.")).build();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert!(lead.tools().catalog().await.get("agent__coder").is_some());
    /// # });
    /// ```
    pub fn sub_agent(mut self, tool: AgentTool) -> Self {
        self.sub_agents.push(Arc::new(tool));
        self
    }

    /// Use this tool set (MCP servers, coding tools, ...), beside the tools
    /// added with [`AgentBuilder::tool`].
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = Some(Arc::new(tools));
        self
    }

    /// Use a tool set shared with other agents.
    pub fn shared_tools(mut self, tools: Arc<ToolSet>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Lay these options over the builder's: settings `options` sets win,
    /// the others keep what the builder has (see [`AgentOptions::merge`]).
    ///
    /// ```
    /// use loopwright_core::{Agent, AgentOptions};
    /// # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
    /// let agent = Agent::builder(model)
    ///     .system("Be brief.")
    ///     .options(AgentOptions::default().max_steps(3))
    ///     .build();
    /// assert_eq!(agent.options().system.as_deref(), Some("Be brief."));
    /// assert_eq!(agent.options().max_steps, 3);
    /// ```
    pub fn options(mut self, options: AgentOptions) -> Self {
        self.options = self.options.merge(options);
        self
    }

    option_setters! {
        /// Set the agent's name (its segment of agent paths).
        name(name: impl Into<String>);
        /// Set how deep sub-agents may nest below this agent's runs.
        max_depth(n: u32);
        /// Set the system prompt.
        system(text: impl Into<String>);
        /// Set the step limit: model calls that may use tools.
        max_steps(steps: u32);
        /// Set the timeout of each tool call.
        tool_timeout(timeout: Duration);
        /// Set the model calls the whole run tree may make.
        max_model_calls(n: u64);
        /// Set the tokens the whole run tree may use.
        max_tree_tokens(n: u64);
        /// Set how long a run may go on before it is cancelled.
        run_timeout(timeout: Duration);
        /// Set how many tool calls run at once.
        tool_concurrency(n: usize);
        /// Set the tool output cap in bytes.
        max_tool_output_bytes(bytes: usize);
        /// Set the sampling temperature.
        temperature(t: f32);
        /// Set nucleus sampling.
        top_p(p: f32);
        /// Set the output token limit per model call.
        max_output_tokens(n: u32);
        /// Set the tool choice.
        tool_choice(choice: ToolChoice);
        /// Allow or forbid several tool calls per step.
        parallel_tool_calls(on: bool);
        /// Ask before running tool calls.
        approvals(approvals: Approvals);
        /// Propose a plan for approval before the first tool call.
        preflight(preflight: crate::preflight::Preflight);
        /// Also write accounting entries to this sink.
        accounting(sink: Arc<dyn AccountingSink>);
        /// Guard the context window with this budget.
        budget(budget: ContextBudget);
        /// End with a final answer matching this schema.
        output(spec: OutputSpec);
        /// Set the retries after an answer that does not match the schema.
        max_output_retries(retries: u32);
        /// Set the reasoning effort (and budget).
        reasoning(reasoning: impl Into<ReasoningConfig>);
        /// Turn prompt-cache marking on or off.
        prompt_caching(on: bool);
        /// Compact the history instead of stopping at the context window.
        compaction(compaction: crate::compaction::Compaction);
        /// Offer a big catalog through a `search_tools` tool.
        tool_search(search: crate::tool_search::ToolSearch);
        /// Set what providers do with media they cannot take.
        unsupported_media(fallback: crate::MediaFallback);
        /// Merge raw options into a provider's request bodies.
        provider_options(provider: impl Into<String>, options: serde_json::Value);
        /// Also cancel every run when this token is cancelled.
        cancellation(token: CancellationToken);
        /// Change each request before it is sent.
        prepare_step(hook: impl Fn(&StepContext<'_>, &mut StepSettings) + Send + Sync + 'static);
        /// End the run after a step when the predicate says so.
        stop_when(predicate: impl Fn(&[StepSummary]) -> bool + Send + Sync + 'static);
        /// Rewrite tool results before the model sees them.
        on_tool_result(hook: impl Fn(&ToolResultContext<'_>, ToolOutput) -> ToolOutput + Send + Sync + 'static);
    }

    /// The agent.
    pub fn build(self) -> Agent {
        let tools = match (
            self.tools,
            self.own_tools.is_empty() && self.sub_agents.is_empty(),
        ) {
            (Some(set), true) => set,
            (None, true) => Arc::new(ToolSet::empty()),
            (set, false) => {
                let mut builder = set.map_or_else(ToolSet::builder, |s| s.to_builder());
                if !self.own_tools.is_empty() {
                    let own = self.own_tools.into_iter().fold(
                        StaticToolSource::native(APP_SOURCE),
                        StaticToolSource::with_shared_tool,
                    );
                    builder = builder.source(own);
                }
                if !self.sub_agents.is_empty() {
                    let agents = self.sub_agents.into_iter().fold(
                        StaticToolSource::native(SUB_AGENT_SOURCE),
                        StaticToolSource::with_shared_tool,
                    );
                    builder = builder.source_with(agents, SourceOptions::default().naming(Naming::Prefixed));
                }
                Arc::new(builder.build())
            }
        };
        Agent {
            model: self.model,
            tools,
            options: self.options,
            id: super::next_agent_id(),
        }
    }
}
