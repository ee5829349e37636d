//! Provider-neutral settings a request may carry beyond its messages and
//! tools: a [`ResponseFormat`] for structured output, [`ReasoningConfig`]
//! for models that think before answering, and what a model can do
//! ([`ModelCapabilities`]). Each provider maps them to its own wire format
//! and leaves out what its model cannot do.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shape the model's answer must have.
///
/// ```
/// let f = loopwright_types::ResponseFormat::json_schema("weather", serde_json::json!({"type": "object"}));
/// assert!(matches!(f, loopwright_types::ResponseFormat::JsonSchema { strict: true, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseFormat {
    /// JSON matching a schema (an object schema).
    JsonSchema {
        /// A name for the schema (`^[a-zA-Z0-9_-]{1,64}$`).
        name: String,
        /// The JSON Schema.
        schema: Value,
        /// Ask for strict adherence where the provider offers it; the
        /// provider adapts the schema to its strict rules, or sends it
        /// non-strict when it cannot (see `loopwright_types::output::strict_schema`).
        strict: bool,
    },
}

impl ResponseFormat {
    /// A strict JSON Schema format.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        Self::JsonSchema {
            name: name.into(),
            schema,
            strict: true,
        }
    }
}

/// How hard a reasoning model thinks before it answers.
///
/// ```
/// use loopwright_types::ReasoningEffort;
/// assert_eq!(serde_json::to_string(&ReasoningEffort::High).unwrap(), "\"high\"");
/// assert_eq!("minimal".parse::<ReasoningEffort>().unwrap(), ReasoningEffort::Minimal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// No reasoning where the model can switch it off.
    None,
    /// As little as the model allows.
    Minimal,
    /// Light.
    Low,
    /// The usual.
    Medium,
    /// Deep.
    High,
}

impl ReasoningEffort {
    /// Every effort, least first.
    pub const ALL: [ReasoningEffort; 5] = [Self::None, Self::Minimal, Self::Low, Self::Medium, Self::High];

    /// The lowercase name (`none`, `minimal`, `low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }

    /// A thinking-token budget for providers that take a budget rather than
    /// an effort (Anthropic, Gemini): `None` for no reasoning; 1,024 (the
    /// smallest Anthropic accepts) for minimal, then 4,096, 10,000, 24,576.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ReasoningEffort::Medium.budget_tokens(), Some(10_000));
    /// assert_eq!(loopwright_types::ReasoningEffort::None.budget_tokens(), None);
    /// ```
    pub fn budget_tokens(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Minimal => Some(1_024),
            Self::Low => Some(4_096),
            Self::Medium => Some(10_000),
            Self::High => Some(24_576),
        }
    }
}

/// An effort name that is not one of `none | minimal | low | medium | high`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reasoning effort `{0}`: expected none, minimal, low, medium or high")]
pub struct UnknownEffort(pub String);

impl std::str::FromStr for ReasoningEffort {
    type Err = UnknownEffort;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownEffort(s.to_owned()))
    }
}

/// Reasoning for a request: an effort and, optionally, a token budget (for
/// providers that take one; derived from the effort otherwise).
///
/// ```
/// use loopwright_types::{ReasoningConfig, ReasoningEffort};
/// let r = ReasoningConfig::from(ReasoningEffort::High).budget_tokens(32_000);
/// assert_eq!(r.budget(), Some(32_000));
/// assert_eq!(ReasoningConfig::from(ReasoningEffort::Low).budget(), Some(4_096));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningConfig {
    /// How hard to think.
    pub effort: ReasoningEffort,
    /// Thinking tokens at most, where the provider takes a budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

impl ReasoningConfig {
    /// The same config with an explicit token budget.
    pub fn budget_tokens(mut self, tokens: u32) -> Self {
        self.budget_tokens = Some(tokens);
        self
    }

    /// The budget: the explicit one, else the effort's
    /// ([`ReasoningEffort::budget_tokens`]); `None` for effort `none`.
    pub fn budget(&self) -> Option<u32> {
        match self.effort {
            ReasoningEffort::None => None,
            _ => self.budget_tokens.or(self.effort.budget_tokens()),
        }
    }
}

impl From<ReasoningEffort> for ReasoningConfig {
    fn from(effort: ReasoningEffort) -> Self {
        Self {
            effort,
            budget_tokens: None,
        }
    }
}

/// What a model can do, as its provider knows it from the model id. A
/// feature a model lacks is left out of its requests rather than sent and
/// refused.
///
/// ```
/// let caps = loopwright_types::ModelCapabilities::default();
/// assert!(!caps.structured_output && !caps.reasoning);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ModelCapabilities {
    /// JSON Schema output (native structured output).
    pub structured_output: bool,
    /// Native structured output in the same request as tool definitions.
    pub structured_output_with_tools: bool,
    /// Reasoning settings are honoured.
    pub reasoning: bool,
}

impl ModelCapabilities {
    /// Set [`ModelCapabilities::structured_output`] (and, when `with_tools`,
    /// [`ModelCapabilities::structured_output_with_tools`]).
    pub fn structured_output(mut self, on: bool, with_tools: bool) -> Self {
        self.structured_output = on;
        self.structured_output_with_tools = on && with_tools;
        self
    }

    /// Set [`ModelCapabilities::reasoning`].
    pub fn reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
    }

    /// What every one of several models can do (a fallback chain).
    pub fn intersect(self, other: ModelCapabilities) -> Self {
        Self {
            structured_output: self.structured_output && other.structured_output,
            structured_output_with_tools: self.structured_output_with_tools
                && other.structured_output_with_tools,
            reasoning: self.reasoning && other.reasoning,
        }
    }
}
