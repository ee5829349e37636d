//! `--agent FILE`: the agent an agent file defines, its sub-agents as
//! tools `agent__<name>`. The command line's flags override the file's
//! settings for that agent (the root); `--approve` holds for every agent of
//! the tree; the tree's MCP servers are connected once and closed at the end.

use std::sync::Arc;

use loopwright::config::{AgentConfig, SchemaSource};
use loopwright::files::{AgentFile, BuildOptions};
use loopwright::skills::Skills;
use loopwright::testing::replay::Cassette;
use loopwright::tools::Workspace;

use crate::args::{AgentArgs, Args};
use crate::exit::Failure;
use crate::settings::{CommandLine, accounting_sink, approvals, output_spec};
use crate::{Stop, run_prompt};

/// Build the file's agents, then list their tools or run the prompt.
pub async fn run(
    args: &Args,
    file: &std::path::Path,
    config: &AgentConfig,
    system: Option<String>,
    job: crate::job::Job,
    cassette: Option<Cassette>,
    stop: &mut Stop,
) -> Result<u8, Failure> {
    let definition = AgentFile::load(file).map_err(|e| Failure::usage(format!("agent file {e}")))?;
    let mut options = build_options(args, args.plan, system, crate::tools::skills(args, config))?;
    if let Some(cassette) = cassette {
        options = options.cassette(cassette);
    }
    let built = tokio::select! {
        built = definition.build_with(config, options) => built.map_err(|e| Failure::usage(format!("agent file {e}")))?,
        status = stop.requested() => return Ok(status),
    };
    for warning in &built.warnings {
        eprintln!("warning: {warning}");
    }
    let status = if args.list_tools {
        tokio::select! {
            () = crate::tools::list(built.agent.tools()) => Ok(crate::exit::OK),
            status = stop.requested() => Ok(status),
        }
    } else {
        run_prompt(args, &built.agent, job, stop).await
    };
    crate::release_stdout();
    tokio::select! {
        () = built.connected.close_all() => {}
        _ = stop.requested() => {}
    }
    status
}

/// The command line as build options; `skills` go to the root.
pub(crate) fn build_options(
    args: &AgentArgs,
    plan: bool,
    system: Option<String>,
    skills: Arc<Skills>,
) -> Result<BuildOptions, Failure> {
    let output = output_spec(args, args.output_schema.clone().map(SchemaSource::File))?;
    let sink = accounting_sink(args)?;
    let root = CommandLine::of(args, plan, system, sink, output);
    let mut options = BuildOptions::default()
        .model(args.model.clone())
        .root(move |o| root.apply(o))
        .skills(skills);
    for (name, value) in &args.vars {
        options = options.var(name.clone(), value.clone());
    }
    if let Some(timeout) = args.llm_timeout {
        options = options.llm_timeout(timeout);
    }
    if let Some(approvals) = approvals(args) {
        options = options.approvals(approvals);
    }
    if args.no_mcp {
        options = options.no_mcp();
    } else if !args.mcp.is_empty() {
        options = options.mcp(args.mcp.clone());
    }
    if args.coding_tools {
        options = options.coding_tools();
    }
    if let Some(dir) = &args.workspace {
        let workspace = if args.full_access {
            Workspace::full(dir)
        } else {
            Workspace::limited(dir)
        }
        .map_err(|e| Failure::usage(format!("--workspace {}: {e}", dir.display())))?;
        options = options.workspace(workspace);
    } else if args.full_access {
        let dir = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        let workspace =
            Workspace::full(&dir).map_err(|e| Failure::usage(format!("workspace {}: {e}", dir.display())))?;
        options = options.workspace(workspace);
    }
    Ok(options)
}
