//! `defaults.compaction` and `defaults.toolSearch`: how runs built from a
//! configuration keep long sessions and big catalogs within the window.
//!
//! Invariant: both are on unless the file says `false` (or an object with
//! `"enabled": false`); an object tunes them; a value of another form is
//! an error naming its key.

use loopwright_core::compaction::{Compaction, CompactionStrategy};
use loopwright_core::tool_search::ToolSearch;
use serde_json::{Map, Value};

use super::ConfigFileError;
use super::keys::type_name;

/// Compaction as the configuration sets it (`defaults.compaction`: `true`,
/// `false`, or `{"strategies": ["clear_tool_results", "summarize",
/// "provider"], "threshold": 0.8, "keepTurns": 3}`).
///
/// ```
/// let off = loopwright_config::config::AgentConfig::parse(r#"{"defaults": {"compaction": false}}"#, "a.json", &|_| None).unwrap();
/// assert!(off.defaults.compaction.compaction().is_none());
/// let on = loopwright_config::config::AgentConfig::default();
/// assert_eq!(on.defaults.compaction.compaction().unwrap().strategies.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionDefaults {
    /// Whether runs compact.
    pub enabled: bool,
    /// Strategy names, in order (default: clear old tool results, then
    /// summarise).
    pub strategies: Option<Vec<String>>,
    /// Also compact above this share of the window's limit.
    pub threshold: Option<f64>,
    /// Steps kept whole.
    pub keep_turns: Option<usize>,
}

impl Default for CompactionDefaults {
    fn default() -> Self {
        Self {
            enabled: true,
            strategies: None,
            threshold: None,
            keep_turns: None,
        }
    }
}

impl CompactionDefaults {
    /// Off.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// The run option these settings give (`None` when off).
    pub fn compaction(&self) -> Option<Compaction> {
        if !self.enabled {
            return None;
        }
        let mut compaction = match &self.strategies {
            Some(names) => Compaction::new(names.iter().filter_map(|n| strategy(n)).collect()),
            None => Compaction::default(),
        };
        if let Some(share) = self.threshold {
            compaction = compaction.threshold(share);
        }
        if let Some(n) = self.keep_turns {
            compaction = compaction.keep_turns(n);
        }
        Some(compaction)
    }
}

/// Tool search as the configuration sets it (`defaults.toolSearch`:
/// `true`, `false`, or `{"maxTools": 64, "maxResults": 8, "alwaysOn":
/// ["github__search_*"]}`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSearchDefaults {
    /// Whether big catalogs are searched.
    pub enabled: bool,
    /// Search takes over above this many tools.
    pub max_tools: Option<usize>,
    /// Tools one search returns.
    pub max_results: Option<usize>,
    /// Exposed-name patterns of tools always offered.
    pub always_on: Vec<String>,
}

impl Default for ToolSearchDefaults {
    fn default() -> Self {
        Self {
            enabled: true,
            max_tools: None,
            max_results: None,
            always_on: Vec::new(),
        }
    }
}

impl ToolSearchDefaults {
    /// Off.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// The run option these settings give (`None` when off).
    ///
    /// ```
    /// let config = loopwright_config::config::AgentConfig::parse(
    ///     r#"{"defaults": {"toolSearch": {"maxTools": 10, "alwaysOn": ["fs__*"]}}}"#, "a.json", &|_| None).unwrap();
    /// let search = config.defaults.tool_search.tool_search().unwrap();
    /// assert_eq!((search.max_tools, search.always_on.len()), (10, 1));
    /// ```
    pub fn tool_search(&self) -> Option<ToolSearch> {
        if !self.enabled {
            return None;
        }
        let mut search = ToolSearch::default();
        if let Some(n) = self.max_tools {
            search = search.max_tools(n);
        }
        if let Some(n) = self.max_results {
            search = search.max_results(n);
        }
        for pattern in &self.always_on {
            search = search.always_on(pattern.clone());
        }
        Some(search)
    }
}

/// The strategies a configuration may name.
const STRATEGIES: &[&str] = &["clear_tool_results", "summarize", "provider"];

fn strategy(name: &str) -> Option<CompactionStrategy> {
    match name {
        "clear_tool_results" => Some(CompactionStrategy::clear_tool_results()),
        "summarize" => Some(CompactionStrategy::summarize()),
        "provider" => Some(CompactionStrategy::provider()),
        _ => None,
    }
}

type Invalid<'a> = &'a dyn Fn(&str, String) -> ConfigFileError;

/// Whether a setting is on, and its object when it was given as one.
type Switch<'v> = (bool, Option<&'v Map<String, Value>>);

/// `true`/`false`, or the object (with its own `enabled`).
fn switch<'v>(value: &'v Value, key: &str, invalid: Invalid<'_>) -> Result<Switch<'v>, ConfigFileError> {
    match value {
        Value::Bool(on) => Ok((*on, None)),
        Value::String(text) if text == "true" || text == "false" => Ok((text == "true", None)),
        Value::Object(map) => match map.get("enabled") {
            None | Some(Value::Null) => Ok((true, Some(map))),
            Some(Value::Bool(on)) => Ok((*on, Some(map))),
            Some(other) => Err(invalid(
                &format!("{key}.enabled"),
                format!("expected true or false, got {other}"),
            )),
        },
        other => Err(invalid(
            key,
            format!("expected true, false or an object, got {}", type_name(other)),
        )),
    }
}

fn count(
    map: &Map<String, Value>,
    key: &str,
    at: &str,
    invalid: Invalid<'_>,
) -> Result<Option<usize>, ConfigFileError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|n| Some(usize::try_from(n).unwrap_or(usize::MAX)))
            .ok_or_else(|| invalid(&format!("{at}.{key}"), format!("expected a count, got {v}"))),
    }
}

fn names(
    map: &Map<String, Value>,
    key: &str,
    at: &str,
    invalid: Invalid<'_>,
) -> Result<Option<Vec<String>>, ConfigFileError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| invalid(&format!("{at}.{key}"), format!("expected names, got {v}")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(invalid(
            &format!("{at}.{key}"),
            format!("expected a list, got {}", type_name(other)),
        )),
    }
}

/// Read `defaults.compaction`.
pub(super) fn compaction(
    value: Option<&Value>,
    invalid: Invalid<'_>,
) -> Result<CompactionDefaults, ConfigFileError> {
    const KEY: &str = "defaults.compaction";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(CompactionDefaults::default());
    };
    let (enabled, map) = switch(value, KEY, invalid)?;
    let Some(map) = map else {
        return Ok(CompactionDefaults {
            enabled,
            ..CompactionDefaults::default()
        });
    };
    let strategies = names(map, "strategies", KEY, invalid)?;
    if let Some(bad) = strategies
        .iter()
        .flatten()
        .find(|n| !STRATEGIES.contains(&n.as_str()))
    {
        return Err(invalid(
            &format!("{KEY}.strategies"),
            format!("unknown strategy `{bad}` (known: {})", STRATEGIES.join(", ")),
        ));
    }
    let threshold = match map.get("threshold") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64().filter(|f| (0.0..=1.0).contains(f)).ok_or_else(|| {
            invalid(
                &format!("{KEY}.threshold"),
                format!("expected a share of the window from 0 to 1, got {v}"),
            )
        })?),
    };
    Ok(CompactionDefaults {
        enabled,
        strategies,
        threshold,
        keep_turns: count(map, "keepTurns", KEY, invalid)?,
    })
}

/// Read `defaults.toolSearch`.
pub(super) fn tool_search(
    value: Option<&Value>,
    invalid: Invalid<'_>,
) -> Result<ToolSearchDefaults, ConfigFileError> {
    const KEY: &str = "defaults.toolSearch";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(ToolSearchDefaults::default());
    };
    let (enabled, map) = switch(value, KEY, invalid)?;
    let Some(map) = map else {
        return Ok(ToolSearchDefaults {
            enabled,
            ..ToolSearchDefaults::default()
        });
    };
    Ok(ToolSearchDefaults {
        enabled,
        max_tools: count(map, "maxTools", KEY, invalid)?,
        max_results: count(map, "maxResults", KEY, invalid)?,
        always_on: names(map, "alwaysOn", KEY, invalid)?.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::AgentConfig;

    fn parse(text: &str) -> Result<AgentConfig, String> {
        AgentConfig::parse(text, "c.json", &|_| None).map_err(|e| e.to_string())
    }

    #[test]
    fn compaction_and_tool_search_are_on_unless_turned_off_and_objects_tune_them() {
        let none = parse("{}").unwrap();
        let options = none
            .defaults
            .apply(loopwright_core::agent::AgentOptions::default());
        assert!(options.compaction.is_some() && options.tool_search.is_some());
        let off = parse(r#"{"defaults": {"compaction": false, "toolSearch": {"enabled": false}}}"#).unwrap();
        let options = off
            .defaults
            .apply(loopwright_core::agent::AgentOptions::default());
        assert!(options.compaction.is_none() && options.tool_search.is_none());
        let tuned = parse(
            r#"{"defaults": {"compaction": {"strategies": ["summarize", "provider"], "threshold": 0.7, "keepTurns": 5}}}"#,
        )
        .unwrap();
        let compaction = tuned.defaults.compaction.compaction().unwrap();
        let names: Vec<&str> = compaction.strategies.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["summarize", "provider"]);
        assert_eq!((compaction.threshold, compaction.keep_turns), (Some(0.7), 5));
        assert!(tuned.warnings.is_empty(), "{:?}", tuned.warnings);
    }

    #[test]
    fn bad_values_name_their_key() {
        for (text, message) in [
            (
                r#"{"defaults": {"compaction": "yes"}}"#,
                "c.json: defaults.compaction: expected true, false or an object, got a string",
            ),
            (
                r#"{"defaults": {"compaction": {"strategies": ["forget"]}}}"#,
                "c.json: defaults.compaction.strategies: unknown strategy `forget` (known: clear_tool_results, summarize, provider)",
            ),
            (
                r#"{"defaults": {"compaction": {"threshold": 2}}}"#,
                "c.json: defaults.compaction.threshold: expected a share of the window from 0 to 1, got 2",
            ),
            (
                r#"{"defaults": {"toolSearch": {"maxTools": "many"}}}"#,
                "c.json: defaults.toolSearch.maxTools: expected a count, got \"many\"",
            ),
            (
                r#"{"toolOverrides": {"Bash": {"name": 1}}}"#,
                "c.json: toolOverrides.Bash.name: expected a string, got 1",
            ),
            (
                r#"{"mcpServers": {"fs": {"command": "x", "toolOverrides": {"read": {"rename": "r"}}}}}"#,
                "c.json: mcpServers.fs: toolOverrides.read.rename: unknown key `rename` (known: name, description, providerOptions, alwaysOn)",
            ),
        ] {
            assert_eq!(parse(text).unwrap_err(), message, "{text}");
        }
    }
}
