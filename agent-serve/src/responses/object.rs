//! The Responses API's `response` object: what a stored response keeps of
//! its request ([`Meta`]), how a run ended as the API names it
//! ([`Outcome`]), and the object itself ([`object`]).
//!
//! Invariant: the object is a function of the stored [`Meta`], the output
//! items and the outcome, so every replica, and every read of one
//! response, writes the same object (same ids, same `created_at`).

use loopwright_core::{AgentResult, ExitReason, Usage};
use loopwright_store::{RunRecord, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::run::{Ending, Stop, Tokens, ending};

/// What a response echoes of its request, kept in its run's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) created_at: u64,
    /// The served agent's name.
    pub(super) model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) previous_response_id: Option<String>,
    #[serde(default)]
    pub(super) background: bool,
    #[serde(default)]
    pub(super) store: bool,
    /// `text` as the request gave it (`{"format": ...}`).
    #[serde(default)]
    pub(super) text: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metadata: Option<Value>,
}

/// The key of a run record's surface value that marks it a response.
const SURFACE_KEY: &str = "response";

impl Meta {
    /// As a run record's surface value.
    pub(super) fn to_surface(&self) -> Value {
        json!({ SURFACE_KEY: self })
    }

    /// The meta of a run record that is a response (`None` for any other
    /// run, which the Responses routes do not show).
    pub(super) fn of(record: &RunRecord) -> Option<Self> {
        Self::deserialize(loopwright_runs::surface(record)?.get(SURFACE_KEY)?).ok()
    }
}

/// How a response's run ended, as the API names it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Status {
    Completed,
    /// Cut short: by a step or token limit (`max_output_tokens`), or a
    /// guardrail (`content_filter`).
    Incomplete(&'static str),
    Failed(String),
    Cancelled,
}

impl Status {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Incomplete(_) => "incomplete",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// `incomplete_details.reason` of a response a limit cut short.
const MAX_OUTPUT_TOKENS: &str = "max_output_tokens";
/// `incomplete_details.reason` of a response a guardrail stopped.
const CONTENT_FILTER: &str = "content_filter";

/// The `type` of a run record's error.
fn error_type(record: &RunRecord) -> Option<&str> {
    record.error.as_ref()?.get("type")?.as_str()
}

/// A finished run, for its response.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    pub(super) status: Status,
    /// The structured answer (JSON text), when one was asked for.
    pub(super) output: Option<String>,
    pub(super) usage: Tokens,
}

impl Outcome {
    /// From a run's result (a response that is not stored).
    pub(super) fn of_result(result: &AgentResult) -> Self {
        let usage = Tokens::from(&result.tree_usage);
        let (status, output) = match (result.exit(), ending(result)) {
            (ExitReason::Cancelled, _) => (Status::Cancelled, None),
            (
                _,
                Ending::Answer {
                    stop: Stop::End,
                    output,
                },
            ) => (Status::Completed, output),
            (
                _,
                Ending::Answer {
                    stop: Stop::Length,
                    output,
                },
            ) => (Status::Incomplete(MAX_OUTPUT_TOKENS), output),
            (
                _,
                Ending::Answer {
                    stop: Stop::Refused,
                    output,
                },
            ) => (Status::Incomplete(CONTENT_FILTER), output),
            (_, Ending::Failed(message)) => (Status::Failed(message), None),
        };
        Self {
            status,
            output,
            usage,
        }
    }

    /// From a run's record; `None` while the run has not ended.
    pub(super) fn of_record(record: &RunRecord) -> Option<Self> {
        let result = record.result.as_ref();
        let usage = result
            .and_then(|r| r.get("usage"))
            .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok())
            .map(|u| Tokens::from(&u))
            .unwrap_or_default();
        let message = || {
            record
                .error
                .as_ref()
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the run failed")
                .to_owned()
        };
        let status = match record.status {
            // Paused on the client's tools: complete, its function calls
            // the client's to answer.
            RunStatus::AwaitingApproval if waits_for_client(record) => Status::Completed,
            RunStatus::Running | RunStatus::AwaitingApproval => return None,
            RunStatus::Cancelled => Status::Cancelled,
            // A guardrail's stop (its record's error says so).
            RunStatus::Failed if error_type(record) == Some("tripped") => Status::Incomplete(CONTENT_FILTER),
            RunStatus::Failed => Status::Failed(message()),
            _ => {
                let exit = result
                    .and_then(|r| r.get("exit"))
                    .and_then(|e| serde_json::from_value::<ExitReason>(e.clone()).ok());
                match exit {
                    Some(ExitReason::MaxSteps | ExitReason::TokenLimit) => {
                        Status::Incomplete(MAX_OUTPUT_TOKENS)
                    }
                    _ => Status::Completed,
                }
            }
        };
        let output = result
            .and_then(|r| r.get("output"))
            .filter(|o| !o.is_null())
            .map(Value::to_string);
        Some(Self {
            status,
            output,
            usage,
        })
    }
}

/// Token usage as the Responses API writes it.
pub(super) fn usage(t: &Tokens) -> Value {
    json!({
        "input_tokens": t.input,
        "input_tokens_details": {"cached_tokens": t.cached, "cache_write_tokens": t.cache_write},
        "output_tokens": t.output,
        "output_tokens_details": {"reasoning_tokens": t.reasoning},
        "total_tokens": t.input + t.output,
    })
}

/// The `response` object: `status` is `queued`, `in_progress` or the
/// outcome's; `output` the items so far.
pub(super) fn object(
    id: &str,
    meta: &Meta,
    status: &str,
    output: &[Value],
    outcome: Option<&Outcome>,
) -> Value {
    let mut out = json!({
        "id": id,
        "object": "response",
        "created_at": meta.created_at,
        "status": status,
        "background": meta.background,
        "error": null,
        "incomplete_details": null,
        "instructions": meta.instructions,
        "max_output_tokens": meta.max_output_tokens,
        "metadata": meta.metadata.clone().unwrap_or_else(|| json!({})),
        "model": meta.model,
        "output": output,
        "parallel_tool_calls": false,
        "previous_response_id": meta.previous_response_id,
        "reasoning": {"effort": meta.reasoning_effort, "summary": null},
        "store": meta.store,
        "temperature": meta.temperature,
        "text": if meta.text.is_null() { json!({"format": {"type": "text"}}) } else { meta.text.clone() },
        "tool_choice": "auto",
        "tools": [],
        "top_p": meta.top_p,
        "truncation": "disabled",
        "usage": null,
    });
    if let Some(outcome) = outcome {
        out["usage"] = usage(&outcome.usage);
        match &outcome.status {
            Status::Failed(message) => {
                out["error"] = json!({"code": "server_error", "message": message});
            }
            Status::Incomplete(reason) => out["incomplete_details"] = json!({"reason": reason}),
            Status::Completed | Status::Cancelled => {}
        }
    }
    out
}

/// Whether `record`'s run waits for the client's tools (every call it
/// waits for is a client tool's).
fn waits_for_client(record: &RunRecord) -> bool {
    let shown = loopwright_runs::view(record);
    shown["pending_approvals"]
        .as_array()
        .is_some_and(|p| !p.is_empty() && p.iter().all(|c| c["kind"] == "client_tool"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn meta_is_kept_in_a_record_and_other_runs_are_not_responses() {
        let meta = Meta {
            created_at: 7,
            model: "assistant".into(),
            store: true,
            ..Meta::default()
        };
        let state = json!({"surface": meta.to_surface()});
        let record = RunRecord::new("resp_1", "assistant").with_state(state);
        assert_eq!(Meta::of(&record), Some(meta));
        assert_eq!(Meta::of(&RunRecord::new("run_1", "assistant")), None);
    }

    #[test]
    fn a_record_ends_as_the_api_names_it() {
        let mut record = RunRecord::new("r", "a").with_status(RunStatus::Completed);
        record.result = Some(json!({"text": "", "output": {"n": 1}, "exit": "max_steps",
            "usage": {"input_tokens": 3, "output_tokens": 2}}));
        let outcome = Outcome::of_record(&record).unwrap();
        assert_eq!(outcome.status, Status::Incomplete(MAX_OUTPUT_TOKENS));
        assert_eq!(outcome.output.as_deref(), Some("{\"n\":1}"));
        let object = object("r", &Meta::default(), outcome.status.name(), &[], Some(&outcome));
        assert_eq!(object["usage"]["total_tokens"], 5);
        assert_eq!(object["incomplete_details"]["reason"], "max_output_tokens");
        let mut failed = RunRecord::new("r", "a").with_status(RunStatus::Failed);
        failed.error = Some(json!({"type": "run_failed", "message": "the model is down"}));
        assert_eq!(
            Outcome::of_record(&failed).unwrap().status,
            Status::Failed("the model is down".into())
        );
        assert!(Outcome::of_record(&RunRecord::new("r", "a")).is_none());
    }
}
