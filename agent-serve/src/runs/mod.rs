//! Background runs: started by one request, read, streamed, approved and
//! cancelled by others, on this replica or any other sharing the store.
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
//!   within [`CANCEL_POLL`](lease::CANCEL_POLL) through the record on
//!   another replica; a paused run is cancelled by its record alone;
//! - a running run whose replica went silent for its whole lease is
//!   recorded failed by the first replica that reads it ([`lease`]).

mod approvals;
pub(crate) mod drive;
mod error;
mod host;
mod ids;
pub(crate) mod lease;
mod options;
pub(crate) mod record;
pub(crate) mod retention;
mod tail;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use loopwright_core::Message;
use loopwright_core::history::check_history;
use loopwright_store::{RunRecord, RunStatus, Store};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

pub(crate) use approvals::foreground_approvals;
pub(crate) use error::RunsError;
pub(crate) use host::{Host, Refused, Ticket};
pub(crate) use ids::{new_id, response_id};
pub(crate) use options::{OutputRequest, RunOptions, add_system};
pub(crate) use record::{failure, view};
pub(crate) use tail::{Logged, follow};

use drive::{Begin, Driver};
use record::{Decided, Envelope, Keep};

/// Compare-and-set attempts of one request before it answers 409.
const CAS_ATTEMPTS: usize = 16;

/// A new background run, as a surface asks for it.
#[derive(Debug, Default)]
pub(crate) struct RunSpec {
    /// The served agent's name.
    pub(crate) agent: String,
    /// The turn's input.
    pub(crate) input: Vec<Message>,
    /// History before the input that is not this run's session (the
    /// conversation of a previous response).
    pub(crate) history: Vec<Message>,
    /// The session the run continues (created when new), if any.
    pub(crate) session: Option<String>,
    /// Store the turn (its input and its answer) as this chain turn once
    /// completed.
    pub(crate) chain: Option<record::ChainLink>,
    /// What the request changed of the agent's options.
    pub(crate) options: RunOptions,
    /// The run's id (a fresh one when `None`).
    pub(crate) id: Option<String>,
    /// What the surface keeps in the record (see [`record::Envelope`]).
    pub(crate) surface: Option<serde_json::Value>,
}

pub(crate) use record::{ChainLink, surface};

/// A decision as `POST /v1/runs/{id}/approvals` takes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Decision {
    pub(crate) call_id: String,
    pub(crate) approve: bool,
    #[serde(default)]
    pub(crate) reason: Option<String>,
    /// Which agent's call, when a call id is pending in several.
    #[serde(default)]
    pub(crate) agent_path: Option<String>,
}

/// The background runs of one server, over its store.
pub(crate) struct Runs {
    pub(crate) store: Arc<dyn Store>,
    /// Restate, when background runs are durable workflows.
    #[cfg(feature = "restate")]
    pub(crate) restate: Option<crate::durable::Client>,
    /// This replica's name (the `owner` of the runs it drives).
    pub(crate) replica: String,
    /// How long a replica may go without writing a run it drives.
    pub(crate) lease: lease::Lease,
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
    /// its driver wrote nothing for `lease` (at least
    /// [`MIN_RUN_LEASE`](lease::MIN_RUN_LEASE)).
    pub(crate) fn new(store: Arc<dyn Store>, replica: String, lease: std::time::Duration) -> Self {
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
    /// cannot be built.
    #[cfg(feature = "restate")]
    pub(crate) fn with_restate(
        mut self,
        config: crate::durable::Restate,
    ) -> Result<Self, crate::durable::RestateError> {
        self.restate = Some(crate::durable::Client::new(config)?);
        Ok(self)
    }

    /// The store the runs are kept in (their sessions and chains too).
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
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

    /// Start a background run: its record is stored before this returns;
    /// it waits for a permit of `host` in the background.
    pub(crate) async fn start(
        self: &Arc<Self>,
        host: Arc<dyn Host>,
        spec: RunSpec,
    ) -> Result<RunRecord, RunsError> {
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
    pub(crate) async fn get(&self, id: &str) -> Result<RunRecord, RunsError> {
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
    /// has one, claim the run and continue it here.
    pub(crate) async fn decide(
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
    pub(crate) async fn cancel(&self, id: &str) -> Result<RunRecord, RunsError> {
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

/// The decisions of a request, checked against what is pending: each names
/// a pending, undecided call, once.
fn match_decisions(
    id: &str,
    envelope: &Envelope,
    pending: &[loopwright_core::agent::PendingCall],
    decisions: &[Decision],
) -> Result<Vec<Decided>, RunsError> {
    let mut added: Vec<Decided> = Vec::new();
    for decision in decisions {
        let candidates: Vec<_> = pending
            .iter()
            .filter(|p| p.call_id == decision.call_id)
            .filter(|p| {
                decision
                    .agent_path
                    .as_ref()
                    .is_none_or(|path| &p.agent_path == path)
            })
            .collect();
        let call = match candidates.as_slice() {
            [one] => *one,
            [] => {
                let names: Vec<&str> = pending.iter().map(|p| p.call_id.as_str()).collect();
                return Err(RunsError::conflict(format!(
                    "call {} is not pending in run {id} (pending: {})",
                    decision.call_id,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            several => {
                let paths: Vec<&str> = several.iter().map(|p| p.agent_path.as_str()).collect();
                return Err(RunsError::invalid(format!(
                    "call {} is pending in several agents ({}): add \"agent_path\"",
                    decision.call_id,
                    paths.join(", ")
                )));
            }
        };
        let seen = |d: &Decided| d.call_id == call.call_id && d.agent_path == call.agent_path;
        if envelope.decisions.iter().any(seen) {
            return Err(RunsError::conflict(format!(
                "call {} of run {id} was already decided",
                call.call_id
            )));
        }
        if added.iter().any(seen) {
            return Err(RunsError::invalid(format!(
                "call {} is decided twice in this request",
                call.call_id
            )));
        }
        added.push(Decided {
            call_id: call.call_id.clone(),
            agent_path: call.agent_path.clone(),
            approve: decision.approve,
            reason: decision.reason.clone(),
        });
    }
    Ok(added)
}
