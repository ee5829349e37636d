//! A coding agent: a real model with the six coding tools (Read, Write, Edit,
//! Bash, Glob, Grep) sandboxed to one directory, plus the tools of any MCP
//! servers configured in a JSON file.
//!
//! ```sh
//! export ANTHROPIC_API_KEY=...   # or OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY
//! cargo run --release --example coding_agent -- "Add a test for add() and run it"
//! cargo run --release --example coding_agent -- --dir path/to/project "Explain this project"
//! cargo run --release --example coding_agent -- --mcp-config mcp.json "Use the git tools to summarise recent work"
//! ```
//!
//! Without `--dir` it works on a fresh temporary directory holding a tiny
//! Python project. `--mcp-config FILE` reads MCP servers in the Claude Desktop /
//! Cursor / VS Code format (`{"mcpServers": {"name": {"command": ...}}}`); a
//! server that fails to start is reported and the run goes on without it.
//! The model is `LOOPWRIGHT_MODEL` (`provider/model`, such as `ollama/qwen3` for a
//! local Ollama server), else the first provider whose key is set, else a
//! local model server, else the embedded model `local/qwen3-0.6b` (said
//! before its one download of 397 MB).
//!
//! The run gets what the configuration gives the model, as the `loopwright`
//! command's runs do: its context window's budget, and compaction (old tool
//! results cleared, older turns summarised) so a long session goes on
//! instead of stopping at the window (`"defaults": {"compaction": false}`
//! turns it off).

use std::path::PathBuf;
use std::time::Duration;

use loopwright::mcp::{connect_all, parse_mcp_servers};
use loopwright::tools::{Workspace, coding_tools};
use loopwright::{Agent, ExitReason, ToolSet};

#[path = "common/model.rs"]
mod common;
#[path = "common/print.rs"]
mod print;

const SYSTEM: &str = "You are a careful coding agent working in a sandboxed directory. Look before you change \
anything: use Glob, Grep and Read to find your way, Edit for small changes, Write for new files, and Bash to run \
tests. Keep going until the task is done, then say briefly what you changed and how you checked it.";

/// Commands such as test runs can take a while; the Bash tool sets its own.
const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let dir = match take_option(&mut args, "--dir") {
        Ok(dir) => dir.map(PathBuf::from),
        Err(problem) => return usage(&problem),
    };
    let mcp_file = match take_option(&mut args, "--mcp-config") {
        Ok(file) => file,
        Err(problem) => return usage(&problem),
    };
    let prompt = args.join(" ");
    if prompt.trim().is_empty() {
        return usage("give a task as the argument");
    }

    let adjust = |mut options: loopwright::agent::AgentOptions| {
        options.system = Some(SYSTEM.to_owned());
        options.tool_timeout = TOOL_TIMEOUT;
        options
    };
    let (model, options, selector) = match common::model_and_options(adjust).await {
        Ok(found) => found,
        Err(message) => {
            eprintln!("{message}");
            return 2;
        }
    };

    // Keep the temporary directory alive for the whole run.
    let (_temp, root) = match dir {
        Some(dir) => (None, dir),
        None => match sample_project() {
            Ok((temp, root)) => (Some(temp), root),
            Err(e) => return fail(&format!("could not create the sample project: {e}")),
        },
    };
    let workspace = match Workspace::limited(&root) {
        Ok(ws) => ws,
        Err(e) => return fail(&format!("workspace {}: {e}", root.display())),
    };
    eprintln!("model {selector}, workspace {}", root.display());

    let mut tools = ToolSet::builder().source(coding_tools(workspace));
    let mut servers = None;
    if let Some(file) = mcp_file {
        let configs = match std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()))
            .and_then(|json| parse_mcp_servers(&json).map_err(|e| e.to_string()))
        {
            Ok(configs) => configs,
            Err(e) => return usage(&format!("MCP config {file}: {e}")),
        };
        let connected = connect_all(configs).await;
        for failure in &connected.failed {
            eprintln!(
                "warning: MCP server {} not connected: {}",
                failure.server, failure.error
            );
        }
        for source in connected.sources.iter().cloned() {
            tools = tools.source(source);
        }
        eprintln!("MCP servers: {}", connected.server_names().join(", "));
        servers = Some(connected);
    }
    let tools = tools.build();
    let agent = Agent::builder(model).tools(tools).options(options).build();
    let result = print::print_run(agent.run(prompt)).await;
    if let Some(servers) = servers {
        servers.close_all().await;
    }
    match result {
        Ok(result) if result.exit() == ExitReason::Completed => 0,
        Ok(result) => fail(&format!("run ended: {:?}", result.exit())),
        Err(e) => fail(&format!("run ended: {e}")),
    }
}

/// A tiny Python project to work on.
fn sample_project() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
    let temp = tempfile::tempdir()?;
    let root = temp.path().to_path_buf();
    std::fs::write(
        root.join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n",
    )?;
    std::fs::write(
        root.join("README.md"),
        "# calc\n\nTiny arithmetic helpers. Run tests with `python3 -m unittest`.\n",
    )?;
    Ok((temp, root))
}

/// Remove `name VALUE` from the arguments, returning the value.
fn take_option(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    match args.iter().position(|a| a == name) {
        Some(i) if i + 1 < args.len() => {
            let value = args.remove(i + 1);
            args.remove(i);
            Ok(Some(value))
        }
        Some(_) => Err(format!("{name} needs a value")),
        None => Ok(None),
    }
}

fn usage(problem: &str) -> i32 {
    eprintln!("{problem}\nusage: coding_agent [--dir DIR] [--mcp-config FILE] TASK...");
    2
}

fn fail(message: &str) -> i32 {
    eprintln!("error: {message}");
    1
}
