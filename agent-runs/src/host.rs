//! What a run needs from the server that hosts it ([`Host`]): the agents
//! it serves, its limits, its concurrency limit ([`Ticket`]) and its
//! shutdown.
//!
//! Invariants:
//! - a run holds a place under its host's limit from the moment it is
//!   accepted ([`Host::ticket`]), so a full queue refuses it at once, and
//!   the right to run (the ticket redeemed) from its start until its record
//!   is written; dropping a ticket, redeemed or not, gives its place back;
//! - the host's hard stop ([`Host::hard_stop`]) cancels every run it drives;
//!   its `stopping` only refuses what would start.

use std::future::Future;
use std::pin::Pin;

use loopwright_core::{Agent, Message};
use tokio_util::sync::CancellationToken;

use crate::RunsError;

/// The server a run runs in: the runs crate drives runs, the host decides
/// which agents there are, how many run at once, and when it stops.
///
/// ```
/// use loopwright_runs::{Host, Refused, Ticket};
/// use tokio_util::sync::CancellationToken;
///
/// /// One agent, no limit on runs in flight.
/// struct OneAgent {
///     agent: loopwright_core::Agent,
///     stopping: CancellationToken,
///     hard: CancellationToken,
/// }
///
/// impl Host for OneAgent {
///     fn agent(&self, name: &str) -> Option<loopwright_core::Agent> {
///         (name == self.agent.name()).then(|| self.agent.clone())
///     }
///     fn agent_names(&self) -> Vec<String> {
///         vec![self.agent.name().to_owned()]
///     }
///     fn ticket(&self, _bounded: bool) -> Result<Ticket, Refused> {
///         if self.stopping.is_cancelled() {
///             return Err(Refused::Stopping);
///         }
///         Ok(Ticket::new(async { Some(()) }))
///     }
///     fn stopping(&self) -> &CancellationToken {
///         &self.stopping
///     }
///     fn hard_stop(&self) -> &CancellationToken {
///         &self.hard
///     }
/// }
/// ```
pub trait Host: Send + Sync {
    /// The agent served as `name`, if any.
    fn agent(&self, name: &str) -> Option<Agent>;

    /// The names of the agents served (the error for an unknown one lists
    /// them).
    fn agent_names(&self) -> Vec<String>;

    /// A model the server offers for runs that pick one
    /// ([`RunOptions::model`](crate::RunOptions::model)), by its label
    /// (default: none is offered).
    fn model(&self, label: &str) -> Option<std::sync::Arc<dyn loopwright_core::LanguageModel>> {
        let _ = label;
        None
    }

    /// Refuse a run whose whole conversation (`stored` messages of the
    /// conversation it continues, named by `whose`, then the request's
    /// `input`) is over the host's limits, naming both and the limit
    /// ([`RunsError::Invalid`]). By default nothing is refused.
    fn check_conversation(
        &self,
        stored: &[Message],
        input: &[Message],
        whose: &str,
    ) -> Result<(), RunsError> {
        let _ = (stored, input, whose);
        Ok(())
    }

    /// A place under the host's concurrency limit for a run that starts
    /// later: a free permit at once, else a place in the queue, counted in
    /// the queue's bound when `bounded` (a new run; a run that continues
    /// after its approvals always gets a place).
    fn ticket(&self, bounded: bool) -> Result<Ticket, Refused>;

    /// Cancelled when the host stops accepting work: a durable run's
    /// endpoint stops taking executions.
    fn stopping(&self) -> &CancellationToken;

    /// Cancelled when the host's shutdown grace is over: every run still
    /// going is cancelled (and ends `failed`, `shutdown`).
    fn hard_stop(&self) -> &CancellationToken;
}

/// Why a host gave a run no place ([`RunsError::Refused`]).
///
/// ```
/// assert_eq!(loopwright_runs::Refused::Stopping.to_string(), "the server is shutting down");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The queue is at its bound.
    QueueFull,
    /// The host is shutting down.
    Stopping,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::QueueFull => "too many runs are waiting; retry later",
            Self::Stopping => "the server is shutting down",
        })
    }
}

/// A run's place under its host's concurrency limit: redeemed, once the
/// runs before it are done, for the right to run (held until the run's
/// record is written); dropped, it leaves the queue.
///
/// ```
/// use std::sync::Arc;
/// use tokio::sync::Semaphore;
/// // At most 4 runs at once: the permit once one of the 4 is free.
/// let limit = Arc::new(Semaphore::new(4));
/// let ticket = loopwright_runs::Ticket::new(async move { limit.acquire_owned().await.ok() });
/// # drop(ticket);
/// ```
pub struct Ticket(Pin<Box<dyn Future<Output = Option<Permit>> + Send>>);

/// The right to run, from a redeemed [`Ticket`]: dropping it lets the next
/// run in.
pub(crate) struct Permit {
    _held: Box<dyn Send>,
}

impl Ticket {
    /// A ticket whose permit is what `redeem` resolves to (`None`: refused,
    /// the host is stopping). `redeem` owns the place in the queue: it is
    /// given back when the future ends or is dropped unpolled.
    pub fn new<P: Send + 'static>(redeem: impl Future<Output = Option<P>> + Send + 'static) -> Self {
        Self(Box::pin(async move {
            let permit = redeem.await?;
            Some(Permit {
                _held: Box::new(permit),
            })
        }))
    }

    /// Wait for the permit.
    pub(crate) async fn redeem(self) -> Option<Permit> {
        self.0.await
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").finish_non_exhaustive()
    }
}
