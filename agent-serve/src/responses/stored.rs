//! Stored responses: read (`GET /v1/responses/{id}`, as an object or, with
//! `?stream=true`, as its events again from `starting_after`), cancelled,
//! deleted, and continued (`previous_response_id`).
//!
//! Invariants: everything is read from the store (a response started on
//! another replica answers alike); an id that is not a response (unknown,
//! deleted, or a REST background run) is a 404 in OpenAI's shape; a chain
//! continues only from a response that completed, whose turn was kept;
//! deleting a response deletes its record and its events at once, and
//! releases its turn, which stays only as long as a later response's chain
//! reads it (later responses stay whole, as on OpenAI's API).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use loopwright_core::{AgentEvent, Message};
use loopwright_store::{RunRecord, RunStatus, StoreError};
use serde::Deserialize;
use serde_json::{Value, json};

use super::object::{Meta, Outcome};
use super::render::Render;
use super::stream::{Sink, follow_log};
use super::{SHAPE, answer, bad};
use crate::error::{ApiError, Kind};
use crate::run::Instance;
use crate::sse::event_stream;

/// Events read per query when a response is rebuilt from its log.
const PAGE: usize = 256;

/// How long cancelling (or deleting) a running response waits for its run
/// to end: a run on another replica sees the request within
/// [`loopwright_runs`]' cancel poll.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// How often that wait looks at the record.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// `?stream=true&starting_after=N` of `GET /v1/responses/{id}`.
#[derive(Debug, Deserialize)]
pub(super) struct Retrieve {
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    starting_after: Option<u64>,
}

/// Response `id`'s record and meta, or 404.
async fn load(instance: &Instance, id: &str) -> Result<(RunRecord, Meta), ApiError> {
    let record = match instance.runs.store().load_run(id).await {
        Ok(record) => record,
        Err(e) => return Err(ApiError::store(SHAPE, &format!("response {id}"), &e)),
    };
    record
        .and_then(|record| Meta::of(&record).map(|meta| (record, meta)))
        .ok_or_else(|| {
            ApiError::new(
                SHAPE,
                Kind::Missing,
                format!("Response with id {id:?} not found."),
            )
        })
}

/// Whether the response asked for structured output.
fn structured(meta: &Meta) -> bool {
    matches!(
        meta.text["format"]["type"].as_str(),
        Some("json_schema" | "json_object")
    )
}

/// The response as it stands: its log replayed, and its outcome once the
/// record says it ended (events are all written before that).
async fn snapshot(instance: &Instance, record: &RunRecord, meta: Meta) -> Result<Value, ApiError> {
    let id = &record.id;
    let is_structured = structured(&meta);
    let mut render = Render::new(id, meta, is_structured);
    render.begin();
    let mut after = None;
    loop {
        let page = instance
            .runs
            .store()
            .read_events(id, after, PAGE)
            .await
            .map_err(|e| ApiError::store(SHAPE, &format!("response {id}"), &e))?;
        let full = page.len() == PAGE;
        for (seq, event) in page {
            after = Some(seq);
            if let Ok(event) = serde_json::from_value::<AgentEvent>(event) {
                render.step(&event);
            }
        }
        if !full {
            break;
        }
    }
    if let Some(outcome) = Outcome::of_record(record) {
        render.finish(outcome);
    }
    Ok(render.object("in_progress"))
}

/// `GET /v1/responses/{id}`.
pub(super) async fn retrieve(
    State(instance): State<Arc<Instance>>,
    Path(id): Path<String>,
    Query(query): Query<Retrieve>,
) -> Response {
    answer(
        async {
            let (record, meta) = load(&instance, &id).await?;
            if query.stream != Some(true) {
                return Ok(axum::Json(snapshot(&instance, &record, meta).await?).into_response());
            }
            let store = instance.runs.store().clone();
            let skip = query.starting_after;
            Ok(event_stream(move |tx| async move {
                let is_structured = structured(&meta);
                let mut render = Render::new(&id, meta, is_structured);
                follow_log(store, &id, &mut render, Sink::Client { tx: &tx, skip }).await;
            })
            .into_response())
        }
        .await,
    )
}

/// Wait (at most [`CANCEL_WAIT`]) for response `id`'s run to end; its last
/// record.
async fn ended(instance: &Instance, id: &str) -> Result<RunRecord, ApiError> {
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let (record, _) = load(instance, id).await?;
        if record.status.is_finished() || tokio::time::Instant::now() >= deadline {
            return Ok(record);
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// `POST /v1/responses/{id}/cancel`: the response once its run ended
/// (`cancelled`), or as it stands when that takes longer than
/// [`CANCEL_WAIT`].
pub(super) async fn cancel(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    answer(
        async {
            load(&instance, &id).await?;
            instance
                .runs
                .cancel(&id)
                .await
                .map_err(|e| ApiError::runs(SHAPE, e))?;
            let record = ended(&instance, &id).await?;
            let meta = Meta::of(&record).unwrap_or_default();
            Ok(axum::Json(snapshot(&instance, &record, meta).await?).into_response())
        }
        .await,
    )
}

/// `DELETE /v1/responses/{id}`: a running response is cancelled first.
pub(super) async fn delete(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    answer(
        async {
            let (record, _) = load(&instance, &id).await?;
            if !record.status.is_finished() {
                match instance
                    .runs
                    .cancel(&id)
                    .await
                    .map_err(|e| ApiError::runs(SHAPE, e))
                {
                    Ok(_) => {}
                    Err(e) if e.kind == Kind::Conflict => {}
                    Err(e) => return Err(e),
                }
                if !ended(&instance, &id).await?.status.is_finished() {
                    return Err(ApiError::new(
                        SHAPE,
                        Kind::Conflict,
                        format!("response {id} is still running after it was cancelled; delete it again"),
                    ));
                }
            }
            let store = instance.runs.store();
            store
                .delete_run(&id)
                .await
                .map_err(|e| ApiError::store(SHAPE, &format!("response {id}"), &e))?;
            store
                .release_turn(&id)
                .await
                .map_err(|e| ApiError::store(SHAPE, &format!("response {id}'s conversation"), &e))?;
            Ok(axum::Json(json!({"id": id, "object": "response.deleted", "deleted": true})).into_response())
        }
        .await,
    )
}

/// The conversation a new response continues: `previous`'s chain read
/// back (at most the item limit's turns: a chain within the limits has no
/// more), when it completed.
pub(super) async fn history(instance: &Instance, previous: &str) -> Result<Vec<Message>, ApiError> {
    let (record, _) = load(instance, previous).await.map_err(|e| match e.kind {
        Kind::Missing => ApiError::new(
            SHAPE,
            Kind::Missing,
            format!("Previous response with id {previous:?} not found (previous_response_id)."),
        ),
        _ => e,
    })?;
    match record.status {
        RunStatus::Completed => {}
        RunStatus::Running | RunStatus::AwaitingApproval => {
            return Err(bad(format!(
                "previous_response_id: response {previous} is still in progress; continue it once it completed"
            )));
        }
        status => {
            return Err(bad(format!(
                "previous_response_id: response {previous} is {status}; continue from a response that completed"
            )));
        }
    }
    let max_turns = u64::try_from(instance.limits.items).unwrap_or(u64::MAX);
    match instance.runs.store().load_chain(previous, max_turns).await {
        Ok(Some(conversation)) => Ok(conversation.messages),
        Ok(None) => Err(ApiError::new(
            SHAPE,
            Kind::Conflict,
            format!(
                "previous_response_id: response {previous} completed but its conversation was not kept (see its \
                 run's warnings); send the conversation as input items"
            ),
        )),
        Err(e @ StoreError::Invalid(_)) => Err(bad(format!("previous_response_id: {e}"))),
        Err(e) => Err(ApiError::store(
            SHAPE,
            &format!("response {previous}'s conversation"),
            &e,
        )),
    }
}
