//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod anthropic;
mod budget;
mod compaction_bodies;
mod config;
mod fallback;
mod gemini;
#[cfg(feature = "local")]
mod local;
#[cfg(feature = "local")]
mod local_hub;
#[cfg(feature = "local")]
mod local_qwen3;
mod media;
mod ollama;
mod openai_chat;
mod openai_responses;
mod output_bodies;
mod output_loops;
mod output_reasoning;
mod output_reasoning_runs;
mod tool_input_deltas;
mod tool_options;
mod tracing;
mod transport;
