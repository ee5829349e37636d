//! # loopwright
//!
//! One dependency for applications: re-exports the agent crates behind cargo
//! features (`core`, `mcp`, `providers`, `tools`, `config`, `files` and
//! `skills`, all on by default; `serve`, the headends; `store`, conversations
//! and runs kept in SQLite, and `postgres`, in PostgreSQL; `otel`, the OTLP
//! export of the trace spans; `eval`, evals over datasets of cases; `testing`, record/replay and
//! the scripted model). See `loopwright_core` for the loop and the
//! traits, [`config`] for the configuration file the `loopwright` command reads,
//! [`files`] for agents defined in Markdown files, with sub-agents (any
//! agent is also a tool of another: [`AgentTool`]), and [`skills`] for Agent
//! Skills (folders with a `SKILL.md` the model loads when a task needs one).
//! A run can propose a plan for approval before its first tool call
//! ([`preflight`]) and makes trace spans after the OpenTelemetry GenAI
//! conventions ([`telemetry`]).
//!
//! The library: a typed tool with its call's context, MCP servers' tools,
//! a streamed run, a conversation continued and persisted, and `?` on a run
//! that did not answer.
//!
//! ```no_run
//! # #[cfg(all(feature = "mcp", feature = "providers"))]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright::mcp::{connect_all, parse_mcp_servers};
//! use loopwright::{Agent, AgentEvent, Conversation, ToolContext, providers::Providers, tool_fn_with_context};
//! use futures::StreamExt;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct City { /** City name. */ city: String }
//!
//! // The schema comes from `City`; the context has the call's cancellation, deadline and progress.
//! let weather = tool_fn_with_context("weather", "Weather in a city.", |c: City, ctx: ToolContext| async move {
//!     ctx.progress().report(1.0, Some(1.0), Some(format!("looking up {}", c.city)));
//!     Ok(format!("Sunny in {}", c.city))
//! });
//! let config = serde_json::json!({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}});
//! let servers = connect_all(parse_mcp_servers(&config)?).await; // a failing server is reported, not fatal
//! let model = Providers::from_env()?.model("anthropic/claude-sonnet-4-5")?;
//! let agent = Agent::builder(model).tool(weather).tools(servers.tool_set()).system("Be brief.").build();
//!
//! let mut chat = Conversation::new();
//! let mut turn = chat.send(&agent, "Weather and time in Lisbon?");
//! while let Some(event) = turn.next().await {
//!     if let AgentEvent::TextDelta { text } = event { print!("{text}") } // or serde_json::to_string(&event)
//! }
//! let first = turn.await?; // Err on a 401, a lost connection, a full context window
//! std::fs::write("chat.json", serde_json::to_string(&chat)?)?; // the conversation is plain JSON
//!
//! let mut chat: Conversation = serde_json::from_str(&std::fs::read_to_string("chat.json")?)?;
//! let second = chat.send(&agent, "And in Porto?").await?; // awaited: no events, just the result
//! println!("\n{}\n({} + {} tokens)", second.text, first.usage.total().unwrap_or(0), second.usage.total().unwrap_or(0));
//! servers.close_all().await;
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "core")]
pub use loopwright_core::*;

/// MCP servers as tool sources (feature `mcp`): stdio, streamable HTTP,
/// legacy SSE and WebSocket.
#[cfg(feature = "mcp")]
pub use loopwright_mcp as mcp;

/// Remote A2A agents as tool sources (feature `a2a`): their cards read,
/// their tasks sent, streamed, answered and cancelled.
#[cfg(feature = "a2a")]
pub use loopwright_a2a as a2a;

/// HTTP providers (feature `providers`): OpenAI, Anthropic, Gemini,
/// OpenRouter, Ollama and any OpenAI-compatible server.
#[cfg(feature = "providers")]
pub use loopwright_providers as providers;

/// The coding tools and their workspace sandbox (feature `tools`).
#[cfg(feature = "tools")]
pub use loopwright_tools as tools;

/// A test from the configuration file (feature `config`), recorded once
/// against the real provider and MCP server (`RECORD=1 cargo test`), then
/// replayed offline: no key, no network, no server.
///
/// ```no_run
/// # use std::sync::Arc;
/// use loopwright::config::AgentConfig;
/// use loopwright::testing::replay::{Cassette, ReplayMode, ReplayModel};
/// use loopwright::{Agent, LanguageModel, ToolSet, providers::Providers};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let config = AgentConfig::load("tests/agent.json".as_ref())?; // mcpServers: time
/// let dir = "tests/cassettes/lisbon";
/// let (cassette, model): (Cassette, Arc<dyn LanguageModel>) = if std::env::var_os("RECORD").is_some() {
///     let cassette = Cassette::record(dir)?;
///     let model = cassette.model(Providers::from_env()?.model("openai/gpt-4.1")?);
///     (cassette, model)
/// } else {
///     let cassette = Cassette::replay(dir, ReplayMode::Strict)?;
///     let model = Arc::new(ReplayModel::offline(&cassette, "openai", "gpt-4.1"));
///     (cassette, model)
/// };
/// let servers = config.mcp_sources(&[], Some(&cassette)).await?; // replayed: nothing started
/// let agent = Agent::builder(model).tools(servers.add_to(ToolSet::builder()).build()).build();
/// let answer = agent.run("What time is it in Lisbon?").await?;
/// assert!(answer.text.contains("Lisbon"));
/// servers.connected.close_all().await;
/// # Ok(()) }
/// ```
#[cfg(feature = "config")]
pub use loopwright_config::config;

/// Agent definition files and sub-agents built from them (feature `files`).
#[cfg(feature = "files")]
pub use loopwright_config::files;

/// Agent Skills: folders with a `SKILL.md`, offered to the model as a
/// catalog and loaded on demand (feature `skills`).
#[cfg(feature = "skills")]
pub use loopwright_config::skills;

/// Evals: an agent run over a dataset of cases, scored against
/// expectations (feature `eval`).
#[cfg(feature = "eval")]
pub use loopwright_evals as eval;

/// Test doubles: record/replay cassettes and the scripted model (feature
/// `testing`, and with `config`, whose cassettes it reads).
#[cfg(feature = "testing")]
pub use loopwright_testing as testing;

/// Reading the text files a person names (configurations, agent files,
/// prompts, schemas): regular files only, opened without blocking, under a
/// size limit.
#[cfg(any(feature = "config", feature = "files", feature = "skills"))]
pub use loopwright_config::textfile;

/// Agents served to other programs (feature `serve`): as an OpenAI- or
/// Anthropic-compatible API, as an MCP server, over REST.
#[cfg(feature = "serve")]
pub use loopwright_serve as serve;

/// Background runs (feature `runs`, with `serve`): started by one request,
/// read, streamed, approved and cancelled by others, on any replica sharing
/// the store; durable on Restate with the feature `restate`.
#[cfg(feature = "runs")]
pub use loopwright_runs as runs;

/// Conversations, run states and event logs that outlive a process, opened
/// by URL: in memory and SQLite (one file) with the feature `store`,
/// PostgreSQL with the feature `postgres`. A URL whose back end is not built
/// is [`store::StoreError::BackendNotBuilt`], naming the feature.
#[cfg(any(feature = "store", feature = "postgres"))]
pub use loopwright_store as store;

/// The GenAI trace spans exported over OTLP (feature `otel`).
#[cfg(feature = "otel")]
pub use loopwright_otel as otel;
