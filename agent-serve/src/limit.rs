//! The concurrency limit of one surface instance: at most `concurrency`
//! runs in flight, the others wait in strict FIFO order.
//!
//! Invariants:
//! - a request gets its permit before its run starts, and keeps it until
//!   the response is done (or the client is gone);
//! - waiting is a tokio [`Semaphore`] acquire, which is fair (FIFO); a
//!   client that disconnects while waiting drops its acquire and leaves the
//!   queue, so its run never starts;
//! - with a queue bound, a request that would wait behind `queue` others is
//!   refused at once ([`Refused::QueueFull`]); once the server is stopping,
//!   waiting requests are refused ([`Refused::Stopping`]);
//! - the gauges `agent_serve_runs_in_flight` and `agent_serve_runs_queued`
//!   (label `instance`) follow every change.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Runs in flight per instance when not configured: enough for a team's
/// clients, few enough that a burst does not exhaust a provider's rate limit.
pub const DEFAULT_CONCURRENCY: usize = 10;

/// Seconds a refused client is told to wait (`Retry-After`): about one
/// short agent run.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Why a request got no permit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue is at its bound.
    QueueFull,
    /// The server is shutting down.
    Stopping,
}

/// One instance's limit.
#[derive(Debug)]
pub(crate) struct Limiter {
    instance: String,
    semaphore: Arc<Semaphore>,
    queue_bound: Option<usize>,
    queued: AtomicUsize,
    in_flight: Arc<AtomicUsize>,
}

/// A run's right to be in flight; dropping it lets the next one in.
#[derive(Debug)]
pub(crate) struct Permit {
    _permit: OwnedSemaphorePermit,
    in_flight: Arc<AtomicUsize>,
    instance: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let now = self.in_flight.fetch_sub(1, Ordering::SeqCst) - 1;
        metrics::gauge!("agent_serve_runs_in_flight", "instance" => self.instance.clone()).set(now as f64);
    }
}

/// Decrements the queue count when the waiter leaves, however it leaves.
struct Waiting<'a>(&'a Limiter);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let now = self.0.queued.fetch_sub(1, Ordering::SeqCst) - 1;
        metrics::gauge!("agent_serve_runs_queued", "instance" => self.0.instance.clone()).set(now as f64);
    }
}

impl Limiter {
    pub(crate) fn new(instance: impl Into<String>, concurrency: usize, queue_bound: Option<usize>) -> Self {
        Self {
            instance: instance.into(),
            semaphore: Arc::new(Semaphore::new(concurrency.max(1))),
            queue_bound,
            queued: AtomicUsize::new(0),
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Wait for a permit, in arrival order.
    pub(crate) async fn acquire(&self, stopping: &CancellationToken) -> Result<Permit, Refused> {
        if stopping.is_cancelled() {
            return Err(Refused::Stopping);
        }
        let permit = match self.semaphore.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if let Some(bound) = self.queue_bound
                    && self.queued.load(Ordering::SeqCst) >= bound
                {
                    return Err(Refused::QueueFull);
                }
                let now = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
                metrics::gauge!("agent_serve_runs_queued", "instance" => self.instance.clone())
                    .set(now as f64);
                let _waiting = Waiting(self);
                tokio::select! {
                    permit = self.semaphore.clone().acquire_owned() => permit.map_err(|_| Refused::Stopping)?,
                    () = stopping.cancelled() => return Err(Refused::Stopping),
                }
            }
        };
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        metrics::gauge!("agent_serve_runs_in_flight", "instance" => self.instance.clone()).set(now as f64);
        Ok(Permit {
            _permit: permit,
            in_flight: self.in_flight.clone(),
            instance: self.instance.clone(),
        })
    }

    /// Runs in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Requests waiting now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[tokio::test]
    async fn permits_go_out_in_arrival_order() {
        let limiter = Arc::new(Limiter::new("t", 1, None));
        let stopping = CancellationToken::new();
        let first = limiter.acquire(&stopping).await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..5 {
            let (l, stopping, order) = (limiter.clone(), stopping.clone(), order.clone());
            waiters.push(tokio::spawn(async move {
                let _permit = l.acquire(&stopping).await.unwrap();
                order.lock().unwrap().push(i);
                tokio::task::yield_now().await;
            }));
            // Each waiter is queued before the next one starts.
            while limiter.queued() < i + 1 {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!((limiter.in_flight(), limiter.queued()), (0, 0));
    }

    #[tokio::test]
    async fn a_waiter_that_leaves_is_out_of_the_queue() {
        let limiter = Limiter::new("t", 1, Some(1));
        let stopping = CancellationToken::new();
        let held = limiter.acquire(&stopping).await.unwrap();
        {
            let waiting = limiter.acquire(&stopping);
            tokio::pin!(waiting);
            assert!(futures::poll!(waiting.as_mut()).is_pending());
            assert_eq!(limiter.queued(), 1);
            // The bound: a second waiter is refused at once.
            assert_eq!(limiter.acquire(&stopping).await.err(), Some(Refused::QueueFull));
        }
        assert_eq!(limiter.queued(), 0);
        drop(held);
        let next = limiter.acquire(&stopping).await.unwrap();
        assert_eq!(limiter.in_flight(), 1);
        drop(next);
    }

    #[tokio::test]
    async fn stopping_refuses_waiters() {
        let limiter = Limiter::new("t", 1, None);
        let stopping = CancellationToken::new();
        let _held = limiter.acquire(&stopping).await.unwrap();
        let waiting = limiter.acquire(&stopping);
        stopping.cancel();
        assert_eq!(waiting.await.err(), Some(Refused::Stopping));
        assert_eq!(limiter.acquire(&stopping).await.err(), Some(Refused::Stopping));
    }
}
