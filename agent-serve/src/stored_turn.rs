//! A turn of a stateless surface (Chat Completions, Anthropic Messages)
//! that brings client tools, or answers them: a stored run
//! ([`loopwright_runs`]) followed from its event log, so the client's tool
//! results continue it on any replica.
//!
//! Invariants:
//! - the client sees a paused run's client tool calls under ids that name
//!   the run ([`crate::client_tools::exposed_id`]); a request whose
//!   trailing tool results name them continues that run, and must answer
//!   every call it waits for and no other: anything else is a 400 naming
//!   the call, and nothing is decided;
//! - calls that would ask a person are denied as on every synchronous
//!   request ([`RunOptions::deny_pauses`](loopwright_runs::RunOptions));
//!   only client tools pause the run;
//! - the pieces a client sees are the same as a run of the request's own
//!   ([`crate::run::Transcript`]); the ending is read from the run's record,
//!   written before its log's last event.

use std::sync::Arc;

use loopwright_core::agent::{PendingCall, PendingKind};
use loopwright_core::{AgentEvent, ExitReason, Usage};
use loopwright_store::{RunRecord, RunStatus, Store};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::{ApiError, Kind, Shape};
use crate::run::{CancelOnDrop, Instance, Piece, Stop, Tokens, Transcript};
use crate::sse::closed_or;
use loopwright_runs::{Decision, Logged, RunSpec, follow, view};

/// Events buffered between the log's reader and the renderer.
const LOG_BUFFER: usize = 64;

/// A client tool call, as the client sees it.
#[derive(Debug, Clone)]
pub(crate) struct ClientCall {
    /// The id naming the run and the call.
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

/// The client's output for one of a paused run's calls.
#[derive(Debug, Clone)]
pub(crate) struct ClientOutput {
    /// The run's own id of the call.
    pub(crate) call_id: String,
    pub(crate) output: Value,
    pub(crate) is_error: bool,
}

/// How a stored turn ended, for a client.
#[derive(Debug, Clone)]
pub(crate) enum TurnEnd {
    /// An answer (or one a limit or a guardrail cut short).
    Answer {
        stop: Stop,
        /// A structured answer's JSON.
        output: Option<String>,
        /// Why a guardrail stopped it.
        refusal: Option<String>,
        usage: Tokens,
    },
    /// The run waits for the client's tools.
    Calls(Vec<ClientCall>),
    /// The run paused (from [`Turn::follow_events`]): what it waits for.
    Paused(Vec<PendingCall>),
    /// No answer: what went wrong.
    Failed(String),
}

/// A stored turn being followed: the run, where its log goes on, and the
/// guard that cancels it if the client leaves first.
pub(crate) struct Turn {
    pub(crate) run_id: String,
    after: Option<u64>,
    guard: CancelOnDrop,
    store: Arc<dyn Store>,
}

/// Start `spec` (its client tools stored with it, pauses for a person
/// denied) as a stored turn.
pub(crate) async fn start(
    instance: &Arc<Instance>,
    mut spec: RunSpec,
    shape: Shape,
) -> Result<Turn, ApiError> {
    spec.options.deny_pauses = true;
    start_pausing(instance, spec, shape).await
}

/// Start `spec` as a stored turn that may pause for a person too (its
/// surface asks them, as AG-UI's interrupts do).
pub(crate) async fn start_pausing(
    instance: &Arc<Instance>,
    spec: RunSpec,
    shape: Shape,
) -> Result<Turn, ApiError> {
    let record = instance
        .runs
        .start(instance.clone(), spec)
        .await
        .map_err(|e| ApiError::runs(shape, e))?;
    Ok(Turn {
        guard: CancelOnDrop::new(instance.runs.clone(), &record.id),
        run_id: record.id,
        after: None,
        store: instance.runs.store().clone(),
    })
}

/// The run a stateless client's tool results answer, and each result as
/// its call's output: every `(id, text, is_error)` must name a call of one
/// paused run of this server ([`crate::client_tools::exposed_id`]), or the
/// request is a 400 naming the result (`what`: how the surface calls it,
/// "the tool message").
pub(crate) fn named_outputs(
    results: impl IntoIterator<Item = (String, String, bool)>,
    what: &str,
    shape: Shape,
) -> Result<(String, Vec<ClientOutput>), ApiError> {
    let bad = |m: String| ApiError::new(shape, Kind::BadRequest, m);
    let mut run: Option<String> = None;
    let mut outputs = Vec::new();
    for (id, text, is_error) in results {
        let Some((of, call)) = crate::client_tools::parse_exposed_id(&id) else {
            return Err(bad(format!(
                "{what} for {id:?} answers a call this server did not make (the calls it makes have ids \
                 run_...)"
            )));
        };
        match &run {
            Some(run) if run != of => {
                return Err(bad(format!(
                    "{what}s answer the calls of two runs ({run} and {of}): answer one run's calls"
                )));
            }
            _ => run = Some(of.to_owned()),
        }
        outputs.push(ClientOutput {
            call_id: call.to_owned(),
            output: Value::String(text),
            is_error,
        });
    }
    Ok((run.unwrap_or_default(), outputs))
}

/// Continue paused run `run_id` with the client's `outputs`, each for one
/// of its pending calls, all of them.
pub(crate) async fn resume(
    instance: &Arc<Instance>,
    run_id: &str,
    outputs: Vec<ClientOutput>,
    shape: Shape,
) -> Result<Turn, ApiError> {
    let decisions = outputs
        .into_iter()
        .map(|o| Decision {
            is_error: o.is_error,
            ..Decision::output(o.call_id, o.output)
        })
        .collect();
    resume_decided(instance, run_id, decisions, shape).await
}

/// Continue paused run `run_id` with `decisions`, each for one of its
/// pending calls, all of them: anything else is a 400 naming the call.
pub(crate) async fn resume_decided(
    instance: &Arc<Instance>,
    run_id: &str,
    decisions: Vec<Decision>,
    shape: Shape,
) -> Result<Turn, ApiError> {
    let bad = |m: String| ApiError::new(shape, Kind::BadRequest, m);
    let record = match instance.runs.get(run_id).await {
        Ok(record) => record,
        Err(loopwright_runs::RunsError::NoSuchRun { .. }) => {
            return Err(bad(format!(
                "the answers name calls of run {run_id}, which this server does not have"
            )));
        }
        Err(e) => return Err(ApiError::runs(shape, e)),
    };
    let shown = view(&record);
    let Some(pending) = shown["pending_approvals"].as_array() else {
        return Err(bad(format!(
            "the answers name calls of run {run_id}, which is {}: its calls were answered already",
            record.status
        )));
    };
    for decision in &decisions {
        if !pending.iter().any(|p| p["call_id"] == decision.call_id.as_str()) {
            return Err(bad(format!(
                "an answer names call {}, which run {run_id} does not wait for",
                decision.call_id
            )));
        }
    }
    let missing: Vec<String> = pending
        .iter()
        .filter(|p| !decisions.iter().any(|d| p["call_id"] == d.call_id.as_str()))
        .map(|p| {
            format!(
                "{} ({})",
                p["call_id"].as_str().unwrap_or_default(),
                p["tool"].as_str().unwrap_or_default()
            )
        })
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "run {run_id} waits for an answer to call(s) {} too: answer each",
            missing.join(", ")
        )));
    }
    let after = shown["next_event"].as_u64().and_then(|n| n.checked_sub(1));
    instance
        .runs
        .decide(instance.clone(), run_id, &decisions)
        .await
        .map_err(|e| ApiError::runs(shape, e))?;
    Ok(Turn {
        guard: CancelOnDrop::new(instance.runs.clone(), run_id),
        run_id: run_id.to_owned(),
        after,
        store: instance.runs.store().clone(),
    })
}

impl Turn {
    /// Follow the turn to its end, sending to `client` what `render`
    /// makes of each piece (with no client, only `render` sees them).
    /// `None` when the client left (the run is cancelled).
    pub(crate) async fn follow<E: Send>(
        self,
        structured: bool,
        client: Option<&mpsc::Sender<E>>,
        mut render: impl FnMut(Piece) -> Vec<E>,
    ) -> Option<TurnEnd> {
        let run_id = self.run_id.clone();
        let mut transcript = Transcript::new(structured);
        let end = self
            .follow_events(client, |event| match transcript.piece(event) {
                Some(piece) => render(piece),
                None => Vec::new(),
            })
            .await?;
        Some(match end {
            TurnEnd::Paused(pending) => TurnEnd::Calls(
                pending
                    .iter()
                    .filter(|p| p.kind == PendingKind::ClientTool)
                    .map(|p| ClientCall {
                        id: crate::client_tools::exposed_id(&run_id, &p.call_id),
                        name: p.tool.clone(),
                        arguments: p.arguments.clone(),
                    })
                    .collect(),
            ),
            other => other,
        })
    }

    /// Follow the turn to its end or pause, sending to `client` what
    /// `render` makes of each of its events: [`TurnEnd::Paused`] with what
    /// it waits for (its record says so by then), else how it ended.
    /// `None` when the client left (the run is cancelled).
    pub(crate) async fn follow_events<E: Send>(
        mut self,
        client: Option<&mpsc::Sender<E>>,
        mut render: impl FnMut(&AgentEvent) -> Vec<E>,
    ) -> Option<TurnEnd> {
        let (tx, mut rx) = mpsc::channel(LOG_BUFFER);
        let reader = tokio::spawn(follow(
            self.store.clone(),
            self.run_id.clone(),
            self.after,
            tx,
            |l| l,
        ));
        let end = loop {
            let next = match client {
                Some(client) => closed_or(client, rx.recv()).await?,
                None => rx.recv().await,
            };
            let value = match next {
                Some(Logged::Event(_, value)) => value,
                Some(Logged::Unreadable(message)) => break TurnEnd::Failed(message),
                None => break self.ending().await,
            };
            let Ok(event) = serde_json::from_value::<AgentEvent>(value) else {
                continue;
            };
            match &event {
                AgentEvent::Finished { .. } => break self.ending().await,
                AgentEvent::AwaitingApproval { pending, .. } => {
                    // The client may answer at once: its run must be paused by then.
                    crate::run::await_record(&self.store, &self.run_id).await;
                    break TurnEnd::Paused(pending.clone());
                }
                _ => {}
            }
            for e in render(&event) {
                if let Some(client) = client
                    && client.send(e).await.is_err()
                {
                    reader.abort();
                    return None;
                }
            }
        };
        reader.abort();
        self.guard.disarm();
        Some(end)
    }

    /// The run's end, from its record.
    async fn ending(&self) -> TurnEnd {
        match self.store.load_run(&self.run_id).await {
            Ok(Some(record)) => ending_of(&record),
            Ok(None) => TurnEnd::Failed(format!("run {} was deleted while it was read", self.run_id)),
            Err(e) => TurnEnd::Failed(format!("run {} cannot be read: {e}", self.run_id)),
        }
    }
}

/// How `record`'s run ended, for a client.
fn ending_of(record: &RunRecord) -> TurnEnd {
    let result = record.result.as_ref();
    let error = || {
        record
            .error
            .as_ref()
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("the run failed")
            .to_owned()
    };
    let usage = result
        .and_then(|r| r.get("usage"))
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
        .map(|u| Tokens::from(&u))
        .unwrap_or_default();
    let tripped = record
        .error
        .as_ref()
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        == Some("tripped");
    match record.status {
        RunStatus::Completed => {
            let exit = result
                .and_then(|r| r.get("exit"))
                .and_then(|e| serde_json::from_value::<ExitReason>(e.clone()).ok());
            let stop = match exit {
                Some(ExitReason::MaxSteps | ExitReason::TokenLimit) => Stop::Length,
                _ => Stop::End,
            };
            let output = result
                .and_then(|r| r.get("output"))
                .filter(|o| !o.is_null())
                .map(Value::to_string);
            TurnEnd::Answer {
                stop,
                output,
                refusal: None,
                usage,
            }
        }
        RunStatus::Failed if tripped => TurnEnd::Answer {
            stop: Stop::Refused,
            output: None,
            refusal: Some(error()),
            usage,
        },
        RunStatus::Cancelled => TurnEnd::Failed("the run was cancelled".to_owned()),
        _ => TurnEnd::Failed(error()),
    }
}
