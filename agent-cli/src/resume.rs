//! `loopwright resume RUN_ID --approve CALL_ID --deny CALL_ID[=REASON]`: a
//! paused run continued in this process, whichever process paused it.
//!
//! The run's agent is built again from the command line that started it,
//! in the directory it started in (both kept in its record). Each decision
//! names the call and the digest its pause notice showed
//! (`CALL_ID@DIGEST`): the digest covers the call and that command line
//! and directory, so a record changed in the store since is refused and
//! shown, never run. The decisions then go to [`loopwright::agent::Resume`],
//! which refuses, before anything runs, a decision for a call that is not
//! pending and a pending call left without one.

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

/// A decision as the flags give it.
struct Given {
    call_id: String,
    digest: Option<String>,
    decision: ApprovalDecision,
}

/// `CALL_ID[@DIGEST]`, split.
fn bound(spec: &str) -> (String, Option<String>) {
    match spec.split_once('@') {
        Some((id, digest)) => (id.to_owned(), Some(digest.to_owned())),
        None => (spec.to_owned(), None),
    }
}

/// The decisions the flags give, in order.
fn decisions(args: &ResumeArgs) -> Vec<Given> {
    let approved = args.approve.iter().map(|spec| {
        let (call_id, digest) = bound(spec);
        Given {
            call_id,
            digest,
            decision: ApprovalDecision::Approve,
        }
    });
    let denied = args.deny.iter().map(|spec| {
        let (call, reason) = spec.split_once('=').unwrap_or((spec, "the user said no"));
        let (call_id, digest) = bound(call);
        Given {
            call_id,
            digest,
            decision: ApprovalDecision::deny(reason),
        }
    });
    approved.chain(denied).collect()
}

/// Each decision's digest against the digest of the pending call it names,
/// as the record holds it now; a missing or different one is refused with
/// the calls as they are now. A decision for a call that is not pending is
/// left to [`loopwright::agent::Resume`], which names it.
fn check_digests(paused: &persist::Paused, given: &[Given]) -> Result<(), Failure> {
    let pending = paused.state.pending();
    for decision in given {
        let Some(call) = pending.iter().find(|c| c.call_id == decision.call_id) else {
            continue;
        };
        let now = persist::digest(&paused.origin, call);
        let problem = match &decision.digest {
            None => format!(
                "a decision names its call with the digest its pause notice showed ({}@DIGEST)",
                decision.call_id
            ),
            Some(shown) if *shown != now => format!(
                "call {} is not what its pause notice showed (digest {shown}): the stored run changed since, \
                 so nothing was run",
                decision.call_id
            ),
            Some(_) => continue,
        };
        return Err(Failure::usage(format!(
            "run {}: {problem}. As stored now, {}",
            paused.run_id,
            persist::pause_notice(&paused.run_id, &paused.state, &paused.origin)
        )));
    }
    Ok(())
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
            &paused.origin,
        )));
    }
    let given = decisions(&args);
    check_digests(&paused, &given)?;
    // The run is built as it was: same flags, same directory.
    let mut argv = paused.origin.argv.clone();
    if !argv.iter().any(|a| a == "--store" || a.starts_with("--store=")) {
        argv.extend(["--store".to_owned(), url]);
    }
    let cli = Cli::try_parse_from(&argv).map_err(|e| {
        Failure::usage(format!(
            "run {}: its command line no longer parses: {e}",
            paused.run_id
        ))
    })?;
    if let Err(e) = std::env::set_current_dir(&paused.origin.cwd) {
        return Err(Failure::usage(format!(
            "run {}: its directory {}: {e}",
            paused.run_id,
            paused.origin.cwd.display()
        )));
    }
    let job = ResumeJob {
        decisions: given.into_iter().map(|g| (g.call_id, g.decision)).collect(),
        paused,
        store,
    };
    crate::run_checked(cli.run, Some(job)).await
}
