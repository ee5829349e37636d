//! What outlives one command: a stored conversation (`--session NAME`) and
//! a run paused on questions (`--approve defer`, `loopwright resume`), kept
//! in the store `--store` names, else the configuration's `store`, else a
//! SQLite file in the user's data directory.
//!
//! What the store is trusted with: keeping a paused run, not deciding what
//! runs. Whoever can write the store can change the record, so each pending
//! call is shown with a [`digest`] of the call and of the command line and
//! directory the run is rebuilt from, and `resume` takes a decision only
//! with the digest the notice showed: a record changed since (another call,
//! other arguments, another `--config` or MCP server) is refused and shown.
//!
//! Invariants: a session's turn is appended once its run ended, at the
//! version it was loaded at (another process's turn in between is a
//! conflict, reported, never overwritten); a paused run is one record in
//! the store, holding its state and the command line that built its agent,
//! and is resumed by claiming it (a compare-and-set from awaiting approval
//! to running), so two processes resuming it at once cannot both run its
//! calls; whatever the store says, the run's answer was printed and its
//! exit status stands.

use std::path::PathBuf;
use std::sync::Arc;

use loopwright::store::{RunRecord, RunStatus, Store};
use loopwright::{AgentResult, ExitReason, Message, RunState, agent::PendingCall};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::escape;
use crate::exit::Failure;

/// Where the store is when nothing names one, under the user's data
/// directory (`$XDG_DATA_HOME`, else `~/.local/share`).
pub const DEFAULT_STORE_FILE: &str = "loopwright/store.db";

/// The store URL: `--store`, else the configuration's `store`, else the
/// default SQLite file.
pub fn store_url(flag: Option<&str>, configured: Option<&str>) -> Result<String, Failure> {
    if let Some(url) = flag.or(configured) {
        return Ok(url.to_owned());
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .ok_or_else(|| {
            Failure::usage("no store: set --store URL or `store` in the configuration (HOME is not set)")
        })?;
    let file = data.join(DEFAULT_STORE_FILE);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::usage(format!("store directory {}: {e}", dir.display())))?;
    }
    Ok(format!("sqlite:{}", file.display()))
}

/// Open the store at `url`.
pub async fn open(url: &str) -> Result<Arc<dyn Store>, Failure> {
    loopwright::store::open(url)
        .await
        .map_err(|e| Failure::usage(format!("store: {e}")))
}

/// A conversation loaded from the store (`--session NAME`).
pub struct SessionAt {
    pub id: String,
    /// Its messages so far.
    pub messages: Vec<Message>,
    /// The version they were loaded at.
    pub version: u64,
}

impl SessionAt {
    /// Load session `id` (empty when the store has none).
    pub async fn load(store: &dyn Store, id: &str) -> Result<Self, Failure> {
        let stored = store
            .load_conversation(id)
            .await
            .map_err(|e| Failure::usage(format!("session {id}: {e}")))?;
        Ok(match stored {
            Some(c) => Self {
                id: id.to_owned(),
                messages: c.messages,
                version: c.version,
            },
            None => Self {
                id: id.to_owned(),
                messages: Vec::new(),
                version: 0,
            },
        })
    }
}

/// Append a finished turn (its prompt, then what the run added) to the
/// session; an error message when the store refused it.
pub async fn append_turn(
    store: &dyn Store,
    session: &str,
    version: u64,
    prompt: &Message,
    result: &AgentResult,
) -> Result<(), String> {
    if result.messages.is_empty() {
        return Ok(());
    }
    let mut turn = Vec::with_capacity(result.messages.len() + 1);
    turn.push(prompt.clone());
    turn.extend(result.messages.iter().cloned());
    match store.append_turn(session, version, &turn).await {
        Ok(_) => Ok(()),
        Err(e) if e.is_conflict() => Err(format!(
            "session {session}: another turn was stored meanwhile; this turn was not stored ({e})"
        )),
        Err(e) => Err(format!("session {session}: this turn was not stored: {e}")),
    }
}

/// Where a run's agent comes from: the command line that built it (the
/// prompt included, unused) and the directory it ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
}

impl Origin {
    /// This process's command line and directory.
    pub fn here() -> Self {
        Self {
            argv: std::env::args().collect(),
            cwd: std::env::current_dir().unwrap_or_default(),
        }
    }
}

/// Characters of a call's digest shown (64 bits of SHA-256).
const DIGEST_CHARS: usize = 16;

/// The digest a decision on `call` binds to: SHA-256 of the call (id,
/// tool, arguments, agent) and of the `origin` its run is rebuilt from.
pub fn digest(origin: &Origin, call: &PendingCall) -> String {
    let bound = json!([
        origin.argv,
        origin.cwd.display().to_string(),
        call.call_id,
        call.tool,
        call.arguments,
        call.agent_path,
    ]);
    let hash = Sha256::digest(bound.to_string().as_bytes());
    hash.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .take(DIGEST_CHARS)
        .collect()
}

/// A paused run's record: its state and how to build its agent again.
pub struct Paused {
    /// The record's id (the run's id across its pauses).
    pub run_id: String,
    pub state: RunState,
    /// Where its agent comes from.
    pub origin: Origin,
    pub session: Option<String>,
    /// The session's version when the paused turn began.
    pub session_version: u64,
    /// The store record's version.
    pub version: u64,
}

/// The record of run `run_id` that paused with `state`, in `session` (its
/// id, and its version when the turn began).
pub fn record(
    run_id: &str,
    agent: &str,
    session: Option<(&str, u64)>,
    state: &RunState,
    origin: &Origin,
) -> RunRecord {
    let mut record = RunRecord::new(run_id, agent)
        .with_status(RunStatus::AwaitingApproval)
        .with_state(json!({
            "run_state": state,
            "argv": origin.argv,
            "cwd": origin.cwd.display().to_string(),
            "session_version": session.map_or(0, |(_, v)| v),
        }));
    if let Some((session, _)) = session {
        record = record.with_session(session);
    }
    record
}

/// Read a stored paused run.
pub fn paused(record: &RunRecord) -> Result<Paused, Failure> {
    let bad = |what: &str| Failure::usage(format!("run {}: {what}", record.id));
    if record.status != RunStatus::AwaitingApproval {
        return Err(bad(&format!(
            "it is {}, not awaiting approval: nothing to resume",
            record.status.as_str()
        )));
    }
    let stored = record
        .state
        .as_ref()
        .ok_or_else(|| bad("its record has no state"))?;
    let state = RunState::from_value(stored.get("run_state").cloned().unwrap_or(Value::Null))
        .map_err(|e| bad(&e.to_string()))?;
    let argv = stored
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .ok_or_else(|| bad("its record has no command line"))?;
    let cwd = stored
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .unwrap_or_default();
    Ok(Paused {
        run_id: record.id.clone(),
        state,
        origin: Origin { argv, cwd },
        session: record.session.clone(),
        session_version: stored.get("session_version").and_then(Value::as_u64).unwrap_or(0),
        version: record.version,
    })
}

/// What a paused run waits for, where its agent comes from, and how to go
/// on (each decision bound to its call's [`digest`]), for stderr.
pub fn pause_notice(run_id: &str, state: &RunState, origin: &Origin) -> String {
    let mut text = format!("paused: run {run_id} waits for a decision on:");
    let pending = state.pending();
    for call in &pending {
        let args = call.arguments.to_string();
        let shown: String = args.chars().take(200).collect();
        text.push_str(&format!(
            "\n  {} {} {} (agent {}) [digest {}]",
            escape::line(&call.call_id),
            escape::line(&call.tool),
            escape::line(&shown),
            escape::line(&call.agent_path),
            digest(origin, call)
        ));
    }
    text.push_str(&format!(
        "\nits agent is rebuilt from: {} (in {})",
        escape::line(&origin.argv.join(" ")),
        escape::line(&origin.cwd.display().to_string())
    ));
    let hint: Vec<String> = pending
        .iter()
        .map(|p| format!("--approve {}@{}", p.call_id, digest(origin, p)))
        .collect();
    text.push_str(&format!(
        "\ncontinue it with: loopwright resume {run_id} {} (or --deny CALL_ID@DIGEST=REASON)",
        hint.join(" ")
    ));
    text
}

/// The run record's status and result after the run ended as `result`.
pub fn finished(mut record: RunRecord, result: &AgentResult) -> RunRecord {
    record.status = match result.exit() {
        ExitReason::Completed | ExitReason::Stopped | ExitReason::MaxSteps => RunStatus::Completed,
        ExitReason::Cancelled => RunStatus::Cancelled,
        _ => RunStatus::Failed,
    };
    record.state = None;
    record.result = Some(json!({
        "exit": result.exit(),
        "text": result.text,
        "output": result.output,
        "usage": result.tree_usage,
    }));
    record
}
