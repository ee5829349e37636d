//! The `serve` section: what `loopwright serve` reads from the configuration
//! file (the bearer keys clients must send).
//!
//! ```json
//! { "serve": { "apiKeys": ["${SERVE_KEY}", "${SERVE_KEY_NEXT:-}"] } }
//! ```
//!
//! Invariants: unlike the rest of the file, whose unknown keys are
//! warnings, an unknown key here is an error naming its key path: a
//! misspelt `apiKeys` would otherwise serve without authentication. A key
//! whose `${VAR}` is unset is an error naming the key; a key that expands
//! to nothing (`${NEXT:-}`) is left out, so a key being rotated in can be
//! written before it exists; but an `apiKeys` whose every key comes out
//! empty (`[]`, `["  "]`, `["${KEY:-}"]` with `KEY` unset) is remembered as
//! given ([`ServeConfig::api_keys_given`]), so `loopwright serve` refuses to
//! start rather than serve without authentication; keys are never shown by
//! `Debug`.

use serde_json::Value;

use super::ConfigFileError;
use super::keys::type_name;

/// The keys the `serve` section may have.
pub const SERVE_KEYS: &[&str] = &["apiKeys"];

/// The `serve` section of a configuration file.
///
/// ```
/// let text = r#"{"serve": {"apiKeys": ["${SERVE_KEY}"]}}"#;
/// let lookup = |name: &str| (name == "SERVE_KEY").then(|| "k-123".to_string());
/// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &lookup).unwrap();
/// assert_eq!(config.serve.api_keys, ["k-123"]);
/// assert!(!format!("{:?}", config.serve).contains("k-123"));
///
/// let typo = loopwright_config::config::AgentConfig::parse(r#"{"serve": {"apiKey": "k"}}"#, "a.json", &lookup).unwrap_err();
/// assert_eq!(typo.to_string(), "a.json: serve.apiKey: unknown key (known: apiKeys)");
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Bearer keys a client may send (any of them), variables expanded;
    /// empty: no key is asked for (unless the command line gives some).
    pub api_keys: Vec<String>,
    /// Whether the file has `apiKeys` at all: with it and no key left in
    /// [`ServeConfig::api_keys`], every key came out empty, and a server
    /// must refuse to start (it would serve without authentication).
    pub api_keys_given: bool,
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field("api_keys", &format_args!("[{} hidden]", self.api_keys.len()))
            .field("api_keys_given", &self.api_keys_given)
            .finish()
    }
}

/// Refuse a key `serve` does not have (before its variables are expanded,
/// so a misspelt key is named as such).
pub(super) fn check_keys(
    section: &serde_json::Map<String, Value>,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<(), ConfigFileError> {
    match section.keys().find(|k| !SERVE_KEYS.contains(&k.as_str())) {
        Some(key) => Err(invalid(
            &format!("serve.{key}"),
            format!("unknown key (known: {})", SERVE_KEYS.join(", ")),
        )),
        None => Ok(()),
    }
}

/// Read `serve` (checked, then expanded).
pub(super) fn serve(
    section: &Value,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<ServeConfig, ConfigFileError> {
    let api_keys_given = matches!(section.get("apiKeys"), Some(v) if !v.is_null());
    let api_keys = match section.get("apiKeys") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut keys = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Value::String(key) = item else {
                    return Err(invalid(
                        &format!("serve.apiKeys[{i}]"),
                        format!("expected a key string, got {}", type_name(item)),
                    ));
                };
                if !key.trim().is_empty() {
                    keys.push(key.trim().to_owned());
                }
            }
            keys
        }
        Some(other) => {
            return Err(invalid(
                "serve.apiKeys",
                format!("expected a list of key strings, got {}", type_name(other)),
            ));
        }
    };
    Ok(ServeConfig {
        api_keys,
        api_keys_given,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::AgentConfig;

    fn parse(text: &str) -> Result<AgentConfig, String> {
        let lookup = |name: &str| match name {
            "SERVE_KEY" => Some("key-one".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        AgentConfig::parse(text, "a.json", &lookup).map_err(|e| e.to_string())
    }

    #[test]
    fn keys_are_expanded_and_empty_ones_left_out() {
        let config =
            parse(r#"{"serve": {"apiKeys": ["${SERVE_KEY}", " literal ", "${EMPTY}", "${NEXT:-}"]}}"#)
                .unwrap();
        assert_eq!(config.serve.api_keys, ["key-one", "literal"]);
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        assert!(config.secret_values().contains(&"key-one".to_owned()));
        assert_eq!(parse("{}").unwrap().serve.api_keys, Vec::<String>::new());
        assert!(!parse("{}").unwrap().serve.api_keys_given);
        for all_empty in [r#"[]"#, r#"["  "]"#, r#"["${NEXT:-}"]"#] {
            let serve = parse(&format!(r#"{{"serve": {{"apiKeys": {all_empty}}}}}"#))
                .unwrap()
                .serve;
            assert!(serve.api_keys.is_empty() && serve.api_keys_given, "{all_empty}");
        }
    }

    #[test]
    fn errors_name_the_key_path() {
        for (text, error) in [
            (
                r#"{"serve": {"apiKeys": ["${UNSET_VAR}"]}}"#,
                "a.json: serve.apiKeys[0]: environment variable UNSET_VAR is not set",
            ),
            (
                r#"{"serve": {"apikeys": ["k"]}}"#,
                "a.json: serve.apikeys: unknown key (known: apiKeys)",
            ),
            (
                r#"{"serve": {"apiKeys": "k"}}"#,
                "a.json: serve.apiKeys: expected a list of key strings, got a string",
            ),
            (
                r#"{"serve": {"apiKeys": ["k", 7]}}"#,
                "a.json: serve.apiKeys[1]: expected a key string, got a number",
            ),
            (
                r#"{"serve": ["k"]}"#,
                "a.json: serve: expected an object, got an array",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err(), error, "{text}");
        }
    }
}
