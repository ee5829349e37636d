//! Human in the loop: the application approves, denies or session-approves
//! tool calls from the event stream.
//!
//! ```sh
//! ANTHROPIC_API_KEY=... cargo run --example approval -- "Create notes.txt saying hello, then run ls"
//! ```
//!
//! The coding tools work on a temporary directory. Read, Glob and Grep run
//! without asking; Write asks once per session; Edit and Bash ask every time.
//! Answer each request on stdin: `y` (yes, once), `a` (yes, for the rest of
//! the session) or anything else (no). No answer within 60 s is a denial.

use std::io::Write as _;

use futures::StreamExt;
use loopwright::tools::{Workspace, coding_tools};
use loopwright::{
    Agent, AgentEvent, ApprovalDecision, Approvals, ToolSet, approval::ApprovalPolicy, approval::ApprovalTier,
};
use tokio::io::{AsyncBufReadExt, BufReader};

#[path = "common/model.rs"]
mod common;

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    if prompt.trim().is_empty() {
        eprintln!("usage: approval TASK...");
        return 2;
    }
    let (model, selector) = match common::model_from_env().await {
        Ok(found) => found,
        Err(message) => {
            eprintln!("{message}");
            return 2;
        }
    };
    let temp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let workspace = match Workspace::limited(temp.path()) {
        Ok(ws) => ws,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    eprintln!("model {selector}, workspace {}", workspace.root().display());

    // Tiers: annotations decide by default (read-only: auto, destructive:
    // always); Write is relaxed to once per session.
    let approvals =
        Approvals::via_events().policy(ApprovalPolicy::default().tier("Write", ApprovalTier::Session));
    let agent = Agent::builder(model)
        .tools(ToolSet::builder().source(coding_tools(workspace)).build())
        .approvals(approvals)
        .build();

    let mut answers = BufReader::new(tokio::io::stdin()).lines();
    let mut run = agent.run(prompt);
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::TextDelta { text } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ApprovalRequested {
                tool,
                input,
                responder,
                ..
            } => {
                eprint!("\nallow {tool} {input}? [y]es / [a]lways this session / [n]o: ");
                let line = answers.next_line().await.ok().flatten().unwrap_or_default();
                let decision = match line.trim() {
                    "y" | "yes" => ApprovalDecision::Approve,
                    "a" | "always" => ApprovalDecision::ApproveForSession,
                    _ => ApprovalDecision::Deny {
                        reason: "the user said no".into(),
                    },
                };
                responder.respond(decision);
            }
            AgentEvent::ApprovalResolved {
                call_id,
                approved,
                reason,
            } => {
                let verdict = if approved { "approved" } else { "denied" };
                eprintln!(
                    "{call_id} {verdict}{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
            }
            AgentEvent::ToolResult { tool, is_error, .. } => {
                eprintln!("<- {tool} {}", if is_error { "failed" } else { "ok" });
            }
            _ => {}
        }
    }
    println!();
    match run.await {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
