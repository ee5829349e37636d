//! # agent-core
//!
//! The provider-neutral heart of the agent SDK: conversation types, the
//! [`LanguageModel`], [`Tool`] and [`ToolSource`] traits, [`ToolSet`] (merging
//! and naming tools from many sources) and the streaming agent loop
//! ([`Agent`], [`run_agent`]).
//!
//! The data path is one line: prompt -> model stream -> tool calls ->
//! validation -> concurrent execution -> results -> model, with an
//! [`AgentEvent`] sent to the application at each point.
//!
//! This crate has no HTTP client, no MCP client and no provider: those live in
//! `agent-providers` and `agent-mcp`, which implement the traits here.
//!
//! ```
//! use agent_core::{tool_fn, StaticToolSource, ToolSet};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// City name.
//!     city: String,
//! }
//!
//! let tools = ToolSet::builder()
//!     .source(StaticToolSource::native("app").with_tool(tool_fn(
//!         "weather",
//!         "Current weather for a city.",
//!         |w: Weather| async move { Ok::<_, String>(format!("Sunny in {}", w.city)) },
//!     )))
//!     .build();
//! # let _ = tools;
//! ```

mod accounting;
mod agent;
mod approval;
mod budget;
mod duration;
mod fallback;
mod message;
mod model;
mod schema;
mod source;
mod tool;
mod toolset;
mod typed;
mod usage;

#[cfg(feature = "testing")]
pub mod testing;

pub use accounting::{
    AccountingEntry, AccountingSink, EntryStatus, EntryTokens, JsonlSink, LlmEntry, ToolEntry, rfc3339_now,
};
pub use agent::{
    Agent, AgentBuilder, AgentEvent, AgentOptions, AgentResult, AgentRun, CANCEL_GRACE, CONCLUDE_INSTRUCTION,
    DEFAULT_MAX_STEPS, DEFAULT_MAX_TOOL_OUTPUT_BYTES, DEFAULT_TOOL_CONCURRENCY, DEFAULT_TOOL_TIMEOUT,
    ExitReason, RunAborted, run_agent, truncate_output,
};
pub use approval::{
    ApprovalChannel, ApprovalDecision, ApprovalPolicy, ApprovalRequest, ApprovalResponder, ApprovalSession,
    ApprovalTier, Approvals, Approver, DEFAULT_APPROVAL_TIMEOUT,
};
pub use budget::{
    BUDGET_EXCEEDED_RESULT, BudgetFigures, CharEstimate, ContextBudget, DEFAULT_BUFFER_TOKENS,
    DEFAULT_CONTEXT_WINDOW, MESSAGE_OVERHEAD_TOKENS, TokenCounter,
};
pub use duration::parse_duration;
pub use fallback::{DEFAULT_FALLBACK_RETRIES, FallbackModel, MAX_RATE_LIMIT_WAIT, MIN_RATE_LIMIT_WAIT};
pub use message::{
    ContentPart, ImageSource, Message, Reasoning, Role, ToolCall, ToolOutputPart, ToolResult, human_size,
};
pub use model::{LanguageModel, ModelError, ModelEvent, ModelRequest, ModelStream, ToolChoice};
pub use schema::{MAX_REF_DEPTH, flatten_schema, input_schema_for};
pub use source::{SourceKind, StaticToolSource, ToolSource, ToolSourceError};
pub use tool::{
    OWN_TIMEOUT_GRACE, ProgressReporter, SharedTool, Tool, ToolAnnotations, ToolContext, ToolDefinition,
    ToolError, ToolOutput, ToolProgress,
};
pub use toolset::{
    ConnectionReport, EXTERNAL_PRIORITY, ExposedTool, INSTRUCTIONS_HEADING, MAX_TOOL_NAME_LEN,
    NAMESPACE_SEPARATOR, NATIVE_PRIORITY, NameFilter, NameFn, Naming, SourceFailure, SourceOptions,
    ToolCatalog, ToolSet, ToolSetBuilder, is_valid_tool_name, sanitize_tool_name, wildcard_match,
};
pub use typed::{FnTool, tool_fn};
pub use usage::{FinishReason, Usage};

/// Re-exported so applications and providers use the same version.
pub use tokio_util::sync::CancellationToken;
