//! A typed answer from a model that first calls an MCP tool: the answer's
//! schema comes from a Rust struct, the agent validates the model's final
//! answer against it (sending it back to be fixed when it does not match),
//! and `result.output()` hands back the struct.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example structured_output
//! cargo run --example structured_output -- "to be or not to be"
//! ```
//!
//! The MCP server is this repository's demo server (this binary, run with
//! `--serve-mcp`); the model comes from the environment as in the
//! quickstart (`LOOPWRIGHT_MODEL`, a provider key, or a local server).

use loopwright::mcp::connect_all;
use loopwright::{Agent, OutputSpec, ReasoningEffort};

#[path = "common/demo_server.rs"]
mod demo_server;
#[path = "common/model.rs"]
mod model;

/// What the model must answer with; field docs become the schema's
/// descriptions.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct TextStats {
    /// The text that was counted, as given.
    text: String,
    /// How many words it has, as the word_count tool said.
    words: u32,
    /// One short line about the text.
    summary: String,
}

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
    let connected = connect_all(vec![demo_server::stdio_config("demo")]).await;
    for failure in &connected.failed {
        eprintln!("warning: {}", failure.error);
    }
    let status = match model::model_from_env().await {
        Err(help) => {
            eprintln!("{help}");
            2
        }
        Ok((model, selector)) => {
            eprintln!("model {selector}");
            let agent = Agent::builder(model)
                .tools(connected.tool_set())
                .system("Use the tools to get facts; never guess a count.")
                // Models that reason think a little; others get nothing added.
                .reasoning(ReasoningEffort::Low)
                .output(OutputSpec::of::<TextStats>())
                .build();
            let prompt = format!("Count the words of \"{text}\" with the word_count tool, then report.");
            let stats = match agent.run(prompt).await {
                Ok(result) => result.output::<TextStats>().map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match stats {
                Ok(stats) => {
                    println!("{}", serde_json::to_string_pretty(&stats).unwrap_or_default());
                    0
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
    };
    connected.close_all().await;
    status
}
