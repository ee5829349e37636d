//! [`McpTool`]: one tool of an MCP server as an loopwright-core [`Tool`]: one of
//! the server's own tools, or one of the resource tools this client adds
//! ([`resources`](crate::resources)).
//!
//! A call of a server tool sends `tools/call` with the tool's ORIGINAL name
//! through the source's request path ([`request`](crate::request): live
//! connection, resend only when never delivered, timeout, cancellation,
//! progress) and maps the result ([`result`](crate::result)), knowing
//! whether the tool declares an `outputSchema` and whether the server's
//! resources can be read. The resource tools take the same request path.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use loopwright_types::tool::MCP_META_IDEMPOTENCY_KEY;
use loopwright_types::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, RequestMetaObject, ServerResult};
use serde_json::{Map, Value};

use crate::request::RequestError;
use crate::resources::{self, Kind};
use crate::result::{ResultContext, map_call_result};
use crate::source::SourceInner;
use crate::trace::What;

/// What calling a tool does.
enum Action {
    /// `tools/call` of the server's tool with this original name.
    Call(String),
    /// One of our resource tools.
    Resource(Kind),
}

/// One tool of an MCP server.
pub(crate) struct McpTool {
    definition: ToolDefinition,
    action: Action,
    source: Arc<SourceInner>,
}

impl McpTool {
    /// The server's tool `original_name`.
    pub(crate) fn new(definition: ToolDefinition, original_name: String, source: Arc<SourceInner>) -> Self {
        Self {
            definition,
            action: Action::Call(original_name),
            source,
        }
    }

    /// Our resource tool `kind` for the server.
    pub(crate) fn resource(kind: Kind, source: Arc<SourceInner>) -> Self {
        Self {
            definition: resources::definition(kind, &source.config.name),
            action: Action::Resource(kind),
            source,
        }
    }

    /// `tools/call` of the server's tool `name`, its result mapped.
    async fn call_tool(&self, name: &str, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::invalid_input(format!(
                    "expected a JSON object, got {other}"
                )));
            }
        };
        let meta = idempotency_meta(ctx);
        let request = |round: &crate::mrtr::Round| {
            let mut params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments.clone());
            params.meta.clone_from(&meta);
            params.input_responses.clone_from(&round.input_responses);
            params.request_state.clone_from(&round.request_state);
            ClientRequest::CallToolRequest(CallToolRequest::new(params))
        };
        let error = |message: &dyn std::fmt::Display| self.source.tool_error(name, message);
        let started = tokio::time::Instant::now();
        let answer = match self
            .source
            .request_with_input(What::ToolCall(name), &request, ctx)
            .await
        {
            // The server made the call a task: follow it to its end.
            Ok(ServerResult::CreateTaskResult(created)) => {
                self.source.follow_task(created, started, ctx).await
            }
            other => other,
        };
        Ok(match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let context = ResultContext {
                    declares_output: self.definition.output_schema.is_some(),
                    link_note: self.source.resource_link_note(),
                };
                map_call_result(result, &context)
            }
            Ok(other) => error(&format!("unexpected response: {other:?}")),
            Err(RequestError::Cancelled) => return Err(ToolError::Cancelled),
            Err(
                RequestError::Server(message)
                | RequestError::TimedOut(message)
                | RequestError::Failed(message),
            ) => error(&message),
        })
    }
}

/// The request `_meta` carrying the call's idempotency key, when its run
/// has an id ([`ToolContext::idempotency_key`]): a durable run's call that
/// runs again after a crash carries the same key, so a server can do its
/// work once. rmcp adds the progress token beside it.
fn idempotency_meta(ctx: &ToolContext) -> Option<RequestMetaObject> {
    let key = ctx.idempotency_key()?;
    let mut meta = RequestMetaObject::new();
    meta.insert(MCP_META_IDEMPOTENCY_KEY.to_owned(), Value::String(key));
    Some(meta)
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The server config's call timeout replaces the agent's tool timeout;
    /// its task timeout, when longer, bounds a call the server turns into a
    /// task.
    fn timeout_for(&self, _input: &Value) -> Option<Duration> {
        let config = &self.source.config;
        match (config.call_timeout, config.task_timeout) {
            (Some(call), Some(task)) => Some(call.max(task)),
            (call, task) => call.or(task),
        }
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match &self.action {
            Action::Call(name) => self.call_tool(name, input, &ctx).await,
            Action::Resource(kind) => resources::call(*kind, &self.source, input, &ctx).await,
        }
    }
}
