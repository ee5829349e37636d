//! Context windows of known models and the [`ContextBudget`] of a configured
//! model.

use loopwright_types::ContextBudget;
use loopwright_types::budget::DEFAULT_CONTEXT_WINDOW;

use crate::config::split_selector;
use crate::{ConfigError, Providers, token_counter_for};

/// Context windows in tokens of known models, by id prefix. The longest
/// matching prefix wins, so specific entries (`gpt-4o`) beat general ones
/// (`gpt-4`); figures are the providers' published input+output windows.
pub const KNOWN_CONTEXT_WINDOWS: &[(&str, u64)] = &[
    // OpenAI
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-oss", 131_072),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    // Anthropic
    ("claude-", 200_000),
    // Google
    ("gemini-2.5-", 1_048_576),
    ("gemini-2.0-", 1_048_576),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-", 1_048_576),
    // The embedded model's default (`local/qwen3-0.6b`, its file's context length)
    ("qwen3-0.6b", 40_960),
];

/// The window a known model id has, by its longest matching prefix in
/// [`KNOWN_CONTEXT_WINDOWS`] (case-insensitive; a routed id such as
/// `openai/gpt-4o` is matched by its last segment).
pub fn known_context_window(model_id: &str) -> Option<u64> {
    let id = model_id
        .rsplit('/')
        .next()
        .unwrap_or(model_id)
        .to_ascii_lowercase();
    KNOWN_CONTEXT_WINDOWS
        .iter()
        .filter(|(prefix, _)| id.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// A model's context window: the configured one, else the known one, else
/// [`DEFAULT_CONTEXT_WINDOW`].
///
/// ```
/// use loopwright_providers::context_window_for;
/// assert_eq!(context_window_for("gpt-4.1-mini", None), 1_047_576);
/// assert_eq!(context_window_for("gpt-4.1-mini", Some(32_000)), 32_000);
/// assert_eq!(context_window_for("my-local-model", None), loopwright_types::budget::DEFAULT_CONTEXT_WINDOW);
/// ```
pub fn context_window_for(model_id: &str, configured: Option<u64>) -> u64 {
    configured
        .or_else(|| known_context_window(model_id))
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

impl Providers {
    /// The [`ContextBudget`] of the model a `provider/model` selector names:
    /// its window from the configuration, the known table or the default,
    /// its token counter from the configured tokenizer or the model id, and
    /// the given output reservation and buffer (else the budget's defaults).
    pub fn budget(
        &self,
        selector: &str,
        max_output_tokens: Option<u32>,
        buffer_tokens: Option<u64>,
    ) -> Result<ContextBudget, ConfigError> {
        let (_, model_id) = split_selector(selector)?;
        let config = self.model_config(selector);
        let window = context_window_for(model_id, config.and_then(|c| c.context_window));
        let tokenizer = config.and_then(|c| c.tokenizer.as_deref());
        let mut budget = ContextBudget::new(window).counter(token_counter_for(model_id, tokenizer)?);
        if let Some(tokens) = max_output_tokens {
            budget = budget.max_output_tokens(u64::from(tokens));
        }
        if let Some(tokens) = buffer_tokens {
            budget = budget.buffer_tokens(tokens);
        }
        Ok(budget)
    }

    /// The budget for a fallback chain: of the budgets of `selectors`, the
    /// one with the smallest limit, so a request fits whichever model ends up
    /// answering it; `None` for no selectors.
    ///
    /// ```
    /// use loopwright_providers::{Providers, ProvidersConfig};
    /// let providers = Providers::with_env(ProvidersConfig::default(), |_| None).unwrap();
    /// let chain = ["openai/gpt-4.1".to_string(), "openai/gpt-4o".to_string()];
    /// let budget = providers.chain_budget(&chain, Some(1_000), Some(0)).unwrap().unwrap();
    /// assert_eq!(budget.limit(), 128_000 - 1_000); // gpt-4o's window, the smaller
    /// ```
    pub fn chain_budget(
        &self,
        selectors: &[String],
        max_output_tokens: Option<u32>,
        buffer_tokens: Option<u64>,
    ) -> Result<Option<ContextBudget>, ConfigError> {
        let mut smallest: Option<ContextBudget> = None;
        for selector in selectors {
            let budget = self.budget(selector, max_output_tokens, buffer_tokens)?;
            if smallest.as_ref().is_none_or(|s| budget.limit() < s.limit()) {
                smallest = Some(budget);
            }
        }
        Ok(smallest)
    }
}
