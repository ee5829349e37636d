//! # agent-sdk
//!
//! One dependency for applications: re-exports the agent crates behind cargo
//! features (`core`, `mcp`, `providers`, `tools` and `config`, all on by
//! default). See `agent_core` for the loop and the traits, and [`config`] for
//! the configuration file the `agent` command reads.
//!
//! The library in 15 lines: tools of your own and of MCP servers, a model
//! from the environment, a streamed run.
//!
//! ```no_run
//! # #[cfg(all(feature = "mcp", feature = "providers"))]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_sdk::mcp::{connect_all, parse_mcp_servers};
//! use agent_sdk::{Agent, AgentEvent, StaticToolSource, ToolSet, providers::Providers, tool_fn};
//! use futures::StreamExt;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct City { /** City name. */ city: String }
//!
//! let weather = tool_fn("weather", "Weather in a city.", |c: City| async move { Ok::<_, String>(format!("Sunny in {}", c.city)) });
//! let config = serde_json::json!({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}});
//! let servers = connect_all(parse_mcp_servers(&config)?).await; // a failing server is reported, not fatal
//! let tools = servers.add_to(ToolSet::builder().source(StaticToolSource::native("app").with_tool(weather))).build();
//! let model = Providers::from_env()?.model("anthropic/claude-sonnet-4-5")?;
//! let mut run = Agent::builder(model).tools(tools).system("Be brief.").build().prompt("Weather and time in Lisbon?");
//! while let Some(event) = run.next().await {
//!     if let AgentEvent::TextDelta { text } = event { print!("{text}") } // or serde_json::to_string(&event)
//! }
//! let result = run.into_result().await?; // the new messages to keep, the text, usage, how it ended
//! servers.close_all().await;
//! # let _ = result;
//! # Ok(()) }
//! ```

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
