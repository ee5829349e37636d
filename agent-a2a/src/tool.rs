//! One remote agent as a tool: the model's message sent as a task,
//! followed to its end; a question the task asks (`input-required`) put to
//! the person behind the run and the answer sent back; the remote task
//! cancelled when the call is.
//!
//! Invariants: every call ends with the remote task ended or cancelled
//! (a cancelled call sends `CancelTask` for the task it started, once its
//! id is known); a question is asked at most [`MAX_QUESTIONS`] times per
//! call; the remote agent's failure is the tool's error result, naming
//! the state and what the agent said.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{Message, Part, Role, SendMessageResponse, StreamResponse, Task, TaskState};
use async_trait::async_trait;
use futures::StreamExt;
use loopwright_types::{
    Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, UserInputAnswer, UserInputRequest,
};
use reqwest::Url;
use serde_json::{Value, json};

use crate::A2aError;
use crate::rpc::Remote;
use crate::task::{Tracked, state_name};

/// The most questions one call answers before it gives up.
pub(crate) const MAX_QUESTIONS: usize = 8;

/// How often a task is read while it works, when the agent does not stream.
const POLL: Duration = Duration::from_millis(250);

/// How long cancelling the remote task may take.
const CANCEL_PATIENCE: Duration = Duration::from_secs(5);

/// A remote agent as a tool.
pub(crate) struct RemoteAgent {
    pub(crate) remote: Remote,
    pub(crate) endpoint: Url,
    pub(crate) streaming: bool,
    pub(crate) definition: ToolDefinition,
    pub(crate) timeout: Option<Duration>,
}

/// The tool's arguments.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Ask {
    message: String,
    #[serde(default)]
    context_id: Option<String>,
}

/// The input schema every remote agent's tool takes.
pub(crate) fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "What to ask the agent, in plain words."},
            "context_id": {"type": "string", "description": "To go on with an earlier conversation with this agent: the context_id its answer gave."}
        },
        "required": ["message"],
        "additionalProperties": false
    })
}

#[async_trait]
impl Tool for RemoteAgent {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn timeout_for(&self, _input: &Value) -> Option<Duration> {
        self.timeout
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let ask: Ask = serde_json::from_value(input).map_err(|e| {
            ToolError::invalid_input(format!(
                "{e}: give {{\"message\": \"...\"}} and, to go on, \"context_id\""
            ))
        })?;
        let mut message = Message::new(Role::User, vec![Part::text(ask.message)]);
        message.context_id = ask.context_id;
        let started: Arc<Mutex<Option<String>>> = Arc::default();
        let conversation = self.converse(message, &ctx, &started);
        tokio::select! {
            biased;
            () = ctx.cancellation().cancelled() => {
                let task = started.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if let Some(task) = task {
                    self.cancel(&task).await;
                }
                Err(ToolError::Cancelled)
            }
            output = conversation => output,
        }
    }
}

impl RemoteAgent {
    /// Send `message`, follow the task, answer its questions, until it ends.
    async fn converse(
        &self,
        mut message: Message,
        ctx: &ToolContext,
        started: &Mutex<Option<String>>,
    ) -> Result<ToolOutput, ToolError> {
        let mut tracked = Tracked::default();
        for _ in 0..=MAX_QUESTIONS {
            self.send(message, &mut tracked, started, ctx)
                .await
                .map_err(tool_error)?;
            match &tracked.state {
                TaskState::InputRequired => {
                    let answer = self.ask(&tracked, ctx).await;
                    message = Message::new(Role::User, vec![Part::data(answer)]);
                    message.task_id = tracked.task.clone();
                    message.context_id = tracked.context.clone();
                }
                TaskState::Completed => return Ok(self.answer(&tracked)),
                TaskState::AuthRequired => {
                    return Ok(ToolOutput::error(format!(
                        "The agent {} needs authentication first ({}); its headers are configured in \
                         a2aAgents.{}.headers.",
                        self.remote.name,
                        tracked.said(),
                        self.remote.name
                    )));
                }
                other => {
                    return Ok(ToolOutput::error(format!(
                        "The agent {} ended its task {}: {}",
                        self.remote.name,
                        state_name(other),
                        tracked.said()
                    )));
                }
            }
        }
        if let Some(task) = &tracked.task {
            self.cancel(task).await;
        }
        Ok(ToolOutput::error(format!(
            "The agent {} kept asking questions ({MAX_QUESTIONS} answered); its task was cancelled.",
            self.remote.name
        )))
    }

    /// Send `message` and follow its task until it ends or asks.
    async fn send(
        &self,
        message: Message,
        tracked: &mut Tracked,
        started: &Mutex<Option<String>>,
        ctx: &ToolContext,
    ) -> Result<(), A2aError> {
        // The task, once known, is kept for cancelling, and its state told
        // as the call's progress.
        let note = |tracked: &Tracked| {
            if let Some(task) = &tracked.task {
                *started.lock().unwrap_or_else(|p| p.into_inner()) = Some(task.clone());
                let said = tracked.said();
                let state = state_name(&tracked.state);
                let message = match said.is_empty() {
                    true => format!("task {task}: {state}"),
                    false => format!("task {task}: {state}: {said}"),
                };
                ctx.progress().report(0.0, None, Some(message));
            }
        };
        if self.streaming {
            let params = json!({ "message": message });
            let mut results = self
                .remote
                .stream(&self.endpoint, "SendStreamingMessage", params)
                .await?;
            while let Some(result) = results.next().await {
                let update: StreamResponse = self.parsed("SendStreamingMessage", result?)?;
                // A status that ends or pauses the task ends the stream; the
                // task as it stood when the message came (a paused one still
                // paused) ends it only when ended, an artifact never.
                let ends = match &update {
                    StreamResponse::StatusUpdate(_) => None,
                    StreamResponse::Message(_) => Some(true),
                    StreamResponse::Task(task) => Some(task.status.state.is_terminal()),
                    StreamResponse::ArtifactUpdate(_) => Some(false),
                };
                tracked.update(update);
                note(tracked);
                if ends.unwrap_or_else(|| tracked.settled()) {
                    return Ok(());
                }
            }
        } else {
            // A first message returns at once (the task's id is known for
            // cancelling); an answer waits for what it settles, so the
            // question it answered is not read again.
            let answering = message.task_id.is_some();
            let params = json!({ "message": message, "configuration": {"returnImmediately": !answering} });
            let result = self.remote.call(&self.endpoint, "SendMessage", params).await?;
            let sent: SendMessageResponse = self.parsed("SendMessage", result)?;
            tracked.sent(sent);
            note(tracked);
        }
        // Not streamed, or the stream was cut: read the task until it settles.
        while !tracked.settled() {
            let Some(task) = tracked.task.clone() else {
                return Err(self
                    .remote
                    .protocol("SendMessage", "neither a task nor a message came back"));
            };
            tokio::time::sleep(POLL).await;
            let result = self
                .remote
                .call(&self.endpoint, "GetTask", json!({ "id": task }))
                .await?;
            let task: Task = self.parsed("GetTask", result)?;
            let before = tracked.state.clone();
            tracked.task(task);
            if tracked.state != before {
                note(tracked);
            }
        }
        Ok(())
    }

    fn parsed<T: serde::de::DeserializeOwned>(&self, method: &str, value: Value) -> Result<T, A2aError> {
        serde_json::from_value(value).map_err(|e| {
            self.remote
                .protocol(method, format!("an answer A2A v1.0 does not have: {e}"))
        })
    }

    /// The task's question, put to the person behind the run: what they
    /// answer, or a refusal the remote agent reads.
    async fn ask(&self, tracked: &Tracked, ctx: &ToolContext) -> Value {
        let question = match tracked.said() {
            said if said.is_empty() => format!("The agent {} asks for a decision.", self.remote.name),
            said => format!("The agent {} asks: {said}", self.remote.name),
        };
        let schema = json!({
            "type": "object",
            "properties": {
                "approve": {"type": "boolean", "description": "Go ahead."},
                "reason": {"type": "string", "description": "Why not, for the agent."}
            },
            "required": ["approve"]
        });
        let request = UserInputRequest::form(self.remote.name.clone(), question, schema);
        match ctx.ask_user(request, None).await {
            UserInputAnswer::Accept {
                content: Some(content),
            } => content,
            UserInputAnswer::Accept { content: None } => json!({"approve": true}),
            UserInputAnswer::Decline => {
                json!({"approve": false, "reason": "declined by the person behind the calling agent"})
            }
            _ => json!({"approve": false, "reason": "dismissed by the person behind the calling agent"}),
        }
    }

    /// The completed task as the model reads it.
    fn answer(&self, tracked: &Tracked) -> ToolOutput {
        let (text, data) = tracked.answer();
        let mut out = json!({ "answer": text });
        if !data.is_empty() {
            out["data"] = json!(data);
        }
        if let Some(context) = &tracked.context {
            out["context_id"] = json!(context);
        }
        ToolOutput::json(out)
    }

    /// Cancel remote task `task`, within [`CANCEL_PATIENCE`]; a failure is
    /// logged (the call ends cancelled either way).
    async fn cancel(&self, task: &str) {
        let cancel = self
            .remote
            .call(&self.endpoint, "CancelTask", json!({ "id": task }));
        match tokio::time::timeout(CANCEL_PATIENCE, cancel).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(agent = %self.remote.name, task, error = %e, "the remote task could not be cancelled")
            }
            Err(_) => {
                tracing::warn!(agent = %self.remote.name, task, "cancelling the remote task took too long")
            }
        }
    }
}

fn tool_error(e: A2aError) -> ToolError {
    ToolError::execution(e)
}
