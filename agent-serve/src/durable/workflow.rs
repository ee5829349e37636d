//! The Restate workflow of a durable run: its `run` handler executes the
//! run (every execution replays the journal first), its `decide` handler
//! resolves an approval's durable promise.
//!
//! Invariants: the handler owns Restate's context and the loop's task; the
//! task is aborted when the handler is dropped (Restate abandoned the
//! execution: suspended, cut off, or the replica stopping), so an abandoned
//! execution writes no record; an execution that ends returns the run's
//! status, and the run's record says the same.

use std::sync::Arc;

use loopwright_core::Message;
use loopwright_core::durable::{DurableError, DurableRun};
use loopwright_store::RunStatus;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bridge::{Bridge, Request};
use super::runs::{Execution, begin, mark_awaiting, mark_running};
use crate::run::Instance;
use crate::runs::Runs;
use crate::runs::drive::{Begin, Driver};

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
    pub(crate) instance: Arc<Instance>,
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
            .instance
            .limiter
            .ticket(false, &self.instance.lifecycle.stopping)
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
            instance: self.instance.clone(),
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
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                () = abandoned.cancelled() => return Err(stop()),
                request = incoming.recv(), if open => match request {
                    Some(request) => tokio::select! {
                        biased;
                        () = abandoned.cancelled() => return Err(stop()),
                        () = self.serve(&ctx, &id, &token, from_seq, request) => {}
                    },
                    None => open = false,
                },
                _ = &mut task.0 => break,
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
    async fn serve(
        &self,
        ctx: &WorkflowContext<'_>,
        id: &str,
        token: &CancellationToken,
        from_seq: u64,
        request: Request,
    ) {
        match request {
            Request::Step {
                key,
                ready,
                value,
                reply,
            } => {
                let journaled = ctx
                    .run(move || async move {
                        let _ = ready.send(());
                        match value.await {
                            Ok(Ok(value)) => Ok(Json(value)),
                            Ok(Err(e)) => Err(HandlerError::from(e.to_string())),
                            Err(_) => Err(HandlerError::from("the run's step was dropped before its value")),
                        }
                    })
                    .name(key)
                    .await;
                let _ = reply.send(match journaled {
                    Ok(Json(value)) => Ok(value),
                    Err(e) => Err(failure(&e, token)),
                });
            }
            Request::Decision {
                key,
                request,
                mut waiting,
                reply,
            } => {
                let name = key.to_string();
                let mut promise = std::pin::pin!(ctx.promise::<Json<Value>>(&name));
                // Known at once: decided in an earlier execution (replayed).
                let decided = match futures::poll!(promise.as_mut()) {
                    std::task::Poll::Ready(decided) => decided,
                    std::task::Poll::Pending => {
                        waiting.now();
                        mark_awaiting(&self.runs, id, from_seq, &key, &request).await;
                        let decided = promise.await;
                        mark_running(&self.runs, id).await;
                        decided
                    }
                };
                let _ = reply.send(match decided {
                    Ok(Json(value)) => Ok(value),
                    Err(e) => Err(failure(&e, token)),
                });
            }
        }
    }
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
