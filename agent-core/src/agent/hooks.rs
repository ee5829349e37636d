//! Hooks into a run's steps: change the next request, stop after a step,
//! rewrite a tool result. Set through [`AgentOptions`](crate::agent::AgentOptions)
//! or [`AgentBuilder`](crate::AgentBuilder).
//!
//! Hooks are plain functions called inline by the loop: keep them quick (no
//! blocking I/O). They see the run as it is; none can break the history's
//! invariant (every tool call keeps exactly one result).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use loopwright_types::ToolChoice;
use loopwright_types::tool::ToolOutput;
use loopwright_types::{FinishReason, Usage};
use loopwright_types::{Message, ToolCall, ToolResult};

/// What a `prepare_step` hook knows about the step about to start.
#[derive(Debug)]
#[non_exhaustive]
pub struct StepContext<'a> {
    /// 1-based number of the step about to start.
    pub step: u32,
    /// Whether this is the concluding call (tools withheld).
    pub concluding: bool,
    /// The conversation the model will see (input and this run's messages).
    pub messages: &'a [Message],
    /// The steps so far.
    pub steps: &'a [StepSummary],
}

/// The parts of the next request a `prepare_step` hook may change. Starts
/// from the run's options each step: a change lasts one step.
///
/// ```
/// # let model = loopwright_testing::ScriptedModel::new(vec![]);
/// // Offer only the search tool on the first step.
/// let agent = loopwright_core::Agent::builder(model)
///     .prepare_step(|ctx, s| {
///         if ctx.step == 1 {
///             s.active_tools = Some(vec!["search".into()]);
///         }
///     })
///     .build();
/// # let _ = agent;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StepSettings {
    /// The system text (the options' prompt followed by the tool sources'
    /// instructions).
    pub system: Option<String>,
    /// Exposed names of the tools offered this step; `None` offers all. A
    /// call to a tool not offered gets an error result and does not run.
    pub active_tools: Option<Vec<String>>,
    /// How the model may use the tools.
    pub tool_choice: ToolChoice,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit.
    pub max_output_tokens: Option<u32>,
    /// Whether the model may call several tools at once.
    pub parallel_tool_calls: Option<bool>,
    /// Options for one provider's request body, keyed by provider name.
    pub provider_options: BTreeMap<String, Value>,
    /// Reasoning effort and budget.
    pub reasoning: Option<loopwright_types::ReasoningConfig>,
}

/// One finished step, as `stop_when`, `prepare_step` and the run's result
/// ([`AgentResult::steps`](crate::AgentResult::steps)) see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct StepSummary {
    /// 1-based step number.
    pub step: u32,
    /// The step's answer text.
    pub text: String,
    /// The tool calls the model made.
    pub tool_calls: Vec<ToolCall>,
    /// Their results, in call order (what the model will see).
    pub tool_results: Vec<ToolResult>,
    /// Why the model's output ended.
    pub finish_reason: FinishReason,
    /// The step's usage.
    pub usage: Usage,
}

/// What an `on_tool_result` hook knows about the call.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolResultContext<'a> {
    /// The call (exposed name, arguments).
    pub call: &'a ToolCall,
    /// The tool's source, when the name is known.
    pub source: Option<&'a str>,
    /// The tool's own name, when the name is known.
    pub original_name: Option<&'a str>,
}

/// A `prepare_step` hook.
pub type PrepareStep = dyn Fn(&StepContext<'_>, &mut StepSettings) + Send + Sync;
/// A `stop_when` predicate.
pub type StopWhen = dyn Fn(&[StepSummary]) -> bool + Send + Sync;
/// An `on_tool_result` hook.
pub type OnToolResult = dyn Fn(&ToolResultContext<'_>, ToolOutput) -> ToolOutput + Send + Sync;

/// The hooks a run calls (all optional).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Hooks {
    /// Called before each model call.
    pub prepare_step: Option<Arc<PrepareStep>>,
    /// Called after each step whose tool calls ran.
    pub stop_when: Option<Arc<StopWhen>>,
    /// Called on each tool result.
    pub on_tool_result: Option<Arc<OnToolResult>>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("prepare_step", &self.prepare_step.is_some())
            .field("stop_when", &self.stop_when.is_some())
            .field("on_tool_result", &self.on_tool_result.is_some())
            .finish()
    }
}
