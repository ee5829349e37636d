//! The first hour in one program: a typed tool of your own, an MCP
//! server's tools, the events as they stream, a typed answer, and a run
//! that stops to ask a person, is parked in a store and resumed from it.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --features store --example first_hour
//! cargo run --features store --example first_hour -- "to be or not to be"
//! ```
//!
//! The MCP server is this repository's demo server (this binary, run with
//! `--serve-mcp`), trusted to run without asking; `save_note`, the
//! program's own tool, carries no annotations, so it asks once per session
//! (here: the run pauses). The paused run goes to the store
//! (`LOOPWRIGHT_STORE`, by default `sqlite:first_hour.db`) and is claimed
//! back and resumed with the call approved, as a service would after a
//! person said yes (`pause_resume` does it across two processes). Notes go
//! to `notes.txt`. The model comes from the environment as in the
//! quickstart (`LOOPWRIGHT_MODEL`, a provider key, or a local server).

use std::io::Write as _;

use futures::StreamExt;
use loopwright::approval::{ApprovalPolicy, ApprovalTier};
use loopwright::mcp::connect_all;
use loopwright::store::PausedRuns;
use loopwright::{
    Agent, AgentEvent, AgentResult, AgentRun, Approvals, OutputSpec, RunError, ToolError, tool_fn,
};

#[path = "common/demo_server.rs"]
mod demo_server;
#[path = "common/model.rs"]
mod model;

/// The typed answer: its schema comes from the struct.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Report {
    /// How many words the text has, as the word_count tool said.
    words: u32,
    /// The note that was saved.
    note: String,
}

/// `save_note`'s arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    /// The note, one line.
    text: String,
}

#[tokio::main]
async fn main() {
    std::process::exit(demo_server::serve_or(run()).await);
}

async fn run() -> i32 {
    let text = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let text = if text.trim().is_empty() {
        "the quick brown fox".to_owned()
    } else {
        text
    };
    let connected = connect_all(vec![demo_server::stdio_config("demo")]).await;
    let status = match agent(&connected).await {
        Ok(agent) => count_and_note(&agent, &text).await,
        Err(help) => {
            eprintln!("{help}");
            2
        }
    };
    connected.close_all().await;
    status
}

/// The agent: the MCP server's tools (trusted), `save_note` (asks), a
/// typed answer, and approvals that pause the run instead of waiting.
async fn agent(connected: &loopwright::mcp::Connected) -> Result<Agent, String> {
    let (model, selector) = model::model_from_env().await?;
    eprintln!("model {selector}");
    let save_note = tool_fn(
        "save_note",
        "Save a note for the user.",
        |note: Note| async move {
            let saved = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open("notes.txt")
                .and_then(|mut file| file.write_all(format!("{}\n", note.text).as_bytes()));
            saved.map_err(ToolError::execution)?;
            Ok(format!("saved: {}", note.text))
        },
    );
    let policy = ApprovalPolicy::default().tier("demo__*", ApprovalTier::Auto);
    Ok(Agent::builder(model)
        .tools(connected.tool_set())
        .tool(save_note)
        .approvals(Approvals::defer().policy(policy))
        .output(OutputSpec::of::<Report>())
        .system("Use the tools to get facts; never guess a count. Save a note of what you found.")
        .build())
}

/// Run until the run asks, park it, claim it back, resume it approved,
/// and print the typed answer.
async fn count_and_note(agent: &Agent, text: &str) -> i32 {
    let url = std::env::var("LOOPWRIGHT_STORE").unwrap_or_else(|_| "sqlite:first_hour.db".into());
    let paused = match loopwright::store::open(&url).await {
        Ok(store) => PausedRuns::new(store),
        Err(e) => {
            eprintln!("store {url}: {e}");
            return 2;
        }
    };
    let prompt =
        format!("Count the words of \"{text}\" with word_count, save a note of the count, then report.");
    let state = match streamed(agent.run(prompt)).await {
        Err(RunError::AwaitingApproval { state, .. }) => state,
        other => return report(other),
    };
    let id = match paused.park(agent.name(), &state).await {
        Ok(id) => id,
        Err(e) => {
            eprintln!("the paused run was not stored: {e}");
            return 1;
        }
    };
    // A person would decide here, any time later, in any process.
    let claimed = match paused.claim(&id).await {
        Ok(claimed) => claimed,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let mut resume = agent.resume(claimed.state().clone());
    for call in claimed.state().pending() {
        eprintln!("{id} asks to run {} {}: approved", call.tool, call.arguments);
        resume = resume.approve(&call.call_id);
    }
    let result = match resume.run().await {
        Ok(run) => streamed(run).await,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let ended = match &result {
        Ok(result) => Some(result),
        Err(e) => e.result(),
    };
    let recorded = match ended {
        Some(ended) => claimed.finish(ended).await,
        None => claimed.release().await,
    };
    if let Err(e) = recorded {
        eprintln!("{id}: its end was not stored: {e}");
    }
    report(result)
}

/// Show `run`'s events as they come (text to stdout's side, tools to
/// stderr); its end.
async fn streamed(mut run: AgentRun) -> Result<AgentResult, RunError> {
    while let Some(event) = run.next().await {
        if let Some(output) = event.tool_result_text() {
            eprintln!("  <- {output}");
        }
        match event {
            AgentEvent::TextDelta { text } => eprint!("{text}"),
            AgentEvent::ToolCall { tool, input, .. } => eprintln!("  -> {tool} {input}"),
            AgentEvent::ApprovalRequested { tool, .. } => eprintln!("  ? {tool} asks for approval"),
            _ => {}
        }
    }
    run.await
}

/// Print the typed answer; the exit status.
fn report(result: Result<AgentResult, RunError>) -> i32 {
    match result
        .map_err(|e| e.to_string())
        .and_then(|r| r.output::<Report>().map_err(|e| e.to_string()))
    {
        Ok(report) => {
            println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
