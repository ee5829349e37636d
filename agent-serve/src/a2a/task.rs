//! A2A's operations on tasks, whatever the binding: a message started as a
//! background run or answering a paused one, a run read back as a task,
//! listed, cancelled.
//!
//! Invariants: a request that fails its checks starts and records nothing;
//! a task is only ever one of its agent's runs (another agent's run id is
//! "not found", as an unknown one); a message for a task names the task's
//! own context, if any; a finished task takes no message.

use std::sync::Arc;

use a2a::{
    A2AError, Artifact, CancelTaskRequest, ListTasksRequest, ListTasksResponse, Message, Part, PartContent,
    Role, SendMessageRequest, Task, TaskState, TaskStatus, error_code,
};
use loopwright_runs::{Decision, Logged, RunSpec, RunsError};
use loopwright_store::{RunRecord, RunStatus};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::run::Instance;

/// Tasks read per `ListTasks` page when the client does not say.
const PAGE: usize = 50;
/// The most tasks one page holds.
const MAX_PAGE: usize = 100;
/// How many of the newest runs `ListTasks` looks through.
const WINDOW: usize = 5_000;

/// A run a message started or continued, and where its log goes on from.
pub(super) struct Started {
    /// The task's (the run's) id.
    pub(super) id: String,
    /// The last event before this message's: follow the log after it.
    pub(super) after: Option<u64>,
}

/// The message of `request` as a new task of `agent` (a background run in
/// the message's context, a stored session), or, naming a task, as the
/// answer its pause waits for.
pub(super) async fn start(
    instance: &Arc<Instance>,
    agent: &str,
    request: SendMessageRequest,
) -> Result<Started, A2AError> {
    let message = request.message;
    if message.role != Role::User {
        return Err(A2AError::invalid_params("message.role must be ROLE_USER"));
    }
    if request
        .configuration
        .as_ref()
        .is_some_and(|c| c.task_push_notification_config.is_some())
    {
        return Err(super::ops::push_refused());
    }
    if let Some(modes) = request
        .configuration
        .as_ref()
        .and_then(|c| c.accepted_output_modes.as_ref())
    {
        accepts(modes)?;
    }
    if let Some(task) = message.task_id.clone() {
        return answer(instance, agent, &task, &message).await;
    }
    let text = text_of(&message)?;
    let context = match message.context_id {
        Some(context) => {
            crate::rest::check_session_id(&context).map_err(|e| A2AError::invalid_params(e.message))?;
            context
        }
        None => loopwright_runs::shared::new_id("ctx_"),
    };
    if let Some(started) = signed_out(instance, agent, &context).await? {
        return Ok(started);
    }
    let spec = RunSpec {
        agent: agent.to_owned(),
        input: vec![loopwright_core::Message::user(text)],
        session: Some(context),
        surface: Some(json!({"a2a": true})),
        ..RunSpec::default()
    };
    let record = instance
        .runs
        .start(instance.clone(), spec)
        .await
        .map_err(runs_error)?;
    Ok(Started {
        id: record.id,
        after: None,
    })
}

/// When one of `agent`'s MCP servers waits for a sign-in, the task is
/// recorded `auth-required` (a run that ended before it began: nothing ran),
/// its status naming the servers and how to sign in.
async fn signed_out(
    instance: &Arc<Instance>,
    agent: &str,
    context: &str,
) -> Result<Option<Started>, A2AError> {
    let Some(served) = instance.agents.get(agent) else {
        return Ok(None);
    };
    let Some(report) = served.agent().tools().connection_report() else {
        return Ok(None);
    };
    let waiting: Vec<String> = report
        .failed
        .iter()
        .filter(|f| f.needs_sign_in)
        .map(|f| format!("{} ({})", f.server, f.error))
        .collect();
    if waiting.is_empty() {
        return Ok(None);
    }
    let id = loopwright_runs::shared::new_id("run_");
    let message = format!(
        "the agent's MCP servers wait for a sign-in: {}; sign in where the server runs, then send the message again",
        waiting.join("; ")
    );
    let mut record = RunRecord::new(id.clone(), agent)
        .with_status(RunStatus::Failed)
        .with_session(context)
        .with_state(json!({"surface": {"a2a": true}}));
    record.error = Some(json!({"type": "auth_required", "message": message}));
    instance
        .runs
        .store()
        .create_run(&record)
        .await
        .map_err(|e| A2AError::internal(format!("the task could not be recorded: {e}")))?;
    Ok(Some(Started { id, after: None }))
}

/// Refused unless the client takes text or JSON (or anything).
fn accepts(modes: &[String]) -> Result<(), A2AError> {
    let served = ["text/plain", "application/json", "*/*", "text/*"];
    if modes.is_empty() || modes.iter().any(|m| served.contains(&m.as_str())) {
        return Ok(());
    }
    Err(A2AError::new(
        error_code::CONTENT_TYPE_NOT_SUPPORTED,
        format!(
            "configuration.acceptedOutputModes {modes:?}: this agent answers in text/plain and application/json"
        ),
    ))
}

/// The message's text parts, joined; any other part is refused.
fn text_of(message: &Message) -> Result<String, A2AError> {
    let mut texts = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(text) => texts.push(text.clone()),
            PartContent::Data(data) => texts.push(data.to_string()),
            _ => {
                return Err(A2AError::new(
                    error_code::CONTENT_TYPE_NOT_SUPPORTED,
                    format!("message.parts[{i}]: only text and data parts are served (not files)"),
                ));
            }
        }
    }
    if texts.is_empty() {
        return Err(A2AError::invalid_params("message.parts holds no text"));
    }
    Ok(texts.join("\n"))
}

/// `message` answering task `id`'s pause: its data part's decisions
/// recorded, the run continued (wherever it was paused).
async fn answer(
    instance: &Arc<Instance>,
    agent: &str,
    id: &str,
    message: &Message,
) -> Result<Started, A2AError> {
    let record = record_of(instance, agent, id).await?;
    if let Some(context) = &message.context_id
        && record.session.as_deref() != Some(context.as_str())
    {
        return Err(A2AError::invalid_params(format!(
            "message.contextId {context}: task {id} is in context {}",
            record.session.as_deref().unwrap_or("(none)")
        )));
    }
    if record.status.is_finished() {
        return Err(A2AError::unsupported_operation(format!(
            "task {id} is {}: it takes no more messages; send a new message in its context",
            state_name(&state_of(&record))
        )));
    }
    if record.status != RunStatus::AwaitingApproval {
        return Err(A2AError::unsupported_operation(format!(
            "task {id} is working: it asks for nothing yet; follow it with SubscribeToTask"
        )));
    }
    let view = loopwright_runs::view(&record);
    let pending = view["pending_approvals"].as_array().cloned().unwrap_or_default();
    let decisions = decisions_of(message, &pending)?;
    let after = view["next_event"].as_u64().and_then(|n| n.checked_sub(1));
    instance
        .runs
        .decide(instance.clone(), id, &decisions)
        .await
        .map_err(runs_error)?;
    Ok(Started {
        id: id.to_owned(),
        after,
    })
}

/// The decisions a message carries in a data part: `{"decisions": [{call_id,
/// approve, reason} | {call_id, output}]}`, or `{"approve": bool, "reason"}`
/// for every pending call.
fn decisions_of(message: &Message, pending: &[Value]) -> Result<Vec<Decision>, A2AError> {
    let how = "answer with a data part {\"approve\": true} (or false, with a \"reason\"), or {\"decisions\": [{\"call_id\": ..., \"approve\": true}]}";
    let data = message
        .parts
        .iter()
        .find_map(|p| match &p.content {
            PartContent::Data(data) => Some(data),
            _ => None,
        })
        .ok_or_else(|| A2AError::invalid_params(format!("the task waits for a decision: {how}")))?;
    if let Some(listed) = data.get("decisions") {
        return serde_json::from_value(listed.clone())
            .map_err(|e| A2AError::invalid_params(format!("the data part's decisions: {e}; {how}")));
    }
    let Some(approve) = data.get("approve").and_then(Value::as_bool) else {
        return Err(A2AError::invalid_params(format!("the data part {data}: {how}")));
    };
    let reason = data
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("denied by the A2A client");
    Ok(pending
        .iter()
        .filter_map(|p| p["call_id"].as_str())
        .map(|call| {
            if approve {
                Decision::approve(call)
            } else {
                Decision::deny(call, reason)
            }
        })
        .collect())
}

/// Wait until the run ended or paused (after event `after`), and its record
/// says so too.
pub(super) async fn settle(instance: &Instance, id: &str, after: Option<u64>) {
    // A task recorded ended (one that never ran) has no log to wait for.
    if matches!(instance.runs.get(id).await, Ok(r) if r.status.is_finished()) {
        return;
    }
    let (tx, mut rx) = mpsc::channel(64);
    let follow = loopwright_runs::follow(instance.runs.store().clone(), id.to_owned(), after, tx, |l| l);
    let watch = async move {
        while let Some(logged) = rx.recv().await {
            match logged {
                Logged::Event(_, event) if event["type"] == "awaiting_approval" => break,
                Logged::Event(..) => {}
                Logged::Unreadable(_) => break,
            }
        }
    };
    futures::future::join(follow, watch).await;
    crate::run::await_record(instance.runs.store(), id).await;
}

/// Run `id`'s record, if it is one of `agent`'s.
pub(super) async fn record_of(instance: &Instance, agent: &str, id: &str) -> Result<RunRecord, A2AError> {
    let missing = || A2AError::task_not_found(&format!("{id} (of agent {agent})"));
    match instance.runs.get(id).await {
        Ok(record) if record.agent == agent => Ok(record),
        Ok(_) | Err(RunsError::NoSuchRun { .. }) => Err(missing()),
        Err(e) => Err(runs_error(e)),
    }
}

/// `GetTask`: run `id` as a task, if it is one of `agent`'s.
pub(super) async fn get(instance: &Instance, agent: &str, id: &str) -> Result<Task, A2AError> {
    Ok(task_of(&record_of(instance, agent, id).await?))
}

/// `ListTasks`: `agent`'s tasks (the runs A2A started), the one changed
/// last first, filtered by context and state; the page token is how many
/// were listed before.
pub(super) async fn list(
    instance: &Instance,
    agent: &str,
    request: &ListTasksRequest,
) -> Result<ListTasksResponse, A2AError> {
    let size = match request.page_size {
        None => PAGE,
        Some(n) if (1..=MAX_PAGE as i32).contains(&n) => n as usize,
        Some(n) => {
            return Err(A2AError::invalid_params(format!(
                "pageSize {n}: give 1 to {MAX_PAGE}"
            )));
        }
    };
    let skip = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(token) => token.parse::<usize>().map_err(|_| {
            A2AError::invalid_params(format!("pageToken {token:?} is not one this server gave"))
        })?,
    };
    // Unspecified (as some clients send for "any") filters nothing.
    let status = request.status.as_ref().filter(|s| **s != TaskState::Unspecified);
    let records = instance
        .runs
        .store()
        .list_runs(None, WINDOW)
        .await
        .map_err(|e| A2AError::internal(format!("the tasks cannot be read: {e}")))?;
    let matching: Vec<&RunRecord> = records
        .iter()
        .filter(|r| r.agent == agent && loopwright_runs::surface(r).is_some_and(|s| s["a2a"] == true))
        .filter(|r| {
            request
                .context_id
                .as_deref()
                .is_none_or(|c| r.session.as_deref() == Some(c))
        })
        .filter(|r| status.is_none_or(|s| *s == state_of(r)))
        .filter(|r| {
            request
                .status_timestamp_after
                .is_none_or(|t| r.updated_at >= t.timestamp_millis())
        })
        .collect();
    let artifacts = request.include_artifacts == Some(true);
    let tasks: Vec<Task> = matching
        .iter()
        .skip(skip)
        .take(size)
        .map(|r| {
            let mut task = task_of(r);
            if !artifacts {
                task.artifacts = None;
            }
            task
        })
        .collect();
    let next = skip + tasks.len();
    Ok(ListTasksResponse {
        next_page_token: if next < matching.len() {
            next.to_string()
        } else {
            String::new()
        },
        page_size: size as i32,
        total_size: matching.len() as i32,
        tasks,
    })
}

/// `CancelTask`: the run cancelled, answered once its record says so.
pub(super) async fn cancel(
    instance: &Instance,
    agent: &str,
    request: &CancelTaskRequest,
) -> Result<Task, A2AError> {
    let id = &request.id;
    record_of(instance, agent, id).await?;
    match instance.runs.cancel(id).await {
        Ok(_) => {}
        Err(RunsError::Conflict { message }) => {
            return Err(A2AError::new(error_code::TASK_NOT_CANCELABLE, message));
        }
        Err(e) => return Err(runs_error(e)),
    }
    crate::run::await_record(instance.runs.store(), id).await;
    get(instance, agent, id).await
}

/// A run's state as A2A names it: a guardrail's stop is `rejected`.
pub(super) fn state_of(record: &RunRecord) -> TaskState {
    match record.status {
        RunStatus::Running => TaskState::Working,
        RunStatus::AwaitingApproval => TaskState::InputRequired,
        RunStatus::Completed => TaskState::Completed,
        RunStatus::Cancelled => TaskState::Canceled,
        _ if record.error.as_ref().is_some_and(|e| e["type"] == "tripped") => TaskState::Rejected,
        _ if record
            .error
            .as_ref()
            .is_some_and(|e| e["type"] == "auth_required") =>
        {
            TaskState::AuthRequired
        }
        _ => TaskState::Failed,
    }
}

/// `TASK_STATE_COMPLETED` and the like.
pub(super) fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Run `record` as a task: its answer the status message and the `answer`
/// artifact, a structured answer the `output` artifact (a data part), the
/// calls it waits for a data part of the status message.
pub(super) fn task_of(record: &RunRecord) -> Task {
    let state = state_of(record);
    let message = status_message(record, &state);
    Task {
        id: record.id.clone(),
        context_id: record.session.clone().unwrap_or_default(),
        status: TaskStatus {
            state,
            message,
            timestamp: chrono::DateTime::from_timestamp_millis(record.updated_at),
        },
        artifacts: artifacts_of(record),
        history: None,
        metadata: None,
    }
}

fn answer_text(record: &RunRecord) -> Option<&str> {
    record
        .result
        .as_ref()
        .and_then(|r| r["text"].as_str())
        .filter(|t| !t.is_empty())
}

fn status_message(record: &RunRecord, state: &TaskState) -> Option<Message> {
    let parts = if *state == TaskState::InputRequired {
        let view = loopwright_runs::view(record);
        let pending = view["pending_approvals"].clone();
        let asked: Vec<String> = pending
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| format!("{} {}", p["tool"].as_str().unwrap_or("?"), p["arguments"]))
            .collect();
        vec![
            Part::text(format!(
                "Approve or deny: {}. Answer with a data part {{\"approve\": true}} (or false, with a \"reason\").",
                asked.join("; ")
            )),
            Part::data(json!({ "pending": pending })),
        ]
    } else {
        let said = answer_text(record).map(str::to_owned).or_else(|| {
            record
                .error
                .as_ref()
                .and_then(|e| e["message"].as_str())
                .map(str::to_owned)
        })?;
        vec![Part::text(said)]
    };
    Some(Message {
        context_id: record.session.clone(),
        task_id: Some(record.id.clone()),
        message_id: format!("{}-status-{}", record.id, record.version),
        ..Message::new(Role::Agent, parts)
    })
}

/// The answer's artifacts: `answer` (text), `output` (the structured
/// answer, a data part).
pub(super) fn artifacts_of(record: &RunRecord) -> Option<Vec<Artifact>> {
    let mut artifacts = Vec::new();
    if let Some(text) = answer_text(record) {
        artifacts.push(artifact(&record.id, "answer", Part::text(text)));
    }
    if let Some(output) = record
        .result
        .as_ref()
        .map(|r| &r["output"])
        .filter(|o| !o.is_null())
    {
        let mut part = Part::data(output.clone());
        part.media_type = Some("application/json".to_owned());
        artifacts.push(artifact(&record.id, "output", part));
    }
    (!artifacts.is_empty()).then_some(artifacts)
}

/// Artifact `name` of task `id`.
pub(super) fn artifact(id: &str, name: &str, part: Part) -> Artifact {
    Artifact {
        artifact_id: format!("{id}-{name}"),
        name: Some(name.to_owned()),
        description: None,
        parts: vec![part],
        metadata: None,
        extensions: None,
    }
}

/// A background run's error, as A2A's.
pub(super) fn runs_error(e: RunsError) -> A2AError {
    match e {
        RunsError::NoSuchRun { .. } => A2AError::new(error_code::TASK_NOT_FOUND, e.to_string()),
        RunsError::Invalid { .. } => A2AError::invalid_params(e.to_string()),
        RunsError::Conflict { .. } => A2AError::unsupported_operation(e.to_string()),
        other => A2AError::internal(other.to_string()),
    }
}
