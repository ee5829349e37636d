//! Background runs of [loopwright](https://docs.rs/loopwright) agents:
//! started by one request, read, followed, approved and cancelled by
//! others, on this replica or any other sharing the store; with the
//! `restate` feature, durable workflows on Restate (the `durable` module)
//! that survive the death of the replica running them.
//!
//! [`Runs`] drives them over a [`Store`]; the server that
//! hosts them (its agents, its concurrency limit, its shutdown) is a
//! [`Host`]. [loopwright-serve](https://docs.rs/loopwright-serve) is one:
//! its REST and Responses surfaces start, show, decide and cancel runs
//! through this crate, and answer its [`RunsError`]s in their own shapes.
//!
//! ```
//! use std::sync::Arc;
//!
//! use loopwright_core::{Agent, Message};
//! use loopwright_runs::{DEFAULT_RUN_LEASE, Host, Logged, Refused, RunSpec, Runs, Ticket};
//! use loopwright_store::{MemoryStore, RunStatus};
//! use loopwright_testing::{ScriptedModel, ScriptedStep};
//! use tokio_util::sync::CancellationToken;
//!
//! /// One agent, no limit on runs in flight.
//! struct OneAgent(Agent, CancellationToken);
//!
//! impl Host for OneAgent {
//!     fn agent(&self, name: &str) -> Option<Agent> {
//!         (name == self.0.name()).then(|| self.0.clone())
//!     }
//!     fn agent_names(&self) -> Vec<String> {
//!         vec![self.0.name().to_owned()]
//!     }
//!     fn ticket(&self, _bounded: bool) -> Result<Ticket, Refused> {
//!         Ok(Ticket::new(async { Some(()) }))
//!     }
//!     fn stopping(&self) -> &CancellationToken {
//!         &self.1
//!     }
//!     fn hard_stop(&self) -> &CancellationToken {
//!         &self.1
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("Tidied.")]));
//! let host = Arc::new(OneAgent(Agent::builder(model).name("helper").build(), CancellationToken::new()));
//! let runs = Arc::new(Runs::new(Arc::new(MemoryStore::new()), "replica-1".into(), DEFAULT_RUN_LEASE));
//! let spec = RunSpec {
//!     agent: "helper".into(),
//!     input: vec![Message::user("Tidy up the notes.")],
//!     ..RunSpec::default()
//! };
//! // Stored before `start` returns; it runs in the background.
//! let record = runs.start(host, spec).await?;
//!
//! // Its events, from any replica, until the `finished` one.
//! let (tx, mut rx) = tokio::sync::mpsc::channel(16);
//! tokio::spawn(loopwright_runs::follow(runs.store().clone(), record.id.clone(), None, tx, |l| l));
//! let mut last = None;
//! while let Some(Logged::Event(_, event)) = rx.recv().await {
//!     last = event["type"].as_str().map(str::to_owned);
//! }
//! assert_eq!(last.as_deref(), Some("finished"));
//! // The record was written before the `finished` event.
//! assert_eq!(runs.get(&record.id).await?.status, RunStatus::Completed);
//! # Ok(()) }
//! ```
//!
//! Invariants:
//! - a run is one [`RunRecord`] in the store and its events the store's
//!   event log for it: what a replica answers about a run it reads there,
//!   never from its memory, so every replica answers alike;
//! - one process drives a run at a time: it creates the record, or claims
//!   a paused one by compare-and-set from `awaiting_approval` to `running`
//!   when the last pending call is decided, so of two replicas receiving
//!   decisions at once exactly one continues the run, and no call runs
//!   twice;
//! - a decision for a call that is not pending, or was decided already, is
//!   refused naming the call, and changes nothing;
//! - a run awaiting approval is only its record: no task, no permit;
//! - cancelling reaches the run wherever it runs: at once in this process,
//!   within half a second (the driver's look at its record) on another
//!   replica; a paused run is cancelled by its record alone;
//! - a running run whose replica went silent for its whole lease
//!   ([`DEFAULT_RUN_LEASE`]) is recorded failed by the first replica that
//!   reads it;
//! - what a run needs of its server it asks its [`Host`], never the
//!   server's own types: this crate depends on the core and the store only.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod approvals;
mod decision;
use decision::match_decisions;
mod drive;
#[cfg(feature = "restate")]
#[cfg_attr(docsrs, doc(cfg(feature = "restate")))]
pub mod durable;
mod error;
mod host;
mod ids;
mod lease;
mod options;
mod record;
mod retention;
mod tail;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use loopwright_core::Message;
use loopwright_core::history::check_history;
use loopwright_store::{RunRecord, RunStatus, Store};
use tokio_util::sync::CancellationToken;

pub use decision::Decision;
pub use error::RunsError;
pub use host::{Host, Refused, Ticket};
pub use lease::{DEFAULT_RUN_LEASE, MIN_RUN_LEASE};
pub use options::{OutputRequest, RunOptions};
pub use record::{ChainLink, surface, view};
pub use retention::{DEFAULT_RETENTION, MIN_RETENTION};
pub use tail::{Logged, follow};

use drive::{Begin, Driver};
use ids::new_id;
use record::{Decided, Envelope, Keep};

/// What loopwright-serve's surfaces share with the runs they start, so a
/// synchronous request and a background run read alike: ids, system texts,
/// a failed run's words, the approvals of a request that cannot pause.
/// Plumbing between the two crates, not a stable API.
#[doc(hidden)]
pub mod shared {
    pub use crate::approvals::foreground_approvals;
    pub use crate::ids::{new_id, response_id};
    pub use crate::options::add_system;
    pub use crate::record::failure;
}

/// Compare-and-set attempts of one request before it answers 409.
const CAS_ATTEMPTS: usize = 16;

/// A new background run, as a request asks for it.
///
/// ```
/// use loopwright_runs::{ChainLink, RunSpec};
/// // A turn of session `sess_1`, stored as response `resp_2` too.
/// let spec = RunSpec {
///     agent: "helper".into(),
///     input: vec![loopwright_core::Message::user("And now?")],
///     session: Some("sess_1".into()),
///     chain: Some(ChainLink { id: "resp_2".into(), previous: None }),
///     ..RunSpec::default()
/// };
/// # drop(spec);
/// ```
#[derive(Debug, Default)]
pub struct RunSpec {
    /// The served agent's name.
    pub agent: String,
    /// The turn's input.
    pub input: Vec<Message>,
    /// History before the input that is not this run's session (the
    /// conversation of a previous response).
    pub history: Vec<Message>,
    /// The session the run continues (created when new), if any.
    pub session: Option<String>,
    /// Store the turn (its input and its answer) as this chain turn once
    /// completed.
    pub chain: Option<ChainLink>,
    /// What the request changed of the agent's options.
    pub options: RunOptions,
    /// The run's id (a fresh one, `run_` and 128 random bits, when `None`).
    pub id: Option<String>,
    /// What the surface keeps in the record, opaque here (read back with
    /// [`surface`]).
    pub surface: Option<serde_json::Value>,
    /// Continue this paused run instead of starting from `input`: its
    /// pending calls decided (all of them), it goes on as the new run,
    /// with the paused run's options and conversation
    /// ([`Runs::start`] says how).
    pub continues: Option<Continues>,
}

/// A paused run a new run continues, and the decisions for every call it
/// waits for.
///
/// ```
/// use loopwright_runs::{Continues, Decision, RunSpec};
/// // Response `resp_2` continues `resp_1`, paused on a client tool's call.
/// let spec = RunSpec {
///     agent: "helper".into(),
///     id: Some("resp_2".into()),
///     continues: Some(Continues {
///         run: "resp_1".into(),
///         decisions: vec![Decision::output("call_1", serde_json::json!("Lisbon"))],
///     }),
///     ..RunSpec::default()
/// };
/// # drop(spec);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Continues {
    /// The paused run.
    pub run: String,
    /// A decision for each of its pending calls.
    pub decisions: Vec<Decision>,
}

/// The background runs of one server (a replica), over its store.
///
/// See the [crate's example](crate) for a run started and followed.
pub struct Runs {
    store: Arc<dyn Store>,
    /// Restate, when background runs are durable workflows.
    #[cfg(feature = "restate")]
    restate: Option<crate::durable::Client>,
    /// This replica's name (the `owner` of the runs it drives).
    replica: String,
    /// How long a replica may go without writing a run it drives.
    lease: lease::Lease,
    /// Cancellation of the runs driven here, by id.
    local: Mutex<HashMap<String, CancellationToken>>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs")
            .field("store", &self.store)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

impl Runs {
    /// The runs kept in `store`, driven here as replica `replica` (the
    /// `owner` of its runs' records), each declared lost by any replica once
    /// its driver wrote nothing for `lease` (at least [`MIN_RUN_LEASE`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let store = Arc::new(loopwright_store::MemoryStore::new());
    /// let runs = loopwright_runs::Runs::new(store, "replica-1".into(), loopwright_runs::DEFAULT_RUN_LEASE);
    /// # drop(runs);
    /// ```
    pub fn new(store: Arc<dyn Store>, replica: String, lease: std::time::Duration) -> Self {
        Self {
            store,
            replica,
            lease: lease::Lease::new(lease),
            local: Mutex::default(),
            #[cfg(feature = "restate")]
            restate: None,
        }
    }

    /// The same runs, durable workflows on the Restate `config` names
    /// (served by [`Runs::serve_restate`]); an error when its HTTP client
    /// cannot be built. The store must be one every replica shares.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use loopwright_runs::{DEFAULT_RUN_LEASE, Runs, durable::Restate};
    /// let store = loopwright_store::open("postgres://loopwright@db/agents").await?;
    /// let restate = Restate::new("http://restate:9070", "http://restate:8080", "0.0.0.0:9080".parse()?);
    /// let runs = Runs::new(store, "replica-1".into(), DEFAULT_RUN_LEASE).with_restate(restate)?;
    /// # drop(runs); Ok(()) }
    /// ```
    #[cfg(feature = "restate")]
    #[cfg_attr(docsrs, doc(cfg(feature = "restate")))]
    pub fn with_restate(
        mut self,
        config: crate::durable::Restate,
    ) -> Result<Self, crate::durable::RestateError> {
        self.restate = Some(crate::durable::Client::new(config)?);
        Ok(self)
    }

    /// The store the runs are kept in (their sessions and chains too).
    ///
    /// ```
    /// # async fn demo(runs: loopwright_runs::Runs) -> Result<(), loopwright_store::StoreError> {
    /// let events = runs.store().read_events("run_0123", None, 100).await?;
    /// # drop(events); Ok(()) }
    /// ```
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Note that run `id` runs here, cancelled through `token`.
    pub(crate) fn list(&self, id: &str, token: CancellationToken) {
        self.lock_local().insert(id.to_owned(), token);
    }

    /// Run `id` no longer runs here.
    pub(crate) fn unlist(&self, id: &str) {
        self.lock_local().remove(id);
    }

    /// Start a background run of one of `host`'s agents: its record is
    /// stored before this returns; it waits for a permit of `host` in the
    /// background. Refused, before anything is stored, for an unknown
    /// agent, an output schema that does not compile, a conversation over
    /// the host's limits or whose calls and results do not pair up, or a
    /// host that gives it no place.
    ///
    /// ```no_run
    /// # async fn demo(runs: std::sync::Arc<loopwright_runs::Runs>, host: std::sync::Arc<dyn loopwright_runs::Host>) -> Result<(), loopwright_runs::RunsError> {
    /// use loopwright_runs::RunSpec;
    /// let spec = RunSpec {
    ///     agent: "helper".into(),
    ///     input: vec![loopwright_core::Message::user("Summarise the changelog.")],
    ///     ..RunSpec::default()
    /// };
    /// let record = runs.start(host, spec).await?;
    /// println!("started {}", record.id);
    /// # Ok(()) }
    /// ```
    ///
    /// A spec that [`continues`](RunSpec::continues) a paused run starts
    /// no conversation of its own: the paused run, decided whole, is
    /// closed (completed, its result naming the run that continued it)
    /// and goes on as the new run, with its options, session and place in
    /// its chain (the new run's chain turn follows the paused run's
    /// predecessor: the paused run never stored a turn of its own).
    pub async fn start(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        mut spec: RunSpec,
    ) -> Result<RunRecord, RunsError> {
        if let Some(continues) = spec.continues.take() {
            return self.continue_as(host, spec, continues).await;
        }
        if host.agent(&spec.agent).is_none() {
            return Err(RunsError::UnknownAgent {
                name: spec.agent,
                served: host.agent_names(),
            });
        }
        spec.options
            .check()
            .map_err(|e| RunsError::invalid(format!("the output schema: {e}")))?;
        let (session_history, session_version) = match &spec.session {
            Some(session) => match self.store.load_conversation(session).await {
                Ok(Some(stored)) => (stored.messages, stored.version),
                Ok(None) => (Vec::new(), 0),
                Err(e) => return Err(RunsError::store(format!("session {session}"), e)),
            },
            None => (Vec::new(), 0),
        };
        let whose = match &spec.session {
            Some(session) => format!("session {session}"),
            None => "the conversation it continues".to_owned(),
        };
        let mut messages = spec.history;
        messages.extend(session_history);
        host.check_conversation(&messages, &spec.input, &whose)?;
        let turn_from = messages.len();
        messages.extend(spec.input);
        check_history(&messages).map_err(|e| RunsError::invalid(e.to_string()))?;
        let ticket = host.ticket(true).map_err(RunsError::Refused)?;
        let id = spec.id.unwrap_or_else(|| new_id("run_"));
        #[cfg(feature = "restate")]
        let durable = self.restate.as_ref().map(|_| record::DurableInfo::default());
        #[cfg(not(feature = "restate"))]
        let durable = None;
        let envelope = Envelope {
            options: spec.options,
            keep: Keep {
                session: spec.session.clone(),
                session_version,
                turn_from,
                chain: spec.chain,
            },
            surface: spec.surface,
            durable,
            ..Envelope::default()
        };
        let mut record = RunRecord::new(&id, &spec.agent)
            .with_owner(&self.replica)
            .with_state(envelope.to_value());
        if let Some(session) = spec.session {
            record = record.with_session(session);
        }
        self.store
            .create_run(&record)
            .await
            .map_err(|e| RunsError::store(format!("run {id}"), e))?;
        #[cfg(feature = "restate")]
        if let Some(client) = &self.restate {
            // Restate runs it, on whichever replica it picks.
            drop(ticket);
            return crate::durable::runs::submit(self, client, record, envelope, messages).await;
        }
        self.spawn(host, record.clone(), envelope, ticket, Begin::Fresh(messages));
        Ok(record)
    }

    /// [`Runs::start`] of a spec that continues a paused run.
    async fn continue_as(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        spec: RunSpec,
        continues: Continues,
    ) -> Result<RunRecord, RunsError> {
        let paused = self.get(&continues.run).await?;
        let from = continues.run.as_str();
        if paused.agent != spec.agent {
            return Err(RunsError::invalid(format!(
                "run {from} is agent {}'s, not {}'s",
                paused.agent, spec.agent
            )));
        }
        if paused.status != RunStatus::AwaitingApproval {
            return Err(RunsError::conflict(format!(
                "run {from} is {}: only a paused run is continued",
                paused.status
            )));
        }
        let envelope = Envelope::of(&paused).map_err(RunsError::damaged)?;
        let state = envelope
            .paused_state()
            .map_err(|e| RunsError::damaged(format!("run {from}: {e}")))?
            .ok_or_else(|| {
                RunsError::invalid(format!(
                    "run {from} waits in its durable workflow: decide it there"
                ))
            })?;
        let decided = decision::decide_whole(from, &envelope, &state.pending(), &continues.decisions)?;
        let ticket = host.ticket(true).map_err(RunsError::Refused)?;
        let id = spec.id.unwrap_or_else(|| new_id("run_"));
        self.close_continued(&paused, &envelope, &id).await?;
        let mut keep = envelope.keep.clone();
        keep.chain = spec.chain.map(|link| ChainLink {
            id: link.id,
            previous: envelope.keep.chain.as_ref().and_then(|c| c.previous.clone()),
        });
        let next = Envelope {
            options: envelope.options.clone(),
            keep,
            surface: spec.surface,
            ..Envelope::default()
        };
        let mut record = RunRecord::new(&id, &spec.agent)
            .with_owner(&self.replica)
            .with_state(next.to_value());
        if let Some(session) = &paused.session {
            record = record.with_session(session.clone());
        }
        self.store
            .create_run(&record)
            .await
            .map_err(|e| RunsError::store(format!("run {id}"), e))?;
        self.spawn(
            host,
            record.clone(),
            next,
            ticket,
            Begin::Resume(Box::new(state), decided),
        );
        Ok(record)
    }

    /// Close paused run `paused`, continued as run `by`: completed, its
    /// result naming `by`. A record that changed meanwhile (another
    /// request decided or continued it) is a conflict.
    async fn close_continued(
        &self,
        paused: &RunRecord,
        envelope: &Envelope,
        by: &str,
    ) -> Result<(), RunsError> {
        let mut closed = paused.clone();
        closed.status = RunStatus::Completed;
        closed.owner = None;
        closed.result = Some(serde_json::json!({
            "text": "", "exit": loopwright_core::ExitReason::AwaitingApproval, "continued_by": by,
        }));
        let mut kept = envelope.clone();
        kept.decisions.clear();
        kept.paused = None;
        closed.state = Some(kept.to_value());
        match self.store.update_run(&closed, paused.version).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_conflict() => Err(RunsError::conflict(format!(
                "run {} changed while it was continued: send the request again",
                paused.id
            ))),
            Err(e) => Err(RunsError::store(format!("run {}", paused.id), e)),
        }
    }

    fn spawn(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        record: RunRecord,
        envelope: Envelope,
        ticket: Ticket,
        begin: Begin,
    ) {
        let token = host.hard_stop().child_token();
        let id = record.id.clone();
        self.list(&id, token.clone());
        let driver = Driver {
            runs: self.clone(),
            host,
            record,
            envelope,
            token,
            warnings: None,
            durable: None,
            abandoned: None,
        };
        let runs = self.clone();
        tokio::spawn(async move {
            driver.drive(ticket, begin).await;
            runs.unlist(&id);
        });
    }

    fn lock_local(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.local.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Run `id`'s record (recorded failed first if its lease expired), or
    /// [`RunsError::NoSuchRun`] naming it.
    ///
    /// ```no_run
    /// # async fn demo(runs: loopwright_runs::Runs) -> Result<(), loopwright_runs::RunsError> {
    /// let record = runs.get("run_0123").await?;
    /// println!("{}: {}", record.id, record.status);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, id: &str) -> Result<RunRecord, RunsError> {
        match self.store.load_run(id).await {
            Ok(Some(record)) => {
                let record = self.lease.settle(&self.store, record).await;
                #[cfg(feature = "restate")]
                let record = match record {
                    Ok(record) => self.settle_durable(record).await,
                    failed => failed,
                };
                record.map_err(|e| RunsError::store(format!("run {id}"), e))
            }
            Ok(None) => Err(RunsError::NoSuchRun { id: id.to_owned() }),
            Err(e) => Err(RunsError::store(format!("run {id}"), e)),
        }
    }

    /// Record decisions for a paused run's calls; once every pending call
    /// has one, claim the run and continue it here, under `host`'s limit.
    ///
    /// ```no_run
    /// # async fn demo(runs: std::sync::Arc<loopwright_runs::Runs>, host: std::sync::Arc<dyn loopwright_runs::Host>) -> Result<(), loopwright_runs::RunsError> {
    /// use loopwright_runs::Decision;
    /// let record = runs.decide(host, "run_0123", &[Decision::approve("call_1")]).await?;
    /// # drop(record); Ok(()) }
    /// ```
    pub async fn decide(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        id: &str,
        decisions: &[Decision],
    ) -> Result<RunRecord, RunsError> {
        if decisions.is_empty() {
            return Err(RunsError::invalid("decisions is empty"));
        }
        for _ in 0..CAS_ATTEMPTS {
            let mut record = self.get(id).await?;
            let mut envelope = Envelope::of(&record).map_err(RunsError::damaged)?;
            // A durable run waits for its decisions in its workflow (one
            // that paused outside it, as a sub-agent's pause does, resumes
            // as any paused run, in this process).
            if envelope.durable.is_some() && envelope.paused.is_none() {
                return self.decide_durable(record, decisions).await;
            }
            if record.status != RunStatus::AwaitingApproval {
                return Err(RunsError::conflict(format!(
                    "run {id} is {}: it has no pending approvals",
                    record.status
                )));
            }
            let state = envelope
                .paused_state()
                .map_err(|e| RunsError::damaged(format!("run {id}: {e}")))?
                .ok_or_else(|| RunsError::damaged(format!("run {id} has no paused state")))?;
            let added = match_decisions(id, &envelope, &state.pending(), decisions)?;
            envelope.decisions.extend(added);
            let complete = envelope.undecided().is_empty();
            if complete {
                record.status = RunStatus::Running;
                record.owner = Some(self.replica.clone());
                // Continued here, outside any journal: its lease applies.
                envelope.durable = None;
            }
            record.state = Some(envelope.to_value());
            match self.store.update_run(&record, record.version).await {
                Ok(version) => {
                    record.version = version;
                    if complete {
                        let ticket = host.ticket(false).map_err(RunsError::Refused);
                        let decided = std::mem::take(&mut envelope.decisions);
                        match ticket {
                            Ok(ticket) => self.spawn(
                                host,
                                record.clone(),
                                envelope,
                                ticket,
                                Begin::Resume(Box::new(state), decided),
                            ),
                            // Stopping: the claim is given back, decisions kept.
                            Err(error) => {
                                self.unclaim(&record, decided).await;
                                return Err(error);
                            }
                        }
                    }
                    return Ok(record);
                }
                Err(e) if e.is_conflict() => continue,
                Err(e) => return Err(RunsError::store(format!("run {id}"), e)),
            }
        }
        Err(RunsError::conflict(format!(
            "run {id} kept changing while the decisions were recorded; send them again"
        )))
    }

    /// Put a claimed run back to awaiting approval (this replica is
    /// stopping and cannot continue it).
    async fn unclaim(&self, record: &RunRecord, decided: Vec<Decided>) {
        let mut back = record.clone();
        back.status = RunStatus::AwaitingApproval;
        back.owner = None;
        let mut envelope = Envelope::of(record).unwrap_or_default();
        envelope.decisions = decided;
        back.state = Some(envelope.to_value());
        if let Err(e) = self.store.update_run(&back, record.version).await {
            tracing::warn!(run = %record.id, error = %e, "a claimed run could not be given back");
        }
    }

    /// Cancel run `id`: at once when this replica drives it or it is
    /// paused, else through its record.
    ///
    /// A run that ends while its cancellation is recorded (the local token,
    /// fired first, ends it before the record is written) is answered as it
    /// ended, not refused as already ended.
    ///
    /// ```no_run
    /// # async fn demo(runs: loopwright_runs::Runs) -> Result<(), loopwright_runs::RunsError> {
    /// match runs.cancel("run_0123").await {
    ///     Ok(record) => println!("{} is {}", record.id, record.status),
    ///     Err(loopwright_runs::RunsError::Conflict { message }) => println!("{message}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn cancel(&self, id: &str) -> Result<RunRecord, RunsError> {
        let mut fired = false;
        for _ in 0..CAS_ATTEMPTS {
            let mut record = self.get(id).await?;
            if record.status.is_finished() {
                if fired {
                    return Ok(record);
                }
                return Err(RunsError::conflict(format!(
                    "run {id} has already ended ({})",
                    record.status
                )));
            }
            let mut envelope = Envelope::of(&record).map_err(RunsError::damaged)?;
            // A durable run's workflow ends it, wherever it runs.
            let durable = envelope.durable.clone().filter(|_| envelope.paused.is_none());
            let paused = record.status == RunStatus::AwaitingApproval && durable.is_none();
            if paused {
                record.status = RunStatus::Cancelled;
                record.error = Some(record::error_value(
                    "cancelled",
                    "the run was cancelled while it awaited approval",
                ));
                envelope.paused = None;
                envelope.decisions.clear();
            } else {
                if let Some(token) = self.lock_local().get(id) {
                    token.cancel();
                    fired = true;
                }
                envelope.cancel_requested = true;
            }
            let seq = envelope.next_seq;
            if paused {
                envelope.next_seq += 1;
            }
            record.state = Some(envelope.to_value());
            match self.store.update_run(&record, record.version).await {
                Ok(version) => {
                    record.version = version;
                    if let Some(durable) = &durable {
                        self.cancel_durable(id, durable).await;
                    }
                    if paused {
                        let finished = serde_json::to_value(loopwright_core::AgentEvent::Finished {
                            exit: loopwright_core::ExitReason::Cancelled,
                            text: String::new(),
                            usage: Default::default(),
                            tree_usage: Default::default(),
                            steps: 0,
                            error: None,
                        })
                        .unwrap_or_default();
                        if let Err(e) = self.store.append_events(id, &[(seq, finished)]).await {
                            tracing::warn!(run = %id, error = %e, "the cancelled run's finished event could not be stored");
                        }
                    }
                    return Ok(record);
                }
                Err(e) if e.is_conflict() => continue,
                Err(e) => return Err(RunsError::store(format!("run {id}"), e)),
            }
        }
        Err(RunsError::conflict(format!(
            "run {id} kept changing while it was cancelled; try again"
        )))
    }
}

#[cfg(not(feature = "restate"))]
impl Runs {
    /// A durable run is decided through a replica with Restate.
    async fn decide_durable(
        &self,
        record: RunRecord,
        _decisions: &[Decision],
    ) -> Result<RunRecord, RunsError> {
        Err(RunsError::conflict(format!(
            "run {} is a durable run: decide it through a replica built with Restate (feature `restate`)",
            record.id
        )))
    }

    /// Nothing to tell Restate in a build without it.
    async fn cancel_durable(&self, _id: &str, _durable: &record::DurableInfo) {}
}
