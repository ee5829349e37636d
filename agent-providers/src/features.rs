//! Mapping the provider-neutral request settings (structured output,
//! reasoning) to each wire format, shared by the providers. What each one
//! changes is said where it is done; see also [`crate::capabilities`].

use loopwright_types::schema::strict_schema;
use loopwright_types::{ReasoningConfig, ReasoningEffort, ResponseFormat};
use serde_json::{Value, json};

/// A JSON-schema response format as (name, schema, strict): the schema made
/// strict when asked and possible ([`strict_schema`]: `additionalProperties:
/// false` everywhere, nullable optional properties made required), else as
/// given with `strict: false`.
pub(crate) fn json_schema_format(format: &ResponseFormat) -> Option<(String, Value, bool)> {
    match format {
        ResponseFormat::JsonSchema { name, schema, strict } => {
            Some(match strict.then(|| strict_schema(schema)) {
                Some(Some(strict)) => (name.clone(), strict, true),
                _ => (name.clone(), schema.clone(), false),
            })
        }
        _ => None,
    }
}

/// The schema of a JSON-schema response format, unchanged (for providers
/// without a strict mode: Gemini, Ollama).
pub(crate) fn json_schema_raw(format: &ResponseFormat) -> Option<Value> {
    match format {
        ResponseFormat::JsonSchema { schema, .. } => Some(schema.clone()),
        _ => None,
    }
}

/// OpenAI's `reasoning_effort` for a model: `gpt-5.1` and later take
/// `none`, `low`, `medium`, `high` (`minimal` becomes `low`: they refuse
/// it); `gpt-5` takes `minimal` (also for `none`, which it refuses); the `o`
/// series takes `low`, `medium`, `high` (`minimal` and `none` become `low`).
///
/// ```
/// use loopwright_types::ReasoningEffort::*;
/// use loopwright_providers::features::openai_effort as effort;
/// assert_eq!(effort("gpt-5.1", None), "none");
/// assert_eq!(effort("gpt-5.1", Minimal), "low");
/// assert_eq!(effort("gpt-5-mini", None), "minimal");
/// assert_eq!(effort("o3", Minimal), "low");
/// assert_eq!(effort("o4-mini", High), "high");
/// ```
pub fn openai_effort(model: &str, effort: ReasoningEffort) -> &'static str {
    let m = model.rsplit('/').next().unwrap_or(model);
    let gpt5 = m.starts_with("gpt-5");
    let takes_none = gpt5 && !(m.starts_with("gpt-5-") || m == "gpt-5");
    match effort {
        ReasoningEffort::None if takes_none => "none",
        ReasoningEffort::None | ReasoningEffort::Minimal if gpt5 && !takes_none => "minimal",
        ReasoningEffort::None | ReasoningEffort::Minimal | ReasoningEffort::Low => "low",
        ReasoningEffort::High => "high",
        _ => "medium",
    }
}

/// Gemini's `thinkingConfig` for a model that thinks: `thinkingLevel`
/// (`low` for none to low, `high` for medium and high) on Gemini 3, else
/// `thinkingBudget` (0 for none, except on Pro models, which cannot stop
/// thinking and get their smallest budget, 128); thoughts included.
pub(crate) fn gemini_thinking(model: &str, reasoning: &ReasoningConfig) -> Value {
    if crate::capabilities::gemini_3(model) {
        let level = match reasoning.effort {
            ReasoningEffort::Medium | ReasoningEffort::High => "high",
            _ => "low",
        };
        return json!({"thinkingLevel": level, "includeThoughts": true});
    }
    match reasoning.budget() {
        None if model.contains("pro") => json!({"thinkingBudget": 128, "includeThoughts": true}),
        None => json!({"thinkingBudget": 0}),
        Some(budget) => json!({"thinkingBudget": budget, "includeThoughts": true}),
    }
}
