//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod a2a;
mod a2a_replicas;
mod cli;
mod dev;
mod durable;
mod eval;
mod exit;
mod guardrails;
mod hostile;
mod interrupt;
mod local_model;
mod long_sessions;
mod mcp_login;
mod options;
mod otel;
mod pause_resume;
mod plan;
mod replay;
mod resources;
mod serve;
mod serve_memory;
mod serve_replicas;
mod skills;
mod structured;
mod sub_agents;
mod terminal;
mod trust;
