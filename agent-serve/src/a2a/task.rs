//! A served agent as A2A sees it: its card, its messages started as
//! background runs, and a run read back as a task.

use std::collections::HashMap;
use std::sync::Arc;

use a2a::jsonrpc::JsonRpcError;
use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, HttpAuthSecurityScheme, Message,
    Part, PartContent, Role, SecurityScheme, SendMessageRequest, Task, TaskState, TaskStatus, error_code,
};
use loopwright_runs::{Logged, RunSpec, RunsError};
use loopwright_store::{RunRecord, RunStatus};
use tokio::sync::mpsc;

use super::error;
use crate::agents::ServedAgent;
use crate::run::Instance;

/// The card of `served`, its JSON-RPC endpoint at `url`, a bearer key
/// asked for when `keys`.
pub(super) fn card(served: &ServedAgent, url: &str, keys: bool) -> AgentCard {
    let (security_schemes, security_requirements) = if keys {
        let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            scheme: "bearer".to_owned(),
            description: Some("The server's API key, as `Authorization: Bearer <key>`.".to_owned()),
            bearer_format: None,
        });
        (
            Some(HashMap::from([("bearer".to_owned(), scheme)])),
            Some(vec![HashMap::from([("bearer".to_owned(), Vec::new())])]),
        )
    } else {
        (None, None)
    };
    AgentCard {
        name: served.name().to_owned(),
        description: served.description().to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![AgentInterface::new(url, "JSONRPC")],
        capabilities: AgentCapabilities {
            streaming: Some(false),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".to_owned()],
        default_output_modes: vec!["text/plain".to_owned()],
        skills: vec![AgentSkill {
            id: served.name().to_owned(),
            name: served.name().to_owned(),
            description: served.description().to_owned(),
            tags: vec!["agent".to_owned()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}

/// `SendMessage`: the message's text as a new task (a background run) in
/// its context (a session), answered once the run ended or paused, or at
/// once with `returnImmediately`.
pub(super) async fn send(
    instance: &Arc<Instance>,
    agent: &str,
    request: SendMessageRequest,
) -> Result<Task, JsonRpcError> {
    let message = request.message;
    if message.role != Role::User {
        return Err(error(
            error_code::INVALID_PARAMS,
            "message.role must be ROLE_USER",
        ));
    }
    if let Some(task) = &message.task_id {
        get(instance, agent, task).await?;
        return Err(error(
            error_code::UNSUPPORTED_OPERATION,
            format!(
                "message.taskId {task}: continuing a task is not served yet; send a new message in its context"
            ),
        ));
    }
    let text = text_of(&message)?;
    let context = match message.context_id {
        Some(context) => {
            crate::rest::check_session_id(&context)
                .map_err(|e| error(error_code::INVALID_PARAMS, e.message))?;
            context
        }
        None => loopwright_runs::shared::new_id("ctx_"),
    };
    let spec = RunSpec {
        agent: agent.to_owned(),
        input: vec![loopwright_core::Message::user(text)],
        session: Some(context),
        surface: Some(serde_json::json!({"a2a": true})),
        ..RunSpec::default()
    };
    let record = instance
        .runs
        .start(instance.clone(), spec)
        .await
        .map_err(runs_error)?;
    let immediately = request.configuration.and_then(|c| c.return_immediately) == Some(true);
    if !immediately {
        settle(instance, &record.id).await;
    }
    get(instance, agent, &record.id).await
}

/// The message's text parts, joined; any other part is refused.
fn text_of(message: &Message) -> Result<String, JsonRpcError> {
    let mut texts = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(text) => texts.push(text.as_str()),
            _ => {
                return Err(error(
                    error_code::CONTENT_TYPE_NOT_SUPPORTED,
                    format!("message.parts[{i}]: only text parts are served yet"),
                ));
            }
        }
    }
    if texts.is_empty() {
        return Err(error(error_code::INVALID_PARAMS, "message.parts holds no text"));
    }
    Ok(texts.join("\n"))
}

/// Wait until run `id` ended or paused for a decision (its log says so),
/// and its record says so too.
async fn settle(instance: &Instance, id: &str) {
    let (tx, mut rx) = mpsc::channel(64);
    let follow = loopwright_runs::follow(instance.runs.store().clone(), id.to_owned(), None, tx, |logged| {
        logged
    });
    let watch = async move {
        while let Some(logged) = rx.recv().await {
            match logged {
                Logged::Event(_, event) if event["type"] == "awaiting_approval" => break,
                Logged::Event(..) => {}
                _ => break,
            }
        }
    };
    futures::future::join(follow, watch).await;
    crate::run::await_record(instance.runs.store(), id).await;
}

/// `GetTask`: run `id` as a task, if it is one of `agent`'s.
pub(super) async fn get(instance: &Instance, agent: &str, id: &str) -> Result<Task, JsonRpcError> {
    let missing = || {
        error(
            error_code::TASK_NOT_FOUND,
            format!("no task {id} of agent {agent}"),
        )
    };
    let record = match instance.runs.get(id).await {
        Ok(record) => record,
        Err(RunsError::NoSuchRun { .. }) => return Err(missing()),
        Err(e) => return Err(runs_error(e)),
    };
    if record.agent != agent {
        return Err(missing());
    }
    Ok(task_of(&record))
}

fn task_of(record: &RunRecord) -> Task {
    let state = match record.status {
        RunStatus::Running => TaskState::Working,
        RunStatus::AwaitingApproval => TaskState::InputRequired,
        RunStatus::Completed => TaskState::Completed,
        RunStatus::Cancelled => TaskState::Canceled,
        _ => TaskState::Failed,
    };
    let answer = record
        .result
        .as_ref()
        .and_then(|r| r["text"].as_str())
        .filter(|t| !t.is_empty());
    let said = answer.map(str::to_owned).or_else(|| {
        record
            .error
            .as_ref()
            .and_then(|e| e["message"].as_str())
            .map(str::to_owned)
    });
    let status_message = said.map(|text| Message {
        context_id: record.session.clone(),
        task_id: Some(record.id.clone()),
        ..Message::new(Role::Agent, vec![Part::text(text)])
    });
    let artifacts = answer.map(|text| {
        vec![Artifact {
            artifact_id: format!("{}-answer", record.id),
            name: Some("answer".to_owned()),
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: None,
        }]
    });
    Task {
        id: record.id.clone(),
        context_id: record.session.clone().unwrap_or_default(),
        status: TaskStatus {
            state,
            message: status_message,
            timestamp: None,
        },
        artifacts,
        history: None,
        metadata: None,
    }
}

/// A background run's error, as a JSON-RPC error.
fn runs_error(e: RunsError) -> JsonRpcError {
    match e {
        RunsError::NoSuchRun { .. } => error(error_code::TASK_NOT_FOUND, e.to_string()),
        RunsError::Invalid { .. } => error(error_code::INVALID_PARAMS, e.to_string()),
        other => error(error_code::INTERNAL_ERROR, other.to_string()),
    }
}
