//! A2A's operations, parsed by either binding (JSON-RPC, HTTP+JSON) into
//! one [`Op`] and answered here as one [`Reply`], which the binding then
//! writes in its own shape.

use std::sync::Arc;

use a2a::{
    A2AError, CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, error_code,
};
use serde_json::Value;

use super::{card, stream, task};
use crate::run::Instance;

/// An operation of the protocol, its request parsed.
pub(super) enum Op {
    /// `SendMessage`.
    Send(SendMessageRequest),
    /// `SendStreamingMessage`.
    SendStreaming(SendMessageRequest),
    /// `GetTask`.
    Get(GetTaskRequest),
    /// `ListTasks`.
    List(ListTasksRequest),
    /// `CancelTask`.
    Cancel(CancelTaskRequest),
    /// `SubscribeToTask`.
    Subscribe(SubscribeToTaskRequest),
    /// `GetExtendedAgentCard`.
    ExtendedCard,
    /// One of the push-notification configuration methods.
    Push,
}

/// What an operation answers.
pub(super) enum Reply {
    /// One JSON value (the v1.0 ProtoJSON of the result).
    Value(Value),
    /// A stream: `first`, then the updates from the log after `after`.
    Stream { first: Box<Task>, after: Option<u64> },
}

/// Perform `op` for `agent` (served here; its card at `url`).
pub(super) async fn perform(
    instance: &Arc<Instance>,
    agent: &str,
    url: &str,
    op: Op,
) -> Result<Reply, A2AError> {
    match op {
        Op::Send(request) => {
            let immediately = request.configuration.as_ref().and_then(|c| c.return_immediately) == Some(true);
            let started = task::start(instance, agent, request).await?;
            if !immediately {
                task::settle(instance, &started.id, started.after).await;
            }
            let task = task::get(instance, agent, &started.id).await?;
            value(&SendMessageResponse::Task(task))
        }
        Op::SendStreaming(request) => {
            let started = task::start(instance, agent, request).await?;
            let first = task::get(instance, agent, &started.id).await?;
            Ok(Reply::Stream {
                first: Box::new(first),
                after: started.after,
            })
        }
        Op::Get(request) => value(&task::get(instance, agent, &request.id).await?),
        Op::List(request) => value(&task::list(instance, agent, &request).await?),
        Op::Cancel(request) => value(&task::cancel(instance, agent, &request).await?),
        Op::Subscribe(request) => {
            let first = task::get(instance, agent, &request.id).await?;
            if first.status.state.is_terminal() {
                return Err(A2AError::unsupported_operation(format!(
                    "task {} is {}: there is nothing to subscribe to; GetTask reads it",
                    first.id,
                    task::state_name(&first.status.state)
                )));
            }
            Ok(Reply::Stream {
                first: Box::new(first),
                after: None,
            })
        }
        Op::ExtendedCard => extended(instance, agent, url).await,
        Op::Push => Err(push_refused()),
    }
}

/// The card with one skill per tool: only where keys are served (the
/// request that reached here carried one).
async fn extended(instance: &Instance, agent: &str, url: &str) -> Result<Reply, A2AError> {
    let served = instance
        .agents
        .get(agent)
        .ok_or_else(|| A2AError::task_not_found(agent))?;
    if instance.keys.is_empty() {
        return Err(A2AError::new(
            error_code::EXTENDED_CARD_NOT_CONFIGURED,
            "this server takes no API keys, so its public card is the whole card",
        ));
    }
    let catalog = served.agent().tools().catalog().await;
    let tools = catalog
        .tools()
        .iter()
        .map(|t| (t.name.clone(), t.tool.definition().description.clone()))
        .collect();
    value(&card::card(served, url, true, Some(tools)))
}

/// Push notifications are not delivered here: said the same way wherever
/// a client asks for them.
pub(super) fn push_refused() -> A2AError {
    A2AError::new(
        error_code::PUSH_NOTIFICATION_NOT_SUPPORTED,
        "this server delivers no push notifications: follow a task with SubscribeToTask (or \
         SendStreamingMessage), or read it with GetTask",
    )
}

fn value<T: serde::Serialize>(result: &T) -> Result<Reply, A2AError> {
    serde_json::to_value(result)
        .map(Reply::Value)
        .map_err(|e| A2AError::internal(format!("the answer could not be written: {e}")))
}

/// Updates of a [`Reply::Stream`], sent to `tx` (the binding frames them).
pub(super) async fn stream_to(
    instance: Arc<Instance>,
    agent: String,
    first: Box<Task>,
    after: Option<u64>,
    tx: tokio::sync::mpsc::Sender<stream::Update>,
) {
    stream::relay(instance, agent, *first, after, tx).await;
}
