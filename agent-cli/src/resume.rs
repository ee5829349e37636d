//! `loopwright resume RUN_ID --approve CALL_ID --deny CALL_ID[=REASON]`: a
//! paused run continued in this process, whichever process paused it.
//!
//! The run's agent is built again from the command line that started it,
//! in the directory it started in (both kept in its record); the decisions
//! go to [`loopwright::Resume`], which refuses, before anything runs, a
//! decision for a call that is not pending and a pending call left without
//! one.

use clap::Parser;
use loopwright::ApprovalDecision;
use loopwright::config::AgentConfig;

use crate::args::{Cli, ResumeArgs};
use crate::escape;
use crate::exit::Failure;
use crate::job::ResumeJob;
use crate::persist;

/// Resume the run; the exit status as for a prompt's run.
pub async fn run(args: ResumeArgs) -> u8 {
    match run_checked(args).await {
        Ok(status) => status,
        Err(failure) => {
            eprintln!("loopwright resume: {}", escape::message(&failure.message));
            failure.status
        }
    }
}

/// The decisions the flags give, in order.
fn decisions(args: &ResumeArgs) -> Vec<(String, ApprovalDecision)> {
    let approved = args
        .approve
        .iter()
        .map(|id| (id.clone(), ApprovalDecision::Approve));
    let denied = args.deny.iter().map(|spec| match spec.split_once('=') {
        Some((id, reason)) => (id.to_owned(), ApprovalDecision::deny(reason)),
        None => (spec.clone(), ApprovalDecision::deny("the user said no")),
    });
    approved.chain(denied).collect()
}

async fn run_checked(args: ResumeArgs) -> Result<u8, Failure> {
    let config = match &args.config {
        Some(path) => AgentConfig::load(path),
        None => AgentConfig::from_default_location(),
    }
    .map_err(|e| Failure::usage(format!("config {e}")))?;
    let url = persist::store_url(args.store.as_deref(), config.store.as_deref())?;
    let store = persist::open(&url).await?;
    let record = store
        .load_run(&args.run_id)
        .await
        .map_err(|e| Failure::usage(format!("run {}: {e}", args.run_id)))?
        .ok_or_else(|| Failure::usage(format!("no run {} in the store {url}", args.run_id)))?;
    let paused = persist::paused(&record)?;
    if args.approve.is_empty() && args.deny.is_empty() {
        return Err(Failure::usage(persist::pause_notice(
            &paused.run_id,
            &paused.state,
        )));
    }
    // The run is built as it was: same flags, same directory.
    let mut argv = paused.argv.clone();
    if !argv.iter().any(|a| a == "--store" || a.starts_with("--store=")) {
        argv.extend(["--store".to_owned(), url]);
    }
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        Failure::usage(format!(
            "run {}: its command line no longer parses: {e}",
            paused.run_id
        ))
    })?;
    if let Err(e) = std::env::set_current_dir(&paused.cwd) {
        return Err(Failure::usage(format!(
            "run {}: its directory {}: {e}",
            paused.run_id,
            paused.cwd.display()
        )));
    }
    let job = ResumeJob {
        decisions: decisions(&args),
        paused,
        store,
    };
    crate::run_checked(cli.run, Some(job)).await
}
