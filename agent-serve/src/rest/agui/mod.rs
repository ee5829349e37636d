//! AG-UI (the Agent–User Interaction protocol of CopilotKit and
//! assistant-ui) on the REST address: `POST /agui` when one agent is
//! served, `POST /agui/{name}` for each, taking `RunAgentInput` and
//! answering its events over server-sent events (LF-framed `data:` lines,
//! no terminator); `GET /agui/capabilities` (and `/agui/{name}/...`) the
//! capabilities document the protocol defines.
//!
//! Each client run is a stored run ([`crate::stored_turn`]) of the thread's
//! messages. A call that needs a person's approval ends it with an
//! `interrupt` outcome; a call to one of the input's frontend `tools` ends
//! it with success and the call pending (`pendingToolCallIds`). The next
//! input continues the paused run on any replica: its `resume` entries
//! (`{"approved": bool, "reason"?}` as the payload; `cancelled` denies)
//! decide the interrupts, its trailing tool messages answer the frontend
//! calls; interrupt and call ids name the run.
//!
//! Invariants: an input the surface cannot read, answers that name no
//! paused call of this server, of another thread, or leave one of the
//! run's calls unanswered, are a 400 naming it, and nothing runs; a run
//! the client leaves is cancelled.
//!
//! A thread is kept as the session of its id: a client that sends no
//! history gets the session's (the model reads it; the run's
//! `MESSAGES_SNAPSHOT` gives it back). The page's `state`, when not empty,
//! is read by the agent as a system text and echoed in a `STATE_SNAPSHOT`
//! at the run's start: the agent reads it, and does not change it.

mod events;
mod input;

use std::collections::HashSet;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use loopwright_core::Role;
use loopwright_runs::{Decision, RunOptions, RunSpec};
use serde_json::{Value, json};

use super::{SHAPE, bad};
use crate::error::ApiError;
use crate::run::Instance;
use crate::sse::event_stream;
use crate::stored_turn::{self, Turn};
use events::Agui;
use input::Input;

/// `POST /agui`: the one agent served.
pub(super) async fn agui_only(
    State(instance): State<Arc<Instance>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match only(&instance) {
        Ok(name) => answer(instance, name, body).await,
        Err(e) => e.into_response(),
    }
}

/// `POST /agui/{name}`.
pub(super) async fn agui(
    State(instance): State<Arc<Instance>>,
    Path(name): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    answer(instance, name, body).await
}

/// The one agent served, or a 400 naming the routes of each.
fn only(instance: &Instance) -> Result<String, ApiError> {
    match instance.agents.names().as_slice() {
        [name] => Ok(name.clone()),
        names => Err(bad(format!(
            "{} agents are served: post to /agui/{{name}}, one of {}",
            names.len(),
            names.join(", ")
        ))),
    }
}

async fn answer(instance: Arc<Instance>, name: String, body: Result<Bytes, BytesRejection>) -> Response {
    let result = async {
        let body = crate::error::body_or_error(body, SHAPE)?;
        crate::items::check_body(&body, "messages", "messages", instance.limits, SHAPE)?;
        let input = input::read(&body)?;
        drop(body);
        instance.agent(&name, SHAPE)?;
        let (turn, answered, mut snapshot) = if input.resume.is_empty() && input.answers.is_empty() {
            let (turn, stored) = new_run(&instance, name, &input).await?;
            (turn, HashSet::new(), stored)
        } else {
            let (turn, answered) = continued(&instance, &input).await?;
            (turn, answered, Vec::new())
        };
        // The thread as the client will hold it: what the session gave, then its own.
        snapshot.extend(input.raw.iter().cloned());
        Ok::<_, ApiError>(stream(turn, &input, snapshot, answered))
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}

/// A new run of the thread, kept as the session of its id: its trailing
/// user messages the input; the client's messages before them the
/// history, or, when it sends none, the session's (the client gets those
/// back in the run's messages snapshot, returned here).
async fn new_run(
    instance: &Arc<Instance>,
    agent: String,
    input: &Input,
) -> Result<(Turn, Vec<Value>), ApiError> {
    super::check_session_id(&input.thread_id).map_err(|_| {
        bad(format!(
            "threadId {:?}: a thread's id is its session's, 1 to 128 letters, digits, '-', '_', '.' or ':'",
            input.thread_id
        ))
    })?;
    let mut history = input.history.clone();
    let split = history
        .iter()
        .rposition(|m| m.role != Role::User && m.role != Role::System)
        .map_or(0, |i| i + 1);
    let turn = history.split_off(split);
    if !turn.iter().any(|m| m.role == Role::User) {
        return Err(bad(
            "messages must end with a user message, or the tool messages a paused run waits for",
        ));
    }
    // A client that sends no history is given the session's.
    let stored = if history.is_empty() {
        match instance.runs.store().load_conversation(&input.thread_id).await {
            Ok(stored) => stored.map(|c| c.messages).unwrap_or_default(),
            Err(e) => return Err(ApiError::store(SHAPE, &format!("thread {}", input.thread_id), &e)),
        }
    } else {
        Vec::new()
    };
    let spec = RunSpec {
        agent,
        input: turn,
        history,
        session: Some(input.thread_id.clone()),
        options: RunOptions {
            system: input.context.clone(),
            client_tools: input.tools.clone(),
            ..RunOptions::default()
        },
        surface: Some(json!({"agui": input.thread_id})),
        ..RunSpec::default()
    };
    let turn = stored_turn::start_pausing(instance, spec, SHAPE).await?;
    Ok((turn, events::thread_messages(&input.thread_id, &stored)))
}

/// The paused run the input's answers name, continued with them; the
/// calls whose output the client gave.
async fn continued(instance: &Arc<Instance>, input: &Input) -> Result<(Turn, HashSet<String>), ApiError> {
    let mut run: Option<String> = None;
    let mut decisions = Vec::new();
    let mut answered = HashSet::new();
    let mut named = |id: &str, what: &str| -> Result<String, ApiError> {
        let Some((of, call)) = crate::client_tools::parse_exposed_id(id) else {
            return Err(bad(format!("{what} {id:?} names no paused call of this server")));
        };
        if run.as_deref().is_some_and(|r| r != of) {
            return Err(bad(format!(
                "{what} {id:?} names a call of another run: answer one run's calls"
            )));
        }
        run = Some(of.to_owned());
        Ok(call.to_owned())
    };
    for entry in &input.resume {
        let call = named(&entry.interrupt_id, "resume entry")?;
        decisions.push(match (entry.status.as_str(), &entry.payload["approved"]) {
            ("resolved", Value::Bool(false)) => Decision::deny(
                call,
                entry.payload["reason"].as_str().unwrap_or("the user denied it"),
            ),
            ("resolved", _) => Decision::approve(call),
            ("cancelled", _) => Decision::deny(call, "the user cancelled it"),
            (other, _) => {
                return Err(bad(format!(
                    "resume entry {:?} has status {other:?}: resolved or cancelled",
                    entry.interrupt_id
                )));
            }
        });
    }
    for answer in &input.answers {
        let call = named(&answer.tool_call_id, "the tool message for")?;
        answered.insert(call.clone());
        decisions.push(Decision {
            is_error: answer.is_error,
            ..Decision::output(call, Value::String(answer.content.clone()))
        });
    }
    let run = run.unwrap_or_default();
    let record = instance
        .runs
        .get(&run)
        .await
        .map_err(|e| ApiError::runs(SHAPE, e))?;
    let thread = loopwright_runs::surface(&record).and_then(|s| s["agui"].as_str());
    if thread != Some(input.thread_id.as_str()) {
        return Err(bad(format!(
            "run {run} is not a run of thread {:?}: answer the calls of this thread's paused run",
            input.thread_id
        )));
    }
    let turn = stored_turn::resume_decided(instance, &run, decisions, SHAPE).await?;
    Ok((turn, answered))
}

/// The AG-UI events of `turn`, the thread's `messages` before it.
fn stream(turn: Turn, input: &Input, messages: Vec<Value>, answered: HashSet<String>) -> Response {
    let mut agui = Agui::new(
        &turn.run_id,
        (&input.thread_id, &input.run_id),
        messages,
        answered,
    );
    let state = input.state.clone();
    event_stream(move |tx| async move {
        let data = |v: Value| Event::default().data(v.to_string());
        if tx.send(data(agui.started())).await.is_err() {
            return;
        }
        if let Some(state) = state
            && tx
                .send(data(json!({"type": "STATE_SNAPSHOT", "snapshot": state})))
                .await
                .is_err()
        {
            return;
        }
        let end = turn
            .follow_events(Some(&tx), |event| agui.of(event).into_iter().map(data).collect())
            .await;
        let Some(end) = end else { return };
        for e in agui.end(end) {
            if tx.send(data(e)).await.is_err() {
                return;
            }
        }
    })
    .into_response()
}

/// `GET /agui/capabilities`, `GET /agui/{name}/capabilities`: AG-UI's
/// `AgentCapabilities`.
pub(super) async fn capabilities() -> axum::Json<Value> {
    axum::Json(json!({
        "identity": {"name": "loopwright", "type": "loopwright", "version": env!("CARGO_PKG_VERSION")},
        "transport": {"streaming": true},
        "tools": {"supported": true, "clientProvided": true, "parallelCalls": true},
        "reasoning": {"supported": true, "streaming": true},
        "humanInTheLoop": {"supported": true, "approvals": true, "interrupts": true},
    }))
}
