//! Elicitation: a server asks the person for input in the middle of a call,
//! in form mode (a flat JSON Schema to fill in) or URL mode (a page to
//! open), either inside a multi-round-trip `input_required` result
//! (2026-07-28) or as an `elicitation/create` request (2025-11-25 servers).
//!
//! Who answers, first that applies:
//! 1. the application's [`ElicitationHandler`](crate::ElicitationHandler),
//!    when it installed one in [`McpClientOptions`](crate::McpClientOptions);
//! 2. the run that made the call: an `input_requested` event with a
//!    responder ([`ToolContext::ask_user`]), which the CLI turns into a
//!    question on the terminal;
//! 3. nobody: the request is declined.
//!
//! Invariants: every request gets one of `accept`, `decline` or `cancel`;
//! no answer within the timeout ([`McpClientOptions::elicitation_timeout`](crate::McpClientOptions::elicitation_timeout),
//! never past the call's deadline) is `decline`; an accepted form's content
//! is an object in which every property the schema gives a `default` and
//! the person left out holds that default (SEP-1034).

use loopwright_types::{ToolContext, UserInputAnswer, UserInputRequest};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

use crate::handler::Shared;

/// Ask whoever answers (see the module docs) what `params` asks, on behalf
/// of the call `ctx` (none when the server's request could not be tied to
/// a call).
pub(crate) async fn elicit(
    shared: &Shared,
    ctx: Option<&ToolContext>,
    params: ElicitRequestParams,
) -> ElicitResult {
    let timeout = shared.options.elicitation_timeout();
    let schema = form_schema(&params);
    let answer = if let Some(handler) = shared.options.elicitation_handler() {
        let wait = match ctx.and_then(ToolContext::deadline) {
            Some(deadline) => timeout.min(deadline.saturating_duration_since(tokio::time::Instant::now())),
            None => timeout,
        };
        match tokio::time::timeout(wait, handler.elicit(&shared.server, params)).await {
            Ok(Ok(result)) => result,
            Ok(Err(e)) => {
                tracing::warn!(server = %shared.server, error = %e.message, "elicitation handler failed; declined");
                ElicitResult::new(ElicitationAction::Decline)
            }
            Err(_) => {
                tracing::warn!(server = %shared.server, "elicitation unanswered within {wait:?}; declined");
                ElicitResult::new(ElicitationAction::Decline)
            }
        }
    } else if let Some(ctx) = ctx {
        from_answer(
            ctx.ask_user(question(&shared.server, params), Some(timeout))
                .await,
        )
    } else {
        tracing::warn!(server = %shared.server, "elicitation outside any call: nobody can answer; declined");
        ElicitResult::new(ElicitationAction::Decline)
    };
    with_defaults(answer, schema.as_ref())
}

/// The form's schema as JSON (none for URL mode).
fn form_schema(params: &ElicitRequestParams) -> Option<Value> {
    match params {
        ElicitRequestParams::FormElicitationParams { requested_schema, .. } => {
            serde_json::to_value(requested_schema).ok()
        }
        _ => None,
    }
}

/// The server's request as loopwright-core's question.
fn question(server: &str, params: ElicitRequestParams) -> UserInputRequest {
    match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => UserInputRequest::form(
            server,
            message,
            serde_json::to_value(requested_schema).unwrap_or_else(|_| Value::Object(Map::new())),
        ),
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => UserInputRequest::url(server, message, url, elicitation_id),
        // A mode this version does not know: a form with no fields.
        other => UserInputRequest::form(
            server,
            serde_json::to_value(&other)
                .ok()
                .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default(),
            serde_json::json!({"type": "object", "properties": {}}),
        ),
    }
}

/// loopwright-core's answer as the MCP result.
fn from_answer(answer: UserInputAnswer) -> ElicitResult {
    match answer {
        UserInputAnswer::Accept { content } => {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            result.content = content;
            result
        }
        UserInputAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        // Decline, and any answer kind this version does not know.
        _ => ElicitResult::new(ElicitationAction::Decline),
    }
}

/// An accepted form's content with the schema's defaults filled in where
/// the person left a property out (SEP-1034); other answers unchanged.
fn with_defaults(mut result: ElicitResult, schema: Option<&Value>) -> ElicitResult {
    let (ElicitationAction::Accept, Some(schema)) = (&result.action, schema) else {
        return result;
    };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return result;
    };
    let mut content = match result.content.take() {
        Some(Value::Object(map)) => map,
        Some(other) => {
            // Not an object: the server's schema cannot match it; keep it as it is.
            result.content = Some(other);
            return result;
        }
        None => Map::new(),
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
    result.content = Some(Value::Object(content));
    result
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    fn accepted(content: Option<Value>) -> ElicitResult {
        let mut r = ElicitResult::new(ElicitationAction::Accept);
        r.content = content;
        r
    }

    #[test]
    fn defaults_fill_what_the_person_left_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        let out = with_defaults(accepted(Some(json!({"age": 41}))), Some(&schema));
        assert_eq!(out.content, Some(json!({"name": "John Doe", "age": 41})));
        let out = with_defaults(accepted(None), Some(&schema));
        assert_eq!(out.content, Some(json!({"name": "John Doe", "age": 30})));
    }

    #[test]
    fn decline_and_cancel_carry_no_content() {
        let schema = json!({"properties": {"a": {"default": 1}}});
        let out = with_defaults(ElicitResult::new(ElicitationAction::Decline), Some(&schema));
        assert_eq!((out.action, out.content), (ElicitationAction::Decline, None));
        assert_eq!(
            from_answer(UserInputAnswer::Cancel).action,
            ElicitationAction::Cancel
        );
    }
}
