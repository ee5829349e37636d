//! Evals from the pages: `POST /v1/agents/{name}/evals` runs a dataset (the
//! YAML or JSON of `loopwright eval`, sent as text) against a served agent
//! and answers its report; `GET /v1/evals` lists the reports kept, `GET
//! /v1/evals/{id}` shows one whole.
//!
//! Invariants: a dataset that does not parse is a 400 naming the line and
//! what was wrong, before anything runs; rubric cases are judged by the
//! agent's own model; an eval holds one of the instance's permits while its
//! cases run (at most [`CASES_AT_ONCE`] at once); the reports are kept in
//! this process only (the newest [`EvalsKept::MAX`](crate::run::EvalsKept::MAX)),
//! so a replica lists the evals it ran.

use std::path::Path as FilePath;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use loopwright_evals::{Dataset, EvalOptions, run_eval};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{SHAPE, bad};
use crate::error::{ApiError, Kind};
use crate::run::Instance;

/// Cases of one eval that run at once.
const CASES_AT_ONCE: usize = 4;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalRequest {
    /// The dataset's text, YAML or JSON.
    dataset: String,
    /// Its name (a file name), shown in the listing and in parse errors.
    #[serde(default)]
    name: Option<String>,
}

/// `POST /v1/agents/{name}/evals`: `{dataset, name?}` → `{id, name, agent,
/// created_at, report}`.
pub(super) async fn start(
    State(instance): State<Arc<Instance>>,
    Path(agent): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let ran = async {
        let body = crate::error::body_or_error(body, SHAPE)?;
        let request: EvalRequest = serde_json::from_slice(&body).map_err(|e| {
            bad(format!(
                "the body must be {{\"dataset\": the dataset's YAML or JSON text, \"name\"?}}: {e}"
            ))
        })?;
        let name = request.name.unwrap_or_else(|| "dataset.yaml".to_owned());
        let dataset =
            Dataset::parse(&request.dataset, FilePath::new(&name)).map_err(|e| bad(e.to_string()))?;
        let served = instance.agent(&agent, SHAPE)?.clone();
        let model = served.agent().model().clone();
        let options = EvalOptions::default().concurrency(CASES_AT_ONCE).judge(model);
        let _permit = instance
            .limiter
            .acquire(&instance.lifecycle.stopping)
            .await
            .map_err(|refused| ApiError::refused(SHAPE, refused))?;
        let report = tokio::select! {
            report = run_eval(&dataset, served.agent(), options) => report.map_err(|e| bad(e.to_string()))?,
            () = instance.lifecycle.hard.cancelled() => {
                return Err(ApiError::new(SHAPE, Kind::Unavailable, "the server is shutting down"));
            }
        };
        let kept = json!({
            "id": loopwright_runs::shared::new_id("eval_"),
            "name": name,
            "agent": agent,
            "created_at": crate::run::unix_now() * 1000,
            "report": report,
        });
        instance.evals.keep(kept.clone());
        Ok(axum::Json(kept).into_response())
    };
    ran.await.unwrap_or_else(IntoResponse::into_response)
}

/// `GET /v1/evals`: the reports kept, the newest first, without their
/// cases.
pub(super) async fn list(State(instance): State<Arc<Instance>>) -> Response {
    let evals: Vec<Value> = instance
        .evals
        .all()
        .iter()
        .map(|kept| {
            let report = &kept["report"];
            json!({
                "id": kept["id"], "name": kept["name"], "agent": kept["agent"], "created_at": kept["created_at"],
                "pass_rate": report["pass_rate"], "passed": report["passed"], "runs": report["runs"],
            })
        })
        .collect();
    axum::Json(json!({ "evals": evals })).into_response()
}

/// `GET /v1/evals/{id}`: one report whole.
pub(super) async fn show(State(instance): State<Arc<Instance>>, Path(id): Path<String>) -> Response {
    match instance
        .evals
        .all()
        .into_iter()
        .find(|kept| kept["id"] == id.as_str())
    {
        Some(kept) => axum::Json(kept.as_ref().clone()).into_response(),
        None => ApiError::new(
            SHAPE,
            Kind::Missing,
            format!(
                "no eval {id:?} is kept here (this process keeps the newest {})",
                crate::run::EvalsKept::MAX
            ),
        )
        .into_response(),
    }
}
