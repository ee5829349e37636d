//! # loopwright-types
//!
//! What model, tool and tool-source authors implement and consume, and
//! nothing of how an agent runs: conversation [messages](Message), the
//! [`LanguageModel`] trait with its request, stream, error and usage types,
//! the [`Tool`] and [`ToolSource`] traits with what a tool receives
//! ([`ToolContext`]) and returns ([`ToolOutput`]), typed tools from functions
//! ([`tool_fn()`], or [`tool_fn!`] for an `async fn` of several arguments),
//! JSON Schemas within limits ([`schema`]) and tool sets that merge and name
//! tools from many sources ([`ToolSet`]).
//!
//! This is the pattern of `tower-service` and `@ai-sdk/provider`: a small
//! crate that changes rarely, so a provider, an MCP client or a library of
//! tools depends on it alone. The agent loop (`loopwright-core`) and the
//! `loopwright` facade re-export everything here; an application never
//! needs to name this crate.
//!
//! A tool, written against this crate alone:
//!
//! ```
//! use loopwright_types::{tool_fn, Tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Weather {
//!     /// City name.
//!     city: String,
//! }
//!
//! let weather = tool_fn("weather", "Current weather for a city.", |w: Weather| async move {
//!     Ok(format!("Sunny in {}", w.city))
//! });
//! assert_eq!(weather.definition().name, "weather");
//! ```
//!
//! A model is any [`LanguageModel`]: it takes a [`ModelRequest`] and
//! streams [`ModelEvent`]s (text and reasoning deltas, tool calls, usage,
//! the finish reason), failing with a typed [`ModelError`].
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod budget;
mod duration;
pub mod fallback;
pub mod history;
mod invalid;
pub mod media;
mod message;
mod model;
pub mod model_error;
/// Reading files a person names: regular files only, opened without
/// blocking, under a size limit.
#[doc(hidden)]
pub mod named_file;
mod progress;
mod responder;
pub mod schema;
mod settings;
mod source;
pub mod tool;
mod tool_error;
mod tool_macro;
pub mod toolset;
pub mod trace;
mod truncate;
mod typed;
mod usage;
pub mod user_input;
#[doc(hidden)]
pub mod util;
mod vars;

pub use budget::ContextBudget;
pub use fallback::FallbackModel;
pub use message::{
    CompactionItem, ContentPart, FileSource, ImageSource, Message, Reasoning, Role, ToolCall, ToolOutputPart,
    ToolResult,
};
pub use model::{IntoModel, LanguageModel, MediaFallback, ModelEvent, ModelRequest, ModelStream, ToolChoice};
pub use model_error::ModelError;
pub use responder::Responder;
pub use settings::{ModelCapabilities, ReasoningConfig, ReasoningEffort, ResponseFormat, UnknownEffort};
pub use source::{SourceKind, StaticToolSource, ToolSource, ToolSourceError};
pub use tool::{
    ProgressReceiver, ProgressReporter, RunScope, SharedTool, Tool, ToolAnnotations, ToolContext,
    ToolDefinition, ToolError, ToolOutput, ToolProgress,
};
#[doc(hidden)]
pub use tool_macro::support as __tool;
pub use toolset::{NameFilter, Naming, SourceOptions, ToolCatalog, ToolSet, ToolSetBuilder};
pub use truncate::{DEFAULT_MAX_TOOL_OUTPUT_BYTES, truncate_output};
pub use typed::{FnTool, IntoTool, TypedTool, TypedToolAdapter, markers, tool_fn, tool_fn_with_context};
pub use usage::{FinishReason, Usage};
pub use user_input::{UserInputAnswer, UserInputKind, UserInputRequest, UserInputResponder};

/// Re-exported so applications, providers and tools use the same version.
pub use tokio_util::sync::CancellationToken;

/// The schemars (1.x) tool schemas are derived with. Depend on `schemars`
/// 1.x yourself (a 0.8 derive implements another trait), or derive through
/// this path: `#[derive(loopwright_types::schemars::JsonSchema)]
/// #[schemars(crate = "loopwright_types::schemars")]`.
pub use schemars;
