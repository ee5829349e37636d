//! Connect to MCP servers (one over stdio, one over streamable HTTP), print
//! every merged tool with its source and original name, and call one.
//!
//! ```sh
//! cargo run --example mcp_tools
//! cargo run --example mcp_tools -- --stdio "npx -y @modelcontextprotocol/server-everything" --http http://127.0.0.1:3001/mcp
//! ```
//!
//! Without arguments it uses this repository's own demo server (the
//! `mcp_server` example; this binary becomes it with `--serve-mcp`) twice: as
//! a stdio child process, and started in its HTTP mode (stopped again at the
//! end). `--stdio "COMMAND ARGS"` and `--http URL` pick other
//! servers. It calls the first tool whose original name is `echo` (else the
//! first tool without required arguments).

use loopwright::mcp::{McpServerConfig, connect_all};
use loopwright::{ToolContext, ToolSet};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

#[path = "common/demo_server.rs"]
mod demo_server;

/// Start the demo server's HTTP mode on a free port; its URL and the child.
async fn start_demo_http() -> Result<(String, tokio::process::Child), Box<dyn std::error::Error>> {
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--serve-mcp-http", "0"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let line = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await?
        .ok_or("the demo server exited")?;
    let url = line
        .strip_prefix("listening on ")
        .ok_or("unexpected output")?
        .to_string();
    Ok((url, child))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(served) = demo_server::serve_if_asked().await {
        return served;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let stdio = match value_of("--stdio") {
        Some(line) => {
            let mut words = line.split_whitespace();
            let command = words.next().ok_or("--stdio needs a command")?;
            McpServerConfig::stdio("local", command).args(words)
        }
        None => demo_server::stdio_config("local"),
    };
    let mut demo_http = None;
    let url = match value_of("--http") {
        Some(url) => url,
        None => {
            let (url, child) = start_demo_http().await?;
            demo_http = Some(child);
            url
        }
    };
    let connected = connect_all(vec![stdio, McpServerConfig::http("remote", url)]).await;
    for failure in &connected.failed {
        eprintln!("not connected: {}", failure.error);
    }
    let catalog = connected.add_to(ToolSet::builder()).build().catalog().await;
    println!(
        "{:<40} {:<8} original name",
        "tool (as the model sees it)", "source"
    );
    for tool in catalog.tools() {
        println!("{:<40} {:<8} {}", tool.name, tool.source, tool.original_name);
    }
    let chosen = catalog
        .tools()
        .iter()
        .find(|t| t.original_name == "echo")
        .or_else(|| {
            catalog.tools().iter().find(|t| {
                let required = &t.tool.definition().input_schema["required"];
                required.as_array().is_none_or(Vec::is_empty)
            })
        });
    if let Some(tool) = chosen {
        let input: Value = if tool.original_name == "echo" {
            // server-everything's echo takes `message`, ours `text`.
            json!({"text": "hello from loopwright", "message": "hello from loopwright"})
        } else {
            json!({})
        };
        let out = tool.tool.call(input, ToolContext::new("example")).await?;
        println!("\ncalled {} -> {}", tool.name, out.as_text());
    }
    connected.close_all().await;
    if let Some(mut child) = demo_http {
        let _ = child.kill().await;
    }
    Ok(())
}
