//! Small helpers shared by the tools.

use loopwright_types::{ToolContext, ToolError, ToolOutput};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parse a tool's input, turning a mismatch into an invalid-input error.
pub(crate) fn parse_input<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(ToolError::invalid_input)
}

/// Run blocking filesystem work off the async threads, returning early with
/// [`ToolError::Cancelled`] when the call is cancelled.
pub(crate) async fn blocking<F>(ctx: &ToolContext, work: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    if ctx.cancellation().is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        joined = task => joined.map_err(|e| ToolError::execution(format!("tool task failed: {e}"))),
        () = ctx.cancellation().cancelled() => Err(ToolError::Cancelled),
    }
}
