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
//! (`LOOPWRIGHT_MODEL`, a provider key, or a local server). The resume
//! claims the stored run first (a compare-and-set), so two processes
//! resuming it at once cannot both run the call.

use std::sync::Arc;

use loopwright::store::{RunRecord, RunStatus, Store};
use loopwright::{Agent, Approvals, ExitReason, RunState};

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

/// Run `task` until it pauses, store it, then wait as a service would.
async fn pause(agent: &Agent, store: Arc<dyn Store>, task: &str) -> i32 {
    let result = agent.run(task).await.or_else(loopwright::RunError::into_result);
    let Ok(result) = result else {
        eprintln!("the run stopped without a result");
        return 1;
    };
    let Some(state) = result.state() else {
        println!("finished without asking: {}", result.text);
        return 0;
    };
    let run_id = format!("run_{}", &state.id[3..15]);
    let record = RunRecord::new(&run_id, "notes")
        .with_status(RunStatus::AwaitingApproval)
        .with_state(serde_json::to_value(state).unwrap_or_default());
    if let Err(e) = store.create_run(&record).await {
        eprintln!("the paused run was not stored: {e}");
        return 1;
    }
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

/// Claim the stored run, resume it with `call_id` approved, store its end.
async fn resume(agent: &Agent, store: Arc<dyn Store>, run_id: &str, call_id: &str) -> i32 {
    let record = match store.load_run(run_id).await {
        Ok(Some(record)) if record.status == RunStatus::AwaitingApproval => record,
        Ok(Some(record)) => {
            eprintln!(
                "run {run_id} is {}, not awaiting approval",
                record.status.as_str()
            );
            return 2;
        }
        Ok(None) => {
            eprintln!("no run {run_id}");
            return 2;
        }
        Err(e) => {
            eprintln!("store: {e}");
            return 1;
        }
    };
    let state = match RunState::from_value(record.state.clone().unwrap_or_default()) {
        Ok(state) => state,
        Err(e) => {
            eprintln!("run {run_id}: {e}");
            return 2;
        }
    };
    // The claim: only one process moves it from awaiting to running.
    let claimed = record.clone().with_status(RunStatus::Running);
    let version = match store.update_run(&claimed, record.version).await {
        Ok(version) => version,
        Err(e) => {
            eprintln!("run {run_id} was claimed by another process: {e}");
            return 2;
        }
    };
    let run = match agent.resume(state).approve(call_id).run().await {
        Ok(run) => run,
        Err(e) => {
            eprintln!("run {run_id}: {e}");
            let _ = store.update_run(&record, version).await;
            return 2;
        }
    };
    let Ok(result) = run.await.or_else(loopwright::RunError::into_result) else {
        eprintln!("the run stopped without a result");
        return 1;
    };
    let status = if result.exit() == ExitReason::Completed {
        RunStatus::Completed
    } else {
        RunStatus::Failed
    };
    let mut done = claimed.with_status(status);
    done.state = None;
    done.result = Some(serde_json::json!({"text": result.text}));
    if let Err(e) = store.update_run(&done, version).await {
        eprintln!("run {run_id}: its end was not stored: {e}");
    }
    println!("{}", result.text);
    0
}
