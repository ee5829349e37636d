//! Progress reports from running tools: [`ProgressReporter`] (what a tool
//! holds), the loop's bounded queue, and [`ProgressReceiver`] for calling a
//! tool directly.
//!
//! Invariants: reporting never blocks and never grows memory without bound
//! (see [`PROGRESS_BUFFER`]); a report made after its call's result is
//! dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// A progress report from a running tool.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (reporter, mut rx) = loopwright_types::ProgressReporter::channel("c");
/// reporter.report(1.0, Some(4.0), None);
/// let p = rx.try_recv().unwrap();
/// assert_eq!((p.progress, p.total), (1.0, Some(4.0)));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolProgress {
    /// The call reporting.
    pub call_id: String,
    /// Progress so far (increasing).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A human-readable note.
    pub message: Option<String>,
}

/// Progress reports waiting for the loop: bounded, since remote servers feed
/// it at their own pace. When full, a new report replaces the newest one
/// waiting for the same call (progress only moves forward, so the older one
/// says nothing the newer does not), else the oldest waiting report is
/// dropped. Reporting never blocks.
pub const PROGRESS_BUFFER: usize = 64;

#[derive(Debug, Default)]
struct QueueState {
    pending: std::collections::VecDeque<ToolProgress>,
    /// Calls whose result is in: their late reports are dropped.
    finished: std::collections::HashSet<String>,
    /// Reports dropped or replaced because the queue was full.
    dropped: u64,
}

/// Where a batch's reporters put their reports (see [`PROGRESS_BUFFER`]).
#[derive(Debug, Default)]
#[doc(hidden)]
pub struct ProgressQueue {
    state: Mutex<QueueState>,
    notify: Notify,
    /// Reporters alive; a receiver's `recv` ends once none is left.
    reporters: AtomicUsize,
}

impl ProgressQueue {
    fn push(&self, report: ToolProgress) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if state.finished.contains(&report.call_id) {
            return;
        }
        if state.pending.len() >= PROGRESS_BUFFER {
            state.dropped += 1;
            if let Some(same) = state
                .pending
                .iter_mut()
                .rev()
                .find(|p| p.call_id == report.call_id)
            {
                *same = report;
                return;
            }
            state.pending.pop_front();
        }
        state.pending.push_back(report);
        drop(state);
        self.notify.notify_one();
    }

    /// Every report waiting, oldest first.
    pub fn drain(&self) -> Vec<ToolProgress> {
        self.state
            .lock()
            .map(|mut s| s.pending.drain(..).collect())
            .unwrap_or_default()
    }

    /// Drop later reports of this call (its result is in).
    pub fn finish(&self, call_id: &str) {
        if let Ok(mut state) = self.state.lock() {
            state.pending.retain(|p| p.call_id != call_id);
            state.finished.insert(call_id.to_owned());
        }
    }

    /// Resolves when a report may be waiting.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }

    fn pop(&self) -> Option<ToolProgress> {
        self.state.lock().ok().and_then(|mut s| s.pending.pop_front())
    }
}

/// Sends a tool's progress reports to the agent loop. Reporting never blocks
/// and memory stays bounded (see [`PROGRESS_BUFFER`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (reporter, mut rx) = loopwright_types::ProgressReporter::channel("c1");
/// reporter.report(1.0, Some(3.0), Some("one of three".into()));
/// let p = rx.recv().await.unwrap();
/// assert_eq!((p.call_id.as_str(), p.progress), ("c1", 1.0));
/// # }
/// ```
#[derive(Debug)]
pub struct ProgressReporter {
    call_id: String,
    sink: Option<Arc<ProgressQueue>>,
}

impl Clone for ProgressReporter {
    fn clone(&self) -> Self {
        match &self.sink {
            Some(queue) => Self::to_queue(self.call_id.clone(), queue.clone()),
            None => Self::discard(self.call_id.clone()),
        }
    }
}

impl ProgressReporter {
    /// A reporter that discards reports.
    ///
    /// ```
    /// loopwright_types::ProgressReporter::discard("c").report(1.0, None, None);
    /// ```
    pub fn discard(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            sink: None,
        }
    }

    /// A reporter and the receiver of its reports (for calling a tool
    /// directly and watching its progress).
    ///
    /// ```
    /// let (_reporter, _rx) = loopwright_types::ProgressReporter::channel("c");
    /// ```
    pub fn channel(call_id: impl Into<String>) -> (Self, ProgressReceiver) {
        let queue = Arc::new(ProgressQueue::default());
        (Self::to_queue(call_id, queue.clone()), ProgressReceiver { queue })
    }

    #[doc(hidden)]
    pub fn to_queue(call_id: impl Into<String>, queue: Arc<ProgressQueue>) -> Self {
        queue.reporters.fetch_add(1, Ordering::SeqCst);
        Self {
            call_id: call_id.into(),
            sink: Some(queue),
        }
    }

    /// Report progress. Reports after the call ended are dropped.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sink) = &self.sink {
            sink.push(ToolProgress {
                call_id: self.call_id.clone(),
                progress,
                total,
                message,
            });
        }
    }
}

impl Drop for ProgressReporter {
    fn drop(&mut self) {
        // Counted out before the wake-up, so the receiver it wakes sees
        // whether any reporter is left.
        if let Some(sink) = &self.sink {
            sink.reporters.fetch_sub(1, Ordering::SeqCst);
            sink.notify.notify_one();
        }
    }
}

/// Receives the reports of the reporters made by [`ProgressReporter::channel`].
#[derive(Debug)]
pub struct ProgressReceiver {
    queue: Arc<ProgressQueue>,
}

impl ProgressReceiver {
    /// The oldest report waiting, if any.
    pub fn try_recv(&mut self) -> Option<ToolProgress> {
        self.queue.pop()
    }

    /// The next report; `None` once no report is waiting and every reporter
    /// is gone.
    pub async fn recv(&mut self) -> Option<ToolProgress> {
        loop {
            if let Some(p) = self.queue.pop() {
                return Some(p);
            }
            if self.queue.reporters.load(Ordering::SeqCst) == 0 {
                // A report made just before the last reporter went.
                return self.queue.pop();
            }
            self.queue.notified().await;
        }
    }

    /// Reports dropped or replaced because the buffer was full.
    pub fn dropped(&self) -> u64 {
        self.queue.state.lock().map(|s| s.dropped).unwrap_or(0)
    }
}
