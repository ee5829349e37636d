//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod agent_loop;
mod client_features;
mod elicitation;
mod everything;
mod everything_resources;
mod http_server;
mod lifecycle;
mod oauth;
mod python_servers;
mod readme;
mod reference_servers;
mod stdio_server;
mod tasks;
mod token_file;
mod websocket;
