//! Token usage and why a model step ended.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens a model call used. A field is `None` when the provider did not say.
///
/// Usage is additive: adding two usages adds each field, and a field known on
/// either side stays known.
///
/// ```
/// use loopwright_types::Usage;
/// let a = Usage::new(10, 5);
/// let b = Usage::default().with_input(Some(3)).with_reasoning(Some(2));
/// let sum = a + b;
/// assert_eq!(sum.input_tokens, Some(13));
/// assert_eq!(sum.output_tokens, Some(5));
/// assert_eq!(sum.reasoning_tokens, Some(2));
/// assert_eq!(sum.cached_input_tokens, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: Option<u64>,
    /// Completion tokens, reasoning included.
    pub output_tokens: Option<u64>,
    /// Prompt tokens served from the provider's cache.
    pub cached_input_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache (Anthropic bills them
    /// apart); part of `input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Completion tokens spent on reasoning.
    pub reasoning_tokens: Option<u64>,
    /// Total as the provider reports it (or input + output).
    pub total_tokens: Option<u64>,
}

/// Setters `with_x(Option<u64>) -> Self` for the count fields.
macro_rules! count_setters {
    ($($(#[$doc:meta])* $setter:ident => $field:ident;)*) => {
        $($(#[$doc])* pub fn $setter(mut self, tokens: Option<u64>) -> Self {
            self.$field = tokens;
            self
        })*
    };
}

impl Usage {
    /// Known input and output tokens, nothing else.
    ///
    /// ```
    /// assert_eq!(loopwright_types::Usage::new(2, 3).total(), Some(5));
    /// ```
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self::default()
            .with_input(Some(input_tokens))
            .with_output(Some(output_tokens))
    }

    count_setters! {
        /// Set the prompt tokens (cached ones included).
        with_input => input_tokens;
        /// Set the completion tokens (reasoning included).
        with_output => output_tokens;
        /// Set the prompt tokens served from the provider's cache.
        with_cached_input => cached_input_tokens;
        /// Set the prompt tokens written to the provider's cache.
        with_cache_write => cache_write_tokens;
        /// Set the completion tokens spent on reasoning.
        with_reasoning => reasoning_tokens;
        /// Set the total as the provider reports it.
        with_total => total_tokens;
    }

    /// Whether no field is known.
    ///
    /// ```
    /// assert!(loopwright_types::Usage::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `total_tokens` when the provider said it, else input + output when
    /// either is known.
    ///
    /// ```
    /// let u = loopwright_types::Usage::new(2, 3);
    /// assert_eq!(u.total(), Some(5));
    /// ```
    pub fn total(&self) -> Option<u64> {
        self.total_tokens
            .or_else(|| add_opt(self.input_tokens, self.output_tokens))
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: add_opt(self.input_tokens, rhs.input_tokens),
            output_tokens: add_opt(self.output_tokens, rhs.output_tokens),
            cached_input_tokens: add_opt(self.cached_input_tokens, rhs.cached_input_tokens),
            cache_write_tokens: add_opt(self.cache_write_tokens, rhs.cache_write_tokens),
            reasoning_tokens: add_opt(self.reasoning_tokens, rhs.reasoning_tokens),
            total_tokens: add_opt(self.total(), rhs.total()),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// Why a model step ended.
///
/// ```
/// use loopwright_types::FinishReason;
/// assert_eq!(serde_json::to_string(&FinishReason::ToolCalls).unwrap(), "\"tool_calls\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output token limit was reached.
    Length,
    /// The provider's content filter stopped the output.
    ContentFilter,
    /// The provider reported an error.
    Error,
    /// A reason this library does not know, as the provider named it.
    Other(String),
}
