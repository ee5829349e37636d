//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod agent_loop;
mod bash;
mod cancellation;
mod definitions;
mod files;
mod sandbox;
mod search;
