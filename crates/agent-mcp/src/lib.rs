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

pub use rmcp;

mod config;
mod env;
mod error;

pub use config::{
    DEFAULT_CONNECT_TIMEOUT, McpServerConfig, McpTransport, RemoteConfig, StdioConfig, parse_mcp_servers,
};
pub use env::{SAFE_BASE_ENV, interpolate, scoped_env};
pub use error::McpError;
