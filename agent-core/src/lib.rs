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
//! Record/replay and the scripted test model are in `loopwright-testing`.
//!
//! This crate has no HTTP client, no MCP client and no provider: those live in
//! `loopwright-providers` and `loopwright-mcp`, which implement the traits here. The
//! crate root holds what an application names; the modules hold the rest
//! (limits and defaults, naming helpers, accounting entries, utilities).
//!
//! ```
//! use loopwright_core::{tool_fn, Agent};
//! # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
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
//!
//! A tool of several arguments needs no struct: [`tool_fn!`] reads like an
//! `async fn`, with doc comments as the descriptions.
//!
//! ```
//! use loopwright_core::{Agent, ToolError, tool_fn};
//! # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
//!
//! let agent = Agent::builder(model)
//!     .tool(tool_fn! {
//!         /// The distance between two cities, in kilometres.
//!         async fn distance(
//!             /// Where from.
//!             from: String,
//!             /// Where to.
//!             to: String,
//!         ) -> Result<u32, ToolError> {
//!             Ok(if from == to { 0 } else { 1_737 })
//!         }
//!     })
//!     .build();
//! # let _ = agent;
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod accounting;
pub mod agent;
pub mod approval;
pub mod compaction;
pub mod durable;
pub mod guardrail;
pub mod output;
pub mod preflight;
pub mod telemetry;
pub mod tool_search;

pub mod message {
    //! Conversation messages beyond the root's: the payloads of image,
    //! file, reasoning and compaction parts.
    pub use loopwright_types::{CompactionItem, FileSource, ImageSource, Reasoning};
}

pub mod model {
    //! What a model call carries beyond the [`LanguageModel`](crate::LanguageModel)
    //! trait: the request and its settings, the event stream, capabilities,
    //! finish reasons, and the error's helpers.
    pub use loopwright_types::model_error::{CONTEXT_LENGTH_PHRASES, ErrorSource, is_context_length_message};
    pub use loopwright_types::{
        FinishReason, MediaFallback, ModelCapabilities, ModelEvent, ModelRequest, ModelStream,
        ReasoningConfig, ResponseFormat, UnknownEffort,
    };
}

pub mod tool {
    //! Tools beyond the root's [`Tool`](crate::Tool) and
    //! [`tool_fn`](fn@crate::tool_fn): annotations, progress, typed tools with
    //! state, and what an engine gives a call.
    pub use loopwright_types::tool::{
        IDEMPOTENCY_KEY_SEPARATOR, MCP_META_IDEMPOTENCY_KEY, OWN_TIMEOUT_GRACE, PROGRESS_BUFFER,
        ProgressReceiver, ProgressReporter, RunScope, SharedTool, ToolAnnotations, ToolProgress,
        idempotency_key,
    };
    pub use loopwright_types::{FnTool, IntoTool, TypedTool, TypedToolAdapter, markers};
}

pub mod toolset {
    //! Tool sets beyond the root's [`ToolSet`]: sources,
    //! naming, filters, overrides and the catalog a run offers.
    pub use loopwright_types::toolset::*;
    pub use loopwright_types::{SourceKind, StaticToolSource, ToolSourceError};
}

pub mod user_input {
    //! A tool asking the person behind the run (MCP elicitation).
    pub use loopwright_types::Responder;
    pub use loopwright_types::user_input::*;
}

/// Reading files a person names: regular files only, opened without
/// blocking, under a size limit (documented as `loopwright::textfile`).
#[doc(hidden)]
pub use loopwright_types::named_file;
/// Helpers the loopwright crates share (not API).
#[doc(hidden)]
pub use loopwright_types::util;
pub use loopwright_types::{budget, fallback, history, media, schema};

pub use agent::{
    Agent, AgentBuilder, AgentEvent, AgentResult, AgentRun, AgentTool, Conversation, ExitReason, Outcome,
    RunError, RunInput, RunState,
};
pub use approval::{ApprovalDecision, Approvals};
pub use loopwright_types::{
    CancellationToken, ContentPart, ContextBudget, FallbackModel, IntoModel, LanguageModel, Message,
    ModelError, ReasoningEffort, Role, Tool, ToolCall, ToolChoice, ToolContext, ToolDefinition, ToolError,
    ToolOutput, ToolOutputPart, ToolResult, ToolSet, ToolSource, Usage, schemars, tool_fn,
    tool_fn_with_context,
};
pub use output::OutputSpec;
