//! JSON Schema helpers: flattening schemas so every provider accepts them.
//!
//! Providers differ in what JSON Schema they accept; none of them needs
//! `$schema`, and several reject `$ref`. [`flatten_schema`] removes the former
//! and inlines the latter, so a schema from schemars or from an MCP server can
//! be sent anywhere. Provider-specific pruning (Gemini's subset) belongs to the
//! providers.

use serde_json::{Map, Value};

/// How deep a recursive `$ref` is inlined before it is replaced by `{}`
/// (any value): a recursive type has no finite inline form.
pub const MAX_REF_DEPTH: usize = 8;

/// Remove `$schema` and inline every local `$ref` (`#/$defs/...` or
/// `#/definitions/...`), dropping the definitions afterwards.
///
/// A recursive reference is inlined [`MAX_REF_DEPTH`] times, then becomes
/// `{}`. A reference that does not resolve becomes `{}` too.
///
/// ```
/// use serde_json::json;
/// let schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "type": "object",
///     "properties": {"p": {"$ref": "#/$defs/Point"}},
///     "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}}
/// });
/// let flat = loopwright_core::schema::flatten_schema(&schema);
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
    let mut out = inline(schema, &defs, &mut stack);
    if let Value::Object(root) = &mut out {
        root.remove("$schema");
        root.remove("$defs");
        root.remove("definitions");
    }
    out
}

fn inline(value: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    match value {
        Value::Object(obj) => {
            if let Some(Value::String(reference)) = obj.get("$ref") {
                let depth = stack.iter().filter(|r| *r == reference).count();
                let Some(target) = defs.get(reference).filter(|_| depth < MAX_REF_DEPTH) else {
                    return Value::Object(Map::new());
                };
                stack.push(reference.clone());
                let mut resolved = inline(target, defs, stack);
                stack.pop();
                // Sibling keywords of `$ref` (2020-12 allows them) are kept.
                if let Value::Object(resolved_obj) = &mut resolved {
                    for (k, v) in obj {
                        if k != "$ref" {
                            resolved_obj.insert(k.clone(), inline(v, defs, stack));
                        }
                    }
                }
                return resolved;
            }
            let mut out = Map::with_capacity(obj.len());
            for (k, v) in obj {
                if k == "$schema" || k == "$defs" || k == "definitions" {
                    continue;
                }
                out.insert(k.clone(), inline(v, defs, stack));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| inline(v, defs, stack)).collect()),
        other => other.clone(),
    }
}

/// The flattened JSON Schema of a Rust type, as a tool's input schema: no
/// `$schema`, no `title`, definitions inlined, always `"type": "object"` with
/// `properties`.
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { city: String, days: Option<u8> }
/// let schema = loopwright_core::schema::input_schema_for::<Args>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// assert!(schema.get("$schema").is_none());
/// ```
pub fn input_schema_for<T: schemars::JsonSchema>() -> Value {
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
        obj.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    flat
}

/// A compiled JSON Schema whose errors name the place in the value they are
/// about: what the loop checks tool calls with, for other crates that check
/// input the same way (a served agent's MCP arguments, say).
///
/// ```
/// let v = loopwright_core::schema::Validator::new(&serde_json::json!({
///     "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]
/// })).unwrap();
/// assert!(v.check(&serde_json::json!({"n": 1})).is_ok());
/// assert!(v.check(&serde_json::json!({"n": "one"})).unwrap_err().contains("/n"));
/// ```
#[derive(Clone)]
pub struct Validator {
    inner: std::sync::Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

impl Validator {
    /// Compile `schema`; an invalid schema is an error saying why.
    pub fn new(schema: &serde_json::Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|v| Self {
                inner: std::sync::Arc::new(v),
            })
            .map_err(|e| format!("invalid JSON Schema: {e}"))
    }

    /// Every error of `value`, joined by `; `; `Ok` when there is none.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), String> {
        validation_errors(&self.inner, value)
    }
}

/// Every error of `value` against `validator`, each with the place in the
/// value it is about, joined by `; `; `Ok` when there is none.
pub(crate) fn validation_errors(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
) -> Result<(), String> {
    let messages: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{e} (at {path})")
            }
        })
        .collect();
    if messages.is_empty() {
        Ok(())
    } else {
        Err(messages.join("; "))
    }
}
