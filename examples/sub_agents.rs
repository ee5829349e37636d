//! A coordinator agent defined in a file, handing work to two sub-agents
//! defined in files beside it (`examples/agents/`): a researcher with an
//! MCP server's tool, and a reviewer with structured input and output.
//! The sub-agents' events come wrapped with their path; the result counts
//! the tokens of the whole tree.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example sub_agents
//! cargo run --example sub_agents -- "the quick brown fox jumps over the lazy dog"
//! ```
//!
//! The MCP server is this repository's demo server (this binary, run with
//! `--serve-mcp`), configured under the name the researcher's file uses;
//! the model comes from the environment as in the quickstart
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server), for every agent
//! since the files name none.

use std::path::Path;

use futures::StreamExt;
use loopwright::AgentEvent;
use loopwright::config::AgentConfig;
use loopwright::files::{AgentFile, BuildOptions};

#[path = "common/demo_server.rs"]
mod demo_server;

/// The agent files.
const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/agents");

#[tokio::main]
async fn main() {
    std::process::exit(demo_server::serve_or(run()).await);
}

async fn run() -> i32 {
    let text = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let text = if text.trim().is_empty() {
        "the quick brown fox jumps over the lazy dog".to_string()
    } else {
        text
    };
    // The configuration the files refer to: the one the `loopwright`
    // command reads (./.ai-agent.json, then ~/.ai-agent.json: providers,
    // defaults.model), with the demo MCP server added in code.
    let mut config = match AgentConfig::from_default_location() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("config {e}");
            return 2;
        }
    };
    config.mcp_servers.push(demo_server::stdio_config("demo"));
    let models: Vec<String> = std::env::var("LOOPWRIGHT_MODEL")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();

    let file = match AgentFile::load(&Path::new(AGENTS).join("coordinator.md")) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let built = match file
        .build_with(&config, BuildOptions::default().model(models))
        .await
    {
        Ok(built) => built,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    for warning in &built.warnings {
        eprintln!("warning: {warning}");
    }

    let mut run = built
        .agent
        .run(format!("How many words has \"{text}\", and does it read well?"));
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::TextDelta { text } => print!("{text}"),
            AgentEvent::SubAgent { path, event } => match *event {
                AgentEvent::ToolCall { tool, input, .. } => eprintln!("[{path}] calls {tool} {input}"),
                AgentEvent::Finished { exit, .. } => eprintln!("[{path}] {exit:?}"),
                _ => {}
            },
            _ => {}
        }
    }
    let status = match run.await {
        Ok(result) => {
            println!();
            eprintln!(
                "tokens: {} for the coordinator, {} for the whole tree",
                result.usage.total().unwrap_or(0),
                result.tree_usage.total().unwrap_or(0)
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    };
    built.connected.close_all().await;
    status
}
