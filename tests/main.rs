//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[cfg(feature = "eval")]
mod eval;
mod examples;
mod examples_serving;
mod readme;
mod tool_media;
