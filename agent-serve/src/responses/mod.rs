//! The OpenAI Responses API, on the OpenAI surface beside Chat
//! Completions: `POST /v1/responses` (the agent's name as `model`),
//! `GET /v1/responses/{id}` (with `?stream=true&starting_after=N`),
//! `POST /v1/responses/{id}/cancel`, `DELETE /v1/responses/{id}`.
//!
//! Invariants:
//! - a stored response (`store`, the default) is a background run
//!   ([`loopwright_runs`]) with the response's id: its record, its event log
//!   and, once completed, its own turn (its input and its answer, as a
//!   chain turn linked to the response it continues) live in the store, so
//!   any replica sharing the store reads, streams, cancels, deletes and
//!   continues it (`previous_response_id`, which reads the chain back);
//! - a response's conversation is in the store's chains, a namespace of
//!   its own: no session id of the REST surface reaches it;
//! - a synchronous response (not `background`) cannot wait for a person:
//!   calls that would pause are denied with a reason the model reads, and
//!   it is cancelled when its client leaves; a background one pauses like
//!   any background run, and is approved through the REST surface's
//!   `POST /v1/runs/{id}/approvals` (the same id);
//! - a response that is not stored runs in this request alone, as a Chat
//!   Completion does, and is never written to the store;
//! - errors are in OpenAI's shape: client `tools` 400, unknown ids 404.

mod object;
mod render;
mod request;
mod stored;
mod stream;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::error::{ApiError, Kind, Shape};
use crate::run::CancelOnDrop;
use crate::run::Instance;
use crate::sse::event_stream;
use loopwright_runs::shared::new_id;
use loopwright_runs::{ChainLink, Continues, Decision, RunSpec};
use render::Render;
use stream::{Followed, Sink, follow_log, run_direct};

const SHAPE: Shape = Shape::OpenAi;

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(SHAPE, Kind::BadRequest, message)
}

/// `router`, with the Responses routes.
pub(crate) fn routes(router: Router<Arc<Instance>>) -> Router<Arc<Instance>> {
    router
        .route("/v1/responses", post(create))
        .route("/v1/responses/{id}", get(stored::retrieve).delete(stored::delete))
        .route("/v1/responses/{id}/cancel", post(stored::cancel))
}

/// Answer `result`, or its error.
fn answer(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(IntoResponse::into_response)
}

/// `POST /v1/responses`.
async fn create(State(instance): State<Arc<Instance>>, body: Result<Bytes, BytesRejection>) -> Response {
    answer(create_checked(instance, body).await)
}

async fn create_checked(
    instance: Arc<Instance>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = crate::error::body_or_error(body, SHAPE)?;
    let values = crate::items::check_body(&body, "input", "input items", instance.limits, SHAPE)?;
    let mut p = request::prepare(&body, values)?;
    // A waiting request holds its parsed conversation, not its raw body.
    drop(body);
    let served = instance.agent(&p.meta.model, SHAPE)?.clone();
    let id = new_id("resp_");
    // Outputs of a paused response's calls: its run goes on as this one.
    let continues = continued(&mut p)?;
    let history = match &p.meta.previous_response_id {
        Some(previous) if continues.is_none() => stored::history(&instance, previous).await?,
        _ => Vec::new(),
    };
    let render = Render::new(&id, p.meta.clone(), p.options.output.is_some());
    if !p.store {
        return unstored(&instance, &served, p, history, (&id, render)).await;
    }
    let spec = RunSpec {
        agent: p.meta.model.clone(),
        input: p.input,
        history,
        chain: Some(ChainLink {
            id: id.clone(),
            previous: p.meta.previous_response_id.clone(),
        }),
        options: p.options,
        id: Some(id.clone()),
        surface: Some(p.meta.to_surface()),
        continues,
        ..RunSpec::default()
    };
    instance
        .runs
        .start(instance.clone(), spec)
        .await
        .map_err(|e| ApiError::runs(SHAPE, e))?;
    let store = instance.runs.store().clone();
    let mut guard = (!p.background).then(|| CancelOnDrop::new(instance.runs.clone(), &id));
    if p.stream {
        return Ok(event_stream(move |tx| async move {
            let mut render = render;
            let followed = follow_log(store, &id, &mut render, Sink::Client { tx: &tx, skip: None }).await;
            if followed == Followed::Ended
                && let Some(guard) = guard.as_mut()
            {
                guard.disarm();
            }
        })
        .into_response());
    }
    if p.background {
        return Ok(axum::Json(render.object("queued")).into_response());
    }
    let mut render = render;
    let followed = follow_log(store, &id, &mut render, Sink::Nowhere).await;
    if let Some(guard) = guard.as_mut() {
        guard.disarm();
    }
    if let Followed::Unreadable(message) = followed {
        return Err(ApiError::new(SHAPE, Kind::Unavailable, message));
    }
    finished(&id, &render)
}

/// A response that is not stored: a run of this request alone.
async fn unstored(
    instance: &Arc<Instance>,
    served: &crate::agents::ServedAgent,
    p: request::Prepared,
    history: Vec<loopwright_core::Message>,
    (id, render): (&str, Render),
) -> Result<Response, ApiError> {
    if !p.options.client_tools.is_empty() {
        return Err(bad(
            "`tools` need a stored response (a call to one pauses its run until the function_call_output \
             continues it): send store=true (the default)",
        ));
    }
    let mut messages = history;
    messages.extend(p.input);
    let options = p.options;
    let started = instance
        .start(served, messages, move |o| options.apply(o), SHAPE)
        .await?;
    if p.stream {
        return Ok(event_stream(move |tx| async move {
            let mut render = render;
            run_direct(started, &mut render, Sink::Client { tx: &tx, skip: None }).await;
        })
        .into_response());
    }
    let mut render = render;
    run_direct(started, &mut render, Sink::Nowhere).await;
    finished(id, &render)
}

/// The paused response `p` continues with the outputs of its function
/// calls: the previous response's (`previous_response_id` and leading
/// `function_call_output` items), or the one whose calls the replayed
/// input ends with (their outputs last, the call ids naming it). The
/// input before them is then the client's copy of what the run holds.
fn continued(p: &mut request::Prepared) -> Result<Option<Continues>, ApiError> {
    let answers: Vec<(String, String)> = if !p.answers.is_empty() {
        p.answers
            .iter()
            .map(|a| (a.call_id.clone(), a.output.clone()))
            .collect()
    } else {
        match p.input.last() {
            Some(last) if last.role == loopwright_core::Role::Tool => last
                .content
                .iter()
                .filter_map(|part| match part {
                    loopwright_core::ContentPart::ToolResult(r) => Some((r.call_id.clone(), r.text())),
                    _ => None,
                })
                .collect(),
            _ => return Ok(None),
        }
    };
    let named: Vec<Option<(&str, &str)>> = answers
        .iter()
        .map(|(id, _)| crate::client_tools::parse_exposed_id(id))
        .collect();
    // Replayed outputs of calls not made by this server: plain history.
    if p.answers.is_empty() && named.iter().any(Option::is_none) {
        return Ok(None);
    }
    let mut run: Option<&str> = None;
    let mut decisions = Vec::with_capacity(answers.len());
    for ((id, output), named) in answers.iter().zip(&named) {
        let Some((of, call)) = named else {
            return Err(bad(format!(
                "the function_call_output for {id:?} answers a call this server did not make"
            )));
        };
        if run.is_some_and(|r| r != *of) || p.meta.previous_response_id.as_deref().is_some_and(|r| r != *of) {
            return Err(bad(format!(
                "the function_call_output for {id:?} answers a call of response {of}: continue one response's \
                 calls at a time, with previous_response_id naming it"
            )));
        }
        run = Some(of);
        decisions.push(Decision::output(*call, serde_json::Value::String(output.clone())));
    }
    let Some(run) = run else { return Ok(None) };
    if !p.store {
        return Err(bad(
            "a response that continues another's function calls is stored: send store=true (the default)",
        ));
    }
    let run = run.to_owned();
    p.input.clear();
    Ok(Some(Continues { run, decisions }))
}

/// The answer to a synchronous response that ended: its object, or 502
/// naming the failure (the official client raises it), as a Chat
/// Completion's.
fn finished(id: &str, render: &Render) -> Result<Response, ApiError> {
    if let Some(object::Outcome {
        status: object::Status::Failed(message),
        ..
    }) = render.outcome()
    {
        return Err(ApiError::new(
            SHAPE,
            Kind::Upstream,
            format!("response {id} failed: {message}"),
        ));
    }
    Ok(axum::Json(render.object("in_progress")).into_response())
}
