//! # loopwright-providers
//!
//! [`loopwright_types::LanguageModel`] implementations over HTTP (reqwest with
//! rustls), streaming text, reasoning and parallel tool calls:
//!
//! - [`OpenAiChatModel`]: OpenAI Chat Completions, OpenRouter and any
//!   OpenAI-compatible server.
//! - [`OpenAiResponsesModel`]: OpenAI Responses, stateless with encrypted
//!   reasoning replayed.
//! - [`GeminiModel`]: Google Gemini, with thought parts and signatures.
//! - [`OllamaModel`]: Ollama's native chat API (NDJSON).
//! - [`AnthropicModel`]: Anthropic Messages, with thinking and signatures.
//!
//! Every provider shares the same transport: retries with backoff before the
//! first byte ([`HttpOptions`]), an inactivity timeout reset by each chunk,
//! cancellation through the request's token, errors mapped to
//! [`loopwright_types::ModelError`] kinds, and debug/trace logging with secrets
//! redacted.
//!
//! [`Providers`] builds models from configuration and the environment and
//! resolves `provider/model` selectors. `ModelRequest::provider_options` are
//! merged into the request body under the provider's name: `openai`,
//! `openrouter` or the configured name for Chat Completions, `openai` for
//! Responses, `anthropic`, `google` and `ollama`.
//!
//! [`Providers::budget`] gives a model's [`loopwright_types::ContextBudget`]: its
//! window from the configuration or [`KNOWN_CONTEXT_WINDOWS`], and its token
//! counter from the configured `tiktoken:<encoding>` or the model id
//! ([`token_counter_for`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), loopwright_types::ModelError> {
//! use loopwright_providers::OpenAiChatModel;
//! let model = OpenAiChatModel::openai("gpt-4.1-mini").api_key("sk-...").build()?;
//! # let _ = model; Ok(()) }
//! ```
//!
//! A builder is also an [`IntoModel`](loopwright_types::IntoModel): it goes
//! to `Agent::builder` as it is, unbuilt. A build that fails (a header value
//! with a newline) does not panic there; the model's first call returns the
//! build's [`ModelError`](loopwright_types::ModelError) instead.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod anthropic;
mod body;
mod budget;
pub mod capabilities;
mod config;
pub mod decode;
mod driver;
#[cfg(feature = "local")]
#[cfg_attr(docsrs, doc(cfg(feature = "local")))]
mod embedded;
pub mod error;
pub mod features;
mod gemini;
mod gemini_schema;
pub mod http;
mod local;
mod media;
mod ollama;
mod openai_chat;
mod openai_responses;
mod settings;
pub mod sse;
mod tokens;
mod tools;
mod unbuilt;

pub use anthropic::{
    ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicBuilder, AnthropicModel, CONTEXT_MANAGEMENT_BETA,
    DEFAULT_MAX_TOKENS, TOOL_SEARCH_BETA,
};
pub use budget::{KNOWN_CONTEXT_WINDOWS, context_window_for, known_context_window};
pub use config::{
    ConfigError, DEFAULT_MODELS, DownloadProgress, ModelConfig, ProviderConfig, ProviderKind, Providers,
    ProvidersConfig,
};
#[cfg(feature = "local")]
pub use embedded::{
    DEFAULT_LOCAL_MAX_TOKENS, DEFAULT_LOCAL_MODEL, KNOWN_LOCAL_MODELS, LOCAL_MODEL_ENV, LocalModel,
    LocalModelError, NamedLocalModel, QWEN3_0_6B, hub,
};
pub use gemini::{GEMINI_BASE_URL, GeminiBuilder, GeminiModel};
pub use http::{HttpOptions, default_client, install_tls_provider};
pub use local::{
    LOCAL_PROBE_TIMEOUT, LocalServer, OPENAI_COMPATIBLE_PORTS, detect_local_server, local_candidates,
};
pub use ollama::{OLLAMA_BASE_URL, OllamaBuilder, OllamaModel, ollama_api_root};
pub use openai_chat::{ChatFlavor, OPENAI_BASE_URL, OPENROUTER_BASE_URL, OpenAiChatBuilder, OpenAiChatModel};
pub use openai_responses::{OpenAiResponsesBuilder, OpenAiResponsesModel};
/// The reqwest this crate takes clients of ([`ProviderSettings::client`]):
/// build yours with this path and the versions always match.
pub use reqwest;
pub use settings::ProviderSettings;
pub use tokens::{
    CL100K_MODEL_PREFIXES, O200K_MODEL_PREFIXES, TIKTOKEN_PREFIX, TiktokenCounter, TiktokenEncoding,
    token_counter_for,
};
