//! [`AgentBuilder`]: a model, tools and options, set in any order; the one
//! place settings are set.
//!
//! Invariants: each setter sets one field of the plain
//! [`AgentOptions`] and nothing else, so the last call wins and a setting
//! can be put back to its default ([`AgentBuilder::configure`]);
//! [`AgentBuilder::options`] replaces every option at once, merging
//! nothing. A builder made from an agent ([`Agent::to_builder`]) keeps its
//! model, tools and identity.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Agent;
use super::AgentId;
use super::hooks::{PrepareStep, StepContext, StepSettings, StepSummary, ToolResultContext};
use super::options::AgentOptions;
use super::sub_agent::{AgentTool, SUB_AGENT_SOURCE};
use crate::accounting::AccountingSink;
use crate::approval::Approvals;
use crate::compaction::Compaction;
use crate::output::OutputSpec;
use crate::preflight::Preflight;
use crate::tool_search::ToolSearch;
use loopwright_types::budget::ContextBudget;
use loopwright_types::tool::{Tool, ToolOutput};
use loopwright_types::toolset::{Naming, SourceOptions, ToolSet};
use loopwright_types::{
    IntoModel, IntoTool, LanguageModel, MediaFallback, ReasoningConfig, StaticToolSource, ToolChoice,
    ToolDefinition,
};

mod setters;

/// Name of the native source holding the tools given to
/// [`AgentBuilder::client_tools`].
pub const CLIENT_SOURCE: &str = "client";

/// Name of the native source holding the tools given to
/// [`AgentBuilder::tool`].
pub const APP_SOURCE: &str = "app";

/// Builds an [`Agent`]; start with [`Agent::builder`].
///
/// ```
/// # let model = loopwright_testing::ScriptedModel::new(vec![]);
/// use loopwright_core::{Agent, tool_fn};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
/// let agent = Agent::builder(model)
///     .system("Be brief.")
///     .max_steps(10)
///     .tool(tool_fn("now", "The time.", |_: NoArgs| async { Ok("noon") }))
///     .build();
/// assert_eq!(agent.options().max_steps, 10);
/// ```
#[must_use = "a builder does nothing until `build()`"]
pub struct AgentBuilder {
    model: Arc<dyn LanguageModel>,
    tools: Option<Arc<ToolSet>>,
    own_tools: Vec<Arc<dyn Tool>>,
    sub_agents: Vec<Arc<dyn Tool>>,
    /// Client tools, below every other source.
    client_tools: Vec<Arc<dyn Tool>>,
    options: AgentOptions,
    /// Kept from the agent a builder was made from.
    id: Option<AgentId>,
}

impl AgentBuilder {
    pub(super) fn new(model: Arc<dyn LanguageModel>) -> Self {
        Self {
            model,
            tools: None,
            own_tools: Vec::new(),
            sub_agents: Vec::new(),
            client_tools: Vec::new(),
            options: AgentOptions::default(),
            id: None,
        }
    }

    pub(super) fn from_agent(agent: &Agent) -> Self {
        Self {
            model: agent.model.clone(),
            tools: Some(agent.tools.clone()),
            own_tools: Vec::new(),
            sub_agents: Vec::new(),
            client_tools: Vec::new(),
            options: agent.options.clone(),
            id: Some(agent.id.clone()),
        }
    }

    /// Add one tool: a [`Tool`], a [`TypedTool`](crate::tool::TypedTool), or a
    /// shared `Arc<dyn Tool>`. The builder's tools form a native source
    /// named [`APP_SOURCE`] (bare names, winning clashes) beside the set
    /// given to [`AgentBuilder::tools`].
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::{Agent, tool_fn};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct City { name: String }
    /// let agent = Agent::builder(model)
    ///     .tool(tool_fn("weather", "The weather in a city.", |c: City| async move { Ok(format!("Sunny in {}", c.name)) }))
    ///     .build();
    /// # let _ = agent;
    /// ```
    pub fn tool<M>(mut self, tool: impl IntoTool<M>) -> Self {
        self.own_tools.push(tool.into_tool());
        self
    }

    /// Add a sub-agent: the model sees it as `agent__<name>` (the native
    /// source [`SUB_AGENT_SOURCE`], namespaced; the usual sanitising and
    /// clash rules apply). See [`AgentTool`].
    ///
    /// ```
    /// # let model = || std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
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

    /// Add tools the client runs ([`ClientTool`](super::ClientTool)s, the
    /// source [`CLIENT_SOURCE`]), as a served agent takes them from a
    /// request: each under its own name, unless the agent has a tool of
    /// that name, which then wins (the client's is left out).
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// use loopwright_core::{Agent, ToolDefinition};
    /// let ask = ToolDefinition::new("ask_user", "Ask the user.", serde_json::json!({"type": "object"}));
    /// let agent = Agent::builder(model).client_tools([ask]).build();
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert!(agent.tools().catalog().await.get("ask_user").is_some());
    /// # });
    /// ```
    pub fn client_tools(mut self, tools: impl IntoIterator<Item = ToolDefinition>) -> Self {
        self.client_tools.extend(
            tools
                .into_iter()
                .map(|def| Arc::new(super::ClientTool::new(def)) as Arc<dyn Tool>),
        );
        self
    }

    /// Use this tool set (MCP servers, coding tools, ...), beside the tools
    /// added with [`AgentBuilder::tool`].
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).tools(loopwright_core::ToolSet::empty()).build();
    /// # let _ = agent;
    /// ```
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = Some(Arc::new(tools));
        self
    }

    /// Use a tool set shared with other agents.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let shared = std::sync::Arc::new(loopwright_core::ToolSet::empty());
    /// let agent = loopwright_core::Agent::builder(model).shared_tools(shared.clone()).build();
    /// assert!(std::sync::Arc::ptr_eq(agent.tools(), &shared));
    /// ```
    pub fn shared_tools(mut self, tools: Arc<ToolSet>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Replace every option with `options`, the name included (nothing is
    /// merged: a setting `options` leaves at its default is that default),
    /// so call it before the setters. To change single settings, use the
    /// setters or [`AgentBuilder::configure`].
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// use loopwright_core::{Agent, agent::AgentOptions};
    /// let agent = Agent::builder(model).system("Be brief.").options(AgentOptions::default()).build();
    /// assert_eq!(agent.options().system, None);
    /// ```
    pub fn options(mut self, options: AgentOptions) -> Self {
        self.options = options;
        self
    }

    /// Change the options in place: any field, to any value, its default
    /// included.
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model)
    ///     .temperature(0.2)
    ///     .configure(|o| o.temperature = None)
    ///     .build();
    /// assert_eq!(agent.options().temperature, None);
    /// ```
    pub fn configure(mut self, change: impl FnOnce(&mut AgentOptions)) -> Self {
        change(&mut self.options);
        self
    }

    /// The agent (a builder made from an agent keeps its identity).
    ///
    /// ```
    /// # let model = loopwright_testing::ScriptedModel::new(vec![]);
    /// let agent = loopwright_core::Agent::builder(model).build();
    /// assert_eq!(agent.name(), loopwright_core::agent::DEFAULT_AGENT_NAME);
    /// ```
    pub fn build(self) -> Agent {
        let tools = match (
            self.tools,
            self.own_tools.is_empty() && self.sub_agents.is_empty() && self.client_tools.is_empty(),
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
                if !self.client_tools.is_empty() {
                    let client = self.client_tools.into_iter().fold(
                        StaticToolSource::native(CLIENT_SOURCE),
                        StaticToolSource::with_shared_tool,
                    );
                    let below_all = SourceOptions::default().naming(Naming::Bare).priority(i32::MIN);
                    builder = builder.source_with(client, below_all);
                }
                Arc::new(builder.build())
            }
        };
        Agent {
            model: self.model,
            tools,
            options: self.options,
            id: self.id.unwrap_or_default(),
        }
    }
}
