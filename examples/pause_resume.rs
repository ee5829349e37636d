//! A run that asks a person, paused and stored by one process, resumed by
//! another: the shape of a service where approvals come hours later, after
//! a deploy or a crash.
//!
//! ```sh
//! # Process 1: the model wants to append a note; the call needs approval,
//! # so the run pauses, is stored, and the process waits (as a service would).
//! cargo run --features store --example pause_resume -- pause "Note that the build is green"
//! #   paused run_3f2a... call call_1 append_note {"text":"the build is green"}
//! # Kill it (Ctrl-C, or SIGKILL): the run is in the store.
//! # Process 2, any time later, anywhere with the same store:
//! cargo run --features store --example pause_resume -- resume run_3f2a... --approve call_1
//! ```
//!
//! The store is `LOOPWRIGHT_STORE` (`sqlite:PATH`, or `postgres://...` with
//! `--features store,postgres`), by default `sqlite:pause_resume.db`; notes go to `notes.txt` in the current
//! directory. The model comes from the environment as in the quickstart
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server). The store's
//! `PausedRuns` parks the run and claims it before a resume (a
//! compare-and-set), so two processes resuming it at once cannot both run
//! the call.

use std::sync::Arc;

use loopwright::store::{PausedError, PausedRuns, Store};
use loopwright::{Agent, Approvals, RunError};

#[path = "common/model.rs"]
mod model;
#[path = "common/notes.rs"]
mod notes;

#[tokio::main]
async fn main() {
    std::process::exit(run().await);
}

async fn run() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = std::env::var("LOOPWRIGHT_STORE").unwrap_or_else(|_| "sqlite:pause_resume.db".into());
    let store = match loopwright::store::open(&url).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("store {url}: {e}");
            return 2;
        }
    };
    let agent = match agent().await {
        Ok(agent) => agent,
        Err(help) => {
            eprintln!("{help}");
            return 2;
        }
    };
    match args.first().map(String::as_str) {
        Some("pause") => pause(&agent, store, &args[1..].join(" ")).await,
        Some("resume") if args.len() == 4 && args[2] == "--approve" => {
            resume(&agent, store, &args[1], &args[3]).await
        }
        _ => {
            eprintln!("usage: pause_resume pause TASK... | pause_resume resume RUN_ID --approve CALL_ID");
            2
        }
    }
}

/// The agent: a tool that appends a note (it needs approval) and runs
/// that defer approval instead of waiting for it.
async fn agent() -> Result<Agent, String> {
    let (model, selector) = model::model_from_env().await?;
    eprintln!("model {selector}");
    Ok(Agent::builder(model)
        .name("notes")
        .tool(notes::append_note())
        .approvals(Approvals::defer())
        .system("You keep notes. Use append_note for each note, then say briefly what you did.")
        .build())
}

/// Run `task` until it pauses, park it in the store, then wait as a
/// service would.
async fn pause(agent: &Agent, store: Arc<dyn Store>, task: &str) -> i32 {
    let state = match agent.run(task).await {
        Ok(result) => {
            println!("finished without asking: {}", result.text);
            return 0;
        }
        Err(RunError::AwaitingApproval { state, .. }) => state,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let run_id = match PausedRuns::new(store).park(agent.name(), &state).await {
        Ok(id) => id,
        Err(e) => {
            eprintln!("the paused run was not stored: {e}");
            return 1;
        }
    };
    for call in state.pending() {
        println!(
            "paused {run_id} call {} {} {}",
            call.call_id, call.tool, call.arguments
        );
    }
    // A service keeps going; the run waits in the store, not in memory.
    let _ = tokio::signal::ctrl_c().await;
    0
}

/// Claim the parked run (one process only), resume it with `call_id`
/// approved, record how it ended.
async fn resume(agent: &Agent, store: Arc<dyn Store>, run_id: &str, call_id: &str) -> i32 {
    let claimed = match PausedRuns::new(store).claim(run_id).await {
        Ok(claimed) => claimed,
        Err(e @ PausedError::Store(_)) => {
            eprintln!("{e}");
            return 1;
        }
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let run = match agent.resume(claimed.state().clone()).approve(call_id).run().await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("run {run_id}: {e}");
            if let Err(e) = claimed.release().await {
                eprintln!("run {run_id} stays claimed: {e}");
            }
            return 2;
        }
    };
    let result = match run.await.or_else(RunError::into_result) {
        Ok(result) => result,
        Err(e) => {
            eprintln!("the run stopped without a result: {e}");
            return 1;
        }
    };
    if let Err(e) = claimed.finish(&result).await {
        eprintln!("run {run_id}: its end was not stored: {e}");
        return 1;
    }
    println!("{}", result.text);
    0
}
