//! The tools of a run: the configured MCP servers (all, the ones `--mcp`
//! names, or none) and the coding tools; `--list-tools` prints them as the
//! model sees them.

use std::path::PathBuf;

use agent_sdk::ToolSet;
use agent_sdk::config::AgentConfig;
use agent_sdk::mcp::Connected;
use agent_sdk::tools::{Workspace, coding_tools};

use crate::args::Args;
use crate::exit::Failure;

/// The run's tool set and the servers to close at the end.
pub struct Tools {
    /// Merged tools.
    pub set: std::sync::Arc<ToolSet>,
    /// Connected MCP servers.
    pub connected: Connected,
}

/// Connect the selected servers and add the coding tools when asked.
pub async fn build(args: &Args, config: &AgentConfig) -> Result<Tools, Failure> {
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
    let connected = if args.no_mcp {
        Connected::default()
    } else {
        config
            .connect_mcp(&args.mcp)
            .await
            .map_err(|e| Failure::usage(format!("--mcp: {e}")))?
    };
    let builder = connected.add_to(builder);
    Ok(Tools {
        set: std::sync::Arc::new(builder.build()),
        connected,
    })
}

/// Print the tools as JSON lines on stdout; failed servers and name clashes
/// on stderr.
pub async fn list(set: &ToolSet) {
    if let Some(report) = set.connection_report() {
        for failure in &report.failed {
            eprintln!("mcp server {} not connected: {}", failure.server, failure.error);
        }
    }
    let catalog = set.catalog().await;
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
