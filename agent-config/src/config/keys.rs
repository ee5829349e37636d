//! The keys the configuration file knows (anything else is a warning) and
//! the typed reading of `defaults`, with key paths in every error.

use serde_json::{Map, Value};

use super::{ConfigFileError, Defaults, SchemaSource, parse_duration};
pub(crate) use crate::json::type_name;

const TOP: &[&str] = &[
    "$schema",
    "providers",
    "mcpServers",
    "a2aAgents",
    "defaults",
    "accounting",
    "skills",
    "store",
    "toolOverrides",
];
const DEFAULTS: &[&str] = &[
    "model",
    "llmTimeout",
    "toolTimeout",
    "temperature",
    "topP",
    "maxOutputTokens",
    "parallelToolCalls",
    "maxSteps",
    "maxModelCalls",
    "maxTreeTokens",
    "runTimeout",
    "toolResponseMaxBytes",
    "contextWindowBufferTokens",
    "reasoning",
    "outputSchema",
    "compaction",
    "toolSearch",
    "guardrails",
];
const ACCOUNTING: &[&str] = &["file"];
const PROVIDER: &[&str] = &[
    "type",
    "apiKey",
    "baseUrl",
    "headers",
    "models",
    "supportsRequiredToolChoice",
    "options",
];
const MODEL: &[&str] = &["contextWindow", "tokenizer"];

/// Report every key the format does not know, by key path.
pub(super) fn warn_unknown(root: &Map<String, Value>, warn: &mut dyn FnMut(String)) {
    unknown(root, "", TOP, warn);
    let object = |key: &str| root.get(key).and_then(Value::as_object);
    if let Some(defaults) = object("defaults") {
        unknown(defaults, "defaults", DEFAULTS, warn);
    }
    if let Some(accounting) = object("accounting") {
        unknown(accounting, "accounting", ACCOUNTING, warn);
    }
    for (name, provider) in object("providers").into_iter().flatten() {
        let Some(provider) = provider.as_object() else {
            continue;
        };
        let path = format!("providers.{name}");
        unknown(provider, &path, PROVIDER, warn);
        for (model, entry) in provider
            .get("models")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(entry) = entry.as_object() {
                unknown(entry, &format!("{path}.models.{model}"), MODEL, warn);
            }
        }
    }
    for (name, agent) in object("a2aAgents").into_iter().flatten() {
        if let Some(agent) = agent.as_object() {
            unknown(agent, &format!("a2aAgents.{name}"), super::a2a::KEYS, warn);
        }
    }
    for (name, server) in object("mcpServers").into_iter().flatten() {
        if let Some(server) = server.as_object() {
            unknown(
                server,
                &format!("mcpServers.{name}"),
                loopwright_mcp::MCP_SERVER_KEYS,
                warn,
            );
        }
    }
}

fn unknown(map: &Map<String, Value>, path: &str, known: &[&str], warn: &mut dyn FnMut(String)) {
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        warn(super::expand::join(path, key));
    }
}

/// A number or boolean written as a string, as `"${MAX_STEPS}"` becomes
/// once expanded (`"12"`, `"0.5"`, `"true"`).
fn from_text<T: std::str::FromStr>(v: &Value) -> Option<T> {
    v.as_str().and_then(|s| s.trim().parse().ok())
}

/// Read `defaults` (already expanded).
pub(crate) fn defaults(
    value: &Value,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Defaults, ConfigFileError> {
    let get = |key: &str| value.get(key).filter(|v| !v.is_null());
    let path = |key: &str| format!("defaults.{key}");
    let unsigned = |key: &str| -> Result<Option<u64>, ConfigFileError> {
        get(key)
            .map(|v| {
                v.as_u64()
                    .or_else(|| from_text(v))
                    .ok_or_else(|| invalid(&path(key), format!("expected an unsigned integer, got {v}")))
            })
            .transpose()
    };
    let float = |key: &str| -> Result<Option<f32>, ConfigFileError> {
        get(key)
            .map(|v| {
                v.as_f64()
                    .or_else(|| from_text(v))
                    .filter(|f| f.is_finite())
                    .map(|f| f as f32)
                    .ok_or_else(|| invalid(&path(key), format!("expected a number, got {v}")))
            })
            .transpose()
    };
    let duration = |key: &str| -> Result<Option<std::time::Duration>, ConfigFileError> {
        get(key)
            .map(|v| parse_duration(v).map_err(|m| invalid(&path(key), m.to_string())))
            .transpose()
    };
    let narrow = |key: &str, n: Option<u64>| -> Result<Option<u32>, ConfigFileError> {
        n.map(|n| u32::try_from(n).map_err(|_| invalid(&path(key), format!("{n} is too large"))))
            .transpose()
    };
    let model = model_list(get("model"), invalid)?;
    let parallel_tool_calls = get("parallelToolCalls")
        .map(|v| {
            v.as_bool().or_else(|| from_text(v)).ok_or_else(|| {
                invalid(
                    &path("parallelToolCalls"),
                    format!("expected true or false, got {v}"),
                )
            })
        })
        .transpose()?;
    let reasoning = reasoning(get("reasoning"), invalid)?;
    let output_schema = output_schema(get("outputSchema"), invalid)?;
    Ok(Defaults {
        model,
        reasoning,
        output_schema,
        compaction: super::long_runs::compaction(get("compaction"), invalid)?,
        tool_search: super::long_runs::tool_search(get("toolSearch"), invalid)?,
        guardrails: super::guardrails::guardrails(get("guardrails"), invalid)?,
        llm_timeout: duration("llmTimeout")?,
        tool_timeout: duration("toolTimeout")?,
        temperature: float("temperature")?,
        top_p: float("topP")?,
        max_output_tokens: narrow("maxOutputTokens", unsigned("maxOutputTokens")?)?,
        parallel_tool_calls,
        max_steps: narrow("maxSteps", unsigned("maxSteps")?)?,
        max_model_calls: unsigned("maxModelCalls")?,
        max_tree_tokens: unsigned("maxTreeTokens")?,
        run_timeout: duration("runTimeout")?,
        tool_response_max_bytes: unsigned("toolResponseMaxBytes")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        context_window_buffer_tokens: unsigned("contextWindowBufferTokens")?,
    })
}

/// `defaults.model`: a selector, a comma-separated list, or a list.
fn model_list(
    value: Option<&Value>,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Vec<String>, ConfigFileError> {
    let path = |key: &str| format!("defaults.{key}");
    Ok(match value {
        None => Vec::new(),
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    invalid(
                        &path("model"),
                        format!("expected provider/model strings, got {v}"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(invalid(
                &path("model"),
                format!(
                    "expected a provider/model string or a list of them, got {}",
                    type_name(other)
                ),
            ));
        }
    })
}

/// `defaults.reasoning`: an effort, or `{effort, budgetTokens}`.
fn reasoning(
    value: Option<&Value>,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Option<loopwright_core::model::ReasoningConfig>, ConfigFileError> {
    let path = |key: &str| format!("defaults.{key}");
    value
        .map(|v| {
            let effort = |text: &str| {
                text.parse::<loopwright_core::ReasoningEffort>()
                    .map_err(|e| invalid(&path("reasoning"), e.to_string()))
            };
            match v {
                Value::String(text) => effort(text).map(loopwright_core::model::ReasoningConfig::from),
                Value::Object(obj) => {
                    let text = obj.get("effort").and_then(Value::as_str).ok_or_else(|| {
                        invalid(
                            &path("reasoning.effort"),
                            "expected one of none, minimal, low, medium, high".into(),
                        )
                    })?;
                    let config = loopwright_core::model::ReasoningConfig::from(effort(text)?);
                    match obj.get("budgetTokens") {
                        None | Some(Value::Null) => Ok(config),
                        Some(b) => b
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .map(|n| config.budget_tokens(n))
                            .ok_or_else(|| {
                                invalid(
                                    &path("reasoning.budgetTokens"),
                                    format!("expected a token count, got {b}"),
                                )
                            }),
                    }
                }
                other => Err(invalid(
                    &path("reasoning"),
                    format!(
                        "expected an effort or {{effort, budgetTokens}}, got {}",
                        type_name(other)
                    ),
                )),
            }
        })
        .transpose()
}

/// `defaults.outputSchema`: a schema file or an inline schema.
fn output_schema(
    value: Option<&Value>,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Option<SchemaSource>, ConfigFileError> {
    let path = |key: &str| format!("defaults.{key}");
    Ok(match value {
        None => None,
        Some(Value::String(file)) => Some(SchemaSource::File(file.into())),
        Some(Value::Object(_)) => value.cloned().map(SchemaSource::Inline),
        Some(other) => {
            return Err(invalid(
                &path("outputSchema"),
                format!(
                    "expected a JSON Schema file path or an object, got {}",
                    type_name(other)
                ),
            ));
        }
    })
}

/// Read `skills` (already expanded): a list of directories, a leading `~`
/// replaced by `home`; `None` when the key is absent.
pub(super) fn skills(
    value: &Value,
    home: Option<&str>,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Option<Vec<std::path::PathBuf>>, ConfigFileError> {
    let items = match value {
        Value::Null => return Ok(None),
        Value::Array(items) => items,
        other => {
            return Err(invalid(
                "skills",
                format!("expected a list of directory paths, got {}", type_name(other)),
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let key = format!("skills[{i}]");
            let Value::String(dir) = item else {
                return Err(invalid(
                    &key,
                    format!("expected a directory path, got {}", type_name(item)),
                ));
            };
            match dir.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => home
                    .map(|home| std::path::PathBuf::from(format!("{home}{rest}")))
                    .ok_or_else(|| invalid(&key, "`~` needs HOME to be set".into())),
                _ => Ok(std::path::PathBuf::from(dir)),
            }
        })
        .collect::<Result<_, _>>()
        .map(Some)
}
