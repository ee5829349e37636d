//! The `serve` section: what `loopwright serve` reads from the configuration
//! file (the bearer keys clients must send, how long stored responses and
//! runs are kept).
//!
//! ```json
//! { "serve": { "apiKeys": ["${SERVE_KEY}", "${SERVE_KEY_NEXT:-}"], "retention": "30d" } }
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

use std::time::Duration;

use serde_json::Value;

use super::ConfigFileError;
use super::keys::type_name;

/// The keys the `serve` section may have.
pub const SERVE_KEYS: &[&str] = &["apiKeys", "retention"];

/// How long `loopwright serve` keeps stored responses and runs
/// (`serve.retention`, `--retention`).
///
/// ```
/// use loopwright_config::config::Retention;
/// use std::time::Duration;
/// assert_eq!(Retention::parse(&serde_json::json!("30d")), Ok(Retention::After(Duration::from_secs(30 * 86_400))));
/// assert_eq!(Retention::parse(&serde_json::json!("never")), Ok(Retention::Forever));
/// assert!(Retention::parse(&serde_json::json!("10ms")).unwrap_err().message.contains("at least 1s"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// Deleted this long after their record was last written.
    After(Duration),
    /// Never deleted by age.
    Forever,
}

impl Retention {
    /// The shortest retention (a run's record is written just before its
    /// last event).
    pub const MIN: Duration = Duration::from_secs(1);

    /// `"never"`, or a duration of at least [`Retention::MIN`]
    /// (milliseconds, or a string such as `"30d"`, `"720h"`).
    ///
    /// ```
    /// use loopwright_config::config::Retention;
    /// assert_eq!(Retention::parse(&serde_json::json!("never")), Ok(Retention::Forever));
    /// assert!(Retention::parse(&serde_json::json!("10ms")).unwrap_err().message.contains("too short"));
    /// ```
    pub fn parse(value: &Value) -> Result<Self, loopwright_core::util::InvalidValue> {
        use loopwright_core::util::InvalidValue;
        if value.as_str().is_some_and(|s| s.trim() == "never") {
            return Ok(Self::Forever);
        }
        let duration = crate::config::parse_duration(value)
            .map_err(|e| InvalidValue::new("", format!("{e}, or \"never\"")))?;
        if duration < Self::MIN {
            return Err(InvalidValue::new(
                "",
                format!("{value} is too short: a retention is at least 1s (\"never\" keeps everything)"),
            ));
        }
        Ok(Self::After(duration))
    }
}

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
/// assert_eq!(typo.to_string(), "a.json: serve.apiKey: unknown key (known: apiKeys, retention)");
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
    /// How long stored responses and runs are kept (`retention`), when
    /// the file says.
    pub retention: Option<Retention>,
}

impl std::fmt::Debug for ServeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeConfig")
            .field("api_keys", &format_args!("[{} hidden]", self.api_keys.len()))
            .field("api_keys_given", &self.api_keys_given)
            .field("retention", &self.retention)
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
    let retention = match section.get("retention") {
        None | Some(Value::Null) => None,
        Some(value) => Some(Retention::parse(value).map_err(|e| invalid("serve.retention", e.message))?),
    };
    Ok(ServeConfig {
        api_keys,
        api_keys_given,
        retention,
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
    fn the_retention_is_a_duration_or_never() {
        use super::Retention;
        use std::time::Duration;
        assert_eq!(parse("{}").unwrap().serve.retention, None);
        assert_eq!(
            parse(r#"{"serve": {"retention": "7d"}}"#)
                .unwrap()
                .serve
                .retention,
            Some(Retention::After(Duration::from_secs(7 * 86_400)))
        );
        assert_eq!(
            parse(r#"{"serve": {"retention": "never"}}"#)
                .unwrap()
                .serve
                .retention,
            Some(Retention::Forever)
        );
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
                "a.json: serve.apikeys: unknown key (known: apiKeys, retention)",
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
            (
                r#"{"serve": {"retention": "soon"}}"#,
                "a.json: serve.retention: expected milliseconds or a string such as \"500ms\", \"30s\", \"2m\", \"1h\", \"30d\", got \"soon\", or \"never\"",
            ),
            (
                r#"{"serve": {"retention": 500}}"#,
                "a.json: serve.retention: 500 is too short: a retention is at least 1s (\"never\" keeps everything)",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err(), error, "{text}");
        }
    }
}
