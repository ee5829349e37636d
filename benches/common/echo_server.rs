//! A small rmcp echo server over stdio (the bench binary itself, run again
//! with `LOOPWRIGHT_BENCH_MCP_SERVER=1`), and a bare rmcp client of it: shared by
//! the MCP benches.
#![allow(dead_code)]

use std::time::Duration;

use loopwright::mcp::McpServerConfig;
use loopwright::mcp::rmcp;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};

/// Set in the environment of the child that serves.
pub const SERVE_ENV: &str = "LOOPWRIGHT_BENCH_MCP_SERVER";
/// How long `sleep` sleeps.
pub const SLEEP: Duration = Duration::from_millis(100);

#[derive(Clone)]
struct BenchServer {
    #[expect(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

#[tool_router]
impl BenchServer {
    #[tool(description = "Echo the text back.")]
    async fn echo(&self, Parameters(Text { text }): Parameters<Text>) -> String {
        text
    }

    #[tool(description = "Sleep 100 ms.")]
    async fn sleep(&self) -> String {
        tokio::time::sleep(SLEEP).await;
        "slept".into()
    }
}

#[tool_handler]
impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

pub fn serve() {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        return;
    };
    rt.block_on(async {
        let server = BenchServer {
            tool_router: BenchServer::tool_router(),
        };
        if let Ok(running) = server.serve(rmcp::transport::stdio()).await {
            let _ = running.waiting().await;
        }
    });
}

pub fn server_config() -> McpServerConfig {
    let me = std::env::current_exe().unwrap();
    McpServerConfig::stdio("bench", me.to_string_lossy()).env(SERVE_ENV, "1")
}

#[derive(Clone, Default)]
pub struct BareClient;
impl ClientHandler for BareClient {}

/// A bare rmcp client on its own server process of this binary.
pub async fn bare_client() -> (tokio::process::Child, RunningService<RoleClient, BareClient>) {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command.env(SERVE_ENV, "1");
    bare_client_of(command).await
}

/// A bare rmcp client of the stdio server `command` starts.
pub async fn bare_client_of(
    mut command: tokio::process::Command,
) -> (tokio::process::Child, RunningService<RoleClient, BareClient>) {
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = BareClient.serve((stdout, stdin)).await.unwrap();
    (child, client)
}
