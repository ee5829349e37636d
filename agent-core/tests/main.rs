//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod agent_loop;
mod approval;
mod budget;
mod client_tools;
mod compaction;
mod conversation;
mod deadlines;
mod durable;
mod fallback_accounting;
mod guardrails;
mod hooks;
mod limits;
mod outcomes;
mod output;
mod preflight;
mod progress;
mod replay;
mod run_state;
mod schemas;
mod steps;
mod sub_agents;
mod surface;
mod telemetry;
mod tool_search;
mod toolset;
