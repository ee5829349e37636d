//! # loopwright-core
//!
//! The provider-neutral heart of the agent SDK: conversation types, the
//! [`LanguageModel`], [`Tool`] and [`ToolSource`] traits, [`ToolSet`] (merging
//! and naming tools from many sources) and the streaming agent loop
//! ([`Agent`], [`Conversation`]).
//!
//! The data path is one line: prompt -> model stream -> tool calls ->
//! validation -> (approval) -> concurrent execution -> results -> model, with
//! an [`AgentEvent`] sent to the application at each point.
//!
//! [`replay`] records a run's model and tool calls to a cassette and serves
//! them back, for tests that need neither the provider nor the servers.
//!
//! This crate has no HTTP client, no MCP client and no provider: those live in
//! `loopwright-providers` and `loopwright-mcp`, which implement the traits here. The
//! crate root holds what an application names; the modules hold the rest
//! (limits and defaults, naming helpers, accounting entries, utilities).
//!
//! ```
//! use loopwright_core::{tool_fn, Agent};
//! # let model = std::sync::Arc::new(loopwright_core::testing::ScriptedModel::new(vec![]));
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// City name.
//!     city: String,
//! }
//!
//! let agent = Agent::builder(model)
//!     .tool(tool_fn("weather", "Current weather for a city.", |w: Weather| async move {
//!         Ok(format!("Sunny in {}", w.city))
//!     }))
//!     .build();
//! # let _ = agent;
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod accounting;
pub mod agent;
pub mod approval;
pub mod compaction;
pub mod durable;
pub mod output;
pub mod preflight;
pub mod replay;
pub mod telemetry;
pub mod tool_search;

#[cfg(feature = "testing")]
pub mod testing;

/// Reading files a person names: regular files only, opened without
/// blocking, under a size limit (documented as `loopwright::textfile`).
#[doc(hidden)]
pub use loopwright_types::named_file;
pub use loopwright_types::{
    budget, fallback, history, media, model_error, schema, tool, toolset, user_input, util,
};

pub use accounting::{AccountingSink, JsonlSink};
pub use agent::{
    Agent, AgentBuilder, AgentEvent, AgentOptions, AgentResult, AgentRun, AgentSlot, AgentTool, Conversation,
    Decisions, ExitReason, PendingCall, PendingKind, Resume, ResumeError, RunAborted, RunError, RunState,
    RunStateError, StepContext, StepSettings, StepSummary, ToolResultContext, Turn, run_agent,
};
pub use approval::{
    ApprovalDecision, ApprovalPolicy, ApprovalRequest, ApprovalResponder, ApprovalSession, ApprovalTier,
    Approvals, Approver,
};
pub use loopwright_types::{
    CancellationToken, CompactionItem, ContentPart, ContextBudget, FallbackModel, FileSource, FinishReason,
    FnTool, ImageSource, IntoTool, LanguageModel, MediaFallback, Message, ModelCapabilities, ModelError,
    ModelEvent, ModelRequest, ModelStream, NameFilter, Naming, ProgressReceiver, ProgressReporter, Reasoning,
    ReasoningConfig, ReasoningEffort, Responder, ResponseFormat, Role, SharedTool, SourceKind, SourceOptions,
    StaticToolSource, Tool, ToolAnnotations, ToolCall, ToolCatalog, ToolChoice, ToolContext, ToolDefinition,
    ToolError, ToolOutput, ToolOutputPart, ToolProgress, ToolResult, ToolSet, ToolSetBuilder, ToolSource,
    ToolSourceError, TypedTool, TypedToolAdapter, UnknownEffort, Usage, UserInputAnswer, UserInputKind,
    UserInputRequest, UserInputResponder, markers, schemars, tool_fn, tool_fn_with_context,
};
pub use output::{OutputError, OutputMode, OutputSpec};
