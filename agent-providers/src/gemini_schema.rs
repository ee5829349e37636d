//! Adapting JSON Schema to the subset Gemini's function declarations accept.

use loopwright_types::schema::flatten_schema;
use serde_json::{Map, Value};

/// Keywords Gemini's `Schema` object accepts; everything else is dropped.
const ALLOWED: [&str; 19] = [
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "minProperties",
    "maxProperties",
];

/// The schema Gemini accepts for `schema`: references inlined, unknown
/// keywords dropped, `type: [T, "null"]` turned into `nullable`, `const`
/// into a one-value `enum`, `oneOf` into `anyOf`. `None` for an object
/// without properties (Gemini rejects it; the declaration then has no
/// parameters).
pub(crate) fn gemini_parameters(schema: &Value) -> Option<Value> {
    let pruned = prune(&flatten_schema(schema));
    let empty_object = pruned.get("type").and_then(Value::as_str) == Some("object")
        && pruned
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    if empty_object { None } else { Some(pruned) }
}

fn prune(schema: &Value) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "type" => match value {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types.iter().filter(|t| t.as_str() != Some("null")).collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    if let Some(first) = non_null.first() {
                        out.insert("type".into(), (*first).clone());
                    }
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "const" => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            "properties" => {
                let props: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), prune(v)))
                    .collect();
                out.insert("properties".into(), Value::Object(props));
            }
            "items" => {
                out.insert("items".into(), prune(value));
            }
            "anyOf" | "oneOf" => {
                let list: Vec<Value> = value.as_array().into_iter().flatten().map(prune).collect();
                out.insert("anyOf".into(), Value::Array(list));
            }
            k if ALLOWED.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    // Gemini wants enum values as strings.
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        for v in values.iter_mut() {
            if !v.is_string() {
                *v = Value::String(v.to_string());
            }
        }
        out.insert("type".into(), Value::String("string".into()));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prunes_to_gemini_subset() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": ["string", "null"], "examples": ["x"]},
                "b": {"$ref": "#/$defs/B"},
                "c": {"const": "fixed"},
                "d": {"oneOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string"}]}
            },
            "required": ["a"],
            "$defs": {"B": {"type": "array", "items": {"type": "number", "default": 1}}}
        });
        assert_eq!(
            gemini_parameters(&schema),
            Some(json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string", "nullable": true},
                    "b": {"type": "array", "items": {"type": "number"}},
                    "c": {"type": "string", "enum": ["fixed"]},
                    "d": {"anyOf": [{"type": "integer"}, {"type": "string"}]}
                },
                "required": ["a"]
            }))
        );
        assert_eq!(
            gemini_parameters(&json!({"type": "object", "properties": {}})),
            None
        );
        assert_eq!(gemini_parameters(&json!({"type": "object"})), None);
    }
}
