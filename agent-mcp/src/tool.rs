//! [`McpTool`]: one MCP tool as an agent-core [`Tool`].
//!
//! A call sends `tools/call` with the tool's ORIGINAL name through the
//! source's request path ([`request`](crate::request): live connection,
//! resend only when never delivered, timeout, cancellation, progress) and
//! maps the result ([`result`](crate::result)), knowing whether the tool
//! declares an `outputSchema`.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use async_trait::async_trait;
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult};
use serde_json::{Map, Value};

use crate::request::RequestError;
use crate::result::{ResultContext, map_call_result};
use crate::source::SourceInner;

/// One tool of an MCP server.
pub(crate) struct McpTool {
    definition: ToolDefinition,
    original_name: String,
    source: Arc<SourceInner>,
}

impl McpTool {
    pub(crate) fn new(definition: ToolDefinition, original_name: String, source: Arc<SourceInner>) -> Self {
        Self {
            definition,
            original_name,
            source,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The server config's call timeout replaces the agent's tool timeout.
    fn timeout_for(&self, _input: &Value) -> Option<Duration> {
        self.source.config.call_timeout
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::invalid_input(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        let name = &self.original_name;
        let request = || {
            let params = CallToolRequestParams::new(name.clone()).with_arguments(arguments.clone());
            ClientRequest::CallToolRequest(CallToolRequest::new(params))
        };
        let error = |message: &dyn std::fmt::Display| self.source.tool_error(name, message);
        Ok(match self.source.request(&request, &ctx).await {
            Ok(ServerResult::CallToolResult(result)) => {
                let context = ResultContext {
                    declares_output: self.definition.output_schema.is_some(),
                    link_note: None,
                };
                map_call_result(result, &context)
            }
            Ok(other) => error(&format!("unexpected response: {other:?}")),
            Err(RequestError::Cancelled) => return Err(ToolError::Cancelled),
            Err(RequestError::Server(message) | RequestError::Failed(message)) => error(&message),
        })
    }
}
