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
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;

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
        let token = tokio_util::sync::CancellationToken::new();
        if envelope.cancel_requested {
            token.cancel();
        }
        self.runs.list(&id, token.clone());
        let _unlisted = Unlisted(&self.runs, &id);
        let ticket = self
            .instance
            .limiter
            .ticket(false, &self.instance.lifecycle.stopping)
            .map_err(|refused| HandlerError::from(format!("this replica takes no run now ({refused:?})")))?;
        let (requests, mut incoming) = mpsc::channel(1);
        let engine = Bridge { requests, attempt };
        let abandoned = tokio_util::sync::CancellationToken::new();
        let driver = Driver {
            runs: self.runs.clone(),
            instance: self.instance.clone(),
            record,
            envelope,
            token,
            warnings: None,
            durable: Some(DurableRun::new(&id).engine(Arc::new(engine))),
            abandoned: Some(abandoned.clone()),
        };
        let mut task = AbortOnDrop(tokio::spawn(driver.drive(ticket, Begin::Fresh(input.messages))));
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                () = abandoned.cancelled() => {
                    return Err(HandlerError::from(format!(
                        "run {id}: the store is unavailable; the execution stops and is retried"
                    )));
                }
                request = incoming.recv(), if open => match request {
                    Some(request) => self.serve(&ctx, &id, request).await,
                    None => open = false,
                },
                _ = &mut task.0 => break,
            }
        }
        let status = match self.runs.store.load_run(&id).await {
            Ok(Some(record)) => record.status.to_string(),
            _ => "unknown".to_owned(),
        };
        Ok(Json(json!({"id": id, "status": status})))
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
    /// execution meanwhile, it drops the handler, and this with it.)
    async fn serve(&self, ctx: &WorkflowContext<'_>, id: &str, request: Request) {
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
                match journaled {
                    Ok(Json(value)) => {
                        let _ = reply.send(Ok(value));
                    }
                    Err(e) if e.code() == CANCELLED => {
                        let _ = reply.send(Err(DurableError::Cancelled));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(DurableError::engine(e.to_string())));
                    }
                }
            }
            Request::Decision { key, request, reply } => {
                let name = key.to_string();
                mark_awaiting(&self.runs, id, &key, &request).await;
                let decided = ctx.promise::<Json<Value>>(&name).await;
                mark_running(&self.runs, id).await;
                let _ = reply.send(match decided {
                    Ok(Json(value)) => Ok(value),
                    Err(e) if e.code() == CANCELLED => Err(DurableError::Cancelled),
                    Err(e) => Err(DurableError::engine(e.to_string())),
                });
            }
        }
    }
}
