//! Compaction: when the history no longer fits the context window, the
//! loop makes it smaller and goes on, instead of ending the run with
//! `token_limit`.
//!
//! Strategies, tried in the order given until the next request fits under
//! [`Compaction::target`] of the budget's limit:
//! - [`CompactionStrategy::ClearToolResults`]: results before the last
//!   [`Compaction::keep_turns`] steps are cut to their first lines, with a
//!   note saying what was cleared ([`clear`]);
//! - [`CompactionStrategy::Summarize`]: the messages before those steps
//!   become one summary written by a model, the agent's or another
//!   ([`summarize`]);
//! - [`CompactionStrategy::Provider`]: the provider compacts on its side
//!   (OpenAI Responses compaction items, kept verbatim across turns;
//!   Anthropic's clearing of old tool uses), where it can: requests carry
//!   [`ModelRequest::compact_above`](crate::model::ModelRequest::compact_above).
//!
//! Invariants (whatever the strategies): every tool call keeps exactly one
//! result; a step (an assistant message and its results) is kept or
//! replaced whole, so signed reasoning and encrypted items are never split
//! from their turn; system messages, the system prompt and the latest user
//! message are never compacted; each compaction sends a `compacted`
//! event, a summary's model call is accounted like any other, and the
//! run's result carries the compacted history
//! ([`AgentResult::history`](crate::AgentResult::history)), which a
//! [`Conversation`](crate::Conversation) keeps. Compaction needs a
//! [`ContextBudget`](crate::ContextBudget) (it acts where the budget guard
//! would stop the run, or above [`Compaction::threshold`]); without one it
//! does nothing.

pub mod clear;
pub mod summarize;
pub(crate) mod units;

use std::sync::Arc;

use loopwright_types::LanguageModel;

/// Steps kept whole by default (the model's latest work).
pub const DEFAULT_KEEP_TURNS: usize = 3;
/// Share of the budget's limit a compaction aims below by default: far
/// enough that the next few steps fit without compacting again.
pub const DEFAULT_TARGET: f64 = 0.5;
/// Output tokens a summary may take by default.
pub const DEFAULT_SUMMARY_TOKENS: u32 = 2_048;

/// One way of making the history smaller (see the module's docs).
#[derive(Clone)]
#[non_exhaustive]
pub enum CompactionStrategy {
    /// Cut old tool results to their first `keep_lines` lines.
    ClearToolResults {
        /// Lines of each result kept.
        keep_lines: usize,
    },
    /// Summarise older turns with a model call.
    Summarize {
        /// The model writing the summary; `None` is the agent's own.
        model: Option<Arc<dyn LanguageModel>>,
        /// Output tokens the summary may take.
        max_tokens: u32,
    },
    /// Let the provider compact on its side where it can.
    Provider,
}

impl CompactionStrategy {
    /// Clear old tool results, keeping [`clear::DEFAULT_KEEP_LINES`] lines.
    ///
    /// ```
    /// let s = loopwright_core::compaction::CompactionStrategy::clear_tool_results();
    /// assert_eq!(s.name(), "clear_tool_results");
    /// ```
    pub fn clear_tool_results() -> Self {
        Self::ClearToolResults {
            keep_lines: clear::DEFAULT_KEEP_LINES,
        }
    }

    /// Summarise older turns with the agent's model.
    pub fn summarize() -> Self {
        Self::Summarize {
            model: None,
            max_tokens: DEFAULT_SUMMARY_TOKENS,
        }
    }

    /// Summarise older turns with `model` (a cheaper one, say).
    ///
    /// ```
    /// # let cheap = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// let s = loopwright_core::compaction::CompactionStrategy::summarize_with(cheap);
    /// assert_eq!(s.name(), "summarize");
    /// ```
    pub fn summarize_with(model: Arc<dyn LanguageModel>) -> Self {
        Self::Summarize {
            model: Some(model),
            max_tokens: DEFAULT_SUMMARY_TOKENS,
        }
    }

    /// The provider's own compaction.
    pub fn provider() -> Self {
        Self::Provider
    }

    /// The name the `compacted` event gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ClearToolResults { .. } => "clear_tool_results",
            Self::Summarize { .. } => "summarize",
            Self::Provider => "provider",
        }
    }
}

impl std::fmt::Debug for CompactionStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClearToolResults { keep_lines } => f
                .debug_struct("ClearToolResults")
                .field("keep_lines", keep_lines)
                .finish(),
            Self::Summarize { model, max_tokens } => f
                .debug_struct("Summarize")
                .field(
                    "model",
                    &model
                        .as_ref()
                        .map(|m| format!("{}/{}", m.provider(), m.model_id())),
                )
                .field("max_tokens", max_tokens)
                .finish(),
            Self::Provider => f.write_str("Provider"),
        }
    }
}

/// How a run compacts its history (see the module's docs). Off unless set
/// ([`AgentOptions::compaction`](crate::agent::AgentOptions::compaction)); the
/// `loopwright` command, configuration files and agent files turn the
/// default on (`--no-compaction`, `compaction: false` turn it off).
///
/// ```
/// use loopwright_core::compaction::{Compaction, CompactionStrategy};
/// let default = Compaction::default(); // clear old tool results, then summarise
/// assert_eq!(default.strategies.len(), 2);
/// let mine = Compaction::new(vec![CompactionStrategy::summarize()]).keep_turns(5).threshold(0.8);
/// assert_eq!((mine.keep_turns, mine.threshold), (5, Some(0.8)));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Compaction {
    /// The strategies, tried in order.
    pub strategies: Vec<CompactionStrategy>,
    /// Also compact once a request would hold this share of the budget's
    /// limit (`None`: only when it would not fit).
    pub threshold: Option<f64>,
    /// Steps kept whole (at least 1).
    pub keep_turns: usize,
    /// Share of the limit a compaction aims below.
    pub target: f64,
}

impl Default for Compaction {
    fn default() -> Self {
        Self::new(vec![
            CompactionStrategy::clear_tool_results(),
            CompactionStrategy::summarize(),
        ])
    }
}

impl Compaction {
    /// These strategies, tried in order, with the default settings.
    pub fn new(strategies: Vec<CompactionStrategy>) -> Self {
        Self {
            strategies,
            threshold: None,
            keep_turns: DEFAULT_KEEP_TURNS,
            target: DEFAULT_TARGET,
        }
    }

    /// Also compact above this share of the limit (0 to 1).
    pub fn threshold(mut self, share: f64) -> Self {
        self.threshold = Some(share.clamp(0.0, 1.0));
        self
    }

    /// Keep this many steps whole (at least 1).
    pub fn keep_turns(mut self, n: usize) -> Self {
        self.keep_turns = n.max(1);
        self
    }

    /// Aim below this share of the limit (0 to 1).
    pub fn target(mut self, share: f64) -> Self {
        self.target = share.clamp(0.0, 1.0);
        self
    }

    /// Whether the provider's own compaction is among the strategies.
    pub fn uses_provider(&self) -> bool {
        self.strategies
            .iter()
            .any(|s| matches!(s, CompactionStrategy::Provider))
    }
}

/// Where a history's provider-compacted part ends for `provider`: the index
/// of the latest message holding its compaction item (the provider reads
/// from there on), 0 when there is none.
pub(crate) fn provider_start(history: &[loopwright_types::Message], provider: &str) -> usize {
    history
        .iter()
        .rposition(|m| {
            m.content.iter().any(
                |p| matches!(p, loopwright_types::ContentPart::Compaction(item) if item.provider == provider),
            )
        })
        .unwrap_or(0)
}
