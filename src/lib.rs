//! # agent-sdk
//!
//! One dependency for applications: re-exports the agent crates behind cargo
//! features (`core`, `mcp`, `providers`, `tools` and `config`, all on by
//! default). See `agent_core` for the loop and the traits, and [`config`] for
//! the configuration file the `agent` command reads.

#[cfg(feature = "core")]
pub use agent_core as core;

#[cfg(feature = "core")]
pub use agent_core::*;

/// MCP servers as tool sources (feature `mcp`): stdio, streamable HTTP and
/// legacy SSE.
#[cfg(feature = "mcp")]
pub use agent_mcp as mcp;

/// HTTP providers (feature `providers`): OpenAI, Anthropic, Gemini,
/// OpenRouter, Ollama and any OpenAI-compatible server.
#[cfg(feature = "providers")]
pub use agent_providers as providers;

/// The coding tools and their workspace sandbox (feature `tools`).
#[cfg(feature = "tools")]
pub use agent_tools as tools;

/// The `agent` command's configuration file (feature `config`).
#[cfg(feature = "config")]
pub mod config;
