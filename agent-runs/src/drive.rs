//! Driving one background run in this process: wait for a permit, start
//! (or resume) the agent, write its events to the store's event log as they
//! come, and record how it ended.
//!
//! Invariants:
//! - only the driver of a run writes its events, numbered from the
//!   envelope's `next_seq` without gaps; events ready together are one
//!   append (one transaction);
//! - the record is written before the `finished` event, so a client that
//!   read `finished` and then asks for the run sees it ended; a run that
//!   pauses writes its `awaiting_approval` event and no `finished`;
//! - the permit is held from the run's start until its record is written,
//!   and no longer: waiting for a store that is down does not hold it;
//! - while it drives a run, a [`Watch`] keeps the run's lease and
//!   cancels the run when its record asks to (see [`super::lease`]);
//! - an event append that still fails after [`EVENT_WRITE_ATTEMPTS`] tries
//!   cancels the run, which ends `failed` naming the store's error; its
//!   record is written once the store is back (retried for
//!   [`FINAL_WRITE_PATIENCE`]); a durable run's execution is abandoned
//!   instead (its engine retries it, and it goes on where its journal ends).

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use loopwright_core::{AgentEvent, AgentResult, AgentRun, ExitReason, Message, RunState};
use loopwright_store::{RunRecord, RunStatus, Store, StoreError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::lease::Watch;
use super::record::{Decided, Envelope, error_value, failure, result_value};
use super::{Host, Runs, Ticket};

/// Tries of one event append before the run is given up.
pub(crate) const EVENT_WRITE_ATTEMPTS: u32 = 4;

/// The first pause between tries of a store write; it doubles each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest pause between tries.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How long the final record of a run is retried while the store is down.
pub(crate) const FINAL_WRITE_PATIENCE: Duration = Duration::from_secs(600);

/// The most events one append writes.
const MAX_BATCH: usize = 256;

/// How a run begins on this replica.
pub(crate) enum Begin {
    /// A new run on these messages (history, then the turn's input).
    Fresh(Vec<Message>),
    /// A paused run, with every pending call decided.
    Resume(Box<RunState>, Vec<Decided>),
}

/// A run this replica drives, from its permit to its record.
pub(crate) struct Driver {
    pub(crate) runs: Arc<Runs>,
    /// The agents and the limit it runs under.
    pub(crate) host: Arc<dyn Host>,
    pub(crate) record: RunRecord,
    pub(crate) envelope: Envelope,
    pub(crate) token: CancellationToken,
    /// What keeping the conversation said (once kept).
    pub(crate) warnings: Option<Vec<String>>,
    /// The engine journaling the run (a durable run's execution).
    pub(crate) durable: Option<loopwright_core::durable::DurableRun>,
    /// A durable execution's way out when the store is down: cancelled,
    /// the execution is abandoned (nothing recorded; the engine retries it)
    /// instead of the run failing.
    pub(crate) abandoned: Option<CancellationToken>,
}

/// How the run ended, for its record.
struct End {
    status: RunStatus,
    result: Option<Value>,
    error: Option<Value>,
    /// The `finished` event to write after the record (none when paused).
    finished: Option<Value>,
    paused: Option<Value>,
    /// The run's result, for what keeps its conversation.
    outcome: Option<AgentResult>,
    /// The turn's own input (the run's input after the history it
    /// continues), when its conversation is kept.
    turn: Vec<Message>,
}

impl End {
    fn failed(kind: &str, message: String) -> Self {
        Self {
            status: RunStatus::Failed,
            result: None,
            error: Some(error_value(kind, &message)),
            finished: None,
            paused: None,
            outcome: None,
            turn: Vec::new(),
        }
    }
}

impl Driver {
    /// Run to the end (or the pause) and record it.
    pub(crate) async fn drive(mut self, ticket: Ticket, begin: Begin) {
        let _watch = Watch::spawn(
            self.runs.store.clone(),
            self.record.id.clone(),
            self.token.clone(),
            self.runs.lease,
        );
        let permit = tokio::select! {
            permit = ticket.redeem() => permit,
            () = self.token.cancelled() => None,
        };
        let end = match permit {
            // A durable execution that cannot start here (the replica is
            // stopping) is continued by another one.
            None if !self.token.is_cancelled() && self.abandoned.is_some() => {
                if let Some(abandoned) = &self.abandoned {
                    abandoned.cancel();
                }
                return;
            }
            None if self.token.is_cancelled() => End {
                status: RunStatus::Cancelled,
                ..End::failed("cancelled", "the run was cancelled before it started".into())
            },
            None => End::failed(
                "shutdown",
                "the server shut down before the run started; start it again".into(),
            ),
            Some(permit) => {
                let mut end = self.run(begin).await;
                // The record is written with the permit held, within the
                // shutdown's drain, unless the store is down.
                let end = match self.try_record(&mut end).await {
                    Ok(()) => {
                        drop(permit);
                        self.after_record(&end).await;
                        return;
                    }
                    Err(_) => end,
                };
                drop(permit);
                end
            }
        };
        self.record_patiently(end).await;
    }

    /// Start or resume the agent and pump its events to the log.
    async fn run(&mut self, begin: Begin) -> End {
        let Some(agent) = self.host.agent(&self.record.agent) else {
            return End::failed(
                "unknown_agent",
                format!("agent {:?} is not served by this replica", self.record.agent),
            );
        };
        let options = self.envelope.options.clone();
        let mut builder = agent.to_builder();
        if let Some(label) = &options.model {
            let Some(model) = self.host.model(label) else {
                return End::failed(
                    "unknown_model",
                    format!("model {label:?} is not offered by this replica"),
                );
            };
            builder = builder.model(model);
        }
        let durable = self.durable.take();
        let agent = builder
            .cancellation(self.token.clone())
            .configure(|o| {
                *o = options.apply_for_background(std::mem::take(o));
                if durable.is_some() {
                    o.durable = durable;
                }
            })
            .client_tools(options.client_tools.iter().cloned())
            .build();
        // Only the turn's own input is kept beside the run (the run has its
        // input; the history before the turn is stored already).
        let keep = &self.envelope.keep;
        let kept = keep.session.is_some() || keep.chain.is_some();
        let turn_of = |input: &[Message]| match input.get(keep.turn_from..) {
            Some(turn) if kept => turn.to_vec(),
            _ => Vec::new(),
        };
        let (run, turn) = match begin {
            Begin::Fresh(messages) => {
                let turn = turn_of(&messages);
                (agent.run(messages), turn)
            }
            Begin::Resume(state, decided) => {
                let turn = turn_of(state.messages.get(..state.input_len).unwrap_or_default());
                let mut resume = agent.resume(*state);
                for decided in &decided {
                    resume = resume.decide_at(&decided.agent_path, &decided.call_id, decided.decision());
                }
                match resume.run().await {
                    Ok(run) => (run, turn),
                    Err(e) => return End::failed("resume", format!("the run could not continue: {e}")),
                }
            }
        };
        let mut end = self.pump(run).await;
        end.turn = turn;
        end
    }

    /// Write the run's events as they come; the run's end.
    async fn pump(&mut self, mut run: AgentRun) -> End {
        let store = self.runs.store.clone();
        let mut finished: Option<Value> = None;
        let mut store_failure: Option<String> = None;
        while let Some(first) = run.next().await {
            let mut batch = Vec::new();
            let mut next = Some(first);
            while let Some(event) = next {
                if let AgentEvent::Finished { exit, .. } = &event {
                    if *exit != ExitReason::AwaitingApproval {
                        finished = serde_json::to_value(&event).ok();
                    }
                } else if let Ok(value) = serde_json::to_value(&event) {
                    batch.push(value);
                }
                if batch.len() >= MAX_BATCH {
                    break;
                }
                next = run.next().now_or_never().flatten();
            }
            if batch.is_empty() || store_failure.is_some() {
                continue;
            }
            if let Err(e) = self.append(&store, batch).await {
                if let Some(abandoned) = &self.abandoned {
                    tracing::warn!(run = %self.record.id, error = %e, "the run's events could not be stored (the store is unavailable): this execution of the durable run stops, and Restate retries it");
                    abandoned.cancel();
                    // The workflow's handler drops this task.
                    return std::future::pending().await;
                }
                store_failure = Some(format!("the run's events could not be stored: {e}"));
                self.token.cancel();
            }
        }
        let result = match run.await.or_else(loopwright_core::RunError::into_result) {
            Ok(result) => result,
            Err(aborted) => {
                return End::failed("aborted", format!("the run stopped without a result: {aborted}"));
            }
        };
        if let Some(message) = store_failure {
            return End {
                outcome: Some(result),
                ..End::failed("store_unavailable", message)
            };
        }
        self.end_of(result, finished)
    }

    fn end_of(&self, result: AgentResult, finished: Option<Value>) -> End {
        let shutdown = self.host.hard_stop().is_cancelled();
        let mut end = End {
            status: RunStatus::Completed,
            result: Some(result_value(&result)),
            error: None,
            finished,
            paused: None,
            outcome: None,
            turn: Vec::new(),
        };
        match result.exit() {
            ExitReason::AwaitingApproval => {
                end.status = RunStatus::AwaitingApproval;
                end.result = None;
                end.finished = None;
                end.paused = result.state().and_then(|s| serde_json::to_value(s).ok());
            }
            ExitReason::Cancelled if shutdown => {
                end.status = RunStatus::Failed;
                end.error = Some(error_value(
                    "shutdown",
                    "the server shut down while the run was in flight; start it again",
                ));
            }
            ExitReason::Cancelled => end.status = RunStatus::Cancelled,
            _ => {
                if let Some(message) = failure(&result) {
                    end.status = RunStatus::Failed;
                    // A guardrail's stop is a failure of its own kind.
                    let kind = if result.exit() == ExitReason::Tripped {
                        "tripped"
                    } else {
                        "run_failed"
                    };
                    end.error = Some(error_value(kind, &message));
                }
            }
        }
        end.outcome = Some(result);
        end
    }

    /// Append events at the next sequence numbers, retrying a store that
    /// is briefly unavailable.
    async fn append(&mut self, store: &Arc<dyn Store>, batch: Vec<Value>) -> Result<(), StoreError> {
        let first = self.envelope.next_seq;
        let numbered: Vec<(u64, Value)> = (first..).zip(batch).collect();
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            match store.append_events(&self.record.id, &numbered).await {
                Ok(()) => {
                    self.envelope.next_seq = first + numbered.len() as u64;
                    return Ok(());
                }
                Err(e) if e.is_unavailable() && attempt < EVENT_WRITE_ATTEMPTS => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The record of `end`, written once (a cancel request that moved the
    /// record's version meanwhile is read and written over).
    async fn try_record(&mut self, end: &mut End) -> Result<(), StoreError> {
        let store = self.runs.store.clone();
        if self.warnings.is_none() {
            let warnings = match &mut end.outcome {
                Some(result) if end.status == RunStatus::Completed => {
                    // Moved, not copied: the turn's input, then the answer.
                    let mut turn = std::mem::take(&mut end.turn);
                    turn.append(&mut result.messages);
                    self.keep_conversation(&store, &turn).await
                }
                _ => Vec::new(),
            };
            self.warnings = Some(warnings);
        }
        loop {
            let mut record = self.record.clone();
            record.status = end.status;
            record.result = end.result.clone();
            if let (Some(Value::Object(result)), Some(warnings)) = (&mut record.result, &self.warnings)
                && !warnings.is_empty()
            {
                result.insert("warnings".into(), serde_json::json!(warnings));
            }
            record.error = end.error.clone();
            record.owner = None;
            let mut envelope = self.envelope.clone();
            envelope.paused = end.paused.clone();
            envelope.decisions.clear();
            envelope.cancel_requested = false;
            record.state = Some(envelope.to_value());
            match store.update_run(&record, self.record.version).await {
                Ok(version) => {
                    record.version = version;
                    self.record = record;
                    return Ok(());
                }
                Err(e) if e.is_conflict() => match store.load_run(&self.record.id).await? {
                    // Ended elsewhere (its lease expired): that record stands.
                    Some(newer) if newer.status.is_finished() => {
                        self.record = newer;
                        return Ok(());
                    }
                    Some(newer) => self.record.version = newer.version,
                    None => return Ok(()),
                },
                Err(e) => return Err(e),
            }
        }
    }

    /// After the record: the `finished` event.
    async fn after_record(&mut self, end: &End) {
        if self.record.status != end.status {
            // Another replica ended the run (and wrote its `finished`).
            return;
        }
        let Some(finished) = end.finished.clone().or_else(|| finished_event(end)) else {
            return;
        };
        let store = self.runs.store.clone();
        if let Err(e) = self.append(&store, vec![finished]).await {
            tracing::warn!(run = %self.record.id, error = %e, "the run's finished event could not be stored");
        }
    }

    /// Write the record, retrying while the store is down; then the
    /// `finished` event.
    async fn record_patiently(mut self, mut end: End) {
        let deadline = tokio::time::Instant::now() + FINAL_WRITE_PATIENCE;
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self.try_record(&mut end).await {
                Ok(()) => {
                    self.after_record(&end).await;
                    return;
                }
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::warn!(run = %self.record.id, error = %e, "the run's record could not be written; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(e) => {
                    tracing::error!(run = %self.record.id, error = %e, "the run's record could not be written; giving up");
                    return;
                }
            }
        }
    }

    /// Append the completed turn (its own input, then its answer) to its
    /// session, or store it as its chain's turn: what went wrong, as
    /// warnings for the run's result (the answer stands).
    async fn keep_conversation(&self, store: &Arc<dyn Store>, turn: &[Message]) -> Vec<String> {
        let keep = &self.envelope.keep;
        let mut warnings = Vec::new();
        if let Some(session) = &keep.session
            && let Err(e) = store.append_turn(session, keep.session_version, turn).await
        {
            tracing::warn!(run = %self.record.id, %session, error = %e, "the turn was not stored in its session");
            warnings.push(format!("session {session}: this turn was not stored: {e}"));
        }
        if let Some(chain) = &keep.chain
            && let Err(e) = store.put_turn(&chain.id, chain.previous.as_deref(), turn).await
        {
            tracing::warn!(run = %self.record.id, error = %e, "the response's turn was not stored");
            warnings.push(format!(
                "response {}: its conversation was not stored: {e}",
                chain.id
            ));
        }
        warnings
    }
}

/// The `finished` event of a run that ended without one of its own (it
/// failed before or outside the loop, or was cancelled while paused).
fn finished_event(end: &End) -> Option<Value> {
    finished_value(end.status, end.error.as_ref())
}

/// The `finished` event of a run that ended `status` with `error` (none
/// for a paused run).
pub(crate) fn finished_value(status: RunStatus, error: Option<&Value>) -> Option<Value> {
    if status == RunStatus::AwaitingApproval {
        return None;
    }
    let exit = match status {
        RunStatus::Cancelled => ExitReason::Cancelled,
        _ => ExitReason::ModelError,
    };
    let error = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    serde_json::to_value(AgentEvent::Finished {
        exit,
        text: String::new(),
        usage: Default::default(),
        tree_usage: Default::default(),
        steps: 0,
        error,
    })
    .ok()
}
