//! A deliberately misbehaving MCP server for agent-mcp's integration tests
//! (written with rmcp's server side; not a product).
//!
//! Runs on stdio. `--slow-init MS` delays the handshake, `--pid-file PATH`
//! writes its pid, `--garbage` prints non-JSON lines on stdout first. Tools: echo, add,
//! slow, progress, crash, spawn_grandchild, huge, add_tool (changes the list
//! and sends list_changed), env, image, fail, noargs. `tools/list` is paged
//! (3 per page) so clients must follow cursors. When `TEST_SERVER_LOG` is
//! set, cancellations received are appended to that file.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Cursor, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Tools per `tools/list` page: small, so paging is exercised.
const PAGE: usize = 3;

#[derive(Clone, Default)]
struct TestServer {
    extra_tool: Arc<AtomicBool>,
}

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

fn log(line: &str) {
    if let Ok(path) = std::env::var("TEST_SERVER_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        let _ = writeln!(f, "{line}");
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
            Tool::new("fail", "Return an error result.", num(&[])),
            Tool::new("noargs", "A tool with an empty input schema.", schema(json!({}))),
        ];
        if self.extra_tool.load(Ordering::SeqCst) {
            tools.push(Tool::new("extra", "Added at run time.", num(&[])));
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

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_instructions("Test server: call echo to check the connection.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
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
        match request.name.as_ref() {
            "echo" => Ok(text(arg_str(&request, "text"))),
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
            "fail" => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text("it failed on purpose"),
            ]))),
            "noargs" | "extra" => Ok(text(format!("{} ran", request.name))),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| args.iter().position(|a| a == flag).and_then(|p| args.get(p + 1));
    if let Some(path) = value_of("--pid-file") {
        std::fs::write(path, std::process::id().to_string())?;
    }
    if args.iter().any(|a| a == "--garbage") {
        // Not JSON-RPC: a well-behaved client skips or survives it.
        println!("this line is not JSON");
        println!("{{\"neither\": \"is this a message\"}}");
    }
    if let Some(ms) = value_of("--slow-init") {
        let ms = ms.parse().unwrap_or(60_000);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    eprintln!("mcp-test-server starting");
    let service = TestServer::default().serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
