//! A model request as a cassette keeps it: [`RequestSummary`], every field
//! that decides the answer and nothing volatile, and its stable hash.
//!
//! Invariant: the hash is a function of the summary alone (SHA-256 over its
//! canonical JSON: object keys sorted, no whitespace), so a summary read back
//! from a cassette line (edited by hand or not) hashes exactly as the request
//! it describes. The fields left out are listed in [`VOLATILE_FIELDS`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use loopwright_types::Message;
use loopwright_types::tool::ToolDefinition;
use loopwright_types::{ModelRequest, ToolChoice};
use loopwright_types::{ReasoningConfig, ResponseFormat};

/// The fields of a [`ModelRequest`] a cassette leaves out of the request
/// hash, with why: none of them changes what the model answers.
///
/// ```
/// assert!(loopwright_testing::replay::VOLATILE_FIELDS.iter().any(|(f, _)| *f == "cancellation"));
/// ```
pub const VOLATILE_FIELDS: [(&str, &str); 3] = [
    ("cancellation", "a token, not data"),
    (
        "prompt_caching",
        "a cache hint to the provider; the answer is the same",
    ),
    ("tools[].annotations", "approval hints, never sent to the model"),
];

/// The prefix of every request hash (the algorithm's name).
pub const HASH_PREFIX: &str = "sha256:";

/// A tool as the model is told about it.
///
/// ```
/// let t = loopwright_testing::replay::ToolSummary::from(
///     &loopwright_types::ToolDefinition::new("echo", "Echo.", serde_json::json!({"type": "object"})));
/// assert_eq!(t.name, "echo");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSummary {
    /// The exposed name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The input schema.
    pub input_schema: Value,
    /// The output schema, when the tool has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl From<&ToolDefinition> for ToolSummary {
    fn from(d: &ToolDefinition) -> Self {
        Self {
            name: d.name.clone(),
            description: d.description.clone(),
            input_schema: d.input_schema.clone(),
            output_schema: d.output_schema.clone(),
        }
    }
}

/// The sampling and output settings of a request.
///
/// ```
/// assert!(loopwright_testing::replay::RequestSettings::default().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestSettings {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Several tool calls per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Native structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Reasoning effort and budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    /// Options per provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_options: BTreeMap<String, Value>,
}

impl RequestSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A model request as a cassette line keeps it: the model, the system
/// prompt, the messages, the tools, the tool choice and the settings.
///
/// ```
/// use loopwright_types::{Message, ModelRequest};
/// use loopwright_testing::replay::RequestSummary;
/// let a = RequestSummary::of("local/m", &ModelRequest::new(vec![Message::user("hi")]));
/// let b = RequestSummary::of("local/m", &ModelRequest::new(vec![Message::user("hi")]));
/// assert_eq!(a.hash(), b.hash());
/// assert!(a.hash().starts_with("sha256:"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestSummary {
    /// `provider/model` of the model asked.
    pub model: String,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// The tools offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSummary>,
    /// How the model may use them.
    #[serde(default, skip_serializing_if = "is_auto")]
    pub tool_choice: ToolChoice,
    /// Sampling and output settings.
    #[serde(default, skip_serializing_if = "RequestSettings::is_empty")]
    pub settings: RequestSettings,
}

fn is_auto(choice: &ToolChoice) -> bool {
    *choice == ToolChoice::Auto
}

impl RequestSummary {
    /// The summary of `request` sent to the model `model` (`provider/model`).
    pub fn of(model: impl Into<String>, request: &ModelRequest) -> Self {
        Self {
            model: model.into(),
            system: request.system.clone(),
            messages: request.messages.as_ref().clone(),
            tools: request.tools.iter().map(ToolSummary::from).collect(),
            tool_choice: request.tool_choice.clone(),
            settings: RequestSettings {
                temperature: request.temperature,
                top_p: request.top_p,
                max_output_tokens: request.max_output_tokens,
                parallel_tool_calls: request.parallel_tool_calls,
                response_format: request.response_format.clone(),
                reasoning: request.reasoning,
                provider_options: request.provider_options.clone(),
            },
        }
    }

    /// `sha256:` and the hex SHA-256 of the canonical JSON.
    pub fn hash(&self) -> String {
        hash_value(&serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// `sha256:` and the hex SHA-256 of `value`'s canonical JSON (keys
/// sorted, no whitespace).
///
/// ```
/// use loopwright_testing::replay::hash_value;
/// assert_eq!(hash_value(&serde_json::json!({"a": 1, "b": 2})), hash_value(&serde_json::json!({"b": 2, "a": 1})));
/// ```
pub fn hash_value(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(HASH_PREFIX.len() + 64);
    out.push_str(HASH_PREFIX);
    for byte in digest.iter() {
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0xf)]);
    }
    out
}

const HEX: [char; 16] = [
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
];

/// `value` as JSON with every object's keys in sorted order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use loopwright_types::tool::ToolAnnotations;

    #[test]
    fn volatile_fields_do_not_change_the_hash() {
        let tool = ToolDefinition::new("echo", "Echo.", serde_json::json!({"type": "object"}));
        let mut a = ModelRequest::new(vec![Message::user("hi")]);
        a.tools = std::sync::Arc::new(vec![tool.clone()]);
        let mut b = a.clone();
        b.prompt_caching = !a.prompt_caching;
        b.cancellation = tokio_util::sync::CancellationToken::new();
        b.tools = std::sync::Arc::new(vec![
            tool.with_annotations(ToolAnnotations::default().read_only(true)),
        ]);
        assert_eq!(
            RequestSummary::of("p/m", &a).hash(),
            RequestSummary::of("p/m", &b).hash()
        );
        b.temperature = Some(0.5);
        assert_ne!(
            RequestSummary::of("p/m", &a).hash(),
            RequestSummary::of("p/m", &b).hash()
        );
    }

    #[test]
    fn a_summary_read_back_hashes_the_same() {
        let mut r = ModelRequest::new(vec![Message::user("What time is it?")]);
        r.temperature = Some(0.7);
        r.system = Some("Be brief.".into());
        let s = RequestSummary::of("local/test", &r);
        let back: RequestSummary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.hash(), s.hash());
    }

    #[test]
    fn the_hash_is_stable_across_builds() {
        // Pinned: a change here breaks every recorded cassette.
        let s = RequestSummary::of("local/test", &ModelRequest::new(vec![Message::user("hi")]));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"model":"local/test","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#
        );
        // sha256 of {"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"model":"local/test"}
        assert_eq!(
            s.hash(),
            "sha256:1eff48e630921e7000d08b8accde4f79da258203008bc6bea712aa80bc16d067"
        );
    }
}
