//! Run options and their defaults.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::hooks::Hooks;
use crate::accounting::AccountingSink;
use crate::approval::Approvals;
use crate::compaction::Compaction;
use crate::output::{DEFAULT_MAX_OUTPUT_RETRIES, OutputSpec};
use crate::preflight::Preflight;
use crate::tool_search::ToolSearch;
use loopwright_types::ReasoningConfig;
use loopwright_types::budget::ContextBudget;
use loopwright_types::{MediaFallback, ToolChoice};

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

/// How a run behaves: plain data, each field documented with its default.
/// [`AgentBuilder`](crate::AgentBuilder)'s setters are the way to set them
/// (each setter's documentation says what the setting does);
/// [`AgentBuilder::configure`](crate::AgentBuilder::configure) sets any
/// field directly, back to its default too.
///
/// ```
/// # let model = loopwright_testing::ScriptedModel::new(vec![]);
/// use loopwright_core::{Agent, agent::AgentOptions};
/// let agent = Agent::builder(model).system("You are terse.").max_steps(5).build();
/// assert_eq!(agent.options().max_steps, 5);
/// // Back to no system prompt and the default step limit.
/// let plain = agent.to_builder().configure(|o| {
///     o.system = None;
///     o.max_steps = AgentOptions::default().max_steps;
/// }).build();
/// assert_eq!(plain.options().system, None);
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
    /// How deep sub-agents may nest below a run of this agent (default
    /// [`DEFAULT_MAX_DEPTH`]); see [`AgentBuilder::max_depth`](crate::AgentBuilder::max_depth).
    pub max_depth: u32,
    /// The system prompt.
    pub system: Option<String>,
    /// Model calls that may use tools (default [`DEFAULT_MAX_STEPS`]); see
    /// [`AgentBuilder::max_steps`](crate::AgentBuilder::max_steps).
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
    /// [`AgentBuilder::preflight`](crate::AgentBuilder::preflight).
    pub preflight: Option<Preflight>,
    /// Where accounting entries go besides `accounting` events.
    pub accounting: Option<Arc<dyn AccountingSink>>,
    /// The model's context-window budget; `None` leaves requests unchecked.
    pub budget: Option<ContextBudget>,
    /// Model calls the whole run tree may make (this run and every
    /// sub-agent run below it); see [`AgentBuilder::max_model_calls`](crate::AgentBuilder::max_model_calls).
    pub max_model_calls: Option<u64>,
    /// Tokens (input plus output) the whole run tree may use; see
    /// [`AgentBuilder::max_tree_tokens`](crate::AgentBuilder::max_tree_tokens).
    pub max_tree_tokens: Option<u64>,
    /// How long a run may go on before it is cancelled; see
    /// [`AgentBuilder::run_timeout`](crate::AgentBuilder::run_timeout).
    pub run_timeout: Option<Duration>,
    /// Runs are cancelled when any of these tokens is (an application-wide
    /// shutdown, a request's lifetime, a parent agent's call); cancelling a
    /// run never cancels them.
    pub cancellation: Vec<CancellationToken>,
    /// Hooks into each step: [`AgentBuilder::prepare_step`](crate::AgentBuilder::prepare_step),
    /// [`AgentBuilder::stop_when`](crate::AgentBuilder::stop_when),
    /// [`AgentBuilder::on_tool_result`](crate::AgentBuilder::on_tool_result).
    pub hooks: Hooks,
    /// The schema the final answer must match; see [`AgentBuilder::output`](crate::AgentBuilder::output).
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
    /// window; see [`AgentBuilder::compaction`](crate::AgentBuilder::compaction). Off by default.
    pub compaction: Option<Compaction>,
    /// Tool search over a big catalog; see [`AgentBuilder::tool_search`](crate::AgentBuilder::tool_search).
    /// Off by default.
    pub tool_search: Option<ToolSearch>,
    /// Checks at the input, the output, tool arguments and tool results;
    /// see [`AgentBuilder::guardrails`](crate::AgentBuilder::guardrails).
    pub guardrails: Option<std::sync::Arc<crate::guardrail::Guardrails>>,
    /// What a provider does with a file or audio part of a user message
    /// it cannot take (default: fail before sending).
    pub unsupported_media: MediaFallback,
    /// The run's id and durable engine; see [`AgentBuilder::durable`](crate::AgentBuilder::durable).
    pub durable: Option<crate::durable::DurableRun>,
    /// Put the conversation in the trace spans: the system prompt and
    /// messages of each model call, what it answered, each tool call's
    /// arguments and result (the GenAI conventions' `gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, ...). Off by
    /// default: they may hold personal data. See
    /// [`AgentBuilder::trace_content`](crate::AgentBuilder::trace_content).
    pub trace_content: bool,
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
            guardrails: None,
            unsupported_media: MediaFallback::Error,
            durable: None,
            trace_content: false,
        }
    }
}
