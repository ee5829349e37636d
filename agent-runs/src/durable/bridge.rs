//! The loop's engine, as the workflow handler serves it: the loop runs in
//! its own task and asks for steps and decisions over a channel; the handler,
//! which owns Restate's workflow context, journals them.
//!
//! Invariants: requests come one at a time, in the loop's order (so Restate
//! sees the `ctx.run`s in the same order, named alike, in every execution);
//! a step's work runs in the loop's task, only after the handler's
//! `ctx.run` closure said so: a replayed step's closure never runs, and the
//! work is dropped unrun; a tool call's value is answered as its closure
//! ends (handed to Restate before the next request is taken) when the call
//! was short (`confirmed: false`, see
//! [`Durability`](loopwright_core::durable::Durability) and
//! [`OVERLAP_SHARE`](super::OVERLAP_SHARE)), a model call's and a long tool
//! call's once Restate's log has it; when the handler is gone (its execution
//! abandoned) every request fails, and the loop's task is aborted by the
//! handler's guard anyway.

use async_trait::async_trait;
use loopwright_core::durable::{
    DecisionKey, Durability, DurableError, StepFn, StepKey, StepKind, StepRecord, Waiting,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// What the loop asks the handler.
pub(crate) enum Request {
    /// Journal a step: the handler's closure sends `ready` when the work
    /// must run, then waits for `value`; `reply` is the step's value (the
    /// journaled one when the closure did not run).
    Step {
        key: String,
        /// Answer only once Restate's log has the value (a model call);
        /// else as the closure ends, if the call was short (a tool call).
        confirmed: bool,
        ready: oneshot::Sender<()>,
        value: oneshot::Receiver<Result<Value, DurableError>>,
        reply: oneshot::Sender<Result<Value, DurableError>>,
    },
    /// Wait for a decision (saying so through `waiting` when it is not
    /// known at once).
    Decision {
        key: DecisionKey,
        request: Value,
        waiting: Waiting,
        reply: oneshot::Sender<Result<Value, DurableError>>,
    },
}

/// The loop's side.
pub(crate) struct Bridge {
    pub(crate) requests: mpsc::Sender<Request>,
    pub(crate) attempt: u32,
}

fn gone() -> DurableError {
    DurableError::engine("the run's Restate execution ended")
}

#[async_trait]
impl Durability for Bridge {
    async fn step(&self, key: StepKey, run: StepFn<'_>) -> Result<StepRecord, DurableError> {
        let (ready_tx, ready_rx) = oneshot::channel();
        let (value_tx, value_rx) = oneshot::channel();
        let (reply_tx, reply_rx) = oneshot::channel();
        self.requests
            .send(Request::Step {
                key: key.to_string(),
                confirmed: key.kind != StepKind::ToolCall,
                ready: ready_tx,
                value: value_rx,
                reply: reply_tx,
            })
            .await
            .map_err(|_| gone())?;
        if ready_rx.await.is_ok() {
            let _ = value_tx.send(run().await);
            return reply_rx.await.map_err(|_| gone())?.map(StepRecord::Ran);
        }
        // The closure was dropped unrun: the journal had the value.
        drop(run);
        reply_rx.await.map_err(|_| gone())?.map(StepRecord::Replayed)
    }

    async fn decision(
        &self,
        key: &DecisionKey,
        request: Value,
        waiting: Waiting,
    ) -> Result<Value, DurableError> {
        let (reply_tx, reply_rx) = oneshot::channel();
        self.requests
            .send(Request::Decision {
                key: key.clone(),
                request,
                waiting,
                reply: reply_tx,
            })
            .await
            .map_err(|_| gone())?;
        reply_rx.await.map_err(|_| gone())?
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }
}
