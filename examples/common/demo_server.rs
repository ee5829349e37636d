//! The demo MCP server (rmcp's server side) that the examples use by
//! default, so their MCP half works offline. Any example can become it: run
//! with `--serve-mcp` (stdio) or `--serve-mcp-http PORT` (streamable HTTP at
//! `/mcp`; prints `listening on URL` on stdout once it accepts connections).
#![allow(dead_code)] // each example uses part of it

use std::sync::Arc;

use loopwright::mcp::rmcp;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

#[derive(Clone)]
struct Demo {
    #[expect(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    /// The text.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Numbers {
    /// First addend.
    a: f64,
    /// Second addend.
    b: f64,
}

#[tool_router]
impl Demo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "The current date and time in UTC (RFC 3339).")]
    async fn current_time(&self) -> String {
        loopwright::util::rfc3339_now()
    }

    #[tool(description = "Count the words in a text.")]
    async fn word_count(&self, Parameters(Text { text }): Parameters<Text>) -> String {
        text.split_whitespace().count().to_string()
    }

    #[tool(description = "Add two numbers.")]
    async fn add(&self, Parameters(Numbers { a, b }): Parameters<Numbers>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Echo the text back.")]
    async fn echo(&self, Parameters(Text { text }): Parameters<Text>) -> String {
        text
    }
}

#[tool_handler]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "Demo server: current_time gives UTC; word_count counts whitespace-separated words.",
        )
    }
}

/// Serve over stdio or HTTP when the arguments ask for it; `None` when
/// they do not (the example goes on with its own job).
pub async fn serve_if_asked() -> Option<Result<(), Box<dyn std::error::Error>>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve-mcp") {
        return Some(serve_stdio().await);
    }
    let port = args
        .iter()
        .position(|a| a == "--serve-mcp-http")
        .and_then(|i| args.get(i + 1))?;
    Some(match port.parse::<u16>() {
        Ok(port) => serve_http(port).await,
        Err(e) => Err(e.into()),
    })
}

/// The exit status of `run`, or of serving when the arguments ask for it
/// (an example's `main` with the demo server built in).
pub async fn serve_or(run: impl std::future::Future<Output = i32>) -> i32 {
    match serve_if_asked().await {
        Some(served) => i32::from(served.is_err()),
        None => run.await,
    }
}

/// Serve one session on stdin/stdout.
pub async fn serve_stdio() -> Result<(), Box<dyn std::error::Error>> {
    let running = Demo::new().serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// Serve streamable HTTP on 127.0.0.1:`port` until killed.
pub async fn serve_http(port: u16) -> Result<(), Box<dyn std::error::Error>> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let service = StreamableHttpService::new(
        || Ok(Demo::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    axum::serve(listener, app).await?;
    Ok(())
}

/// This example run as the demo server over stdio, as an MCP config.
pub fn stdio_config(name: &str) -> loopwright::mcp::McpServerConfig {
    let me = std::env::current_exe().unwrap_or_default();
    loopwright::mcp::McpServerConfig::stdio(name, me.to_string_lossy()).arg("--serve-mcp")
}
