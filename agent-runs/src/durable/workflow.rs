//! The Restate workflow of a durable run: its `run` handler executes the
//! run (every execution replays the journal first), its `decide` handler
//! resolves an approval's durable promise.
//!
//! Invariants: the handler owns Restate's context and the loop's task; the
//! task is aborted when the handler is dropped (Restate abandoned the
//! execution: suspended, cut off, or the replica stopping), so an abandoned
//! execution writes no record; an execution that ends returns the run's
//! status, and the run's record says the same; a short tool call's entry
//! may still be on its way to Restate's log while the loop goes on (any
//! later entry comes after it on the same stream and in the same log).

use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use loopwright_core::Message;
use loopwright_core::durable::{DurableError, DurableRun};
use loopwright_store::RunStatus;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::bridge::{Bridge, Request};
use super::runs::{Execution, begin, mark_awaiting, mark_running};
use crate::drive::{Begin, Driver};
use crate::{Host, Runs};

/// Restate's status code of a cancelled invocation's context calls.
const CANCELLED: u16 = 409;

/// A durable run's input, journaled by Restate with the invocation.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunInput {
    /// History, then the turn.
    pub(crate) messages: Vec<Message>,
}

/// A decision for one of the run's durable promises.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DecideInput {
    pub(crate) key: String,
    pub(crate) decision: Value,
}

/// The workflow's handlers, over this replica's runs.
pub(crate) struct RunWorkflow {
    pub(crate) runs: Arc<Runs>,
    /// The agents and the limit executions run under here.
    pub(crate) host: Arc<dyn Host>,
    /// A tool call that took less goes on before Restate's log confirms it
    /// ([`Restate::overlap_below`](super::Restate::overlap_below)).
    pub(crate) overlap_below: Duration,
}

/// Aborts the loop's task when the handler is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Removes the run's cancellation from this replica's table.
struct Unlisted<'a>(&'a Runs, &'a str);

impl Drop for Unlisted<'_> {
    fn drop(&mut self) {
        self.0.unlist(self.1);
    }
}

#[restate_sdk::workflow(name = "LoopwrightRun")]
impl RunWorkflow {
    /// Execute the run (or its remainder).
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        Json(input): Json<RunInput>,
    ) -> Result<Json<Value>, HandlerError> {
        let id = ctx.key().to_owned();
        let ticket = self
            .host
            .ticket(false)
            .map_err(|refused| HandlerError::from(format!("this replica takes no run now ({refused:?})")))?;
        let Some(Execution {
            record,
            envelope,
            attempt,
        }) = begin(&self.runs, &id).await?
        else {
            return Ok(Json(json!({"id": id, "status": "ended"})));
        };
        // Not the server's: at its hard stop the execution is dropped (and
        // continued elsewhere), not cancelled.
        let token = CancellationToken::new();
        if envelope.cancel_requested {
            token.cancel();
        }
        let from_seq = envelope.durable.as_ref().map_or(0, |d| d.from_seq);
        self.runs.list(&id, token.clone());
        let _unlisted = Unlisted(&self.runs, &id);
        let (requests, mut incoming) = mpsc::channel(1);
        let engine = Bridge { requests, attempt };
        let abandoned = CancellationToken::new();
        let driver = Driver {
            runs: self.runs.clone(),
            host: self.host.clone(),
            record,
            envelope,
            token: token.clone(),
            warnings: None,
            durable: Some(DurableRun::new(&id).engine(Arc::new(engine))),
            abandoned: Some(abandoned.clone()),
        };
        let mut task = AbortOnDrop(tokio::spawn(driver.drive(ticket, Begin::Fresh(input.messages))));
        let stop = || {
            HandlerError::from(format!(
                "run {id}: this execution stopped (the store is unavailable, or the replica is stopping); Restate retries it"
            ))
        };
        // The requests being journaled: a tool call's stays here after the
        // loop has its value, until Restate's log has it.
        let mut journaling = InFlight::default();
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                () = abandoned.cancelled() => return Err(stop()),
                () = journaling.progress(), if !journaling.is_empty() => {}
                request = incoming.recv(), if open => match request {
                    Some(request) => journaling.push(self.serve(&ctx, &id, &token, from_seq, request)),
                    None => open = false,
                },
                _ = &mut task.0 => break,
            }
        }
        // Anything still in flight ends first (normally nothing: the loop
        // waited for each answer, and a decision it gave up on ends at once).
        while !journaling.is_empty() {
            tokio::select! {
                biased;
                () = abandoned.cancelled() => return Err(stop()),
                () = journaling.progress() => {}
            }
        }
        // The run's record says how it ended; one that does not (its
        // driver gave up on the store, or panicked) is executed again.
        match self.runs.store.load_run(&id).await {
            Ok(Some(record))
                if record.status.is_finished() || record.status == RunStatus::AwaitingApproval =>
            {
                Ok(Json(json!({"id": id, "status": record.status.to_string()})))
            }
            Ok(Some(record)) => Err(HandlerError::from(format!(
                "run {id} is still {} after its execution: executed again",
                record.status
            ))),
            Ok(None) => Ok(Json(json!({"id": id, "status": "deleted"}))),
            Err(e) => Err(HandlerError::from(format!("run {id}: {e}"))),
        }
    }

    /// Resolve one of the run's decisions.
    #[handler]
    async fn decide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        Json(input): Json<DecideInput>,
    ) -> Result<(), HandlerError> {
        ctx.resolve_promise::<Json<Value>>(&input.key, Json(input.decision));
        Ok(())
    }
}

impl RunWorkflow {
    /// Journal one request of the loop. (When Restate abandons the
    /// execution meanwhile, it drops the handler, and this with it.) A
    /// cancellation from Restate cancels the run.
    fn serve<'a, 'c: 'a>(
        &'a self,
        ctx: &'a WorkflowContext<'c>,
        id: &'a str,
        token: &'a CancellationToken,
        from_seq: u64,
        request: Request,
    ) -> Entry<'a> {
        match request {
            Request::Step {
                key,
                confirmed,
                ready,
                value,
                reply,
            } => {
                // Answered by the closure when the value need not wait for
                // Restate's log (the closure's end hands it over), else
                // with what the log has.
                let reply = Arc::new(Mutex::new(Some(reply)));
                let early = (!confirmed).then(|| reply.clone());
                let overlap_below = self.overlap_below;
                let journaled = ctx
                    .run(move || async move {
                        let started = Instant::now();
                        let _ = ready.send(());
                        match value.await {
                            Ok(Ok(value)) => {
                                if let Some(slot) = early.filter(|_| started.elapsed() < overlap_below)
                                    && let Some(reply) = take(&slot)
                                {
                                    let _ = reply.send(Ok(value.clone()));
                                }
                                Ok(Json(value))
                            }
                            Ok(Err(e)) => Err(HandlerError::from(e.to_string())),
                            Err(_) => Err(HandlerError::from("the run's step was dropped before its value")),
                        }
                    })
                    .name(key);
                let slot = reply.clone();
                let future = Box::pin(async move {
                    let journaled = journaled
                        .await
                        .map(|Json(value)| value)
                        .map_err(|e| failure(&e, token));
                    if let Some(reply) = take(&slot) {
                        let _ = reply.send(journaled);
                    }
                });
                Entry {
                    future,
                    answered: (!confirmed).then_some(reply),
                }
            }
            Request::Decision {
                key,
                request,
                mut waiting,
                mut reply,
            } => Entry::awaited(Box::pin(async move {
                let name = key.to_string();
                let mut promise = std::pin::pin!(ctx.promise::<Json<Value>>(&name));
                // Known at once: decided in an earlier execution (replayed).
                let decided = match futures::poll!(promise.as_mut()) {
                    std::task::Poll::Ready(decided) => decided,
                    std::task::Poll::Pending => {
                        waiting.now();
                        mark_awaiting(&self.runs, id, from_seq, &key, &request).await;
                        // A loop that gave up on the decision (its run was
                        // cancelled) goes on journaling: the promise is let
                        // go, so no two context futures wait at once.
                        let decided = tokio::select! {
                            biased;
                            () = reply.closed() => return,
                            decided = &mut promise => decided,
                        };
                        mark_running(&self.runs, id).await;
                        decided
                    }
                };
                let _ = reply.send(match decided {
                    Ok(Json(value)) => Ok(value),
                    Err(e) => Err(failure(&e, token)),
                });
            })),
        }
    }
}

/// The reply slot of a step's answer.
type ReplySlot = Arc<Mutex<Option<oneshot::Sender<Result<Value, DurableError>>>>>;

/// One journal request in flight.
struct Entry<'a> {
    future: BoxFuture<'a, ()>,
    /// A tool call's reply, which its closure may answer with the value it
    /// hands to Restate: once it has, the request is let go (see
    /// [`InFlight`]).
    answered: Option<ReplySlot>,
}

impl<'a> Entry<'a> {
    fn awaited(future: BoxFuture<'a, ()>) -> Self {
        Self {
            future,
            answered: None,
        }
    }

    /// Poll it; whether it is done (ended, or let go).
    fn poll_done(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        if self.future.as_mut().poll(cx).is_ready() {
            return true;
        }
        self.answered.as_ref().is_some_and(|slot| taken(slot))
    }
}

/// The journal requests in flight, every one polled whenever the handler
/// is woken.
///
/// Restate's Rust SDK (0.13) lets one context future at a time wait for
/// Restate's answers: a second one waiting beside it can miss the answer
/// the first one read, and wait forever. So a tool call whose closure
/// answered the loop early is let go as soon as that poll returns (the same
/// poll handed its value to Restate, before the handler takes the loop's
/// next request); its confirmation is read by whichever future waits next
/// (and kept by the SDK until the execution ends), and a cancellation from
/// Restate reaches that one. A decision the loop gave up on ends at once.
/// So what waits here is one model call, long tool call or decision at a
/// time: the loop asks for one at a time.
#[derive(Default)]
struct InFlight<'a>(Vec<Entry<'a>>);

impl<'a> InFlight<'a> {
    fn push(&mut self, entry: Entry<'a>) {
        self.0.push(entry);
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Resolves once at least one request is done (each is polled).
    async fn progress(&mut self) {
        std::future::poll_fn(|cx| {
            let before = self.0.len();
            self.0.retain_mut(|entry| !entry.poll_done(cx));
            if self.0.len() < before {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

/// The reply of a step, once: whoever takes it answers the loop.
fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// Whether the reply was taken (the loop has its answer).
fn taken<T>(slot: &Mutex<Option<T>>) -> bool {
    slot.lock().unwrap_or_else(PoisonError::into_inner).is_none()
}

/// What a failed context call means for the loop: Restate's cancellation
/// cancels the run; anything else is the engine's failure.
fn failure(error: &TerminalError, token: &CancellationToken) -> DurableError {
    if error.code() == CANCELLED {
        token.cancel();
        DurableError::Cancelled
    } else {
        DurableError::engine(error.to_string())
    }
}
