//! [`PausedRuns`]: runs that wait for a person, kept in a store instead of
//! a process's memory, and resumed by any process that shares it.
//!
//! A run that defers its approvals ends [`RunError::AwaitingApproval`]
//! with a [`RunState`]; [`PausedRuns::park`] stores it as a run record
//! awaiting approval, [`PausedRuns::claim`] takes it back for one process
//! to resume, and [`Claimed::finish`] records how the resumed run ended
//! (parked again when it asks again).
//!
//! Invariants:
//! - a parked run is claimed at most once: the claim moves its record from
//!   awaiting approval to running with a compare-and-set, so of two
//!   processes claiming it at once one gets [`PausedError::Taken`] and runs
//!   nothing;
//! - the state resumed is the state parked, read from the same record the
//!   claim wrote over;
//! - a claim that is dropped without [`Claimed::finish`] or
//!   [`Claimed::release`] leaves the run recorded as running (its process
//!   may still be resuming it); [`Claimed::release`] gives it back.
//!
//! [`RunError::AwaitingApproval`]: loopwright_core::RunError::AwaitingApproval

use std::sync::Arc;

use loopwright_core::agent::RunStateError;
use loopwright_core::{AgentResult, Outcome, RunState};
use serde_json::{Value, json};

use crate::{RunRecord, RunStatus, Store, StoreError};

/// Runs paused on their approvals, in a store.
///
/// ```
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
/// use loopwright_core::RunError;
/// use loopwright_store::PausedRuns;
/// let paused = PausedRuns::new(loopwright_store::open("sqlite:runs.db").await?);
/// // Process 1: the run asks, and is parked.
/// if let Err(RunError::AwaitingApproval { state, .. }) = agent.run("Tidy the notes").await {
///     let id = paused.park(agent.name(), &state).await?;
///     println!("waiting: {id}");
/// }
/// // Process 2, later: a person approved the call.
/// let claimed = paused.claim("run_...").await?;
/// let call = claimed.state().pending()[0].call_id.clone();
/// let resumed = agent.resume(claimed.state().clone()).approve(&call).run().await?;
/// let result = resumed.await.or_else(RunError::into_result)?;
/// claimed.finish(&result).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PausedRuns {
    store: Arc<dyn Store>,
}

impl PausedRuns {
    /// Paused runs kept in `store`.
    ///
    /// ```
    /// # async fn demo() -> Result<(), loopwright_store::StoreError> {
    /// let paused = loopwright_store::PausedRuns::new(loopwright_store::open("memory:").await?);
    /// # let _ = paused; Ok(()) }
    /// ```
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Store `state`, a run of `agent` awaiting approval, under an id made
    /// from the state's; that id.
    ///
    /// ```
    /// # async fn demo(paused: loopwright_store::PausedRuns, state: loopwright_core::RunState) -> Result<(), loopwright_store::PausedError> {
    /// let id = paused.park("notes", &state).await?;
    /// assert!(id.starts_with("run_"));
    /// # Ok(()) }
    /// ```
    pub async fn park(&self, agent: &str, state: &RunState) -> Result<String, PausedError> {
        let id = run_id(state);
        let record = RunRecord::new(&id, agent)
            .with_status(RunStatus::AwaitingApproval)
            .with_state(encode(&id, state)?);
        self.store.create_run(&record).await?;
        Ok(id)
    }

    /// The state of the parked run `id`, without claiming it (to show a
    /// person what it waits for).
    ///
    /// ```
    /// # async fn demo(paused: loopwright_store::PausedRuns) -> Result<(), loopwright_store::PausedError> {
    /// for call in paused.load("run_3f2a").await?.pending() {
    ///     println!("{} {} {}", call.call_id, call.tool, call.arguments);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn load(&self, id: &str) -> Result<RunState, PausedError> {
        let record = self.awaiting(id).await?;
        decode(&record)
    }

    /// Take the parked run `id` to resume it: only one process gets it.
    ///
    /// ```
    /// # async fn demo(paused: loopwright_store::PausedRuns) {
    /// match paused.claim("run_3f2a").await {
    ///     Ok(claimed) => println!("resuming {}", claimed.id()),
    ///     Err(loopwright_store::PausedError::Taken { .. }) => println!("another process has it"),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// # }
    /// ```
    pub async fn claim(&self, id: &str) -> Result<Claimed, PausedError> {
        let record = self.awaiting(id).await?;
        let state = decode(&record)?;
        let running = record.clone().with_status(RunStatus::Running);
        let version = match self.store.update_run(&running, record.version).await {
            Ok(version) => version,
            Err(e) if e.is_conflict() => return Err(PausedError::Taken { id: id.to_owned() }),
            Err(e) => return Err(e.into()),
        };
        Ok(Claimed {
            store: self.store.clone(),
            parked: record,
            record: running,
            version,
            state,
        })
    }

    /// The record of `id`, which must be awaiting approval.
    async fn awaiting(&self, id: &str) -> Result<RunRecord, PausedError> {
        match self.store.load_run(id).await? {
            Some(record) if record.status == RunStatus::AwaitingApproval => Ok(record),
            Some(record) if record.status == RunStatus::Running => {
                Err(PausedError::Taken { id: id.to_owned() })
            }
            Some(record) => Err(PausedError::NotPaused {
                id: id.to_owned(),
                status: record.status,
            }),
            None => Err(PausedError::NotFound { id: id.to_owned() }),
        }
    }
}

/// A parked run this process claimed: resume its [`state`](Self::state),
/// then [`finish`](Self::finish) it (or [`release`](Self::release) it).
#[derive(Debug)]
#[must_use = "a claimed run stays recorded as running until it is finished or released"]
pub struct Claimed {
    store: Arc<dyn Store>,
    /// The record as it was parked.
    parked: RunRecord,
    /// The record as claimed.
    record: RunRecord,
    version: u64,
    state: RunState,
}

impl Claimed {
    /// The run's id.
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The state to resume.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Record how the resumed run ended: parked again under the same id
    /// when it awaits approval again, else completed (the model answered)
    /// or failed, with its result.
    pub async fn finish(self, result: &AgentResult) -> Result<(), PausedError> {
        let mut record = self.record;
        match &result.outcome {
            Outcome::AwaitingApproval { state } => {
                record.status = RunStatus::AwaitingApproval;
                record.state = Some(encode(&record.id, state)?);
            }
            outcome => {
                record.status = if outcome.answered() {
                    RunStatus::Completed
                } else {
                    RunStatus::Failed
                };
                record.state = None;
                record.result = Some(json!({
                    "text": result.text,
                    "output": result.output,
                    "usage": result.tree_usage,
                    "exit": result.exit(),
                    "steps": result.steps.len(),
                }));
            }
        }
        self.store.update_run(&record, self.version).await?;
        Ok(())
    }

    /// Give the run back, awaiting approval as it was parked (the resume
    /// could not start).
    pub async fn release(self) -> Result<(), PausedError> {
        self.store.update_run(&self.parked, self.version).await?;
        Ok(())
    }
}

/// Why a paused run could not be parked, claimed or finished.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PausedError {
    /// No run has this id.
    #[error("no run {id}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The run is not waiting for a person.
    #[error("run {id} is {status}, not awaiting approval")]
    NotPaused {
        /// The run.
        id: String,
        /// Where it is.
        status: RunStatus,
    },
    /// Another process claimed the run first.
    #[error("run {id} was claimed by another process")]
    Taken {
        /// The run.
        id: String,
    },
    /// The stored state is not a run state this version reads.
    #[error("run {id}: {error}")]
    State {
        /// The run.
        id: String,
        /// Why.
        #[source]
        error: RunStateError,
    },
    /// The state could not be written as JSON.
    #[error("run {id}: its state could not be written: {error}")]
    Encode {
        /// The run.
        id: String,
        /// Why.
        #[source]
        error: serde_json::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The record id of a paused run: its state's id.
fn run_id(state: &RunState) -> String {
    let id = state.id.strip_prefix("rs_").unwrap_or(&state.id);
    format!("run_{id}")
}

fn encode(id: &str, state: &RunState) -> Result<Value, PausedError> {
    serde_json::to_value(state).map_err(|error| PausedError::Encode {
        id: id.to_owned(),
        error,
    })
}

fn decode(record: &RunRecord) -> Result<RunState, PausedError> {
    let value = record.state.clone().unwrap_or(Value::Null);
    RunState::from_value(value).map_err(|error| PausedError::State {
        id: record.id.clone(),
        error,
    })
}
