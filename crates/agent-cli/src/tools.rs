//! The tools of a run: the configured MCP servers (all, the ones `--mcp`
//! names, or none) and the coding tools; `--list-tools` prints them as the
//! model sees them.

use std::path::PathBuf;

use agent_sdk::config::AgentConfig;
use agent_sdk::mcp::{Connected, McpServerConfig, connect_all};
use agent_sdk::tools::{Workspace, coding_tools};
use agent_sdk::{ConnectionReport, ToolSet};

use crate::args::Args;
use crate::exit::Failure;

/// The run's tool set and the servers to close at the end.
pub struct Tools {
    /// Merged tools.
    pub set: std::sync::Arc<ToolSet>,
    /// Connected MCP servers.
    pub connected: Connected,
}

/// The MCP servers to connect, as the arguments select them.
fn selected_servers(args: &Args, config: &AgentConfig) -> Result<Vec<McpServerConfig>, Failure> {
    if args.no_mcp {
        return Ok(Vec::new());
    }
    if args.mcp.is_empty() {
        return Ok(config.mcp_servers.clone());
    }
    let known: Vec<&str> = config
        .mcp_servers
        .iter()
        .map(|s| s.name.as_str())
        .chain(config.mcp_failures.iter().map(|f| f.server.as_str()))
        .collect();
    if let Some(unknown) = args.mcp.iter().find(|name| !known.contains(&name.as_str())) {
        return Err(Failure::usage(format!(
            "--mcp {unknown}: no such server in the configuration (configured: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    Ok(config
        .mcp_servers
        .iter()
        .filter(|s| args.mcp.contains(&s.name))
        .cloned()
        .collect())
}

/// Connect the selected servers and add the coding tools when asked.
pub async fn build(args: &Args, config: &AgentConfig) -> Result<Tools, Failure> {
    let servers = selected_servers(args, config)?;
    let mut builder = ToolSet::builder();
    if args.coding_tools {
        let dir = match &args.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        let workspace = if args.full_access {
            Workspace::full(&dir)
        } else {
            Workspace::limited(&dir)
        }
        .map_err(|e| Failure::usage(format!("--workspace {}: {e}", dir.display())))?;
        builder = builder.source(coding_tools(workspace));
    }
    let connected = connect_all(servers).await;
    // Servers whose configuration could not be used count as failed too.
    let unusable = config
        .mcp_failures
        .iter()
        .filter(|f| !args.no_mcp && (args.mcp.is_empty() || args.mcp.contains(&f.server)))
        .cloned()
        .collect();
    let builder = connected
        .add_to(builder)
        .connection_report(ConnectionReport::new(Vec::new(), unusable));
    Ok(Tools {
        set: std::sync::Arc::new(builder.build()),
        connected,
    })
}

/// Print the tools as JSON lines on stdout; failed servers and name clashes
/// on stderr.
pub async fn list(tools: &Tools) {
    if let Some(report) = tools.set.connection_report() {
        for failure in &report.failed {
            eprintln!("mcp server {} not connected: {}", failure.server, failure.error);
        }
    }
    let catalog = tools.set.catalog().await;
    for warning in catalog.warnings() {
        eprintln!("warning: {warning}");
    }
    for tool in catalog.tools() {
        let line = serde_json::json!({
            "name": tool.name,
            "source": tool.source,
            "original_name": tool.original_name,
            "description": tool.tool.definition().description,
        });
        println!("{line}");
    }
}

/// A one-line summary for stderr: servers and tool names.
pub async fn summary(tools: &Tools) -> String {
    let catalog = tools.set.catalog().await;
    let names = catalog.names().join(", ");
    let servers = tools.connected.server_names().join(", ");
    format!(
        "MCP servers connected: {}; tools: {}",
        if servers.is_empty() { "none" } else { &servers },
        if names.is_empty() { "none" } else { &names }
    )
}
