//! The crate's integration tests, one binary: each file of tests/ is a
//! module here (one link and one build of the shared code instead of
//! one per file).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod a2a;
mod a2a_tasks;
mod agui;
mod background;
mod client_tools;
mod dev_ui;
mod guardrails;
mod hardening;
mod limits;
mod responses;
mod schemas;
mod stored;
mod streams;
mod ui_chat;
