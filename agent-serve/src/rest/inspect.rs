//! What a server holds, read over REST (by `loopwright dev`'s pages and any
//! client): `GET /v1/agents` and `GET /v1/agents/{name}` (each agent's
//! models, tools with their schemas and sources, MCP servers, guardrails;
//! the models a run may pick),
//! `GET /v1/runs` (the runs kept, filtered), `GET /v1/sessions` (the
//! conversations kept), and `POST /v1/agents/{name}/tools/{tool}` (one tool
//! called directly).
//!
//! Invariants: every listing is read from the store or the agents' tool
//! catalogs, so replicas sharing a store list alike; a direct tool call's
//! arguments are checked against the tool's schema before it runs (a 400
//! naming each error, the tool not called), it runs under the agent's tool
//! timeout and the instance's concurrency limit, and its answer says
//! whether it failed; it is never part of a run (no approval asked: it is
//! the caller's own act, behind the same keys as a run).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use loopwright_core::ToolContext;
use loopwright_store::RunStatus;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{SHAPE, bad};
use crate::agents::ServedAgent;
use crate::error::{ApiError, Kind};
use crate::run::Instance;

/// The most runs or sessions one listing answers.
const MAX_LISTED: usize = 500;

/// Runs read to filter by agent when a listing names one: a listing then
/// shows that agent's among this many of the newest.
const AGENT_FILTER_WINDOW: usize = 5_000;

/// `GET /v1/agents`: each served agent, briefly.
pub(super) async fn agents(State(instance): State<Arc<Instance>>) -> Response {
    let agents: Vec<Value> = instance.agents.all().iter().map(brief).collect();
    axum::Json(json!({ "agents": agents, "models": instance.models.labels() })).into_response()
}

fn brief(served: &ServedAgent) -> Value {
    let agent = served.agent();
    json!({
        "name": served.name(),
        "description": served.description(),
        "models": agent.model().chain(),
    })
}

/// `GET /v1/agents/{name}`: the agent whole: its models, its tools (each
/// with its schema and source), the MCP servers it reached and those it
/// did not, its guardrails and limits.
pub(super) async fn agent(State(instance): State<Arc<Instance>>, Path(name): Path<String>) -> Response {
    let served = match instance.agent(&name, SHAPE) {
        Ok(served) => served.clone(),
        Err(error) => return error.into_response(),
    };
    let agent = served.agent();
    let catalog = agent.tools().catalog().await;
    let tools: Vec<Value> = catalog
        .tools()
        .iter()
        .map(|t| {
            let definition = t.tool.definition();
            json!({
                "name": t.name,
                "source": t.source,
                "source_kind": match t.source_kind() {
                    loopwright_core::toolset::SourceKind::Native => "native",
                    _ => "external",
                },
                "original_name": t.original_name,
                "description": definition.description,
                "input_schema": definition.input_schema,
                "output_schema": definition.output_schema,
            })
        })
        .collect();
    let servers = agent.tools().connection_report().map(|report| {
        json!({
            "connected": report.servers,
            "failed": report.failed.iter().map(|f| json!({"server": f.server, "error": f.error})).collect::<Vec<_>>(),
        })
    });
    let options = agent.options();
    let guardrails: Vec<Value> = options.guardrails.as_ref().map_or_else(Vec::new, |g| {
        g.guards()
            .map(|(name, points)| json!({"name": name, "points": points}))
            .collect()
    });
    let mut out = brief(&served);
    out["input_schema"] = served.input_schema();
    out["system"] = json!(options.system);
    out["tools"] = json!(tools);
    out["servers"] = servers.unwrap_or(Value::Null);
    out["warnings"] = json!(catalog.warnings());
    out["guardrails"] = json!(guardrails);
    out["limits"] = json!({
        "max_steps": options.max_steps,
        "tool_timeout_ms": u64::try_from(options.tool_timeout.as_millis()).unwrap_or(u64::MAX),
        "tool_concurrency": options.tool_concurrency,
        "context_window": options.budget.as_ref().map(|b| b.context_window),
    });
    axum::Json(out).into_response()
}

/// `?status=&agent=&limit=` of the runs listing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RunsQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /v1/runs`: the runs kept, the one written last first, as `GET
/// /v1/runs/{id}` shows each.
pub(super) async fn runs(
    State(instance): State<Arc<Instance>>,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Response {
    let listed = async {
        let Query(query) =
            query.map_err(|e| bad(format!("the query takes status, agent and limit (a number): {e}")))?;
        let status = match &query.status {
            Some(s) => Some(s.parse::<RunStatus>().map_err(|e| bad(format!("status: {e}")))?),
            None => None,
        };
        let limit = query.limit.unwrap_or(100).clamp(1, MAX_LISTED);
        let read = if query.agent.is_some() {
            AGENT_FILTER_WINDOW
        } else {
            limit
        };
        let records = instance
            .runs
            .store()
            .list_runs(status, read)
            .await
            .map_err(|e| ApiError::store(SHAPE, "the runs", &e))?;
        let runs: Vec<Value> = records
            .iter()
            .filter(|r| query.agent.as_deref().is_none_or(|a| a == r.agent))
            .take(limit)
            .map(loopwright_runs::view)
            .collect();
        Ok::<_, ApiError>(axum::Json(json!({ "runs": runs })).into_response())
    };
    listed.await.unwrap_or_else(IntoResponse::into_response)
}

/// `?limit=` of the sessions listing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionsQuery {
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /v1/sessions`: the conversations kept, the one written last first
/// (`id`, `version`, `updated_at`).
pub(super) async fn sessions(
    State(instance): State<Arc<Instance>>,
    query: Result<Query<SessionsQuery>, QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(query)) => query,
        Err(e) => return bad(format!("the query takes limit (a number): {e}")).into_response(),
    };
    let limit = query.limit.unwrap_or(100).clamp(1, MAX_LISTED);
    match instance.runs.store().list_conversations(limit).await {
        Ok(sessions) => axum::Json(json!({ "sessions": sessions })).into_response(),
        Err(e) => ApiError::store(SHAPE, "the sessions", &e).into_response(),
    }
}

/// `POST /v1/agents/{name}/tools/{tool}`: the body is the tool's arguments
/// (a JSON object); the answer `{tool, is_error, output, duration_ms}`.
pub(super) async fn call_tool(
    State(instance): State<Arc<Instance>>,
    Path((name, tool)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let called = async {
        let body = crate::error::body_or_error(body, SHAPE)?;
        let input: Value = serde_json::from_slice(&body).map_err(|e| {
            bad(format!(
                "the body must be the tool's arguments as a JSON object: {e}"
            ))
        })?;
        if !input.is_object() {
            return Err(bad("the body must be the tool's arguments as a JSON object"));
        }
        let served = instance.agent(&name, SHAPE)?.clone();
        let agent = served.agent();
        let catalog = agent.tools().catalog().await;
        let exposed = catalog.get(&tool).ok_or_else(|| {
            ApiError::new(
                SHAPE,
                Kind::NotFound,
                format!(
                    "agent {name:?} has no tool named {tool:?} (its tools: {})",
                    catalog.names().join(", ")
                ),
            )
        })?;
        exposed
            .validate_async(&input)
            .await
            .map_err(|e| bad(format!("the arguments do not match {tool}'s input schema: {e}")))?;
        let _permit = instance
            .limiter
            .acquire(&instance.lifecycle.stopping)
            .await
            .map_err(|refused| ApiError::refused(SHAPE, refused))?;
        let started = Instant::now();
        let ctx = ToolContext::new(loopwright_runs::shared::new_id("direct_"));
        let timeout = agent.options().tool_timeout;
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, exposed.tool.call(input, ctx)) => outcome,
            () = instance.lifecycle.hard.cancelled() => {
                return Err(ApiError::new(SHAPE, Kind::Unavailable, "the server is shutting down"));
            }
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (is_error, output) = match outcome {
            Ok(Ok(output)) => (output.is_error, json!(output.parts)),
            Ok(Err(error)) => (true, json!([{"type": "text", "text": error.to_string()}])),
            Err(_) => (
                true,
                json!([{"type": "text", "text": format!("the tool did not answer within {} ms", timeout.as_millis())}]),
            ),
        };
        Ok(axum::Json(
            json!({"tool": tool, "is_error": is_error, "output": output, "duration_ms": duration_ms}),
        )
        .into_response())
    };
    called.await.unwrap_or_else(IntoResponse::into_response)
}
