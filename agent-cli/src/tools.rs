//! The tools of a run: the configured MCP servers (all, the ones `--mcp`
//! names, or none), the coding tools and the skills; `--list-tools` prints
//! them as the model sees them.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright::config::AgentConfig;
use loopwright::mcp::Connected;
use loopwright::skills::{Skills, SkillsSource};
use loopwright::testing::replay::Cassette;
use loopwright::tools::{Workspace, coding_tools};
use loopwright::{ToolSet, ToolSource};

use crate::args::AgentArgs;
use crate::exit::Failure;

/// `source` through `cassette` (recorded or replayed), when there is one.
fn through(cassette: Option<&Cassette>, source: Arc<dyn ToolSource>) -> Arc<dyn ToolSource> {
    match cassette {
        Some(c) => c.tool_source(source),
        None => source,
    }
}

/// The run's tool set and the servers to close at the end.
pub struct Tools {
    /// Merged tools.
    pub set: std::sync::Arc<ToolSet>,
    /// Connected MCP servers.
    pub connected: Connected,
}

/// The skills of `--skills` directories, then the config's `skills`, or
/// the default directories when neither names any; none with
/// `--no-skills`. What was left out is reported by the tool set (warning
/// events, `--list-tools`).
pub fn skills(args: &AgentArgs, config: &AgentConfig) -> Arc<Skills> {
    if args.no_skills {
        return Arc::default();
    }
    Arc::new(Skills::discover(Skills::dirs(
        &args.skills,
        config.skills.as_deref(),
    )))
}

/// [`build_with`] the skills the flags and the config name.
pub async fn build(
    args: &AgentArgs,
    config: &AgentConfig,
    cassette: Option<&Cassette>,
) -> Result<Tools, Failure> {
    build_with(args, config, skills(args, config), cassette).await
}

/// Connect the selected servers and add the coding tools when asked, and
/// the skills when there are any (or warnings about them); with a
/// `cassette`, all of them recorded or replayed (a strict replay starts no
/// server and runs no coding tool).
pub async fn build_with(
    args: &AgentArgs,
    config: &AgentConfig,
    skills: Arc<Skills>,
    cassette: Option<&Cassette>,
) -> Result<Tools, Failure> {
    let mut builder = ToolSet::builder();
    if !skills.is_empty() || !skills.warnings().is_empty() {
        builder = builder.shared_source(
            through(cassette, Arc::new(SkillsSource::new(skills))),
            config.native_source_options(),
        );
    }
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
        builder = builder.shared_source(
            through(cassette, Arc::new(coding_tools(workspace))),
            config.native_source_options(),
        );
    }
    let (builder, connected) = if args.no_mcp {
        let none = Connected::default();
        (none.add_to(builder), none)
    } else {
        let servers = config
            .mcp_sources(&args.mcp, cassette)
            .await
            .map_err(|e| Failure::usage(format!("--mcp: {e}")))?;
        (servers.add_to(builder), servers.connected)
    };
    // The configuration's remote A2A agents, recorded and replayed as the
    // other sources are.
    let builder = match config.a2a_source() {
        Some(remote) => builder.shared_source(
            through(cassette, Arc::new(remote)),
            loopwright::toolset::SourceOptions::default(),
        ),
        None => builder,
    };
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
    if catalog.tools().is_empty() {
        eprintln!(
            "no tools: no MCP server is configured (mcpServers in ./.ai-agent.json or ~/.ai-agent.json, or --config FILE), \
             and neither --coding-tools nor an agent file adds any"
        );
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

#[cfg(test)]
mod tests;
