//! Wakes for readers that tail a run's event log: [`EventSubscription`].
//!
//! Invariant: a wake sent after a subscription was made is never lost (each
//! run has a counter in a `watch` channel: a subscriber sees that it moved
//! even when it was not waiting at that moment); wakes may be spurious. The
//! map holds an entry only while someone subscribes to it; entries nobody
//! holds any more go at the next wake of that run, or in a sweep when the map
//! grows.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

/// How often a subscriber re-reads when nothing woke it and the back end
/// cannot tell it about other processes' appends (SQLite), and how long
/// [`wait_for_events`](crate::EventLog::wait_for_events) waits when it could
/// not subscribe.
pub const FALLBACK_POLL: Duration = Duration::from_millis(250);

/// Map size at which entries without subscribers are swept.
const SWEEP_AT: usize = 1024;

/// Per-run wake counters.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    runs: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Notifier {
    pub(crate) fn subscribe(&self, run_id: &str) -> watch::Receiver<u64> {
        let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if runs.len() >= SWEEP_AT {
            runs.retain(|_, sender| sender.receiver_count() > 0);
        }
        match runs.get(run_id) {
            Some(sender) => sender.subscribe(),
            None => {
                let (sender, receiver) = watch::channel(0);
                runs.insert(run_id.to_owned(), sender);
                receiver
            }
        }
    }

    /// Wakes the subscribers of `run_id`.
    pub(crate) fn notify(&self, run_id: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(sender) = runs.get(run_id) {
            if sender.receiver_count() == 0 {
                runs.remove(run_id);
            } else {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// Wakes every subscriber (after a lost notification channel).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn notify_all(&self) {
        let runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for sender in runs.values() {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// A subscription to one run's event log. [`wait`](Self::wait) resolves
/// when events may have been appended since the subscription was made or
/// since the last wait; then read from the last sequence number you have.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// let store = loopwright_store::open("memory:").await?;
/// let mut tail = store.subscribe_events("r1").await?;
/// let mut last = None;
/// loop {
///     for (seq, event) in store.read_events("r1", last, 100).await? {
///         last = Some(seq);
///         if event["type"] == "finished" { return Ok(()) }
///     }
///     tail.wait().await;
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct EventSubscription {
    wakes: watch::Receiver<u64>,
    /// Re-read at least this often (other processes' appends on SQLite).
    poll: Option<Duration>,
}

impl EventSubscription {
    pub(crate) fn new(wakes: watch::Receiver<u64>, poll: Option<Duration>) -> Self {
        Self { wakes, poll }
    }

    /// Resolves at the next wake (or the one that came since the last call),
    /// or after the back end's poll interval.
    pub async fn wait(&mut self) {
        let changed = self.wakes.changed();
        match self.poll {
            Some(poll) => {
                let _ = tokio::time::timeout(poll, changed).await;
            }
            None => {
                if changed.await.is_err() {
                    // The store is gone: nothing will wake this any more.
                    tokio::time::sleep(FALLBACK_POLL).await;
                }
            }
        }
    }
}
