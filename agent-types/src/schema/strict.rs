//! JSON Schemas made strict for the providers whose structured output
//! has a strict mode (OpenAI's Chat and Responses).

use serde_json::{Value, json};

/// The schema adapted to the strict modes of OpenAI (Chat and Responses):
/// every object gets `additionalProperties: false`, and an optional property
/// whose schema accepts `null` becomes required (the model sends `null` for
/// "absent", which the original schema accepts). `None` when that is not
/// enough: an optional property that does not accept `null`, an object
/// whose `additionalProperties` is a schema, or a keyword strict mode
/// refuses ([`STRICT_UNSUPPORTED`]); the provider then sends the schema
/// unchanged and non-strict.
///
/// ```
/// use serde_json::json;
/// let strict = loopwright_types::schema::strict_schema(&json!({
///     "type": "object",
///     "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
///     "required": ["a"]
/// })).unwrap();
/// assert_eq!(strict["required"], json!(["a", "b"]));
/// assert_eq!(strict["additionalProperties"], json!(false));
/// // An optional property that cannot be null: no strict form.
/// assert!(loopwright_types::schema::strict_schema(&json!({
///     "type": "object", "properties": {"a": {"type": "string"}}
/// })).is_none());
/// // Nor a keyword strict mode refuses.
/// assert!(loopwright_types::schema::strict_schema(&json!({
///     "type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["a"]
/// })).is_none());
/// ```
pub fn strict_schema(schema: &Value) -> Option<Value> {
    let mut out = schema.clone();
    make_strict(&mut out).then_some(out)
}

/// Keywords OpenAI's strict mode refuses with a 400 (its "supported
/// schemas" list): a schema using one is sent non-strict.
pub const STRICT_UNSUPPORTED: [&str; 9] = [
    "allOf",
    "not",
    "oneOf",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
];

fn make_strict(schema: &mut Value) -> bool {
    let Some(obj) = schema.as_object_mut() else {
        return true;
    };
    if STRICT_UNSUPPORTED.iter().any(|k| obj.contains_key(*k)) {
        return false;
    }
    let mut ok = true;
    for key in ["items", "not"] {
        if let Some(sub) = obj.get_mut(key) {
            ok &= make_strict(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = obj.get_mut(key) {
            ok &= subs.iter_mut().all(make_strict);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = obj.get_mut(key) {
            ok &= defs.values_mut().all(make_strict);
        }
    }
    if !is_object_schema(&Value::Object(obj.clone())) {
        return ok;
    }
    match obj.get("additionalProperties") {
        None | Some(Value::Bool(_)) => {
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
        Some(_) => return false,
    }
    let mut required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, sub) in props.iter_mut() {
            if !required.contains(name) {
                if !accepts_null(sub) {
                    return false;
                }
                required.push(name.clone());
            }
            ok &= make_strict(sub);
        }
    }
    obj.insert("required".into(), json!(required));
    ok
}

fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|subs| subs.iter().any(accepts_null))
        }),
    }
}

fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => schema.get("properties").is_some(),
    }
}
