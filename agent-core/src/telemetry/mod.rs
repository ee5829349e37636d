//! Traces: `tracing` spans that follow the OpenTelemetry GenAI semantic
//! conventions, so an OpenTelemetry layer (the facade's `otel` feature, or
//! the application's own `tracing-opentelemetry` setup) exports them as they
//! are; without a subscriber they cost a disabled callsite check.
//!
//! The tree of one run:
//! - `invoke_agent {name}` (internal): the run, from its start to `finished`;
//!   - `chat {model}` (client): each model call, with the request settings,
//!     the usage, the finish reason and the error type;
//!   - `execute_tool {name}` (internal): each tool call that runs (calls
//!     refused before running, unknown or invalid, get none), with
//!     `gen_ai.tool.call.id`; under it the tool's own spans: an MCP tool's
//!     `tools/call {tool}` (client), a sub-agent's `invoke_agent {name}`.
//!
//! Invariants: every span is created inside its parent (a run's task and
//! each tool's task are instrumented with theirs), so the tree holds across
//! spawned tasks; the span name is set at creation through `otel.name` (an
//! OpenTelemetry layer reads it only then); token counts are recorded as
//! `i64` (exporters turn `u64` fields into strings); a failed span gets
//! `error.type` and `otel.status_code = "error"`; the conversation itself
//! (messages, tool arguments and results) is in a span only when the
//! agent opts in ([`AgentOptions::trace_content`](crate::agent::AgentOptions::trace_content);
//! `content`).

use tracing::Span;
use tracing::field::Empty;

mod content;

use loopwright_types::model_error::ModelError;
use loopwright_types::tool::ToolOutput;
use loopwright_types::{FinishReason, Usage};
use loopwright_types::{LanguageModel, ModelRequest};

/// The `tracing` target of every span here (filter on it to export only
/// these).
pub use loopwright_types::trace::TARGET;

/// `gen_ai.provider.name` for one of our provider names: the conventions'
/// well-known value where there is one, else the name itself.
///
/// ```
/// assert_eq!(loopwright_core::telemetry::provider_name("google"), "gcp.gemini");
/// assert_eq!(loopwright_core::telemetry::provider_name("anthropic"), "anthropic");
/// assert_eq!(loopwright_core::telemetry::provider_name("vllm"), "vllm");
/// ```
pub fn provider_name(provider: &str) -> &str {
    match provider {
        "google" | "gemini" => "gcp.gemini",
        other => other,
    }
}

/// The span of a run (`invoke_agent {name}`), a child of the current span.
pub(crate) fn invoke_agent(name: &str, model: &dyn LanguageModel) -> Span {
    tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = %format!("invoke_agent {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %name,
        gen_ai.provider.name = %provider_name(model.provider()),
        gen_ai.request.model = %model.model_id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// Record how a run ended on its span: the usage of its own model calls,
/// and the exit reason as `error.type` when it did not answer.
pub(crate) fn record_run(span: &Span, usage: &Usage, failure: Option<&str>) {
    record_usage(span, usage);
    if let Some(kind) = failure {
        span.record("error.type", kind);
        span.record("otel.status_code", "error");
    }
}

/// The span of one model call (`chat {model}`), a child of the current
/// span; with `content`, the request's system prompt and messages.
pub(crate) fn chat(model: &dyn LanguageModel, request: &ModelRequest, content: bool) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "chat",
        otel.name = %format!("chat {}", model.model_id()),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = %provider_name(model.provider()),
        gen_ai.request.model = %model.model_id(),
        gen_ai.request.stream = true,
        gen_ai.request.temperature = Empty,
        gen_ai.request.top_p = Empty,
        gen_ai.request.max_tokens = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
    );
    if content {
        if let Some(system) = &request.system {
            span.record(
                "gen_ai.system_instructions",
                content::system_instructions(system).as_str(),
            );
        }
        span.record(
            "gen_ai.input.messages",
            content::input_messages(&request.messages).as_str(),
        );
    }
    if let Some(t) = request.temperature {
        span.record("gen_ai.request.temperature", f64::from(t));
    }
    if let Some(p) = request.top_p {
        span.record("gen_ai.request.top_p", f64::from(p));
    }
    if let Some(n) = request.max_output_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(n));
    }
    span
}

/// Record a model call's outcome: the model that answered (`provider/model`
/// label, after any fallback), the finish reason and usage, or the error.
pub(crate) fn record_chat(
    span: &Span,
    answered_by: &str,
    outcome: Result<(&FinishReason, &Usage), ChatFailure<'_>>,
) {
    let model = answered_by.split_once('/').map_or(answered_by, |(_, m)| m);
    span.record("gen_ai.response.model", model);
    match outcome {
        Ok((reason, usage)) => {
            // An array in the conventions; `tracing` fields are scalars,
            // and a step has one reason: the exporter gets that string.
            span.record(
                "gen_ai.response.finish_reasons",
                finish_reason_name(reason).as_str(),
            );
            record_usage(span, usage);
            if let Some(n) = usage.cached_input_tokens {
                span.record("gen_ai.usage.cache_read.input_tokens", as_i64(n));
            }
            if let Some(n) = usage.reasoning_tokens {
                span.record("gen_ai.usage.reasoning.output_tokens", as_i64(n));
            }
        }
        Err(failure) => {
            let kind = match failure {
                ChatFailure::Model(e) => e.kind(),
                ChatFailure::Cancelled => "cancelled",
            };
            span.record("error.type", kind);
            span.record("otel.status_code", "error");
        }
    }
}

/// Record what a model call answered (`gen_ai.output.messages`), when the
/// agent opted in.
pub(crate) fn record_output(
    span: &Span,
    text: &str,
    calls: &[loopwright_types::ToolCall],
    reason: &FinishReason,
) {
    let written = content::output_messages(text, calls, &finish_reason_name(reason));
    span.record("gen_ai.output.messages", written.as_str());
}

/// Why a model call has no answer.
pub(crate) enum ChatFailure<'a> {
    Model(&'a ModelError),
    Cancelled,
}

/// The span of one tool call (`execute_tool {name}`), a child of the
/// current span. `name` is the exposed name; `source` and `original_name`
/// say where the tool comes from; `arguments`, when the agent opted in to
/// content.
pub(crate) fn execute_tool(
    name: &str,
    call_id: &str,
    source: &str,
    original_name: &str,
    arguments: Option<&serde_json::Value>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        agent.tool.source = %source,
        agent.tool.original_name = %original_name,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
    );
    if let Some(arguments) = arguments {
        span.record("gen_ai.tool.call.arguments", arguments.to_string().as_str());
    }
    span
}

/// Record a tool call's outcome: `error.type` (`timeout`, `cancelled`, or
/// `tool_error`) when it failed; with `content`, its result.
pub(crate) fn record_tool(span: &Span, output: &ToolOutput, details: Option<&str>, content: bool) {
    if content {
        span.record(
            "gen_ai.tool.call.result",
            content::tool_result(&output.parts).as_str(),
        );
    }
    if output.is_error {
        span.record("error.type", details.unwrap_or("tool_error"));
        span.record("otel.status_code", "error");
    }
}

fn record_usage(span: &Span, usage: &Usage) {
    if let Some(n) = usage.input_tokens {
        span.record("gen_ai.usage.input_tokens", as_i64(n));
    }
    if let Some(n) = usage.output_tokens {
        span.record("gen_ai.usage.output_tokens", as_i64(n));
    }
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The conventions' finish reason names (OpenAI's vocabulary).
fn finish_reason_name(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Other(name) => name.clone(),
        known => match serde_json::to_value(known) {
            Ok(serde_json::Value::String(s)) => s,
            _ => "other".to_owned(),
        },
    }
}
