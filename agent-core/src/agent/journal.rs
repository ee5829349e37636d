//! A run's journal: its steps and decisions through the durable engine of
//! its [`DurableRun`], or straight through when it has none.
//!
//! Invariants: without an engine a step is its work awaited, and nothing
//! else happens; with one, a step's value is what the engine returns (the
//! journaled value on replay, the work's value otherwise), a replayed step
//! drops the events held since the step before, and a step that runs, a
//! decision waited for and the end of the run release them (see
//! [`crate::durable`]). Model calls are numbered in the order the run makes
//! them, so every execution names them alike; a step's tool calls are
//! journaled one by one in call order ([`Journal::calls`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::emit::Emitter;
use super::gate;
use super::step::{StepFailure, StepOutput};
use crate::approval::{ApprovalDecision, ApprovalRequest, Approvals};
use crate::durable::{
    DecisionKey, Durability, DurableError, DurableRun, StepFn, StepKey, StepKind, StepRecord, Waiting,
};
use loopwright_types::model_error::ModelError;

pub(crate) struct Journal {
    engine: Option<Arc<dyn Durability>>,
    /// Model calls made so far (the next one's number is this plus one).
    model_calls: AtomicU32,
}

impl Journal {
    pub fn new(durable: Option<&DurableRun>) -> Self {
        Self {
            engine: durable.and_then(DurableRun::engine_ref).cloned(),
            model_calls: AtomicU32::new(0),
        }
    }

    /// Whether an engine journals the run.
    pub fn is_durable(&self) -> bool {
        self.engine.is_some()
    }

    /// The engine's execution of the run (from 1), when an engine
    /// journals it.
    pub fn attempt(&self) -> Option<u32> {
        self.engine.as_ref().map(|engine| engine.attempt().max(1))
    }

    /// The key of the next model call.
    pub fn next_model_call(&self) -> StepKey {
        StepKey::new(
            StepKind::Model,
            self.model_calls.fetch_add(1, Ordering::Relaxed) + 1,
        )
    }

    /// Run `work` as the step `key`.
    pub async fn step<T, F>(&self, key: StepKey, emit: &Emitter, work: F) -> Result<T, DurableError>
    where
        T: Journaled + Send,
        F: Future<Output = T> + Send,
    {
        let Some(engine) = &self.engine else {
            return Ok(work.await);
        };
        let unreadable = |e: serde_json::Error| DurableError::Journal {
            step: key.to_string(),
            message: e.to_string(),
        };
        // The value the work returned, when it ran here: taken as it is
        // rather than read back from its JSON.
        let slot: Mutex<Option<T>> = Mutex::new(None);
        let run: StepFn<'_> = Box::new(|| {
            Box::pin(async {
                emit.release().await;
                let value = work.await;
                let json = value.to_journal().map_err(unreadable)?;
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
                Ok(json)
            })
        });
        let record = engine.step(key, run).await;
        // The work ran here: its value stands, even when the engine then
        // failed to journal it (a cancellation that came meanwhile).
        if let Some(value) = slot.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return Ok(value);
        }
        let record = record?;
        if record.replayed() {
            emit.discard_held();
        }
        T::from_journal(record.into_value()).map_err(unreadable)
    }

    /// Ask for each of `requests` and wait for the durable decisions (a
    /// run with an engine and approvals only): the calls denied, with the
    /// result each gets. A cancelled run denies what is still undecided.
    pub async fn decide(
        &self,
        step: u32,
        requests: Vec<(Approvals, ApprovalRequest)>,
        emit: &Emitter,
        cancel: &CancellationToken,
    ) -> HashMap<String, gate::Refusal> {
        let mut denied = HashMap::new();
        let Some(engine) = &self.engine else {
            return denied;
        };
        let mut waiting = Vec::new();
        for (approvals, request) in requests {
            if !gate::needs_asking(&approvals, &request) {
                continue;
            }
            // Nobody answers through the event: the responder is dropped.
            let (responder, _) = crate::approval::ApprovalResponder::new();
            let _ = emit.send(gate::requested(&request, responder)).await;
            waiting.push((approvals, request));
        }
        for (approvals, request) in waiting {
            let key = DecisionKey::approval(step, request.call_id.clone());
            let asked = serde_json::to_value(&request).unwrap_or_default();
            // The held events go out only when the engine has to wait: a
            // decision it has at once was made in an earlier execution,
            // whose events went out then.
            let (signal, mut heard) = Waiting::new();
            let mut decided = std::pin::pin!(engine.decision(&key, asked, signal));
            let mut listening = true;
            let decision = loop {
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => break Err(DurableError::Cancelled),
                    d = &mut decided => break d,
                    waits = &mut heard, if listening => {
                        listening = false;
                        if waits.is_ok() {
                            emit.release().await;
                        }
                    }
                }
            };
            let decision = match decision.map(serde_json::from_value::<ApprovalDecision>) {
                Ok(Ok(decision)) => decision,
                Ok(Err(e)) => ApprovalDecision::deny(format!("the decision could not be read: {e}")),
                Err(DurableError::Cancelled) => ApprovalDecision::deny("cancelled"),
                Err(e) => ApprovalDecision::deny(e.to_string()),
            };
            if let Err(refusal) = gate::resolve(&approvals, emit, &request, decision).await {
                denied.insert(request.call_id.clone(), refusal);
            }
        }
        denied
    }

    /// Journal the `n` calls of loop step `step` one by one, in call order
    /// (a durable run only): the driver, which the caller runs beside the
    /// calls; `start` tells the caller the first call to run (the ones
    /// before it are journaled: their values are the driver's answer, and
    /// none runs when the whole batch is); each call that runs sends its
    /// value to its sender in `values`, and the driver journals it once the
    /// calls before it are.
    pub fn calls(&self, step: u32, n: usize) -> Option<CallsJournal<'_>> {
        let engine = self.engine.as_ref()?;
        let (start_tx, start) = oneshot::channel();
        let (values, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| oneshot::channel()).unzip();
        let start_tx = Mutex::new(Some(start_tx));
        let driver = Box::pin(async move {
            let mut journaled = vec![None; receivers.len()];
            for (i, receiver) in receivers.into_iter().enumerate() {
                let key = StepKey::tool_call(step, u32::try_from(i).unwrap_or(u32::MAX));
                let start_tx = &start_tx;
                let run: StepFn<'_> = Box::new(move || {
                    Box::pin(async move {
                        if let Some(tx) = start_tx.lock().unwrap_or_else(PoisonError::into_inner).take() {
                            let _ = tx.send(i);
                        }
                        receiver
                            .await
                            .map_err(|_| DurableError::engine("a tool call ended without its result"))
                    })
                });
                match engine.step(key, run).await {
                    Ok(StepRecord::Replayed(value)) => journaled[i] = Some(value),
                    Ok(StepRecord::Ran(_)) => {}
                    Err(e) => return (journaled, Some(e)),
                }
            }
            (journaled, None)
        });
        Some(CallsJournal {
            driver,
            start,
            values,
        })
    }

    /// The run ended: whatever is held goes out.
    pub async fn finish(&self, emit: &Emitter) {
        if self.engine.is_some() {
            emit.release().await;
        }
    }
}

/// The journal's side of one step's tool calls (see [`Journal::calls`]).
pub(crate) struct CallsJournal<'a> {
    /// Journals the calls in order: the values of those replayed, and the
    /// engine's failure that stopped it, if any.
    pub driver: futures::future::BoxFuture<'a, (Vec<Option<serde_json::Value>>, Option<DurableError>)>,
    /// The first call to run (dropped unsent when every call is journaled).
    pub start: oneshot::Receiver<usize>,
    /// Where each call that runs sends its value.
    pub values: Vec<oneshot::Sender<serde_json::Value>>,
}

/// A step's value as the journal keeps it.
pub(crate) trait Journaled: Sized {
    fn to_journal(&self) -> serde_json::Result<serde_json::Value>;
    fn from_journal(value: serde_json::Value) -> serde_json::Result<Self>;
}

impl Journaled for Result<StepOutput, StepFailure> {
    fn to_journal(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(ModelOutcome::from(self))
    }

    fn from_journal(value: serde_json::Value) -> serde_json::Result<Self> {
        serde_json::from_value::<ModelOutcome>(value).map(Into::into)
    }
}

/// A model call's outcome as journaled: every way it ended is a value, so
/// an execution after a crash ends where the first one did.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum ModelOutcome {
    Completed(Box<StepOutput>),
    Failed {
        kind: String,
        status: Option<u16>,
        message: String,
    },
    Cancelled,
    Detached,
    Budget {
        why: String,
    },
}

impl From<&Result<StepOutput, StepFailure>> for ModelOutcome {
    fn from(outcome: &Result<StepOutput, StepFailure>) -> Self {
        match outcome {
            Ok(output) => Self::Completed(Box::new(output.clone())),
            Err(StepFailure::Model(e)) => Self::Failed {
                kind: e.kind().to_owned(),
                status: e.status(),
                message: e.message().to_owned(),
            },
            // A trip is an output (its `trip`), never this failure.
            Err(StepFailure::Cancelled | StepFailure::Tripped(_)) => Self::Cancelled,
            Err(StepFailure::Detached) => Self::Detached,
            Err(StepFailure::Budget(why)) => Self::Budget { why: why.clone() },
        }
    }
}

impl From<ModelOutcome> for Result<StepOutput, StepFailure> {
    fn from(outcome: ModelOutcome) -> Self {
        match outcome {
            ModelOutcome::Completed(output) => Ok(*output),
            ModelOutcome::Failed {
                kind,
                status,
                message,
            } => Err(StepFailure::Model(rebuild_error(&kind, status, message))),
            ModelOutcome::Cancelled => Err(StepFailure::Cancelled),
            ModelOutcome::Detached => Err(StepFailure::Detached),
            ModelOutcome::Budget { why } => Err(StepFailure::Budget(why)),
        }
    }
}

/// A journaled model error of kind `kind` (its message kept; its source,
/// a live error, is not journaled).
fn rebuild_error(kind: &str, status: Option<u16>, message: String) -> ModelError {
    match kind {
        "authentication" => ModelError::authentication(status, message),
        "rate_limited" => ModelError::rate_limited(message, None),
        "quota_exceeded" => ModelError::quota_exceeded(message),
        "context_length_exceeded" => ModelError::context_length_exceeded(message),
        "invalid_request" => ModelError::invalid_request(status, message),
        "server" => ModelError::server(status, message),
        "network" => ModelError::network(message),
        "stream_cut" => ModelError::stream_cut(message),
        _ => ModelError::invalid_response(message, ""),
    }
}
