//! Run options and their defaults.

use std::time::Duration;

use std::sync::Arc;

use crate::accounting::AccountingSink;
use crate::approval::Approvals;
use crate::budget::ContextBudget;
use crate::model::ToolChoice;

/// Model calls per run before the run is made to conclude: enough for real
/// multi-tool tasks, bounded so a looping model cannot run forever.
pub const DEFAULT_MAX_STEPS: u32 = 30;
/// Per tool call: long enough for a slow search or build step, short enough
/// that a hung server does not stall the run.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Tool calls running at once: parallel enough for fan-out steps, bounded so
/// 100 calls do not open 100 connections.
pub const DEFAULT_TOOL_CONCURRENCY: usize = 16;
/// A tool output beyond this many bytes is cut (head and tail kept): about
/// 12k tokens, which keeps one result from crowding out the conversation.
pub const DEFAULT_MAX_TOOL_OUTPUT_BYTES: usize = 50 * 1024;
/// Told to the model on the last allowed step, when tools are withheld.
pub const CONCLUDE_INSTRUCTION: &str = "You have reached the maximum number of steps for this task, and tools \
are no longer available. Do not call any tool. Answer now with what you have found so far, and say what is \
left undone.";

/// How a run behaves. Built with chained setters from the defaults above.
///
/// ```
/// use agent_core::AgentOptions;
/// let opts = AgentOptions::default()
///     .system("You are terse.")
///     .max_steps(5)
///     .tool_timeout(std::time::Duration::from_secs(10));
/// assert_eq!(opts.max_steps, 5);
/// assert_eq!(opts.tool_concurrency, agent_core::DEFAULT_TOOL_CONCURRENCY);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentOptions {
    /// The system prompt.
    pub system: Option<String>,
    /// Steps (model calls) at most; the last one is made to conclude.
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
    /// Where accounting entries go besides `accounting` events.
    pub accounting: Option<Arc<dyn AccountingSink>>,
    /// The model's context-window budget; `None` leaves requests unchecked.
    pub budget: Option<ContextBudget>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
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
            accounting: None,
            budget: None,
        }
    }
}

impl AgentOptions {
    /// Set the system prompt.
    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system = Some(text.into());
        self
    }

    /// Set the step limit (at least 1).
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
    /// let opts = agent_core::AgentOptions::default().approvals(agent_core::Approvals::via_events());
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
    /// let opts = agent_core::AgentOptions::default().budget(agent_core::ContextBudget::new(128_000));
    /// assert!(opts.budget.is_some());
    /// ```
    pub fn budget(mut self, budget: ContextBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Allow or forbid several tool calls per step.
    pub fn parallel_tool_calls(mut self, on: bool) -> Self {
        self.parallel_tool_calls = on;
        self
    }
}
