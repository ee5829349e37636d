//! What a run tells the application: [`AgentEvent`]s as it goes, an
//! [`AgentResult`] at the end.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::accounting::AccountingEntry;
use crate::approval::ApprovalResponder;
use crate::output::OutputMode;
use crate::preflight::{Plan, PlanResponder};
use loopwright_types::ToolOutputPart;
use loopwright_types::user_input::{UserInputRequest, UserInputResponder};
use loopwright_types::{FinishReason, Usage};

/// The kind of a run's [`Outcome`](crate::Outcome), as the `finished`
/// event and `--events` say it.
///
/// ```
/// assert_eq!(serde_json::to_string(&loopwright_core::ExitReason::MaxSteps).unwrap(), "\"max_steps\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExitReason {
    /// The model answered without calling tools.
    Completed,
    /// The step limit was reached: after `max_steps` steps with tool calls,
    /// one more call without tools was asked to conclude; its text (if any)
    /// is the run's text.
    MaxSteps,
    /// A `stop_when` predicate ended the run after a step's tool calls.
    Stopped,
    /// The final answer never matched the output schema (after the
    /// retries).
    OutputInvalid,
    /// The run was cancelled (or its event stream dropped).
    Cancelled,
    /// A model call failed.
    ModelError,
    /// The conversation no longer fits the model's context window.
    TokenLimit,
    /// The pre-flight plan was rejected (by the application, by its
    /// timeout, or because the model never gave a valid plan): no tool ran.
    PlanRejected,
    /// The run tree's budget of model calls or tokens was used up
    /// ([`AgentOptions::max_model_calls`](crate::agent::AgentOptions::max_model_calls)).
    BudgetExhausted,
    /// The run paused on questions to a person
    /// ([`Approvals::defer`](crate::Approvals::defer)): its state goes on
    /// with [`Agent::resume`](crate::Agent::resume).
    AwaitingApproval,
    /// A guardrail stopped the run ([`Outcome::Tripped`](crate::Outcome::Tripped)).
    Tripped,
}

/// One event of a run, serialisable as JSON tagged by `"type"`.
///
/// ```
/// let e = loopwright_core::AgentEvent::TextDelta { text: "Hel".into() };
/// assert_eq!(serde_json::to_value(&e).unwrap(), serde_json::json!({"type": "text_delta", "text": "Hel"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// The run began.
    RunStarted {
        /// The model's provider.
        provider: String,
        /// The model's id.
        model: String,
        /// Exposed names of the tools available at the start.
        tools: Vec<String>,
        /// How the run's structured answer is given, for a run with an
        /// output schema: `native` (the provider's structured output) or
        /// `tool` (the answer comes as a `final_answer` call, which no
        /// `tool_call` or `tool_result` event shows: the answer is the
        /// `output` event).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_mode: Option<OutputMode>,
    },
    /// Which MCP servers are in this run's tools and which could not be
    /// connected (sent after `run_started` when the tool set carries a
    /// [`ConnectionReport`](loopwright_types::toolset::ConnectionReport); each failure is also a
    /// `warning`).
    McpConnected {
        /// Servers connected, in config order.
        servers: Vec<String>,
        /// Servers left out, each with its error.
        failed: Vec<loopwright_types::toolset::SourceFailure>,
    },
    /// A model call began.
    StepStarted {
        /// 1-based step number.
        step: u32,
    },
    /// Answer text from the model.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning text from the model.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// More of a tool call's arguments as the model streams them (JSON
    /// text, in order; they join into the call's input), for showing a long
    /// call being written. Sent only by providers that stream arguments,
    /// always before the call's `tool_call` event; display only: the
    /// `tool_call` event carries the whole, parsed input.
    ///
    /// ```
    /// let e = loopwright_core::AgentEvent::ToolInputDelta {
    ///     call_id: "c1".into(),
    ///     tool: "weather".into(),
    ///     delta: "{\"pa".into(),
    /// };
    /// assert_eq!(serde_json::to_value(&e).unwrap()["type"], "tool_input_delta");
    /// ```
    ToolInputDelta {
        /// The call's id.
        call_id: String,
        /// The tool's exposed name, as the model named it when it began
        /// the call (empty when the provider did not say it first).
        tool: String,
        /// The new argument text.
        delta: String,
    },
    /// The model called a tool (sent before the call is validated and run).
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The exposed name the model used.
        tool: String,
        /// The tool's source, when the name is known.
        source: Option<String>,
        /// The tool's own name, when the name is known.
        original_name: Option<String>,
        /// The arguments (a JSON string holding the raw text when they were
        /// not valid JSON).
        input: Value,
    },
    /// A call waits for approval; answer through `responder` (or the
    /// installed approver answers). No answer within the approval timeout
    /// denies it; so does dropping this event unanswered when no approver
    /// is installed (then at once).
    ApprovalRequested {
        /// The call's id.
        call_id: String,
        /// The exposed tool name.
        tool: String,
        /// The call's arguments.
        input: Value,
        /// Where the answer goes (not serialised).
        #[serde(skip)]
        responder: ApprovalResponder,
    },
    /// A call's approval was decided.
    ApprovalResolved {
        /// The call's id.
        call_id: String,
        /// Whether it may run.
        approved: bool,
        /// Why it was denied.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The pre-flight plan, before any tool runs (runs with
    /// [`AgentOptions::preflight`](crate::agent::AgentOptions::preflight)): answer
    /// through `responder` (or the preflight's approver answers). No answer
    /// within the timeout rejects it; so does dropping this event
    /// unanswered when no approver is installed (then at once).
    PlanProposed {
        /// What the model proposes.
        plan: Plan,
        /// Where the answer goes (not serialised).
        #[serde(skip)]
        responder: PlanResponder,
    },
    /// The run pauses on these questions (just before `finished` with exit
    /// `awaiting_approval`); its [`AgentResult::state`](crate::AgentResult::state) resumes it.
    AwaitingApproval {
        /// The paused state's id.
        state_id: String,
        /// What waits for a person, sub-agents' questions included.
        pending: Vec<super::state::PendingCall>,
    },
    /// The plan was decided.
    PlanResolved {
        /// Whether the run goes on.
        approved: bool,
        /// Whether the application changed the plan.
        edited: bool,
        /// The plan followed (or, rejected, the one proposed).
        plan: Plan,
        /// Why it was rejected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A running tool asks the person for input (an MCP server's
    /// elicitation): answer through `responder`. No answer within the
    /// question's timeout declines it; so does dropping this event
    /// unanswered (then at once). An `input_resolved` event follows.
    InputRequested {
        /// The asking call's id.
        call_id: String,
        /// The question.
        request: UserInputRequest,
        /// Where the answer goes (not serialised).
        #[serde(skip)]
        responder: UserInputResponder,
    },
    /// A question of `input_requested` was answered (or declined by its
    /// timeout, or cancelled with its call).
    InputResolved {
        /// The asking call's id.
        call_id: String,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// Why, when the application did not answer itself (`timeout`,
        /// `unanswered`, `cancelled`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A running tool reported progress.
    ToolProgress {
        /// The call's id.
        call_id: String,
        /// Progress so far.
        progress: f64,
        /// Total, when known.
        total: Option<f64>,
        /// A note.
        message: Option<String>,
    },
    /// A tool call ended (in completion order; the history keeps call order).
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The exposed name.
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// What the model will see.
        output: Vec<ToolOutputPart>,
        /// Wall time of the call (0 when it was never run).
        duration_ms: u64,
    },
    /// A model call ended.
    StepFinished {
        /// 1-based step number.
        step: u32,
        /// Why it ended.
        finish_reason: FinishReason,
        /// Its usage.
        usage: Usage,
    },
    /// A durable run is executed again (after its process died, on this
    /// process or another): the events that follow are this execution's,
    /// `attempt` (the first execution is 1 and sends no `resumed`). Steps
    /// the engine had journaled are not run again and send nothing; the
    /// step that was interrupted runs again and sends its events again. A
    /// client keeps, of each step (by its `step_started` number) and each
    /// tool call (by its `call_id`), what the highest attempt sent.
    ///
    /// ```
    /// let e = loopwright_core::AgentEvent::Resumed { attempt: 2 };
    /// assert_eq!(serde_json::to_value(&e).unwrap(), serde_json::json!({"type": "resumed", "attempt": 2}));
    /// ```
    Resumed {
        /// The execution, from 1 ([`Durability::attempt`](crate::durable::Durability::attempt)).
        attempt: u32,
    },
    /// A model attempt failed and the step starts over on the next model;
    /// the partial output of the failed attempt is not in the history.
    ModelFallback {
        /// `provider/model` that failed.
        from: String,
        /// `provider/model` tried next.
        to: String,
        /// Why.
        error: String,
    },
    /// An accounting entry (one per model attempt and per tool call).
    Accounting {
        /// The entry.
        entry: AccountingEntry,
    },
    /// The history was compacted to fit the context window (see
    /// [`AgentOptions::compaction`](crate::agent::AgentOptions::compaction)); the
    /// run goes on with the compacted history.
    ///
    /// ```
    /// let e = loopwright_core::AgentEvent::Compacted { strategy: "clear_tool_results".into(), tokens_before: 9000, tokens_after: 4000 };
    /// assert_eq!(serde_json::to_value(&e).unwrap()["type"], "compacted");
    /// ```
    Compacted {
        /// What was done: `clear_tool_results`, `summarize`, or `provider`
        /// (the provider compacted on its side).
        strategy: String,
        /// Tokens of the next request before (projected).
        tokens_before: u64,
        /// Tokens of the next request after (projected).
        tokens_after: u64,
    },
    /// Something the application should know that did not stop the run.
    Warning {
        /// What happened.
        message: String,
    },
    /// Guardrails checked something: one event per guard, point and
    /// subject (a step's output checks are counted and reported when the
    /// step ends).
    ///
    /// ```
    /// use loopwright_core::guardrail::{GuardAction, GuardPoint};
    /// let e = loopwright_core::AgentEvent::GuardrailChecked {
    ///     guard: "pii".into(), point: GuardPoint::Output, verdict: GuardAction::Replace,
    ///     step: 1, call_id: None, checks: 3, duration_ms: 0,
    /// };
    /// assert_eq!(serde_json::to_value(&e).unwrap()["verdict"], "replace");
    /// ```
    GuardrailChecked {
        /// The guard's name.
        guard: String,
        /// Where.
        point: crate::guardrail::GuardPoint,
        /// The strongest verdict of its checks.
        verdict: crate::guardrail::GuardAction,
        /// The step (0: the input).
        step: u32,
        /// The tool call, at the tool points.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// How many checks (a step's output is checked at each checkpoint).
        checks: u32,
        /// Their time in all.
        duration_ms: u64,
    },
    /// A guardrail stopped the run; sent just before `finished`.
    GuardrailTripped {
        /// Which guard, where, and why.
        trip: crate::guardrail::Trip,
    },
    /// The final answer, validated against the output schema (sent just
    /// before `finished`, for runs with an output schema).
    Output {
        /// The answer.
        value: Value,
    },
    /// An event of a sub-agent's run (an [`AgentTool`](crate::AgentTool)
    /// call), in the order the sub-agent sent it. Events of deeper
    /// sub-agents come wrapped once, with their full path.
    ///
    /// ```
    /// let e = loopwright_core::AgentEvent::SubAgent {
    ///     path: "coordinator/researcher".into(),
    ///     event: Box::new(loopwright_core::AgentEvent::TextDelta { text: "Hi".into() }),
    /// };
    /// assert_eq!(serde_json::to_value(&e).unwrap(), serde_json::json!(
    ///     {"type": "sub_agent", "path": "coordinator/researcher", "event": {"type": "text_delta", "text": "Hi"}}));
    /// ```
    SubAgent {
        /// The sub-agent's path (`coordinator/researcher`).
        path: String,
        /// Its event.
        event: Box<AgentEvent>,
    },
    /// The run is over; always the last event.
    ///
    /// `tree_usage` is always there (equal to `usage` for a run that
    /// started no sub-agent), so a reader wanting the whole tree's total
    /// reads one field without knowing whether sub-agents ran.
    Finished {
        /// How it ended.
        exit: ExitReason,
        /// The final answer text (the last step's text).
        text: String,
        /// Total usage of this run's own model calls.
        usage: Usage,
        /// `usage` plus that of every sub-agent run it started, theirs
        /// included (as [`AgentResult::tree_usage`](crate::AgentResult::tree_usage)).
        tree_usage: Usage,
        /// Steps taken.
        steps: u32,
        /// The error, for `model_error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl AgentEvent {
    /// A `tool_result` event's output as text (its text and JSON parts,
    /// joined by newlines; images and files left out); `None` for any
    /// other event.
    ///
    /// ```
    /// use loopwright_core::{AgentEvent, ToolOutputPart};
    /// let e = AgentEvent::ToolResult {
    ///     call_id: "c1".into(),
    ///     tool: "weather".into(),
    ///     is_error: false,
    ///     output: vec![ToolOutputPart::text("sunny")],
    ///     duration_ms: 3,
    /// };
    /// assert_eq!(e.tool_result_text().as_deref(), Some("sunny"));
    /// assert_eq!(AgentEvent::TextDelta { text: "hi".into() }.tool_result_text(), None);
    /// ```
    pub fn tool_result_text(&self) -> Option<String> {
        match self {
            Self::ToolResult { output, .. } => Some(loopwright_types::tool::render_parts_text(output)),
            _ => None,
        }
    }
}
