//! Reading the fields of an MCP server entry: each helper names the key
//! that holds a value of the wrong form.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::McpError;

/// An optional boolean (absent or null: false); another type is an error
/// naming the key.
pub(crate) fn bool_field(
    obj: &Map<String, Value>,
    key: &str,
    err: &dyn Fn(String) -> McpError,
) -> Result<bool, McpError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(err(format!("`{key}`: expected true or false, got {other}"))),
    }
}

pub(crate) fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// A timeout: milliseconds, or a string with a unit (`"30s"`); a value of
/// another form is an error naming the key.
pub(crate) fn duration_field(
    obj: &Map<String, Value>,
    keys: &[&str],
    err: &dyn Fn(String) -> McpError,
) -> Result<Option<Duration>, McpError> {
    let Some((key, value)) = keys.iter().find_map(|k| obj.get(*k).map(|v| (k, v))) else {
        return Ok(None);
    };
    if value.is_null() {
        return Ok(None);
    }
    loopwright_types::util::parse_duration(value)
        .map(Some)
        .map_err(|message| err(format!("`{key}`: {message}")))
}

pub(crate) fn string_map(
    obj: &Map<String, Value>,
    keys: &[&str],
    err: &dyn Fn(String) -> McpError,
) -> Result<BTreeMap<String, String>, McpError> {
    let Some(value) = keys.iter().find_map(|k| obj.get(*k)) else {
        return Ok(BTreeMap::new());
    };
    let Some(map) = value.as_object() else {
        return Err(err(format!("`{}` must be an object of strings", keys[0])));
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(err(format!("`{k}` must be a string"))),
        })
        .collect()
}

pub(crate) fn string_list(
    value: &Value,
    what: &str,
    err: &dyn Fn(String) -> McpError,
) -> Result<Vec<String>, McpError> {
    let Some(items) = value.as_array() else {
        return Err(err(format!("`{what}` must be an array of strings")));
    };
    items
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| err(format!("`{what}` must be an array of strings")))
        })
        .collect()
}
