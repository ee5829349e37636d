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
pub mod budget;
pub mod compaction;
pub mod durable;
mod duration;
pub mod fallback;
pub mod history;
pub mod media;
mod message;
mod model;
pub mod model_error;
/// Reading files a person names: regular files only, opened without
/// blocking, under a size limit (documented as `loopwright::textfile`).
#[doc(hidden)]
pub mod named_file;
pub mod output;
pub mod preflight;
mod progress;
pub mod replay;
mod responder;
pub mod schema;
mod settings;
mod source;
pub mod telemetry;
pub mod tool;
pub mod tool_search;
pub mod toolset;
mod typed;
mod usage;
pub mod user_input;
pub mod util;

#[cfg(feature = "testing")]
pub mod testing;

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
pub use budget::ContextBudget;
pub use fallback::FallbackModel;
pub use message::{
    CompactionItem, ContentPart, FileSource, ImageSource, Message, Reasoning, Role, ToolCall, ToolOutputPart,
    ToolResult,
};
pub use model::{LanguageModel, MediaFallback, ModelEvent, ModelRequest, ModelStream, ToolChoice};
pub use model_error::ModelError;
pub use output::{OutputError, OutputMode, OutputSpec};
pub use responder::Responder;
pub use settings::{ModelCapabilities, ReasoningConfig, ReasoningEffort, ResponseFormat, UnknownEffort};
pub use source::{SourceKind, StaticToolSource, ToolSource, ToolSourceError};
pub use tool::{
    ProgressReceiver, ProgressReporter, SharedTool, Tool, ToolAnnotations, ToolContext, ToolDefinition,
    ToolError, ToolOutput, ToolProgress,
};
pub use toolset::{NameFilter, Naming, SourceOptions, ToolCatalog, ToolSet, ToolSetBuilder};
pub use typed::{FnTool, IntoTool, TypedTool, TypedToolAdapter, markers, tool_fn, tool_fn_with_context};
pub use usage::{FinishReason, Usage};
pub use user_input::{UserInputAnswer, UserInputKind, UserInputRequest, UserInputResponder};

/// Re-exported so applications and providers use the same version.
pub use tokio_util::sync::CancellationToken;

/// The schemars (1.x) tool schemas are derived with. Depend on `schemars`
/// 1.x yourself (a 0.8 derive implements another trait), or derive through
/// this path: `#[derive(loopwright_core::schemars::JsonSchema)]
/// #[schemars(crate = "loopwright_core::schemars")]`.
pub use schemars;
