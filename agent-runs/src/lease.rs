//! The lease of a running run: the replica driving it keeps its record
//! fresh, watches it for a cancel request from another replica, and any
//! replica ends a run whose driver has gone silent for longer than the
//! lease.
//!
//! Invariants:
//! - while this replica drives a run (waiting for its permit included), its
//!   record is rewritten, unchanged but for `updated_at`, at least every
//!   [`Lease::heartbeat`], by compare-and-set: a write that races one of the
//!   driver's own, or a decision, loses and changes nothing;
//! - a run whose record is `running` and was not written for the whole
//!   lease has lost its replica (killed, cut off from the store): the first
//!   replica that reads it records it `failed` (`replica_lost`, naming the
//!   replica and the silence) and appends its `finished` event after the
//!   last one in its log, so its readers and its event stream end;
//! - a driver that finds its run's record ended by someone else (lost, or
//!   cancelled) cancels the run and never writes over that record.
//!
//! Replicas' clocks must agree to well within the lease (NTP does): the
//! record's `updated_at` is stamped by the writer's clock.

use std::sync::Arc;
use std::time::Duration;

use loopwright_store::{RunRecord, RunStatus, Store, StoreError};
use tokio_util::sync::CancellationToken;

use super::record::{Envelope, error_value};

/// How often a driver looks at its run's record for a cancel request.
pub(crate) const CANCEL_POLL: Duration = Duration::from_millis(500);

/// The default lease: how long a replica may go without writing a run it
/// drives before other replicas declare the run lost.
pub const DEFAULT_RUN_LEASE: Duration = Duration::from_secs(60);

/// The shortest lease accepted (the heartbeat is a sixth of it).
pub const MIN_RUN_LEASE: Duration = Duration::from_secs(3);

/// Events read per page while looking for the end of a lost run's log.
const LOG_PAGE: usize = 1024;

/// A run lease's length and the heartbeat it implies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease(Duration);

impl Lease {
    /// A lease of `length`, at least [`MIN_RUN_LEASE`].
    pub(crate) fn new(length: Duration) -> Self {
        Self(length.max(MIN_RUN_LEASE))
    }

    /// How often a driver rewrites its run's record: six heartbeats fit in
    /// a lease, so a store that misses a few does not lose the run.
    pub(crate) fn heartbeat(self) -> Duration {
        self.0 / 6
    }

    /// Whether `record` is a running run whose driver has been silent for
    /// the whole lease, as of `now` (Unix milliseconds).
    pub(crate) fn expired(self, record: &RunRecord, now: i64) -> bool {
        let lease = i64::try_from(self.0.as_millis()).unwrap_or(i64::MAX);
        record.status == RunStatus::Running && now.saturating_sub(record.updated_at) > lease
    }

    /// `record`, or, when its lease expired, the record of its loss (written
    /// by compare-and-set, with its `finished` event appended); a record
    /// someone else changed meanwhile is read again.
    pub(crate) async fn settle(
        self,
        store: &Arc<dyn Store>,
        record: RunRecord,
    ) -> Result<RunRecord, StoreError> {
        // A durable run's engine retries it instead.
        let durable = Envelope::of(&record).is_ok_and(|e| e.durable.is_some());
        if durable || !self.expired(&record, now_millis()) {
            return Ok(record);
        }
        let silent = now_millis().saturating_sub(record.updated_at) / 1000;
        let owner = record.owner.clone().unwrap_or_else(|| "unknown".into());
        let message = format!(
            "the replica running this run ({owner}) stopped: nothing from it for {silent} s (the lease is {} s); \
             what it did after its last event is lost; start the run again",
            self.0.as_secs()
        );
        let lost = fail(store, record, "replica_lost", &message).await?;
        if lost.status == RunStatus::Failed {
            tracing::warn!(run = %lost.id, %owner, silent_s = silent, "a run's replica went silent; the run is recorded failed");
        }
        Ok(lost)
    }
}

/// Record `record` failed with error `kind`/`message` (by compare-and-set,
/// its `finished` event appended); a record someone else changed meanwhile
/// is read again and returned as it is.
pub(crate) async fn fail(
    store: &Arc<dyn Store>,
    record: RunRecord,
    kind: &str,
    message: &str,
) -> Result<RunRecord, StoreError> {
    let mut lost = record.clone();
    lost.status = RunStatus::Failed;
    lost.owner = None;
    lost.error = Some(error_value(kind, message));
    if let Ok(mut envelope) = Envelope::of(&record) {
        envelope.cancel_requested = false;
        lost.state = Some(envelope.to_value());
    }
    match store.update_run(&lost, record.version).await {
        Ok(version) => lost.version = version,
        Err(e) if e.is_conflict() => {
            return Ok(store.load_run(&record.id).await?.unwrap_or(record));
        }
        Err(e) => return Err(e),
    }
    let next = next_seq(store, &record.id).await?;
    let finished = super::drive::finished_value(RunStatus::Failed, lost.error.as_ref());
    if let Some(finished) = finished
        && let Err(e) = store.append_events(&record.id, &[(next, finished)]).await
    {
        tracing::warn!(run = %record.id, error = %e, "the lost run's finished event could not be stored");
    }
    Ok(lost)
}

/// The sequence number after the last event in `id`'s log.
async fn next_seq(store: &Arc<dyn Store>, id: &str) -> Result<u64, StoreError> {
    let mut after = None;
    loop {
        let page = store.read_events(id, after, LOG_PAGE).await?;
        match page.last() {
            Some((seq, _)) if page.len() == LOG_PAGE => after = Some(*seq),
            Some((seq, _)) => return Ok(seq + 1),
            None => return Ok(after.map_or(0, |seq| seq + 1)),
        }
    }
}

/// While a driver runs: cancels its run when the record asks (a cancel
/// from another replica) or says it ended elsewhere, and keeps the record
/// fresh; stops when dropped.
pub(crate) struct Watch(tokio::task::JoinHandle<()>);

impl Watch {
    /// Watch run `id`, cancelling `token`.
    pub(crate) fn spawn(store: Arc<dyn Store>, id: String, token: CancellationToken, lease: Lease) -> Self {
        Self(tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(CANCEL_POLL) => {}
                    () = token.cancelled() => return,
                }
                let Ok(Some(record)) = store.load_run(&id).await else {
                    continue;
                };
                let cancel_requested = Envelope::of(&record).is_ok_and(|e| e.cancel_requested);
                if cancel_requested || record.status.is_finished() {
                    token.cancel();
                    return;
                }
                let age = now_millis().saturating_sub(record.updated_at);
                let heartbeat = i64::try_from(lease.heartbeat().as_millis()).unwrap_or(i64::MAX);
                if record.status == RunStatus::Running && age >= heartbeat {
                    // Unchanged but for `updated_at`; a lost race is fine:
                    // whoever won wrote the record just now.
                    if let Err(e) = store.update_run(&record, record.version).await
                        && !e.is_conflict()
                    {
                        tracing::debug!(run = %id, error = %e, "the run's lease could not be renewed");
                    }
                }
            }
        }))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Now, in Unix milliseconds (the stores' clock).
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
