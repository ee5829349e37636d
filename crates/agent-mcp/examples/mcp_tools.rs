//! Connect to MCP servers, print every merged tool with its source and
//! original name, and call one.
//!
//! ```sh
//! npm ci --prefix tests-deps
//! # a stdio server, and optionally a streamable HTTP one
//! # (e.g. `PORT=3001 tests-deps/node_modules/.bin/mcp-server-everything streamableHttp`):
//! cargo run -p agent-mcp --example mcp_tools -- \
//!     tests-deps/node_modules/.bin/mcp-server-everything http://127.0.0.1:3001/mcp
//! ```
//!
//! Arguments: a stdio server command (run with the argument `stdio`), then
//! optionally a streamable HTTP URL. It calls the first tool named `echo`.

use agent_core::{ToolContext, ToolSet};
use agent_mcp::{McpServerConfig, connect_all};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        return Err("usage: mcp_tools <stdio server command> [http url]".into());
    };
    let mut configs = vec![McpServerConfig::stdio("local", command).arg("stdio")];
    if let Some(url) = args.next() {
        configs.push(McpServerConfig::http("remote", url));
    }
    let connected = connect_all(configs).await;
    for failure in &connected.failed {
        eprintln!("not connected: {}", failure.error);
    }
    let mut builder = ToolSet::builder();
    for source in connected.sources.iter().cloned() {
        builder = builder.source(source);
    }
    let catalog = builder.build().catalog().await;
    for tool in catalog.tools() {
        println!(
            "{:<50} source={:<8} original={}",
            tool.name, tool.source, tool.original_name
        );
    }
    if let Some(echo) = catalog.tools().iter().find(|t| t.original_name == "echo") {
        let out = echo
            .tool
            .call(
                serde_json::json!({"message": "hello from agent-mcp"}),
                ToolContext::new("example"),
            )
            .await?;
        println!("{} -> {}", echo.name, out.as_text());
    }
    connected.close_all().await;
    Ok(())
}
