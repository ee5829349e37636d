//! Tools a request brings for its client to run, as every surface takes
//! them (`tools` of Chat Completions, the Responses API, Anthropic
//! Messages, REST and the AI SDK's chat route): checked here once, then
//! stored with the run ([`RunOptions::client_tools`](loopwright_runs::RunOptions)),
//! so a call to one pauses the run and the client's output continues it on
//! any replica.
//!
//! Invariants: a declared tool has a valid name (`[a-zA-Z0-9_-]`, 1 to 64),
//! declared once, and an input schema that is a JSON object the loop can
//! compile (none: any object); anything else is refused naming the tool
//! and what is wrong, before a run starts. A tool the agent has of the
//! same name stays the agent's (the client's is left out).
//!
//! The stateless surfaces (Chat Completions, Anthropic Messages) send the
//! client a call id that names the paused run, [`exposed_id`], so the tool
//! result in the client's next request finds the run without any state in
//! the client ([`parse_exposed_id`]).

use loopwright_core::ToolDefinition;
use loopwright_core::schema::Validator;
use loopwright_core::toolset::is_valid_tool_name;
use serde_json::{Value, json};

/// The most client tools one request may declare.
pub(crate) const MAX_CLIENT_TOOLS: usize = 128;

/// One tool as a request declares it.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub(crate) name: String,
    pub(crate) description: String,
    /// Its input schema (`None`: any object).
    pub(crate) schema: Option<Value>,
}

/// The declared tools as definitions, or why not (`what` names the
/// request's key, e.g. `tools`).
pub(crate) fn definitions(declared: Vec<Declared>, what: &str) -> Result<Vec<ToolDefinition>, String> {
    if declared.len() > MAX_CLIENT_TOOLS {
        return Err(format!(
            "{what}: {} tools declared; at most {MAX_CLIENT_TOOLS}",
            declared.len()
        ));
    }
    let mut out: Vec<ToolDefinition> = Vec::with_capacity(declared.len());
    for (i, tool) in declared.into_iter().enumerate() {
        let at = format!("{what}[{i}] ({:?})", tool.name);
        if !is_valid_tool_name(&tool.name) {
            return Err(format!(
                "{at}: a tool name is 1 to 64 letters, digits, '_' or '-'"
            ));
        }
        if out.iter().any(|d| d.name == tool.name) {
            return Err(format!("{at}: the tool {} is declared twice", tool.name));
        }
        let schema = match tool.schema {
            None | Some(Value::Null) => json!({"type": "object"}),
            Some(Value::Object(map)) => Value::Object(map),
            Some(other) => {
                return Err(format!(
                    "{at}: the input schema must be a JSON object, not {}",
                    kind(&other)
                ));
            }
        };
        if let Err(e) = Validator::new(&schema) {
            return Err(format!("{at}: the input schema does not compile: {e}"));
        }
        out.push(ToolDefinition::new(tool.name, tool.description, schema));
    }
    Ok(out)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Between a paused run's id and its call's id in an [`exposed_id`].
const SEPARATOR: &str = ".";

/// The call id a stateless client sees for call `call_id` of paused run
/// `run_id`: both, so the client's tool result names the run.
pub(crate) fn exposed_id(run_id: &str, call_id: &str) -> String {
    format!("{run_id}{SEPARATOR}{call_id}")
}

/// The run and call of an [`exposed_id`], when `id` is one (a run's id
/// is `run_` or, a stored response's, `resp_`, then 32 hex digits).
pub(crate) fn parse_exposed_id(id: &str) -> Option<(&str, &str)> {
    let (run, call) = id.split_once(SEPARATOR)?;
    let hex = run.strip_prefix("run_").or_else(|| run.strip_prefix("resp_"))?;
    (hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && !call.is_empty()).then_some((run, call))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn declared(name: &str, schema: Option<Value>) -> Declared {
        Declared {
            name: name.into(),
            description: "d".into(),
            schema,
        }
    }

    #[test]
    fn declared_tools_are_checked_and_named_in_errors() {
        let ok = definitions(
            vec![
                declared("get_location", None),
                declared(
                    "ask",
                    Some(json!({"type": "object", "properties": {"q": {"type": "string"}}})),
                ),
            ],
            "tools",
        )
        .unwrap();
        assert_eq!(ok[0].input_schema, json!({"type": "object"}));
        let bad_name = definitions(vec![declared("get location", None)], "tools").unwrap_err();
        assert!(bad_name.starts_with("tools[0] (\"get location\")"), "{bad_name}");
        let twice = definitions(vec![declared("a", None), declared("a", None)], "tools").unwrap_err();
        assert!(twice.contains("tools[1]") && twice.contains("twice"), "{twice}");
        let not_object = definitions(vec![declared("a", Some(json!("object")))], "tools").unwrap_err();
        assert!(not_object.contains("not a string"), "{not_object}");
        let broken = definitions(vec![declared("a", Some(json!({"type": 12})))], "tools").unwrap_err();
        assert!(broken.contains("does not compile"), "{broken}");
    }

    #[test]
    fn an_exposed_id_names_its_run_and_call() {
        let run = format!("run_{}", "ab".repeat(16));
        let id = exposed_id(&run, "call_1.x");
        assert_eq!(parse_exposed_id(&id), Some((run.as_str(), "call_1.x")));
        assert_eq!(parse_exposed_id("call_1"), None);
        assert_eq!(parse_exposed_id("run_12.call"), None);
        let response = format!("resp_{}", "0f".repeat(16));
        assert_eq!(
            parse_exposed_id(&exposed_id(&response, "c")),
            Some((response.as_str(), "c"))
        );
    }
}
