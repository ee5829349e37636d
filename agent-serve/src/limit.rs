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
//!   refused at once ([`Refused::QueueFull`]): the check and the count are
//!   one atomic step, so a burst never queues more than the bound; once the
//!   server is stopping, waiting requests are refused ([`Refused::Stopping`]);
//! - the gauges [`IN_FLIGHT_GAUGE`] and [`QUEUED_GAUGE`] (label `instance`)
//!   follow every change as increments and decrements, so two changes
//!   landing in either order leave the same value.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// Runs in flight per instance when not configured: enough for a team's
/// clients, few enough that a burst does not exhaust a provider's rate limit.
pub const DEFAULT_CONCURRENCY: usize = 10;

/// Requests that may wait per instance when not configured: a burst of a
/// few clients' retries, while what waiting requests hold (each its parsed
/// conversation, bounded by the body and item limits) stays bounded.
pub const DEFAULT_QUEUE: usize = 64;

/// Seconds a refused client is told to wait (`Retry-After`): about one
/// short agent run.
pub const RETRY_AFTER_SECS: u64 = 5;

/// Runs in flight on an instance (gauge, label `instance`).
pub const IN_FLIGHT_GAUGE: &str = "loopwright_serve_runs_in_flight";

/// Requests waiting for a permit on an instance (gauge, label `instance`).
pub const QUEUED_GAUGE: &str = "loopwright_serve_runs_queued";

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
    queued: Arc<AtomicUsize>,
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
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        metrics::gauge!(IN_FLIGHT_GAUGE, "instance" => self.instance.clone()).decrement(1.0);
    }
}

/// A background run's place: its permit, or its place in the queue (left
/// when the ticket is redeemed or dropped).
#[derive(Debug)]
pub(crate) struct Ticket {
    held: Option<Permit>,
    _waiting: Option<QueuePlace>,
}

/// A place in the queue, owned: leaves the count when dropped.
#[derive(Debug)]
struct QueuePlace {
    queued: Arc<AtomicUsize>,
    instance: String,
}

impl Drop for QueuePlace {
    fn drop(&mut self) {
        self.queued.fetch_sub(1, Ordering::SeqCst);
        metrics::gauge!(QUEUED_GAUGE, "instance" => self.instance.clone()).decrement(1.0);
    }
}

impl Limiter {
    pub(crate) fn new(instance: impl Into<String>, concurrency: usize, queue_bound: Option<usize>) -> Self {
        Self {
            instance: instance.into(),
            semaphore: Arc::new(Semaphore::new(concurrency.max(1))),
            queue_bound,
            queued: Arc::new(AtomicUsize::new(0)),
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
                // Check the bound and join the queue in one step: of a
                // burst, exactly as many as fit get in.
                let joined =
                    self.queued
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |queued| {
                            match self.queue_bound {
                                Some(bound) if queued >= bound => None,
                                _ => Some(queued + 1),
                            }
                        });
                if joined.is_err() {
                    return Err(Refused::QueueFull);
                }
                // Leaves the count however the waiter leaves.
                let _waiting = QueuePlace {
                    queued: self.queued.clone(),
                    instance: self.instance.clone(),
                };
                metrics::gauge!(QUEUED_GAUGE, "instance" => self.instance.clone()).increment(1.0);
                tokio::select! {
                    permit = self.semaphore.clone().acquire_owned() => permit.map_err(|_| Refused::Stopping)?,
                    () = stopping.cancelled() => return Err(Refused::Stopping),
                }
            }
        };
        Ok(self.permit(permit))
    }

    /// A place for a run that starts later (a background run): a permit at
    /// once when one is free, else a place in the queue, taken now and
    /// counted in the queue's bound when `bounded` (a new run; a run that
    /// continues after its approvals always gets a place).
    pub(crate) fn ticket(&self, bounded: bool, stopping: &CancellationToken) -> Result<Ticket, Refused> {
        if stopping.is_cancelled() {
            return Err(Refused::Stopping);
        }
        if let Ok(permit) = self.semaphore.clone().try_acquire_owned() {
            return Ok(Ticket {
                held: Some(self.permit(permit)),
                _waiting: None,
            });
        }
        let joined = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |queued| {
                match self.queue_bound {
                    Some(bound) if bounded && queued >= bound => None,
                    _ => Some(queued + 1),
                }
            });
        if joined.is_err() {
            return Err(Refused::QueueFull);
        }
        metrics::gauge!(QUEUED_GAUGE, "instance" => self.instance.clone()).increment(1.0);
        Ok(Ticket {
            held: None,
            _waiting: Some(QueuePlace {
                queued: self.queued.clone(),
                instance: self.instance.clone(),
            }),
        })
    }

    /// The permit of `ticket`: at once, or once the runs before it are done.
    pub(crate) async fn redeem(
        &self,
        mut ticket: Ticket,
        stopping: &CancellationToken,
    ) -> Result<Permit, Refused> {
        if let Some(permit) = ticket.held.take() {
            return Ok(permit);
        }
        let permit = tokio::select! {
            permit = self.semaphore.clone().acquire_owned() => permit.map_err(|_| Refused::Stopping)?,
            () = stopping.cancelled() => return Err(Refused::Stopping),
        };
        drop(ticket);
        Ok(self.permit(permit))
    }

    fn permit(&self, permit: OwnedSemaphorePermit) -> Permit {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        metrics::gauge!(IN_FLIGHT_GAUGE, "instance" => self.instance.clone()).increment(1.0);
        Permit {
            _permit: permit,
            in_flight: self.in_flight.clone(),
            instance: self.instance.clone(),
        }
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
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_queues_exactly_up_to_the_bound() {
        const BURST: usize = 32;
        const BOUND: usize = 3;
        // A check and a count done apart let a second request in about once
        // in a few hundred rounds on 2 cores: enough rounds to catch it.
        const ROUNDS: usize = 1000;
        // Each round a burst released at once by a barrier, so the requests
        // race for the last places in the queue.
        for round in 0..ROUNDS {
            let limiter = Arc::new(Limiter::new("t", 1, Some(BOUND)));
            let stopping = CancellationToken::new();
            let held = limiter.acquire(&stopping).await.unwrap();
            let start = Arc::new(std::sync::Barrier::new(BURST));
            let refused = Arc::new(AtomicUsize::new(0));
            let mut waiters = Vec::new();
            for _ in 0..BURST {
                let (l, s, start, refused) =
                    (limiter.clone(), stopping.clone(), start.clone(), refused.clone());
                // Threads of their own, so the checks really interleave.
                waiters.push(std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                    start.wait();
                    // Queued ones wait until the round ends (`stopping`).
                    match rt.block_on(l.acquire(&s)) {
                        Err(Refused::QueueFull) => {
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(Refused::Stopping) => {}
                        Ok(_) => panic!("the permit is held"),
                    }
                }));
            }
            // Every request refused or queued (a hang is a failure).
            let hang_guard = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while refused.load(Ordering::SeqCst) + limiter.queued() < BURST {
                assert!(
                    std::time::Instant::now() < hang_guard,
                    "round {round} never settled"
                );
                std::thread::yield_now();
            }
            assert_eq!(
                (limiter.queued(), refused.load(Ordering::SeqCst)),
                (BOUND, BURST - BOUND),
                "round {round}"
            );
            stopping.cancel();
            for w in waiters {
                w.join().unwrap();
            }
            drop(held);
        }
    }

    #[tokio::test]
    async fn the_gauges_follow_the_counts() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        // Single-threaded test: every change is recorded here.
        let _local = metrics::set_default_local_recorder(&recorder);
        // A snapshot takes each gauge's value and leaves 0 behind: the
        // gauges are the sums of the snapshots.
        let totals = std::cell::Cell::new((0.0, 0.0));
        let gauges = || {
            let (mut in_flight, mut queued) = totals.get();
            for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
                let DebugValue::Gauge(value) = value else { continue };
                match key.key().name() {
                    IN_FLIGHT_GAUGE => in_flight += value.into_inner(),
                    QUEUED_GAUGE => queued += value.into_inner(),
                    _ => {}
                }
            }
            totals.set((in_flight, queued));
            (in_flight, queued)
        };
        let limiter = Limiter::new("t", 1, None);
        let stopping = CancellationToken::new();
        let held = limiter.acquire(&stopping).await.unwrap();
        let (mut a, mut b) = (
            Box::pin(limiter.acquire(&stopping)),
            Box::pin(limiter.acquire(&stopping)),
        );
        assert!(futures::poll!(a.as_mut()).is_pending() && futures::poll!(b.as_mut()).is_pending());
        assert_eq!(gauges(), (1.0, 2.0));
        drop(b);
        assert_eq!(gauges(), (1.0, 1.0));
        drop(held);
        let next = a.await.unwrap();
        assert_eq!(gauges(), (1.0, 0.0));
        drop(next);
        assert_eq!(gauges(), (0.0, 0.0));
        assert_eq!((limiter.in_flight(), limiter.queued()), (0, 0));
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
