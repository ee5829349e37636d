//! Sessions: stored conversations a request continues by id
//! (`"session"` in `POST /v1/agents/{name}` and in background runs),
//! `GET /v1/sessions/{id}`, `DELETE /v1/sessions/{id}`.
//!
//! Invariant: a turn is appended at the version its history was loaded at,
//! once its run completed; a turn another request stored meanwhile makes
//! this one a conflict, reported with the answer (which stands), never an
//! overwrite.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use loopwright_core::{AgentResult, ExitReason, Message};
use serde_json::json;

use super::{SHAPE, check_session_id};
use crate::error::{ApiError, Kind};
use crate::run::Instance;

/// A turn of a session: its history as loaded, and the turn's input.
pub(super) struct Turn {
    pub(super) id: String,
    history: Vec<Message>,
    version: u64,
    input: Vec<Message>,
}

impl Turn {
    /// Load session `id` (empty when new) for a turn with `input`.
    pub(super) async fn load(instance: &Instance, id: &str, input: Vec<Message>) -> Result<Self, ApiError> {
        let store = instance.runs.store();
        let (history, version) = match store.load_conversation(id).await {
            Ok(Some(stored)) => (stored.messages, stored.version),
            Ok(None) => (Vec::new(), 0),
            Err(e) => return Err(ApiError::store(SHAPE, &format!("session {id}"), &e)),
        };
        crate::items::check_conversation(&history, &input, &format!("session {id}"), instance.limits, SHAPE)?;
        Ok(Self {
            id: id.to_owned(),
            history,
            version,
            input,
        })
    }

    /// The run's messages: the history, then the input.
    pub(super) fn messages(&self) -> Vec<Message> {
        let mut all = self.history.clone();
        all.extend(self.input.iter().cloned());
        all
    }

    /// Store the turn when its run completed; a warning when it was not
    /// stored.
    pub(super) async fn keep(&self, instance: &Instance, result: &AgentResult) -> Option<String> {
        if !matches!(result.exit(), ExitReason::Completed | ExitReason::Stopped) {
            return Some(format!(
                "session {}: the run ended {:?}, so this turn was not stored",
                self.id,
                result.exit()
            ));
        }
        let mut turn = self.input.clone();
        turn.extend(result.messages.iter().cloned());
        match instance
            .runs
            .store()
            .append_turn(&self.id, self.version, &turn)
            .await
        {
            Ok(_) => None,
            Err(e) => Some(format!("session {}: this turn was not stored: {e}", self.id)),
        }
    }
}

/// The most runs a session's view lists (the newest).
const SESSION_RUNS_SHOWN: usize = 100;

/// `GET /v1/sessions/{id}`: the stored conversation, and the runs that
/// wrote it (the newest first, as `GET /v1/runs/{id}` shows each).
pub(super) async fn show(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    let shown = async {
        check_session_id(&id)?;
        let store = instance.runs.store();
        let stored = match store.load_conversation(&id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return Err(no_session(&id)),
            Err(e) => return Err(ApiError::store(SHAPE, &format!("session {id}"), &e)),
        };
        let runs = store
            .session_runs(&id, SESSION_RUNS_SHOWN)
            .await
            .map_err(|e| ApiError::store(SHAPE, &format!("the runs of session {id}"), &e))?;
        Ok(axum::Json(json!({
            "id": stored.id,
            "version": stored.version,
            "messages": stored.messages,
            "runs": runs.iter().map(loopwright_runs::view).collect::<Vec<_>>(),
        }))
        .into_response())
    };
    shown.await.unwrap_or_else(IntoResponse::into_response)
}

/// `DELETE /v1/sessions/{id}`: 204, or 404 when there was none.
pub(super) async fn delete(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    let deleted = async {
        check_session_id(&id)?;
        match instance.runs.store().delete_conversation(&id).await {
            Ok(true) => Ok(StatusCode::NO_CONTENT.into_response()),
            Ok(false) => Err(no_session(&id)),
            Err(e) => Err(ApiError::store(SHAPE, &format!("session {id}"), &e)),
        }
    };
    deleted.await.unwrap_or_else(IntoResponse::into_response)
}

fn no_session(id: &str) -> ApiError {
    ApiError::new(SHAPE, Kind::Missing, format!("no session with id {id:?}"))
}
