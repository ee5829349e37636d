//! `${VAR}` and `${VAR:-default}` in configuration values, with the key path
//! of every string so that a missing variable can be named where it is used.
//! One string is expanded by loopwright-types' expander, the one providers
//! and MCP servers use too (its rules: `loopwright_types::util::expand_vars`).

use serde_json::Value;

/// A `${VAR}` without a value and without a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Missing {
    /// Where (`providers.openai.apiKey`).
    pub key: String,
    /// Which variable.
    pub variable: String,
}

/// Expand every string inside `value` (found at `path`), except under keys
/// for which `skip(path)` holds.
pub(crate) fn expand(
    value: &mut Value,
    path: &str,
    skip: &dyn Fn(&str) -> bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), Missing> {
    if skip(path) {
        return Ok(());
    }
    match value {
        Value::String(text) => {
            *text = loopwright_core::util::expand_vars(text, lookup).map_err(|unset| Missing {
                key: path.to_string(),
                variable: unset.name,
            })?;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand(item, &format!("{path}[{i}]"), skip, lookup)?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                expand(item, &join(path, key), skip, lookup)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `a.b` from `a` and `b` (just `b` at the top).
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "HOME_DIR").then(|| "/home/u".to_string())
    }

    #[test]
    fn strings_are_expanded_with_defaults_and_paths_name_the_missing() {
        let mut v = json!({"a": ["${HOME_DIR}/x", "${UNSET:-d}"], "b": {"c": "plain"}});
        expand(&mut v, "", &|_| false, &env).unwrap();
        assert_eq!(v, json!({"a": ["/home/u/x", "d"], "b": {"c": "plain"}}));
        let mut bad = json!({"defaults": {"model": "${NOPE}"}});
        let missing = expand(&mut bad, "", &|_| false, &env).unwrap_err();
        assert_eq!(
            (missing.key.as_str(), missing.variable.as_str()),
            ("defaults.model", "NOPE")
        );
    }

    #[test]
    fn skipped_paths_keep_their_references() {
        let mut v = json!({"env": {"K": "${NOPE}"}, "x": "${HOME_DIR}"});
        expand(&mut v, "", &|p| p == "env", &env).unwrap();
        assert_eq!(v, json!({"env": {"K": "${NOPE}"}, "x": "/home/u"}));
    }
}
