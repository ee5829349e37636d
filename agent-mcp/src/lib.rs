//! # loopwright-mcp
//!
//! MCP servers as [`loopwright_types::ToolSource`]s, built on [`rmcp`] (pinned
//! exactly and re-exported: use `loopwright_mcp::rmcp` to get the same version).
//!
//! Invariants:
//! - Each MCP tool keeps its ORIGINAL name on the wire (`tools/call`); the
//!   model sees the name loopwright-core's `ToolSet` gives it (default
//!   `{server}__{tool}`).
//! - A stdio server gets only its configured environment plus a safe base
//!   ([`SAFE_BASE_ENV`]); `${VAR}` references are resolved at connect time.
//! - A stdio server runs in its own process group; closing (explicit or on
//!   drop) ends the whole group, grandchildren included.
//!
//! Transports, one cargo feature each, all on by default: stdio (`stdio`),
//! streamable HTTP (`http`), legacy HTTP+SSE (`sse`) and WebSocket
//! (`websocket`). A config whose transport is not compiled in fails to
//! connect with [`McpError::UnsupportedTransport`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]

pub use rmcp;

mod config;
mod config_fields;
mod config_parse;
mod connect;
mod connect_all;
mod delivery;
mod discovery;
mod elicitation;
mod env;
mod error;
mod handler;
#[cfg(feature = "http")]
mod http;
mod mrtr;
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub mod oauth;
mod options;
mod redact;
mod request;
mod resources;
mod result;
mod source;
#[cfg(feature = "sse")]
mod sse;
#[cfg(feature = "stdio")]
mod stdio;
mod tasks;
mod tool;
mod trace;
#[cfg(feature = "websocket")]
mod ws;

pub use config::{DEFAULT_CONNECT_TIMEOUT, McpServerConfig, McpTransport, RemoteConfig, StdioConfig};
pub use config_parse::{MCP_SERVER_KEYS, parse_mcp_servers};
pub use connect_all::{ConnectFailure, Connected, connect_all, connect_all_with};
pub use discovery::{MAX_PROMPT_PAGES, MAX_TOOL_PAGES};
pub use env::{SAFE_BASE_ENV, interpolate, scoped_env};
pub use error::McpError;
#[cfg(feature = "http")]
pub use http::{SSE_RESUME_ATTEMPTS, SSE_RESUME_BACKOFF, SSE_RESUME_MAX_DELAY};
pub use mrtr::MAX_INPUT_ROUNDS;
#[cfg(feature = "oauth")]
pub use oauth::{OAUTH_KEYS, OAuthConfig};
pub use options::{ElicitationHandler, McpClientOptions, SamplingHandler};
pub use redact::{REDACTED, arg_secrets, looks_secret, redact, url_secrets};
pub use resources::{LIST_RESOURCES_TOOL, MAX_RESOURCE_PAGES, READ_RESOURCE_TOOL, RESOURCE_LIST_MAX_BYTES};
pub use source::{McpToolSource, RECONNECT_BACKOFF};
#[cfg(feature = "sse")]
pub use sse::SseSendError;
#[cfg(feature = "stdio")]
pub use stdio::{SIGTERM_GRACE, STDIN_CLOSE_GRACE};
pub use tasks::{DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL, MIN_POLL_INTERVAL};
#[cfg(feature = "websocket")]
pub use ws::WS_SUBPROTOCOL;
