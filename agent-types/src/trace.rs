//! Where the spans of model calls, tool calls and MCP requests go.

/// The `tracing` target of the GenAI spans of every loopwright crate
/// (filter on it to export only these).
///
/// ```
/// assert_eq!(loopwright_types::trace::TARGET, "gen_ai");
/// ```
pub const TARGET: &str = "gen_ai";
