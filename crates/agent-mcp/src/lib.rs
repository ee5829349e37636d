//! # agent-mcp
//!
//! MCP servers as [`agent_core::ToolSource`]s, built on [`rmcp`] (pinned
//! exactly and re-exported: use `agent_mcp::rmcp` to get the same version).
//!
//! Invariants:
//! - Each MCP tool keeps its ORIGINAL name on the wire (`tools/call`); the
//!   model sees the name agent-core's `ToolSet` gives it (default
//!   `{server}__{tool}`).
//! - A stdio server gets only its configured environment plus a safe base
//!   ([`SAFE_BASE_ENV`]); `${VAR}` references are resolved at connect time.
//! - A stdio server runs in its own process group; closing (explicit or on
//!   drop) ends the whole group, grandchildren included.
//!
//! Transports: stdio (feature `stdio`), streamable HTTP (feature `http`) and
//! legacy HTTP+SSE (feature `sse`), all on by default. WebSocket configs
//! parse but connecting gives [`McpError::UnsupportedTransport`] for now.

#![doc = include_str!("../README.md")]

pub use rmcp;

mod config;
mod connect;
mod connect_all;
mod discovery;
mod env;
mod error;
mod handler;
#[cfg(feature = "http")]
mod http;
mod result;
mod source;
#[cfg(feature = "sse")]
mod sse;
#[cfg(feature = "stdio")]
mod stdio;
mod tool;

pub use config::{
    DEFAULT_CONNECT_TIMEOUT, McpServerConfig, McpTransport, RemoteConfig, StdioConfig, parse_mcp_servers,
};
pub use connect_all::{ConnectFailure, Connected, connect_all};
pub use discovery::MAX_TOOL_PAGES;
pub use env::{SAFE_BASE_ENV, interpolate, scoped_env};
pub use error::McpError;
pub use source::{McpToolSource, RECONNECT_BACKOFF};
#[cfg(feature = "sse")]
pub use sse::SseSendError;
#[cfg(feature = "stdio")]
pub use stdio::{SIGTERM_GRACE, STDIN_CLOSE_GRACE};
