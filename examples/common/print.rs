//! How the examples show a run: the answer streams to stdout; tool calls,
//! fallbacks, warnings and errors go to stderr.

use std::io::Write as _;

use futures::StreamExt;
use loopwright::{AgentEvent, AgentResult, AgentRun, RunError};

/// Print `run` to the end; its result, or why it did not answer.
pub async fn print_run(mut run: AgentRun) -> Result<AgentResult, RunError> {
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ToolCall { tool, input, .. } => eprintln!("-> {tool} {input}"),
            AgentEvent::ToolResult {
                tool,
                is_error,
                duration_ms,
                ..
            } => eprintln!(
                "<- {tool} {} in {duration_ms} ms",
                if is_error { "failed" } else { "ok" }
            ),
            AgentEvent::ModelFallback { from, to, error } => {
                eprintln!("fallback: {from} failed ({error}); now {to}")
            }
            AgentEvent::Warning { message } => eprintln!("warning: {message}"),
            AgentEvent::Finished {
                error: Some(error), ..
            } => eprintln!("error: {error}"),
            _ => {}
        }
    }
    println!();
    run.await
}
