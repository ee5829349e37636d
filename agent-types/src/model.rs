//! The [`LanguageModel`] trait: one streaming call to a model.
//!
//! A provider turns a [`ModelRequest`] into a stream of [`ModelEvent`]s. The
//! stream's contract, relied on by the agent loop:
//! - text and reasoning arrive as deltas, in order;
//! - a tool call is usable only once [`ModelEvent::ToolCallComplete`] arrived
//!   for it (start and input deltas are for display only);
//! - the stream ends with exactly one [`ModelEvent::Finish`]; a stream that
//!   ends without it, or yields an `Err`, did not complete its step.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::Message;
use crate::model_error::ModelError;
use crate::settings::{ModelCapabilities, ReasoningConfig, ResponseFormat};
use crate::tool::ToolDefinition;
use crate::usage::{FinishReason, Usage};

/// The stream a [`LanguageModel`] returns.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A model that streams.
///
/// Object-safe: the agent holds an `Arc<dyn LanguageModel>`.
///
/// ```
/// use loopwright_types::{LanguageModel, ModelError, ModelRequest, ModelStream, ModelEvent, FinishReason, Usage};
/// use futures::StreamExt;
///
/// /// A model that always answers "hi".
/// struct Hi;
///
/// #[async_trait::async_trait]
/// impl LanguageModel for Hi {
///     fn provider(&self) -> &str { "example" }
///     fn model_id(&self) -> &str { "hi-1" }
///     async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
///         let events = vec![
///             Ok(ModelEvent::TextDelta { text: "hi".into() }),
///             Ok(ModelEvent::Finish { reason: FinishReason::Stop, usage: Usage::default() }),
///         ];
///         Ok(futures::stream::iter(events).boxed())
///     }
/// }
/// ```
#[async_trait]
pub trait LanguageModel: Send + Sync {
    /// The provider's name, such as `openai` or `anthropic`.
    fn provider(&self) -> &str;

    /// The model's id at that provider, such as `gpt-4.1`.
    fn model_id(&self) -> &str;

    /// What the model can do (default: nothing beyond text and tools), so
    /// that the agent asks only for what the model supports.
    fn capabilities(&self) -> ModelCapabilities {
        ModelCapabilities::default()
    }

    /// The models a call may go to, in the order they are tried, as
    /// `provider/model` (default: this one; a fallback list names each).
    ///
    /// ```
    /// # use loopwright_types::{LanguageModel, ModelRequest, ModelStream, ModelError};
    /// # struct Echo;
    /// # #[async_trait::async_trait]
    /// # impl LanguageModel for Echo {
    /// #     fn provider(&self) -> &str { "example" }
    /// #     fn model_id(&self) -> &str { "hi-1" }
    /// #     async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> { unimplemented!() }
    /// # }
    /// assert_eq!(Echo.chain(), ["example/hi-1"]);
    /// ```
    fn chain(&self) -> Vec<String> {
        vec![format!("{}/{}", self.provider(), self.model_id())]
    }

    /// Start one model call. Errors before the first event (connection,
    /// status, authentication) are returned here; later ones come through
    /// the stream.
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError>;
}

/// What makes the model of an agent: any [`LanguageModel`], a shared one
/// (`Arc<M>` or `Arc<dyn LanguageModel>`), or a provider's model builder
/// (the providers implement it for theirs), so a model goes to an agent's
/// builder as it was made.
///
/// ```
/// use std::sync::Arc;
/// use loopwright_types::{IntoModel, LanguageModel, ModelError, ModelRequest, ModelStream};
/// struct Hi;
/// #[async_trait::async_trait]
/// impl LanguageModel for Hi {
///     fn provider(&self) -> &str { "example" }
///     fn model_id(&self) -> &str { "hi-1" }
///     async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> {
///         Err(ModelError::server(None, "unused"))
///     }
/// }
/// let a: Arc<dyn LanguageModel> = Hi.into_model();
/// let b: Arc<dyn LanguageModel> = Arc::new(Hi).into_model();
/// assert_eq!((a.model_id(), b.model_id()), ("hi-1", "hi-1"));
/// ```
pub trait IntoModel {
    /// The model, shared.
    fn into_model(self) -> Arc<dyn LanguageModel>;
}

impl<M: LanguageModel + 'static> IntoModel for M {
    fn into_model(self) -> Arc<dyn LanguageModel> {
        Arc::new(self)
    }
}

impl<M: LanguageModel + 'static> IntoModel for Arc<M> {
    fn into_model(self) -> Arc<dyn LanguageModel> {
        self
    }
}

impl IntoModel for Arc<dyn LanguageModel> {
    fn into_model(self) -> Arc<dyn LanguageModel> {
        self
    }
}

/// How the model may use tools.
///
/// ```
/// use loopwright_types::ToolChoice;
/// assert_eq!(ToolChoice::default(), ToolChoice::Auto);
/// let named = ToolChoice::Tool { name: "search".into() };
/// assert_eq!(serde_json::to_value(&named).unwrap()["name"], "search");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool {
        /// The exposed tool name.
        name: String,
    },
}

/// Everything one model call needs.
///
/// Messages and tools are behind `Arc`s so that the loop hands the history to
/// the provider without copying it every step.
///
/// ```
/// use loopwright_types::{Message, ModelRequest};
/// let request = ModelRequest::new(vec![Message::user("hi")]);
/// assert_eq!(request.messages.len(), 1);
/// assert!(request.tools.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The system prompt, if any (kept apart: several providers take it apart).
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Arc<Vec<Message>>,
    /// The tools the model may call (exposed names).
    pub tools: Arc<Vec<ToolDefinition>>,
    /// How the model may use the tools.
    pub tool_choice: ToolChoice,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit.
    pub max_output_tokens: Option<u32>,
    /// Whether the model may call several tools in one step; `None` leaves
    /// the provider's default.
    pub parallel_tool_calls: Option<bool>,
    /// Cancelled when the caller no longer wants the answer; a provider aborts
    /// its HTTP request.
    pub cancellation: CancellationToken,
    /// Free-form options keyed by provider name (`"openai"`, `"anthropic"`,
    /// ...), merged into that provider's request body.
    pub provider_options: BTreeMap<String, Value>,
    /// The shape the answer must have (native structured output); a
    /// provider whose model lacks it leaves it out.
    pub response_format: Option<ResponseFormat>,
    /// Reasoning effort and budget; left out for models that cannot reason.
    pub reasoning: Option<ReasoningConfig>,
    /// Mark the stable prefix (system prompt, tools, conversation so far)
    /// for the provider's prompt cache where it needs marking (Anthropic
    /// `cache_control`). The agent sets it from
    /// `AgentOptions::prompt_caching` (on by default).
    pub prompt_caching: bool,
    /// Tools held back by tool search: the model loads them through the
    /// search tool, whose results name them
    /// ([`ToolOutputPart::ToolReference`](crate::ToolOutputPart::ToolReference)).
    /// A provider that defers tools natively (Anthropic's `defer_loading`)
    /// declares them, deferred, with every tool a result in the history
    /// references; the others leave them out (the loop offers a tool in
    /// `tools` once it was found). Empty without tool search.
    pub deferred_tools: Arc<Vec<ToolDefinition>>,
    /// Let the provider compact the conversation on its side once the
    /// request holds this many tokens (OpenAI Responses compaction,
    /// Anthropic's clearing of old tool uses); providers without it ignore
    /// it. Set by `CompactionStrategy::Provider`.
    pub compact_above: Option<u64>,
    /// What a provider does with a file or audio part of a user message it
    /// cannot take: fail the request before sending it (the default) or
    /// send a text placeholder instead.
    pub unsupported_media: MediaFallback,
}

/// What a provider does with a file, audio or image part of a user
/// message that its wire format (or model) cannot take.
///
/// ```
/// assert_eq!(loopwright_types::MediaFallback::default(), loopwright_types::MediaFallback::Error);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MediaFallback {
    /// Fail before sending, naming the part and the provider.
    #[default]
    Error,
    /// Send the part's text placeholder (`[file: application/pdf, 1.2 MB,
    /// report.pdf]`) instead.
    Placeholder,
}

impl ModelRequest {
    /// A request with these messages and everything else default.
    ///
    /// ```
    /// let r = loopwright_types::ModelRequest::new(vec![]);
    /// assert!(r.system.is_none());
    /// ```
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages: Arc::new(messages),
            ..Self::default()
        }
    }

    /// The options given for one provider, if any.
    ///
    /// ```
    /// let mut r = loopwright_types::ModelRequest::new(vec![]);
    /// r.provider_options.insert("openai".into(), serde_json::json!({"store": false}));
    /// assert_eq!(r.options_for("openai").unwrap()["store"], false);
    /// ```
    pub fn options_for(&self, provider: &str) -> Option<&Value> {
        self.provider_options.get(provider)
    }
}

/// One event of a model's stream.
///
/// ```
/// use loopwright_types::ModelEvent;
/// let e = ModelEvent::ToolCallComplete { id: "c1".into(), name: "echo".into(), input_json: "{}".into(), provider_data: None };
/// assert!(matches!(e, ModelEvent::ToolCallComplete { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelEvent {
    /// Answer text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning text.
    ReasoningDelta {
        /// The new text.
        text: String,
    },
    /// The reasoning block so far is complete; carries what the provider
    /// needs to accept it back.
    ReasoningDone {
        /// The provider's signature over the block.
        signature: Option<String>,
        /// Other opaque data (for example redacted reasoning).
        provider_data: Option<Value>,
    },
    /// A tool call began (display only).
    ToolCallStart {
        /// The call id.
        id: String,
        /// The exposed tool name.
        name: String,
    },
    /// More of a tool call's JSON arguments (display only).
    ToolCallDelta {
        /// The call id.
        id: String,
        /// The new argument text.
        delta: String,
    },
    /// A tool call is complete and may be run.
    ToolCallComplete {
        /// The call id.
        id: String,
        /// The exposed tool name.
        name: String,
        /// The arguments as JSON text (empty means `{}`).
        input_json: String,
        /// Provider data attached to the call, replayed verbatim.
        provider_data: Option<Value>,
    },
    /// The provider compacted the conversation on its side while
    /// answering: `item` (an OpenAI Responses compaction item) joins the
    /// assistant message and goes back verbatim in later requests;
    /// `cleared_tokens` is how many input tokens it cleared, when it says
    /// (Anthropic's context management).
    Compacted {
        /// The compaction item to keep.
        item: Option<crate::message::CompactionItem>,
        /// Input tokens cleared.
        cleared_tokens: Option<u64>,
    },
    /// Usage so far (may come several times; the last one counts).
    Usage {
        /// The usage.
        usage: Usage,
    },
    /// The attempt so far failed and the same request now goes to another
    /// model ([`FallbackModel`](crate::FallbackModel)): discard this step's
    /// output so far; the next model's events follow.
    Fallback {
        /// `provider/model` that failed.
        from: String,
        /// `provider/model` tried next.
        to: String,
        /// Why the attempt failed.
        error: String,
        /// How long the failed attempt took.
        latency_ms: u64,
    },
    /// The step is over.
    Finish {
        /// Why.
        reason: FinishReason,
        /// Final usage of the step.
        usage: Usage,
    },
}
