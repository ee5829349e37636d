//! The test server's MCP side: its tools, prompts and misbehaviours.
//!
//! Tools: echo, add, slow, progress, crash, spawn_grandchild, huge, add_tool
//! (changes the list and sends list_changed), env, image, media (a WAV clip
//! and an embedded PDF resource), fail, noargs,
//! ask_sampling / ask_elicitation / ask_roots / ask_ping (send that request to the
//! client mid-call and return what it answered, or its error), header (the
//! value of an HTTP request header; HTTP mode only). `tools/list` is paged
//! (3 per page) so clients must follow cursors. One prompt, `greet`. When
//! `TEST_SERVER_LOG` is set, every call (`called NAME`), cancellations
//! received and the end of a progress run (`progress done`) are appended to
//! that file.

#![allow(deprecated)] // rmcp marks roots and sampling deprecated (SEP-2577); clients still serve them.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::ListResourcesResult;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Cursor, ElicitRequest,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, Role, ServerCapabilities, ServerConfig, ServerRequest, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

/// A WAV header with no samples, base64 (the `media` tool's clip).
pub const SILENT_WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
/// The smallest PDF's bytes, base64 (the `media` tool's report).
pub const TINY_PDF: &str = "JVBERi0xLjQKJSVFT0YK";

/// Tools per `tools/list` page: small, so paging is exercised.
const PAGE: usize = 3;

/// The server; clones (one per HTTP session) share the tool list state.
#[derive(Clone, Default)]
pub struct TestServer {
    extra_tool: Arc<AtomicBool>,
    /// Delay before answering `initialize`.
    pub slow_init: Option<Duration>,
    /// The WebSocket handshake's request headers (WebSocket mode).
    pub handshake: Option<Arc<axum::http::HeaderMap>>,
    /// Offer only resources (`--docs-only`): no `tools` capability, and
    /// `tools/list` answered "method not found", as the specification lets a
    /// server without tools do.
    pub docs_only: bool,
    /// Answer `server/discover` (`--modern`); otherwise "method not found",
    /// as a server of 2025-11-25 and before does.
    pub modern: bool,
    /// The tasks of the tool `job` (`--modern`).
    pub jobs: crate::jobs::Jobs,
}

/// The one resource of a `--docs-only` server.
pub const DOCS_URI: &str = "docs://readme";

fn schema(v: Value) -> Arc<serde_json::Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(serde_json::Map::new()),
    }
}

fn num(props: &[&str]) -> Arc<serde_json::Map<String, Value>> {
    let p: serde_json::Map<String, Value> = props
        .iter()
        .map(|n| ((*n).to_string(), json!({"type": "number"})))
        .collect();
    schema(json!({"type": "object", "properties": p}))
}

/// Append `line` to the file `TEST_SERVER_LOG` names, if set: one write of
/// the whole line (`writeln!` writes the line and its newline apart, so two
/// calls logging at once interleaved as `called echocalled slow`).
pub fn log(line: &str) {
    if let Ok(path) = std::env::var("TEST_SERVER_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let text = schema(
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        );
        let mut tools = vec![
            Tool::new("echo", "Echo the text back.", text),
            Tool::new("add", "Add a and b.", num(&["a", "b"])),
            Tool::new("slow", "Sleep for ms milliseconds.", num(&["ms"])),
            Tool::new(
                "progress",
                "Report steps progress notifications.",
                num(&["steps"]),
            ),
            Tool::new("crash", "Exit the server mid-call.", num(&[])),
            Tool::new(
                "spawn_grandchild",
                "Start `sleep 300` in the background; return its pid.",
                num(&[]),
            ),
            Tool::new("huge", "Return kb kilobytes of text.", num(&["kb"])),
            Tool::new(
                "add_tool",
                "Add the tool `extra` and send list_changed.",
                num(&[]),
            ),
            Tool::new(
                "env",
                "Value of an environment variable.",
                schema(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
            ),
            Tool::new("image", "Return a tiny PNG and a caption.", num(&[])),
            Tool::new(
                "media",
                "Return a WAV clip, an embedded PDF resource and a caption.",
                num(&[]),
            ),
            Tool::new("fail", "Return an error result.", num(&[])),
            Tool::new("noargs", "A tool with an empty input schema.", schema(json!({}))),
            Tool::new("ask_sampling", "Ask the client for a completion.", num(&[])),
            Tool::new("ask_elicitation", "Ask the client's user for input.", num(&[])),
            Tool::new("ask_roots", "Ask the client for its roots.", num(&[])),
            Tool::new("ask_ping", "Ping the client mid-call.", num(&[])),
            Tool::new("meta", "The request's _meta, as JSON.", num(&[])),
            Tool::new(
                "header",
                "Value of an HTTP request header.",
                schema(json!({"type": "object", "properties": {"name": {"type": "string"}}})),
            ),
        ];
        if self.extra_tool.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "Added at run time.", num(&[])));
        }
        if self.modern {
            tools.push(Tool::new(
                "job",
                "Work steps steps of ms milliseconds as a task; ask: a question on the way.",
                schema(json!({"type": "object", "properties": {
                    "steps": {"type": "number"}, "ms": {"type": "number"}, "ask": {"type": "boolean"}}})),
            ));
        }
        tools
    }
}

fn arg_u64(req: &CallToolRequestParams, key: &str) -> u64 {
    req.arguments
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_f64)
        .map_or(0, |f| f as u64)
}

fn arg_str(req: &CallToolRequestParams, key: &str) -> String {
    req.arguments
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn text(t: impl Into<String>) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(t.into())]))
}

/// What the client answered to a request the server sent it, as text.
fn answered<T: serde::Serialize>(result: Result<T, rmcp::ServiceError>) -> CallToolResponse {
    match result {
        Ok(v) => text(format!(
            "answered: {}",
            serde_json::to_string(&v).unwrap_or_default()
        )),
        Err(e) => text(format!("refused: {e}")),
    }
}

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ErrorData> {
    serde_json::from_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        if self.docs_only {
            return ServerConfig::new(ServerCapabilities::builder().enable_resources().build());
        }
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .build();
        if self.modern {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_string(), Default::default());
        }
        ServerConfig::new(capabilities).with_instructions("Test server: call echo to check the connection.")
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        if !self.modern {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found: server/discover",
                None,
            ));
        }
        log("discover");
        Ok(rmcp::model::DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.jobs.get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.jobs.update(&request.task_id, request.input_responses);
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.jobs.cancel(&request.task_id);
        Ok(())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if let Some(delay) = self.slow_init {
            tokio::time::sleep(delay).await;
        }
        log(&format!(
            "initialize capabilities {}",
            serde_json::to_string(&request.capabilities).unwrap_or_default()
        ));
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut name = PromptArgument::new("name");
        name.required = Some(true);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Greet someone by name."),
            Some(vec![name]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "greet" {
            return Err(ErrorData::invalid_params(
                format!("no prompt {}", request.name),
                None,
            ));
        }
        let who = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("nobody");
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Say hello to {who}."),
        )])
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.docs_only {
            return Err(ErrorData::method_not_found::<
                rmcp::model::ListResourcesRequestMethod,
            >());
        }
        let readme = Resource::new(DOCS_URI, "readme");
        Ok(ListResourcesResult::with_all_items(vec![readme]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.docs_only || request.uri != DOCS_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        Ok(
            ReadResourceResult::new(vec![ResourceContents::text("the docs server's readme", DOCS_URI)])
                .into(),
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if self.docs_only {
            return Err(ErrorData::method_not_found::<rmcp::model::ListToolsRequestMethod>());
        }
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let all = self.tools();
        let end = (start + PAGE).min(all.len());
        let mut page = ListToolsResult::with_all_items(all[start.min(end)..end].to_vec());
        if end < all.len() {
            page.next_cursor = Some(Cursor::from(end.to_string()));
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        log(&format!("called {}", request.name));
        // A durable run's idempotency key, logged so tests compare executions.
        if let Some(key) = context
            .meta
            .get("loopwright.dev/idempotencyKey")
            .and_then(|k| k.as_str())
        {
            log(&format!("key {} {key}", request.name));
        }
        match request.name.as_ref() {
            "echo" => Ok(text(arg_str(&request, "text"))),
            // rmcp moves the request's `_meta` into the context.
            "meta" => Ok(text(serde_json::to_string(&context.meta).unwrap_or_default())),
            "job" if self.modern => {
                let ask = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("ask"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                Ok(CallToolResponse::Task(self.jobs.start(
                    arg_u64(&request, "steps"),
                    arg_u64(&request, "ms"),
                    ask,
                )))
            }
            "add" => {
                let get = |k: &str| {
                    request
                        .arguments
                        .as_ref()
                        .and_then(|a| a.get(k))
                        .and_then(Value::as_f64)
                };
                Ok(text(format!(
                    "{}",
                    get("a").unwrap_or(0.0) + get("b").unwrap_or(0.0)
                )))
            }
            "slow" => {
                let ms = arg_u64(&request, "ms");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(text(format!("slept {ms} ms"))),
                    () = context.ct.cancelled() => {
                        log(&format!("cancelled slow {}", serde_json::to_string(&context.id).unwrap_or_default()));
                        Err(ErrorData::internal_error("cancelled", None))
                    }
                }
            }
            "progress" => {
                let steps = arg_u64(&request, "steps");
                if let Some(token) = context.meta.get_progress_token() {
                    for i in 1..=steps {
                        let note = ProgressNotificationParam::new(token.clone(), i as f64)
                            .with_total(steps as f64)
                            .with_message(format!("step {i}"));
                        let _ = context.peer.notify_progress(note).await;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                // Cancellation is ignored on purpose: progress goes on after it.
                log("progress done");
                Ok(text(format!("did {steps} steps")))
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "spawn_grandchild" => {
                let out = std::process::Command::new("sh")
                    .args(["-c", "sleep 300 >/dev/null 2>&1 & echo $!"])
                    .output()
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                Ok(text(String::from_utf8_lossy(&out.stdout).trim().to_string()))
            }
            "huge" => Ok(text("x".repeat(arg_u64(&request, "kb") as usize * 1024))),
            "add_tool" => {
                self.extra_tool.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                Ok(text("added"))
            }
            "env" => Ok(text(
                std::env::var(arg_str(&request, "name")).unwrap_or_else(|_| "<unset>".into()),
            )),
            "image" => Ok(CallToolResponse::Complete(CallToolResult::success(vec![
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
                ContentBlock::text("a tiny png"),
            ]))),
            "media" => Ok(CallToolResponse::Complete(CallToolResult::success(vec![
                ContentBlock::audio(SILENT_WAV, "audio/wav"),
                ContentBlock::resource(
                    ResourceContents::blob(TINY_PDF, "file:///report.pdf").with_mime_type("application/pdf"),
                ),
                ContentBlock::text("a clip and a report"),
            ]))),
            "fail" => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text("it failed on purpose"),
            ]))),
            "noargs" | "extra" => Ok(text(format!("{} ran", request.name))),
            "ask_sampling" => {
                let params = from_json(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                    "maxTokens": 16
                }))?;
                Ok(answered(context.peer.create_message(params).await))
            }
            "ask_elicitation" => {
                let params = from_json(json!({
                    "mode": "form",
                    "message": "Your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }))?;
                let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
                Ok(answered(context.peer.send_request(request).await))
            }
            "ask_roots" => Ok(answered(context.peer.list_roots().await)),
            "header" => {
                let name = arg_str(&request, "name");
                let headers = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .map(|parts| &parts.headers)
                    .or(self.handshake.as_deref());
                let value = headers
                    .and_then(|h| h.get(name.as_str()))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("<none>");
                Ok(text(value))
            }
            "ask_ping" => {
                let ping = ServerRequest::PingRequest(rmcp::model::PingRequest::default());
                Ok(answered(context.peer.send_request(ping).await))
            }
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}
