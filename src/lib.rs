//! # agent-sdk
//!
//! One dependency for applications: re-exports the agent crates behind cargo
//! features (`core` by default). See `agent_core` for the loop and the
//! traits.

#[cfg(feature = "core")]
pub use agent_core as core;

#[cfg(feature = "core")]
pub use agent_core::*;

/// The coding tools and their workspace sandbox (feature `tools`).
#[cfg(feature = "tools")]
pub use agent_tools as tools;
