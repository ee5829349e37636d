//! Client tools: tools the model may call that run in the application's
//! client (a browser, another framework's agent), not in the loop.
//!
//! Invariants: a call to a [`ClientTool`] is validated and guarded like
//! any other, never run here: the run pauses with it pending
//! ([`PendingKind::ClientTool`](super::PendingKind::ClientTool)) and its
//! [`RunState`](super::RunState) keeps the step's other results; the run
//! is resumed with the client's output for it
//! ([`Resume::output`](super::Resume::output)), or a denial, and the model
//! then reads that output as the call's one result. Approving such a call
//! is refused ([`ResumeError::Mismatched`](super::ResumeError::Mismatched)):
//! nothing here could run it.

use async_trait::async_trait;
use loopwright_types::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde_json::Value;

/// A tool the client runs: the model sees its definition; a call to it
/// pauses the run until the client's output comes back.
///
/// ```
/// use loopwright_core::agent::ClientTool;
/// use loopwright_core::ToolDefinition;
///
/// let location = ClientTool::new(ToolDefinition::new(
///     "get_location",
///     "The user's location, from the browser.",
///     serde_json::json!({"type": "object"}),
/// ));
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// let agent = loopwright_core::Agent::builder(model).tool(location).build();
/// # drop(agent);
/// ```
#[derive(Debug, Clone)]
pub struct ClientTool {
    definition: ToolDefinition,
}

impl ClientTool {
    /// A client tool with this name, description and input schema.
    ///
    /// ```
    /// let t = loopwright_core::agent::ClientTool::new(loopwright_core::ToolDefinition::new(
    ///     "ask", "Ask the user.", serde_json::json!({"type": "object"}),
    /// ));
    /// assert_eq!(t.definition().name, "ask");
    /// ```
    pub fn new(definition: ToolDefinition) -> Self {
        Self { definition }
    }

    /// Its definition, as the model sees it.
    ///
    /// ```
    /// # let t = loopwright_core::agent::ClientTool::new(loopwright_core::ToolDefinition::new(
    /// #     "ask", "Ask the user.", serde_json::json!({"type": "object"})));
    /// assert_eq!(t.definition().description, "Ask the user.");
    /// ```
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Never called by the loop (a call pauses the run); an error for any
    /// other engine that calls it.
    async fn call(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Execution(format!(
            "{} is a client tool: the client runs it, and its output continues the paused run",
            self.definition.name
        )))
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// What a client tool's call waits for: its output.
pub(crate) fn pending(
    call_id: String,
    tool: String,
    arguments: Value,
    agent_path: &str,
) -> super::PendingCall {
    super::PendingCall {
        kind: super::PendingKind::ClientTool,
        call_id,
        tool,
        arguments,
        tier: crate::approval::ApprovalTier::Always,
        agent_path: agent_path.to_owned(),
    }
}

/// Whether `tool` is a client tool (behind any wrapper that forwards
/// [`Tool::as_any`]).
pub(crate) fn is_client_tool(tool: &dyn Tool) -> bool {
    tool.as_any().is_some_and(|any| any.is::<ClientTool>())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[tokio::test]
    async fn a_client_tool_is_found_and_never_runs() {
        let tool = ClientTool::new(ToolDefinition::new(
            "ask",
            "Ask.",
            serde_json::json!({"type": "object"}),
        ));
        assert!(is_client_tool(&tool));
        let err = tool
            .call(serde_json::json!({}), ToolContext::new("c1"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("ask is a client tool"), "{err}");
    }
}
