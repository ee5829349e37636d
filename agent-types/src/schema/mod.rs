//! JSON Schema helpers: checking values against schemas from anywhere, and
//! flattening schemas so every provider accepts them.
//!
//! A schema can come from outside: a client's output format on a served
//! surface, an MCP server's tool input schema, an agent file. [`Validator`]
//! compiles one only after [`SchemaLimits`] pass: its size, and how many
//! subschemas can apply at one place of a value (unions of references
//! multiply; see `bounds`); it validates with a first-error check, and
//! [`Validator::check_async`] moves an expensive validation off the async
//! workers, under a deadline.
//!
//! Providers differ in what JSON Schema they accept; none of them needs
//! `$schema`, and several reject `$ref`. [`flatten_schema`] removes the former
//! and inlines the latter, so a schema from schemars or from an MCP server can
//! be sent anywhere (a schema whose inlined form would be larger than
//! [`MAX_FLAT_NODES`] is left as it is). Provider-specific pruning (Gemini's
//! subset) belongs to the providers.

mod bounds;
mod graph;
mod strict;
mod validator;

pub use strict::{STRICT_UNSUPPORTED, strict_schema};
pub use validator::{CheckError, MAX_ERRORS, SchemaError, SchemaLimits, Validator};

use serde_json::{Map, Value};

/// How deep a recursive `$ref` is inlined before it is replaced by `{}`
/// (any value): a recursive type has no finite inline form.
pub const MAX_REF_DEPTH: usize = 8;

/// The most nodes (objects, arrays and values) a flattened schema may have;
/// a schema whose references would inline to more is sent unflattened.
pub const MAX_FLAT_NODES: usize = 100_000;

/// Remove `$schema` and inline every local `$ref` (`#/$defs/...` or
/// `#/definitions/...`), dropping the definitions afterwards.
///
/// A recursive reference is inlined [`MAX_REF_DEPTH`] times, then becomes
/// `{}`. A reference that does not resolve becomes `{}` too. A schema that
/// would inline to more than [`MAX_FLAT_NODES`] nodes (references that fan
/// out) is returned as it is, without `$schema`.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "type": "object",
///     "properties": {"p": {"$ref": "#/$defs/Point"}},
///     "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}
/// });
/// let flat = loopwright_types::schema::flatten_schema(&schema);
/// assert_eq!(flat, json!({
///     "type": "object",
///     "properties": {"p": {"type": "object", "properties": {"x": {"type": "number"}}}}
/// }));
/// ```
pub fn flatten_schema(schema: &Value) -> Value {
    let mut defs = Map::new();
    if let Value::Object(root) = schema {
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(d)) = root.get(key) {
                for (name, def) in d {
                    defs.insert(format!("#/{key}/{name}"), def.clone());
                }
            }
        }
    }
    let mut stack = Vec::new();
    let mut budget = MAX_FLAT_NODES;
    let mut out = match inline(schema, &defs, &mut stack, &mut budget) {
        Some(out) => out,
        None => {
            let mut kept = schema.clone();
            if let Value::Object(root) = &mut kept {
                root.remove("$schema");
            }
            return kept;
        }
    };
    if let Value::Object(root) = &mut out {
        root.remove("$schema");
        root.remove("$defs");
        root.remove("definitions");
    }
    out
}

/// `value` with its references inlined; `None` once `budget` nodes were
/// made.
fn inline(
    value: &Value,
    defs: &Map<String, Value>,
    stack: &mut Vec<String>,
    budget: &mut usize,
) -> Option<Value> {
    *budget = budget.checked_sub(1)?;
    Some(match value {
        Value::Object(obj) => {
            if let Some(Value::String(reference)) = obj.get("$ref") {
                let depth = stack.iter().filter(|r| *r == reference).count();
                let Some(target) = defs.get(reference).filter(|_| depth < MAX_REF_DEPTH) else {
                    return Some(Value::Object(Map::new()));
                };
                stack.push(reference.clone());
                let resolved = inline(target, defs, stack, budget);
                stack.pop();
                let mut resolved = resolved?;
                // Sibling keywords of `$ref` (2020-12 allows them) are kept.
                if let Value::Object(resolved_obj) = &mut resolved {
                    for (k, v) in obj {
                        if k != "$ref" {
                            resolved_obj.insert(k.clone(), inline(v, defs, stack, budget)?);
                        }
                    }
                }
                return Some(resolved);
            }
            let mut out = Map::with_capacity(obj.len());
            for (k, v) in obj {
                if k == "$schema" || k == "$defs" || k == "definitions" {
                    continue;
                }
                out.insert(k.clone(), inline(v, defs, stack, budget)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| inline(v, defs, stack, budget))
                .collect::<Option<Vec<_>>>()?,
        ),
        other => other.clone(),
    })
}

/// The flattened JSON Schema of a Rust type, as a tool's input schema: no
/// `$schema`, no `title`, definitions inlined, always `"type": "object"` with
/// `properties`.
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { city: String, days: Option<u8> }
/// let schema = loopwright_types::schema::input_schema_for::<Args>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// assert!(schema.get("$schema").is_none());
/// ```
pub fn input_schema_for<T: schemars::JsonSchema>() -> Value {
    let mut flat = value_schema_for::<T>();
    if let Value::Object(obj) = &mut flat {
        obj.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    flat
}

/// The flattened schema of one value of `T` (definitions inlined, no
/// `$schema` or `title`), not forced to be an object: the schema of one
/// argument of a [`tool_fn!`](macro@crate::tool_fn) tool.
pub(crate) fn value_schema_for<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = Value::from(generator.into_root_schema_for::<T>());
    let mut flat = flatten_schema(&schema);
    if let Value::Object(obj) = &mut flat {
        obj.remove("title");
    }
    flat
}
