//! A task's updates as A2A streams them (`SendStreamingMessage`,
//! `SubscribeToTask`), read from the run's event log, so any replica
//! streams any task.
//!
//! Invariants: the first update is the task as it stands; then each step's
//! text as chunks of the `answer` artifact (a step's first chunk replaces
//! what an earlier step said), a status update per tool call; the last
//! updates are the task's artifacts whole and its status, once the run
//! ended or paused for a decision: a client that kept only the last
//! artifact and status holds the task as `GetTask` shows it. A pause that
//! was answered since (a replayed log goes past it) does not end the
//! stream. A log that cannot be read ends it with an error.

use std::sync::Arc;

use a2a::{
    A2AError, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use loopwright_runs::Logged;
use loopwright_store::RunStatus;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::task;
use crate::run::Instance;

/// What a stream sends: an update, or the error that ends it.
pub(super) type Update = Result<StreamResponse, A2AError>;

/// Send `first` (the task as it stands), then its updates from the log
/// after event `after`, to `tx` until the task ends or pauses, or the
/// client is gone.
pub(super) async fn relay(
    instance: Arc<Instance>,
    agent: String,
    first: Task,
    after: Option<u64>,
    tx: mpsc::Sender<Update>,
) {
    let id = first.id.clone();
    let mut updates = Updates {
        task: id.clone(),
        context: first.context_id.clone(),
        fresh: true,
    };
    // A task recorded ended (one that never ran) has no log to follow.
    let ended = first.status.state.is_terminal() || first.status.state == TaskState::AuthRequired;
    let snapshot = ended.then(|| first.clone());
    if tx.send(Ok(StreamResponse::Task(first))).await.is_err() {
        return;
    }
    if let Some(task) = snapshot {
        for update in last(task) {
            if tx.send(Ok(update)).await.is_err() {
                return;
            }
        }
        return;
    }
    let (logged_tx, mut logged) = mpsc::channel(64);
    let follow = tokio::spawn(loopwright_runs::follow(
        instance.runs.store().clone(),
        id.clone(),
        after,
        logged_tx,
        |l| l,
    ));
    let mut ended = false;
    while let Some(next) = crate::sse::closed_or(&tx, logged.recv()).await {
        let Some(next) = next else { break };
        let event = match next {
            Logged::Event(_, event) => event,
            Logged::Unreadable(why) => {
                let _ = tx.send(Err(A2AError::internal(why))).await;
                ended = true;
                break;
            }
        };
        let kind = event["type"].as_str().unwrap_or_default();
        if kind == "finished" || (kind == "awaiting_approval" && paused(&instance, &id).await) {
            ended = true;
            break;
        }
        for update in updates.of(&event) {
            if tx.send(Ok(update)).await.is_err() {
                follow.abort();
                return;
            }
        }
    }
    follow.abort();
    if ended {
        crate::run::await_record(instance.runs.store(), &id).await;
        match task::get(&instance, &agent, &id).await {
            Ok(task) => {
                for update in last(task) {
                    if tx.send(Ok(update)).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e)).await;
            }
        }
    }
}

/// Whether run `id` still waits for a decision (a replayed pause may have
/// been answered since).
async fn paused(instance: &Instance, id: &str) -> bool {
    crate::run::await_record(instance.runs.store(), id).await;
    matches!(instance.runs.get(id).await, Ok(r) if r.status == RunStatus::AwaitingApproval)
}

/// The ended or paused task as its last updates: each artifact whole, then
/// its status.
fn last(task: Task) -> Vec<StreamResponse> {
    let mut out: Vec<StreamResponse> = task
        .artifacts
        .unwrap_or_default()
        .into_iter()
        .map(|artifact| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact,
                append: Some(false),
                last_chunk: Some(true),
                metadata: None,
            })
        })
        .collect();
    out.push(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id,
        context_id: task.context_id,
        status: task.status,
        metadata: None,
    }));
    out
}

/// A run's events as a task's updates.
struct Updates {
    task: String,
    context: String,
    /// No text of the current step was sent yet.
    fresh: bool,
}

impl Updates {
    fn of(&mut self, event: &Value) -> Vec<StreamResponse> {
        match event["type"].as_str().unwrap_or_default() {
            "step_started" => {
                self.fresh = true;
                Vec::new()
            }
            "text_delta" => {
                let Some(text) = event["text"].as_str().filter(|t| !t.is_empty()) else {
                    return Vec::new();
                };
                let append = !std::mem::replace(&mut self.fresh, false);
                vec![StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: self.task.clone(),
                    context_id: self.context.clone(),
                    artifact: task::artifact(&self.task, "answer", Part::text(text)),
                    append: Some(append),
                    last_chunk: Some(false),
                    metadata: None,
                })]
            }
            "tool_call" => vec![self.working(
                format!("Calling {}.", event["tool"].as_str().unwrap_or("a tool")),
                json!({"tool_call": {"call_id": event["call_id"], "tool": event["tool"], "input": event["input"]}}),
            )],
            "tool_result" => vec![self.working(
                format!("{} answered.", event["tool"].as_str().unwrap_or("A tool")),
                json!({"tool_result": {"call_id": event["call_id"], "tool": event["tool"], "is_error": event["is_error"]}}),
            )],
            _ => Vec::new(),
        }
    }

    fn working(&self, text: String, data: Value) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task.clone(),
            context_id: self.context.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(Message {
                    task_id: Some(self.task.clone()),
                    context_id: Some(self.context.clone()),
                    ..Message::new(Role::Agent, vec![Part::text(text), Part::data(data)])
                }),
                timestamp: Some(chrono::Utc::now()),
            },
            metadata: None,
        })
    }
}
