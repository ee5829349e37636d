//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod common;

mod chains;
mod faults;
mod paused;
mod processes;
mod session;
mod store;
