//! A small MCP server of our own, written with rmcp's server side: the
//! server the quickstart and `mcp_tools` examples use by default, so their
//! MCP half works offline.
//!
//! ```sh
//! cargo run --example mcp_server                # stdio
//! cargo run --example mcp_server -- --http 3001 # streamable HTTP at http://127.0.0.1:3001/mcp
//! ```
//!
//! Tools: `current_time` (UTC), `word_count`, `add`, `echo`. In HTTP mode it
//! prints `listening on URL` on stdout once it accepts connections (port 0
//! picks a free one).

use std::sync::Arc;

use agent_sdk::mcp::rmcp;
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
        agent_sdk::rfc3339_now()
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(port) = args
        .iter()
        .position(|a| a == "--http")
        .and_then(|i| args.get(i + 1))
    {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
        let service = StreamableHttpService::new(
            || Ok(Demo::new()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let app = axum::Router::new().route_service("/mcp", service);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>()?)).await?;
        println!("listening on http://{}/mcp", listener.local_addr()?);
        axum::serve(listener, app).await?;
        return Ok(());
    }
    let running = Demo::new().serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
