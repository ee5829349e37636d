//! The MCP surface (rmcp's server side): one tool per served agent, over
//! stdio or streamable HTTP at `/mcp`.
//!
//! Invariants:
//! - a tool's name, description and input schema are the agent's; an
//!   agent with an output schema declares it as the tool's `outputSchema`
//!   and answers with `structuredContent`; a run that did not complete is
//!   an `isError` result saying why, with the text it had written;
//! - with a progress token, each of the agent's tool calls and results
//!   goes out as a progress notification (the progress value only grows);
//! - `notifications/cancelled` (the request's cancellation) leaves the
//!   queue or cancels the run, its tools and MCP calls included;
//! - a call's arguments are validated against the tool's input schema
//!   before it waits for a run: an invalid call is a `-32602` error naming
//!   what is wrong (so is `arguments` that is not an object), never a run;
//! - a call cut off by a shutdown is answered with an `isError` result
//!   saying so (the service outlives the runs' cancellation);
//! - `prompts/list`, `resources/list` and `resources/templates/list` answer
//!   empty lists (an agent server offers none), with cache hints;
//! - 2026-07-28 clients are served statelessly, older ones with the
//!   `initialize` handshake (rmcp's server side negotiates either).

use std::sync::Arc;

use futures::StreamExt;
use loopwright_core::{AgentEvent, ExitReason};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest, CustomResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value};

use crate::agents::ServedAgent;
use crate::error::Shape;
use crate::run::Instance;

/// The MCP server of one instance; clones (one per HTTP session) share it.
#[derive(Clone)]
pub(crate) struct McpSurface {
    pub(crate) instance: Arc<Instance>,
}

fn object(schema: Value) -> Option<Arc<Map<String, Value>>> {
    match schema {
        Value::Object(map) => Some(Arc::new(map)),
        _ => None,
    }
}

fn tool(served: &ServedAgent) -> Tool {
    let input = object(served.input_schema()).unwrap_or_default();
    let mut tool = Tool::new(served.name().to_owned(), served.description().to_owned(), input);
    // MCP output schemas describe an object; other answers go out as text.
    tool.output_schema = served
        .agent()
        .options()
        .output
        .as_ref()
        .map(|spec| spec.schema().clone())
        .filter(|s| s.get("type").and_then(Value::as_str) == Some("object"))
        .and_then(object);
    tool
}

fn text_result(text: String, is_error: bool) -> CallToolResponse {
    let content = vec![ContentBlock::text(text)];
    CallToolResponse::Complete(if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    })
}

impl ServerHandler for McpSurface {
    fn get_info(&self) -> ServerConfig {
        // Prompts and resources are declared (there are none) because they
        // are answered: a 2026-07-28 client may rely on the declaration.
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("loopwright-serve", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "Agents as tools: {}. Each call runs the agent on its input in a fresh conversation.",
            self.instance.agents.names().join(", ")
        ))
    }

    /// A request rmcp could not read as any it knows: a `tools/call` whose
    /// params do not parse (`arguments` not an object, no `name`) is invalid
    /// params, as the MCP specification asks, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "tools/call" {
            return Err(ErrorData::invalid_params(
                "tools/call params must be {\"name\": string, \"arguments\": object}",
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    /// An agent server has no prompts: an empty list (with the cache hints
    /// of 2026-07-28), not "method not found", for clients that ask
    /// without looking at the capabilities.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(rmcp::model::ListPromptsResult::with_all_items(Vec::new()))
    }

    /// No resources either (see `list_prompts`).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(Vec::new()))
    }

    /// There is no resource to read: invalid params naming the URI (SEP-2164).
    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        Err(ErrorData::invalid_params(
            format!(
                "no resource {} (this server offers agents as tools, no resources)",
                request.uri
            ),
            Some(serde_json::json!({"uri": request.uri})),
        ))
    }

    /// There is no prompt to get.
    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        Err(ErrorData::invalid_params(
            format!(
                "no prompt {} (this server offers agents as tools, no prompts)",
                request.name
            ),
            None,
        ))
    }

    /// No resource templates either (see `list_prompts`).
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            Vec::new(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.instance.agents.all().iter().map(tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(served) = self.instance.agents.get(&request.name).cloned() else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool named {:?} (tools: {})",
                    request.name,
                    self.instance.agents.names().join(", ")
                ),
                None,
            ));
        };
        let input = Value::Object(request.arguments.clone().unwrap_or_default());
        if let Err(why) = served.check_input(&input).await {
            return Err(ErrorData::invalid_params(
                format!("invalid arguments for {:?}: {why}", request.name),
                None,
            ));
        }
        let messages = vec![served.input_message(&input)];
        let started = tokio::select! {
            started = self.instance.start(&served, messages, |o| o, Shape::Plain) => started,
            () = context.ct.cancelled() => return Err(ErrorData::internal_error("cancelled by the client", None)),
        };
        let mut started = match started {
            Ok(started) => started,
            Err(refused) => return Ok(text_result(refused.message, true)),
        };
        let token = context.meta.get_progress_token();
        let mut progress = 0u32;
        loop {
            let event = tokio::select! {
                event = started.run.next() => event,
                // Dropping the run cancels it (and its tools).
                () = context.ct.cancelled() => return Err(ErrorData::internal_error("cancelled by the client", None)),
            };
            let Some(event) = event else { break };
            let note = match &event {
                AgentEvent::ToolCall { tool, .. } => format!("calling {tool}"),
                AgentEvent::ToolResult { tool, is_error, .. } => {
                    format!("{tool} {}", if *is_error { "failed" } else { "done" })
                }
                _ => continue,
            };
            if let Some(token) = &token {
                progress += 1;
                let param =
                    ProgressNotificationParam::new(token.clone(), f64::from(progress)).with_message(note);
                let _ = context.peer.notify_progress(param).await;
            }
        }
        let result = match started.run.await.or_else(loopwright_core::RunError::into_result) {
            Ok(result) => result,
            Err(aborted) => {
                return Ok(text_result(
                    format!("the run stopped without a result: {aborted}"),
                    true,
                ));
            }
        };
        if result.exit() == ExitReason::Completed {
            return Ok(match result.output {
                Some(value) if tool(&served).output_schema.is_some() => {
                    CallToolResponse::Complete(CallToolResult::structured(value))
                }
                Some(value) => text_result(value.to_string(), false),
                None => text_result(result.text, false),
            });
        }
        let why = match crate::run::ending(&result) {
            _ if result.exit() == ExitReason::Cancelled && self.instance.lifecycle.hard.is_cancelled() => {
                "the server is shutting down and cancelled the run".to_owned()
            }
            crate::run::Ending::Failed(message) => message,
            // A guardrail's stop says which guard stopped it, and why.
            crate::run::Ending::Answer { .. } => crate::run::refusal(&result)
                .unwrap_or_else(|| format!("the run ended early ({:?})", result.exit())),
        };
        let partial = if result.text.is_empty() {
            String::new()
        } else {
            format!("\n\nWhat it had written:\n{}", result.text)
        };
        Ok(text_result(
            format!("The agent {} did not complete: {why}.{partial}", served.name()),
            true,
        ))
    }
}
