//! Retention: every replica deletes, now and then, the runs (stored
//! responses included) whose record was last written longer ago than the
//! retention, with their event logs, and the chains' turns (responses'
//! conversations) stored longer ago, once no later turn reads them.
//!
//! Invariants:
//! - a running run is never deleted (the store's `expire_runs` leaves it;
//!   its lease keeps its record fresh anyway); a run awaiting approval
//!   that nobody decided within the retention is;
//! - any number of replicas sweep one store at once, each row deleted
//!   once (the store's deletions by age are safe so);
//! - a sweep that fails (the store down) is logged and tried again at the
//!   next interval; nothing else waits for it.

use std::sync::Arc;
use std::time::Duration;

use loopwright_store::{Store, StoreError};
use tokio_util::sync::CancellationToken;

use crate::Runs;
use crate::lease::now_millis;

/// How long stored responses and runs are kept when not configured, as
/// OpenAI keeps responses: 30 days after their last write.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The shortest retention accepted: a run's record is written (ended)
/// before its last event, and a retention shorter than that moment could
/// delete the run between the two.
pub const MIN_RETENTION: Duration = Duration::from_secs(1);

/// Runs deleted per store transaction.
const BATCH: usize = 256;

/// The longest pause between two sweeps.
const MAX_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// The shortest pause between two sweeps.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// How often a replica sweeps with `retention`: a tenth of it, from
/// [`MIN_INTERVAL`] to [`MAX_INTERVAL`] (hourly with the default), so what
/// expired is gone within a tenth of the retention, or an hour.
pub(crate) fn interval(retention: Duration) -> Duration {
    (retention / 10).clamp(MIN_INTERVAL, MAX_INTERVAL)
}

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Swept {
    pub(crate) runs: u64,
    pub(crate) turns: u64,
}

/// Delete what `store` has kept longer than `retention`.
pub(crate) async fn sweep(store: &Arc<dyn Store>, retention: Duration) -> Result<Swept, StoreError> {
    let age = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    let cutoff = now_millis().saturating_sub(age);
    let mut swept = Swept::default();
    loop {
        let runs = store.expire_runs(cutoff, BATCH).await?;
        swept.runs += runs;
        if runs < BATCH as u64 {
            break;
        }
    }
    swept.turns = store.expire_turns(cutoff).await?;
    Ok(swept)
}

impl Runs {
    /// Delete, now and every tenth of `retention` (at most hourly) until
    /// `stopping`, the runs and chains' turns kept longer than `retention`
    /// (a running run never; any number of replicas at once): the sweeping
    /// task. A sweep that fails is logged and tried again at the next one.
    ///
    /// ```
    /// # async fn demo(runs: loopwright_runs::Runs) {
    /// let stopping = tokio_util::sync::CancellationToken::new();
    /// let sweeper = runs.sweep_expired(loopwright_runs::DEFAULT_RETENTION, stopping.clone());
    /// // ... until the server stops:
    /// stopping.cancel();
    /// if let Err(e) = sweeper.await {
    ///     eprintln!("the sweeper ended: {e}");
    /// }
    /// # }
    /// ```
    pub fn sweep_expired(
        &self,
        retention: Duration,
        stopping: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        spawn(self.store.clone(), retention, stopping)
    }
}

/// Sweep `store` now and every [`interval`] until `stopping`.
fn spawn(
    store: Arc<dyn Store>,
    retention: Duration,
    stopping: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let every = interval(retention);
    tokio::spawn(async move {
        loop {
            match sweep(&store, retention).await {
                Ok(swept) if swept != Swept::default() => tracing::info!(
                    runs = swept.runs,
                    turns = swept.turns,
                    retention_s = retention.as_secs(),
                    "expired runs and responses deleted"
                ),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "expired runs and responses could not be deleted; trying again later")
                }
            }
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = stopping.cancelled() => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn sweeps_come_a_tenth_of_the_retention_apart_within_bounds() {
        assert_eq!(interval(DEFAULT_RETENTION), MAX_INTERVAL);
        assert_eq!(interval(Duration::from_secs(20)), Duration::from_secs(2));
        assert_eq!(interval(MIN_RETENTION), MIN_INTERVAL);
    }
}
