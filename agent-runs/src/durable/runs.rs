//! A durable run's record, as the requests and the workflow keep it: started
//! through Restate's ingress, claimed by each execution, marked while it
//! waits for a decision, decided and cancelled through Restate.
//!
//! Invariants: each change is a compare-and-set of the record, read again on
//! a conflict; an execution's events continue the log where the last one
//! stopped (its sequence numbers are read from the log, not the record); a
//! decision is refused (409, naming the call) unless the call waits for one
//! and has none yet, and a decision recorded is sent to Restate before the
//! request answers.

use std::sync::Arc;
use std::time::Duration;

use loopwright_core::durable::DecisionKey;
use loopwright_core::{ApprovalDecision, Message};
use loopwright_store::{RunRecord, RunStatus, Store, StoreError};
use restate_sdk::prelude::HandlerError;
use serde_json::Value;

use super::Client;
use super::workflow::RunInput;
use crate::record::{Decided, DurableInfo, DurablePending, Envelope, error_value};
use crate::{Decision, Runs, RunsError};

/// Compare-and-set attempts of one change.
const CAS_ATTEMPTS: usize = 16;

/// Events read at once while scanning a run's log.
const PAGE: usize = 1000;

/// How long an execution waits for its `approval_requested` event to be
/// stored before it marks the run awaiting approval anyway.
const REQUESTED_PATIENCE: Duration = Duration::from_secs(2);

/// The pause between reads of the log while it waits.
const REQUESTED_POLL: Duration = Duration::from_millis(20);

/// Start the workflow of run `record` (stored already) on `messages`.
pub(crate) async fn submit(
    runs: &Arc<Runs>,
    client: &Client,
    record: RunRecord,
    envelope: Envelope,
    messages: Vec<Message>,
) -> Result<RunRecord, RunsError> {
    let id = record.id.clone();
    // Written straight into the request's body: no JSON tree of the
    // conversation in between.
    match client.start(&id, &RunInput { messages }).await {
        Ok(invocation) => {
            let updated = change(&runs.store, &id, |_, envelope| {
                envelope.durable.get_or_insert_default().invocation = Some(invocation.clone());
                true
            })
            .await;
            Ok(updated.ok().flatten().unwrap_or(record))
        }
        Err(e) => {
            let mut failed = record.clone();
            failed.status = RunStatus::Failed;
            failed.error = Some(error_value("restate_unavailable", &e.to_string()));
            failed.state = Some(envelope.to_value());
            if let Err(e) = runs.store.update_run(&failed, record.version).await {
                tracing::warn!(run = %id, error = %e, "a run Restate did not take could not be recorded failed");
            }
            Err(RunsError::EngineUnavailable {
                message: format!("the durable run could not be started: {e}"),
            })
        }
    }
}

/// Change run `id`'s record by `edit` (which says whether to write),
/// compare-and-set, again on conflicts: the record written, `None` when
/// `edit` declined or the run is gone.
async fn change(
    store: &Arc<dyn Store>,
    id: &str,
    mut edit: impl FnMut(&mut RunRecord, &mut Envelope) -> bool,
) -> Result<Option<RunRecord>, StoreError> {
    for _ in 0..CAS_ATTEMPTS {
        let Some(mut record) = store.load_run(id).await? else {
            return Ok(None);
        };
        let mut envelope = match Envelope::of(&record) {
            Ok(envelope) => envelope,
            Err(e) => {
                // Not ours to rewrite: left as it is.
                tracing::warn!(run = %id, error = %e, "a durable run's record could not be read");
                return Ok(None);
            }
        };
        if !edit(&mut record, &mut envelope) {
            return Ok(None);
        }
        record.state = Some(envelope.to_value());
        match store.update_run(&record, record.version).await {
            Ok(version) => {
                record.version = version;
                return Ok(Some(record));
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::conflict(format!("run {id}"), "it kept changing"))
}

/// An execution's claim on its run.
pub(crate) struct Execution {
    pub(crate) record: RunRecord,
    pub(crate) envelope: Envelope,
    pub(crate) attempt: u32,
}

/// Claim run `id` for an execution: its attempt counted, this replica its
/// owner, the next event's number read from the log. `None`: the run ended.
pub(crate) async fn begin(runs: &Runs, id: &str) -> Result<Option<Execution>, HandlerError> {
    let next_seq = end_of_log(&runs.store, id).await.map_err(HandlerError::from)?;
    let replica = runs.replica.clone();
    let mut ended = false;
    let claimed = change(&runs.store, id, |record, envelope| {
        if record.status.is_finished() {
            ended = true;
            return false;
        }
        envelope.next_seq = envelope.next_seq.max(next_seq);
        let durable = envelope.durable.get_or_insert_default();
        durable.attempts += 1;
        durable.from_seq = envelope.next_seq;
        if record.status != RunStatus::AwaitingApproval {
            record.status = RunStatus::Running;
        }
        record.owner = Some(replica.clone());
        true
    })
    .await
    .map_err(HandlerError::from)?;
    match claimed {
        Some(record) => {
            let envelope = Envelope::of(&record).map_err(HandlerError::from)?;
            let attempt = envelope.durable.as_ref().map_or(1, |d| d.attempts);
            Ok(Some(Execution {
                record,
                envelope,
                attempt,
            }))
        }
        None if ended => Ok(None),
        // Not stored yet (the request that stores it is still going) or
        // deleted: Restate tries again.
        None => Err(HandlerError::from(format!("run {id} has no record"))),
    }
}

/// The sequence number after the last event of `id`'s log.
async fn end_of_log(store: &Arc<dyn Store>, id: &str) -> Result<u64, StoreError> {
    let mut next: u64 = 0;
    loop {
        let after = next.checked_sub(1);
        let page = store.read_events(id, after, PAGE).await?;
        let Some((last, _)) = page.last() else {
            return Ok(next);
        };
        next = last + 1;
        if page.len() < PAGE {
            return Ok(next);
        }
    }
}

/// The calls of run `id` its log shows waiting for a decision (from event
/// `from` on: the current execution's): asked for, not resolved yet, with
/// the step each was asked in (as the log tells it; the record's word
/// is the execution's own, see [`mark_awaiting`]).
async fn requested(store: &Arc<dyn Store>, id: &str, from: u64) -> Result<Vec<DurablePending>, StoreError> {
    let mut pending: Vec<DurablePending> = Vec::new();
    let mut step = 0;
    let mut after = from.checked_sub(1);
    loop {
        let page = store.read_events(id, after, PAGE).await?;
        for (_, event) in &page {
            let text = |key: &str| {
                event
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match event.get("type").and_then(Value::as_str) {
                Some("step_started") => {
                    step = event
                        .get("step")
                        .and_then(Value::as_u64)
                        .and_then(|s| u32::try_from(s).ok())
                        .unwrap_or(step);
                }
                Some("approval_requested") => {
                    let call_id = text("call_id");
                    pending.retain(|p| p.call_id != call_id);
                    pending.push(DurablePending {
                        step,
                        call_id,
                        tool: text("tool"),
                        arguments: event.get("input").cloned().unwrap_or_default(),
                    });
                }
                Some("approval_resolved") => {
                    let call_id = text("call_id");
                    pending.retain(|p| p.call_id != call_id);
                }
                _ => {}
            }
        }
        match page.last() {
            Some((last, _)) if page.len() == PAGE => after = Some(*last),
            _ => return Ok(pending),
        }
    }
}

/// The execution waits for decision `key`: once its request is in the log
/// (or after [`REQUESTED_PATIENCE`]), the run is recorded awaiting
/// approval, with every call waiting.
pub(crate) async fn mark_awaiting(runs: &Runs, id: &str, from: u64, key: &DecisionKey, request: &Value) {
    let deadline = tokio::time::Instant::now() + REQUESTED_PATIENCE;
    let mut waiting = Vec::new();
    loop {
        if let Ok(found) = requested(&runs.store, id, from).await {
            waiting = found;
        }
        if waiting.iter().any(|p| p.call_id == key.call_id()) || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(REQUESTED_POLL).await;
    }
    // The calls waiting now are the current step's batch: the step is the
    // loop's own number, whatever the log said (a replayed step's
    // `step_started` may never have been stored).
    for pending in &mut waiting {
        pending.step = key.step();
    }
    if !waiting.iter().any(|p| p.call_id == key.call_id()) {
        waiting.push(DurablePending {
            step: key.step(),
            call_id: key.call_id().to_owned(),
            tool: request
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            arguments: request.get("input").cloned().unwrap_or_default(),
        });
    }
    let marked = change(&runs.store, id, |record, envelope| {
        if record.status != RunStatus::Running {
            return false;
        }
        record.status = RunStatus::AwaitingApproval;
        envelope.durable.get_or_insert_default().pending = waiting.clone();
        true
    })
    .await;
    if let Err(e) = marked {
        tracing::warn!(run = %id, error = %e, "the durable run could not be recorded awaiting approval");
    }
}

/// The execution has its decision: the run is recorded running again.
pub(crate) async fn mark_running(runs: &Runs, id: &str) {
    let marked = change(&runs.store, id, |record, envelope| {
        if record.status != RunStatus::AwaitingApproval {
            return false;
        }
        record.status = RunStatus::Running;
        envelope.durable.get_or_insert_default().pending.clear();
        true
    })
    .await;
    if let Err(e) = marked {
        tracing::warn!(run = %id, error = %e, "the durable run could not be recorded running");
    }
}

impl Runs {
    /// Decide calls of durable run `record`: each recorded once, then
    /// resolved in Restate.
    pub(crate) async fn decide_durable(
        &self,
        record: RunRecord,
        decisions: &[Decision],
    ) -> Result<RunRecord, RunsError> {
        let id = record.id.clone();
        let Some(client) = &self.restate else {
            return Err(not_durable_here(&id));
        };
        if decisions.is_empty() {
            return Err(RunsError::invalid("decisions is empty"));
        }
        if record.status.is_finished() {
            return Err(RunsError::conflict(format!(
                "run {id} is {}: it has no pending approvals",
                record.status
            )));
        }
        let envelope = Envelope::of(&record).map_err(RunsError::damaged)?;
        let durable = envelope.durable.clone().unwrap_or_default();
        let store_error = |e: StoreError| RunsError::store(format!("run {id}"), e);
        // What the execution marked (its own step numbers), then what its
        // log asks for that it has not marked yet (the same step's batch).
        let mut waiting = durable.pending.clone();
        for asked in requested(&self.store, &id, durable.from_seq)
            .await
            .map_err(store_error)?
        {
            if !waiting.iter().any(|p| p.call_id == asked.call_id) {
                let step = waiting.first().map_or(asked.step, |p| p.step);
                waiting.push(DurablePending { step, ..asked });
            }
        }
        let mut chosen: Vec<(DurablePending, Decided)> = Vec::new();
        for decision in decisions {
            let Some(call) = waiting.iter().find(|p| p.call_id == decision.call_id) else {
                let names: Vec<&str> = waiting.iter().map(|p| p.call_id.as_str()).collect();
                let names = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                };
                return Err(RunsError::conflict(format!(
                    "call {} is not pending in run {id} (pending: {names})",
                    decision.call_id
                )));
            };
            if chosen.iter().any(|(p, _)| p.call_id == call.call_id) {
                return Err(RunsError::invalid(format!(
                    "call {} is decided twice in this request",
                    call.call_id
                )));
            }
            chosen.push((call.clone(), decision.decided(&call.call_id, "")?));
        }
        // Recorded once; the same decision again is sent again (a request
        // whose answer was lost is retried), a different one is refused.
        let mut refused: Option<String> = None;
        let updated = change(&self.store, &id, |record, envelope| {
            if record.status.is_finished() {
                refused = Some(format!("run {id} has already ended ({})", record.status));
                return false;
            }
            for (_, decided) in &chosen {
                match envelope.decisions.iter().find(|d| d.call_id == decided.call_id) {
                    Some(earlier) if earlier != decided => {
                        refused = Some(format!(
                            "call {} of run {id} was already decided",
                            decided.call_id
                        ));
                        return false;
                    }
                    Some(_) => {}
                    None => envelope.decisions.push(decided.clone()),
                }
            }
            true
        })
        .await
        .map_err(store_error)?;
        if let Some(message) = refused {
            return Err(RunsError::conflict(message));
        }
        let record = updated.unwrap_or(record);
        for (call, decided) in &chosen {
            let key = DecisionKey::approval(call.step, call.call_id.clone()).to_string();
            let decision: ApprovalDecision = decided.decision();
            let value = serde_json::to_value(&decision).unwrap_or_default();
            if let Err(e) = client.decide(&id, &key, &value).await {
                return Err(RunsError::EngineUnavailable {
                    message: format!("{e} (the decision is recorded: send it again)"),
                });
            }
        }
        Ok(record)
    }

    /// `record`, or, when it is a durable run recorded running that has
    /// written nothing for a whole lease and Restate no longer executes it
    /// (its invocation was killed, or ended without the run's record), the
    /// record of its failure. A run Restate still retries (every replica
    /// down, the store down) stays running.
    pub(crate) async fn settle_durable(&self, record: RunRecord) -> Result<RunRecord, StoreError> {
        let Some(client) = &self.restate else {
            return Ok(record);
        };
        let durable = Envelope::of(&record).is_ok_and(|e| e.durable.is_some());
        if !durable || !self.lease.expired(&record, crate::lease::now_millis()) {
            return Ok(record);
        }
        let status = match client.invocation_status(&record.id).await {
            Ok(status) => status,
            // Restate is not answering: nothing can be said yet.
            Err(_) => return Ok(record),
        };
        if !matches!(status.as_deref(), None | Some("completed")) {
            return Ok(record);
        }
        let message = format!(
            "Restate no longer executes this run's workflow ({}) and its record was not ended: \
             it was killed or cancelled in Restate, or its retries ran out; start the run again",
            status.as_deref().unwrap_or("no invocation")
        );
        tracing::warn!(run = %record.id, "a durable run's workflow ended without it; the run is recorded failed");
        crate::lease::fail(&self.store, record, "restate_invocation_ended", &message).await
    }

    /// Cancel durable run `id` in Restate too, so a run suspended while it
    /// waits for a decision wakes up and ends.
    pub(crate) async fn cancel_durable(&self, id: &str, durable: &DurableInfo) {
        let Some(client) = &self.restate else {
            return;
        };
        let invocation = match &durable.invocation {
            Some(invocation) => Some(invocation.clone()),
            None => client.invocation_of(id).await.ok().flatten(),
        };
        let Some(invocation) = invocation else {
            tracing::warn!(run = %id, "Restate has no invocation of this run to cancel; it ends at its next step");
            return;
        };
        if let Err(e) = client.cancel(&invocation).await {
            tracing::warn!(run = %id, error = %e, "Restate did not take the cancellation; the run still ends at its next step");
        }
    }
}

fn not_durable_here(id: &str) -> RunsError {
    RunsError::conflict(format!(
        "run {id} is a durable run: decide it through a replica started with Restate (--restate-admin)"
    ))
}
