//! The quickstart: a real model, one MCP server, a streamed answer.
//!
//! ```sh
//! cargo run --release --example quickstart   # no key: the embedded model (397 MB, fetched once)
//! ANTHROPIC_API_KEY=... cargo run --release --example quickstart
//! cargo run --release --example quickstart -- "How many words are in 'to be or not to be'?"
//! cargo run --release --example quickstart -- --mcp-command "npx -y @modelcontextprotocol/server-everything" "Add 2 and 40"
//! ```
//!
//! The model is `LOOPWRIGHT_MODEL` (`provider/model`), else the first provider
//! whose key is in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY,
//! GEMINI_API_KEY, OPENROUTER_API_KEY), else a local Ollama or
//! OpenAI-compatible server that answers on its default port, else the
//! embedded model `local/qwen3-0.6b`, run in this process on the CPU (it says
//! so, and what its first use downloads; `LOOPWRIGHT_LOCAL_MODEL` names a
//! `.gguf` file instead). The MCP server is this repository's demo server
//! (this binary, run with `--serve-mcp`) unless `--mcp-command "COMMAND
//! ARGS"` names another stdio server. When no model can be had (every
//! model the configuration names is unusable), it still connects the server,
//! lists its tools, says what to fix and exits 2.

use loopwright::mcp::{McpServerConfig, connect_all};
use loopwright::{Agent, ToolSet};

#[path = "common/demo_server.rs"]
mod demo_server;
#[path = "common/model.rs"]
mod model;
#[path = "common/print.rs"]
mod print;

const DEFAULT_PROMPT: &str = "What time is it in UTC right now, and how many words are in \
\"the quick brown fox jumps over the lazy dog\"? Use the tools.";

#[tokio::main]
async fn main() {
    std::process::exit(demo_server::serve_or(run()).await);
}

async fn run() -> i32 {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let server = match args.iter().position(|a| a == "--mcp-command") {
        Some(i) if i + 1 < args.len() => {
            let line = args.remove(i + 1);
            args.remove(i);
            let mut words = line.split_whitespace();
            let command = words.next().unwrap_or_default().to_string();
            McpServerConfig::stdio("mcp", command).args(words)
        }
        Some(_) => {
            eprintln!("--mcp-command needs a command");
            return 2;
        }
        None => demo_server::stdio_config("demo"),
    };
    let prompt = if args.is_empty() {
        DEFAULT_PROMPT.to_string()
    } else {
        args.join(" ")
    };

    let connected = connect_all(vec![server]).await;
    for failure in &connected.failed {
        eprintln!("warning: {}", failure.error);
    }
    let tools = connected.add_to(ToolSet::builder()).build();
    let status = match model::model_from_env().await {
        Err(help) => {
            let catalog = tools.catalog().await;
            eprintln!("MCP tools ready: {}", catalog.names().join(", "));
            eprintln!("{help}");
            2
        }
        Ok((model, selector)) => {
            eprintln!("model {selector}");
            let agent = Agent::builder(model)
                .tools(tools)
                .system("Answer briefly.")
                .build();
            match print::print_run(agent.run(prompt)).await {
                Ok(_) => 0,
                Err(_) => 1,
            }
        }
    };
    connected.close_all().await;
    status
}
