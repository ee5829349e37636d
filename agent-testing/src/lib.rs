//! # loopwright-testing
//!
//! Test doubles for agents built with loopwright, so an agent's tests run in
//! CI with no key, no network and no server:
//!
//! - [`replay`]: record what the provider and the tools (MCP servers, the
//!   coding tools, skills) said once, to a cassette a person can read and
//!   edit, then serve it back offline. It wraps any
//!   [`LanguageModel`](loopwright_types::LanguageModel) and any
//!   [`ToolSource`](loopwright_types::ToolSource).
//! - [`ScriptedModel`]: a model that plays back steps written in the test,
//!   for tests of the loop itself (yours and ours). It is never a default.
//!
//! ```
//! use loopwright_testing::{ScriptedModel, ScriptedStep};
//! use loopwright_types::LanguageModel;
//!
//! let model = ScriptedModel::new(vec![ScriptedStep::text("Paris")]);
//! assert_eq!(model.provider(), "scripted");
//! ```
//!
//! Both depend only on the foundation crate, `loopwright-types`: the loop's
//! own tests use them, and an application's tests add this crate as a
//! dev-dependency beside `loopwright`.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod replay;
mod scripted;

pub use scripted::{ScriptedModel, ScriptedStep};
