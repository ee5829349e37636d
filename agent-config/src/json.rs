//! Small helpers over JSON values shared by the configuration file, agent
//! files and skills.

use serde_json::Value;

/// A JSON type's name for messages (`expected a string, got a number`).
///
/// Invariant: every name reads after "got" (`null`, `a boolean`, ...).
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
