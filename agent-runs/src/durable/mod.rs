//! Durable background runs on Restate (feature `restate`): a run survives
//! the death of the replica running it, and a crash costs nothing already
//! done.
//!
//! With [`Runs::with_restate`](crate::Runs::with_restate) (loopwright-serve's
//! `Serve::restate`), every background run (`POST /v1/agents/{name}/runs`,
//! the Responses API's `background`) is a Restate workflow keyed by the run
//! id, served by this replica's Restate endpoint ([`Restate::listen`],
//! [`Runs::serve_restate`](crate::Runs::serve_restate)) and by every replica
//! registered under the same address ([`Restate::advertise`], a load
//! balancer in front of them).
//! The loop journals through the engine-neutral seam
//! ([`loopwright_core::durable`]): each model call and each tool call is
//! one `ctx.run` step (a loop step's calls journaled in call order), each
//! approval a durable promise.
//!
//! Invariants:
//! - Restate decides where and when a run executes; the run's record and
//!   event log stay in the store, written by the execution that holds the
//!   run (one at a time: Restate runs one execution of a workflow at once);
//! - an execution after a crash replays the journal: a step that completed
//!   is never repeated (no model call billed twice, no tool call run again),
//!   an interrupted step runs again with the same idempotency keys; the
//!   execution's events start with `resumed {attempt}`;
//! - a run's record is written only by an execution that reached the run's
//!   end, or by the requests that decide and cancel it: an execution that
//!   Restate abandons (suspended while it waits for a decision, or cut off)
//!   writes nothing, and the next one continues;
//! - a durable run never expires by lease: Restate retries it instead
//!   ([`DEFAULT_RETRY_INITIAL`], [`DEFAULT_RETRY_MAX`]).

mod bridge;
mod client;
pub(crate) mod endpoint;
pub(crate) mod runs;
mod workflow;

use std::net::SocketAddr;
use std::time::Duration;

pub(crate) use client::Client;
pub use client::RestateError;
pub(crate) use workflow::RunWorkflow;

/// The Restate service name of a durable run's workflow.
pub const SERVICE_NAME: &str = "LoopwrightRun";

/// The first pause before Restate retries an execution that failed (its
/// replica died): how soon a run goes on on another replica.
pub const DEFAULT_RETRY_INITIAL: Duration = Duration::from_millis(100);

/// The longest pause between Restate's retries of an execution (the pauses
/// double from [`DEFAULT_RETRY_INITIAL`]).
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(5);

/// Retries of an execution before Restate pauses the run (about a week of
/// retries at [`DEFAULT_RETRY_MAX`]: every replica down for that long).
pub const DEFAULT_RETRY_ATTEMPTS: u64 = 120_000;

/// How long one journaled step (a model call, a tool call) may run
/// before Restate aborts the execution and retries it.
pub const DEFAULT_STEP_LIMIT: Duration = Duration::from_secs(3600);

/// How long an execution may go without a journal entry before Restate
/// suspends it: a run waiting longer for a decision then holds nothing on
/// any replica (the decision resumes it, in a new execution); a step that
/// runs longer (a long tool) is journaled when it ends and the run goes on
/// in a new execution, which replays the journal (nothing done is repeated).
pub const DEFAULT_SUSPEND_AFTER: Duration = Duration::from_secs(600);

/// A tool call's value goes on to the next step before Restate's log
/// confirms it (the confirmation overlaps that step) only when the call's
/// entry was open for less than the suspension time
/// ([`Restate::suspend_after`]) divided by this, counted from when the
/// entry was opened (for a later call of a batch, once the call before it
/// was journaled: the time Restate heard nothing from the execution). A
/// longer one may find Restate asking the execution to suspend, which
/// would drop a model call made meanwhile (billed again in the next
/// execution); its value waits for the confirmation instead.
///
/// ```
/// use loopwright_runs::durable::{DEFAULT_SUSPEND_AFTER, OVERLAP_SHARE};
/// // With the defaults, a tool call under 5 minutes overlaps its confirmation.
/// assert_eq!(DEFAULT_SUSPEND_AFTER / OVERLAP_SHARE, std::time::Duration::from_secs(300));
/// ```
pub const OVERLAP_SHARE: u32 = 2;

/// Where this replica meets Restate: its admin API (registration,
/// cancellation), its ingress (starting and deciding runs), the address this
/// replica's endpoint listens on, and the address Restate reaches the
/// replicas at.
///
/// ```
/// use loopwright_runs::durable::Restate;
/// let restate = Restate::new("http://127.0.0.1:9070", "http://127.0.0.1:8080", "127.0.0.1:9080".parse().unwrap())
///     .advertise("http://lb.internal:9080");
/// assert_eq!(restate.advertised(), "http://lb.internal:9080/");
/// ```
#[derive(Debug, Clone)]
pub struct Restate {
    admin: String,
    ingress: String,
    listen: SocketAddr,
    advertise: Option<String>,
    retry_initial: Duration,
    retry_max: Duration,
    suspend_after: Duration,
}

impl Restate {
    /// Restate's admin API at `admin`, its ingress at `ingress`, this
    /// replica's endpoint on `listen` (advertised as itself).
    pub fn new(admin: impl Into<String>, ingress: impl Into<String>, listen: SocketAddr) -> Self {
        Self {
            admin: trim(admin.into()),
            ingress: trim(ingress.into()),
            listen,
            advertise: None,
            retry_initial: DEFAULT_RETRY_INITIAL,
            retry_max: DEFAULT_RETRY_MAX,
            suspend_after: DEFAULT_SUSPEND_AFTER,
        }
    }

    /// The address Restate reaches the replicas at (a load balancer in
    /// front of every replica of this deployment); by default the listen
    /// address.
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://a", "http://i", "127.0.0.1:9080".parse().unwrap());
    /// assert_eq!(r.advertised(), "http://127.0.0.1:9080/");
    /// ```
    pub fn advertise(mut self, url: impl Into<String>) -> Self {
        self.advertise = Some(trim(url.into()));
        self
    }

    /// Restate's retry policy for an execution that failed: the first
    /// pause and the longest (defaults [`DEFAULT_RETRY_INITIAL`],
    /// [`DEFAULT_RETRY_MAX`]).
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// # use std::time::Duration;
    /// let r = Restate::new("http://a", "http://i", "127.0.0.1:9080".parse().unwrap())
    ///     .retry(Duration::from_millis(50), Duration::from_secs(1));
    /// # drop(r);
    /// ```
    pub fn retry(mut self, initial: Duration, max: Duration) -> Self {
        self.retry_initial = initial;
        self.retry_max = max.max(initial);
        self
    }

    /// How long an execution may go without a journal entry before Restate
    /// suspends it (default [`DEFAULT_SUSPEND_AFTER`]).
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://a", "http://i", "127.0.0.1:9080".parse().unwrap())
    ///     .suspend_after(std::time::Duration::from_secs(60));
    /// # drop(r);
    /// ```
    pub fn suspend_after(mut self, after: Duration) -> Self {
        self.suspend_after = after;
        self
    }

    /// The admin API's URL (without a trailing `/`).
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://restate:9070/", "http://restate:8080", "127.0.0.1:9080".parse().unwrap());
    /// assert_eq!(r.admin(), "http://restate:9070");
    /// ```
    pub fn admin(&self) -> &str {
        &self.admin
    }

    /// The ingress's URL (without a trailing `/`).
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://restate:9070", "http://restate:8080/", "127.0.0.1:9080".parse().unwrap());
    /// assert_eq!(r.ingress(), "http://restate:8080");
    /// ```
    pub fn ingress(&self) -> &str {
        &self.ingress
    }

    /// The address this replica's Restate endpoint listens on.
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://a", "http://i", "0.0.0.0:9080".parse().unwrap());
    /// assert_eq!(r.listen().port(), 9080);
    /// ```
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// The URL registered with Restate (ends with `/`).
    ///
    /// ```
    /// # use loopwright_runs::durable::Restate;
    /// let r = Restate::new("http://a", "http://i", "127.0.0.1:9080".parse().unwrap()).advertise("http://lb:9080/");
    /// assert_eq!(r.advertised(), "http://lb:9080/");
    /// ```
    pub fn advertised(&self) -> String {
        let url = self
            .advertise
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen));
        format!("{}/", url.trim_end_matches('/'))
    }

    /// The longest a tool call may take for its value to go on before
    /// Restate's log confirms it (see [`OVERLAP_SHARE`]).
    pub(crate) fn overlap_below(&self) -> Duration {
        self.suspend_after / OVERLAP_SHARE
    }

    pub(crate) fn service_options(&self) -> restate_sdk::prelude::ServiceOptions {
        restate_sdk::prelude::ServiceOptions::new()
            .inactivity_timeout(self.suspend_after)
            .abort_timeout(DEFAULT_STEP_LIMIT)
            .retry_policy_initial_interval(self.retry_initial)
            .retry_policy_exponentiation_factor(2.0)
            .retry_policy_max_interval(self.retry_max)
            .retry_policy_max_attempts(DEFAULT_RETRY_ATTEMPTS)
            .retry_policy_pause_on_max_attempts()
    }
}

fn trim(url: String) -> String {
    url.trim_end_matches('/').to_owned()
}
