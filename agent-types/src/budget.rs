//! The context-window budget: how many tokens a request may hold.
//!
//! Limit = context window - buffer - max output tokens. Before each step the
//! loop projects the request (system prompt, tool definitions, every message)
//! with a [`TokenCounter`]. A request over the limit forces the concluding
//! step when the concluding request fits, else the run ends with exit
//! `token_limit`; since the concluding request keeps the tool definitions
//! (see the agent loop), in practice a request over the limit ends the run.
//! A tool result that would push the projection over the limit is replaced by
//! [`BUDGET_EXCEEDED_RESULT`] and the next step concludes (exit
//! `token_limit`, with the model's concluding text). Messages are counted
//! once each: within a run by position, and across the runs of one budget
//! (the turns of a conversation) by content, in a bounded cache shared by
//! the budget's clones; so a step pays only for messages never counted.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::Hasher;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

/// Context window assumed for a model nobody configured: the smallest
/// common window among current tool-calling models.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 131_072;
/// Tokens kept free besides the output: counting is an estimate, and
/// providers add a few tokens of framing per request.
pub const DEFAULT_BUFFER_TOKENS: u64 = 256;
/// Tokens of framing per message (role markers, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Messages whose token counts a budget remembers across runs; when full the
/// cache starts over (a conversation's history fits many times over).
pub const MAX_CACHED_MESSAGE_COUNTS: usize = 16_384;
/// The result a tool call gets when its output would overflow the window.
pub const BUDGET_EXCEEDED_RESULT: &str = "(tool failed: context window budget exceeded)";

/// Counts tokens of text for one model.
pub trait TokenCounter: Send + Sync + Debug {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> u64;
}

/// Four characters per token: the usual estimate for models with no local
/// tokenizer.
///
/// ```
/// use loopwright_types::budget::{CharEstimate, TokenCounter};
/// assert_eq!(CharEstimate.count("abcdefgh"), 2);
/// assert_eq!(CharEstimate.count("abc"), 1);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CharEstimate;

impl TokenCounter for CharEstimate {
    fn count(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }
}

/// The budget of one model.
///
/// ```
/// use loopwright_types::ContextBudget;
/// let b = ContextBudget::new(8_000).max_output_tokens(1_000);
/// assert_eq!(b.limit(), 8_000 - 256 - 1_000);
/// ```
#[derive(Debug, Clone)]
pub struct ContextBudget {
    #[doc(hidden)]
    pub context_window: u64,
    #[doc(hidden)]
    pub buffer_tokens: u64,
    #[doc(hidden)]
    pub max_output_tokens: u64,
    #[doc(hidden)]
    pub counter: Arc<dyn TokenCounter>,
    /// Token counts of messages by content hash, shared by clones.
    #[doc(hidden)]
    pub cache: Arc<CountCache>,
}

/// Token counts of messages already counted, by a hash of their content.
#[derive(Debug, Default)]
#[doc(hidden)]
pub struct CountCache {
    counts: Mutex<HashMap<u64, u64>>,
}

impl CountCache {
    /// The count for `message`, computed by `count` when not cached.
    pub fn get_or_count(&self, message: &crate::message::Message, count: impl FnOnce() -> u64) -> u64 {
        let key = content_hash(message);
        if let Some(tokens) = key.and_then(|k| self.counts.lock().ok()?.get(&k).copied()) {
            return tokens;
        }
        // Counted outside the lock: counting is the slow part.
        let tokens = count();
        if let (Some(key), Ok(mut counts)) = (key, self.counts.lock()) {
            if counts.len() >= MAX_CACHED_MESSAGE_COUNTS {
                counts.clear();
            }
            counts.insert(key, tokens);
        }
        tokens
    }
}

/// A hash of a message's content: text parts' bytes straight into the
/// hasher (most of a history, and what serialising would only copy and
/// scan for escapes), other parts by their serialised form as it is written
/// (no copy); `None` if a part cannot be serialised.
fn content_hash(message: &crate::message::Message) -> Option<u64> {
    use std::hash::Hash;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    message.role.hash(&mut hasher);
    hasher.write_usize(message.content.len());
    for part in &message.content {
        match part {
            crate::message::ContentPart::Text { text } => {
                hasher.write_u8(0);
                text.hash(&mut hasher);
            }
            other => {
                hasher.write_u8(1);
                serde_json::to_writer(HashWriter(&mut hasher), other).ok()?;
                // The end of the part (its JSON never holds a bare 0xff).
                hasher.write_u8(0xff);
            }
        }
    }
    Some(hasher.finish())
}

/// An `io::Write` that hashes what is written to it.
struct HashWriter<'a>(&'a mut std::collections::hash_map::DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ContextBudget {
    /// A budget for this window, the default buffer, no output reserve and
    /// the [`CharEstimate`] counter.
    pub fn new(context_window: u64) -> Self {
        Self {
            context_window,
            buffer_tokens: DEFAULT_BUFFER_TOKENS,
            max_output_tokens: 0,
            counter: Arc::new(CharEstimate),
            cache: Arc::default(),
        }
    }

    /// Tokens kept free besides the output.
    pub fn buffer_tokens(mut self, tokens: u64) -> Self {
        self.buffer_tokens = tokens;
        self
    }

    /// Tokens reserved for the model's answer.
    pub fn max_output_tokens(mut self, tokens: u64) -> Self {
        self.max_output_tokens = tokens;
        self
    }

    /// Count with this counter (counts cached for another counter are
    /// dropped).
    pub fn counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self.cache = Arc::default();
        self
    }

    /// The most tokens a request may hold.
    pub fn limit(&self) -> u64 {
        self.context_window
            .saturating_sub(self.buffer_tokens)
            .saturating_sub(self.max_output_tokens)
    }
}

/// Figures of a budget decision, as accounting entries carry them.
///
/// ```
/// let f = loopwright_types::budget::BudgetFigures { projected: 900, limit: 800, remaining: 0 };
/// assert!(f.projected > f.limit);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetFigures {
    /// Tokens the request would hold.
    pub projected: u64,
    /// The limit.
    pub limit: u64,
    /// Tokens left before the result (0 when none).
    pub remaining: u64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::content_hash;
    use crate::message::{ContentPart, Message, Role};

    #[test]
    fn equal_content_hashes_equal_and_any_change_differs() {
        let m = |role, parts: Vec<ContentPart>| content_hash(&Message::new(role, parts)).unwrap();
        let text = |t: &str| ContentPart::text(t);
        let base = m(Role::User, vec![text("ab"), text("c")]);
        assert_eq!(base, m(Role::User, vec![text("ab"), text("c")]));
        // Role, split, order, count and kind of part all count.
        assert_ne!(base, m(Role::Assistant, vec![text("ab"), text("c")]));
        assert_ne!(base, m(Role::User, vec![text("a"), text("bc")]));
        assert_ne!(base, m(Role::User, vec![text("c"), text("ab")]));
        assert_ne!(base, m(Role::User, vec![text("abc")]));
        let file = ContentPart::file("text/plain", b"ab", None);
        assert_ne!(m(Role::User, vec![file.clone()]), m(Role::User, vec![text("ab")]));
        assert_eq!(m(Role::User, vec![file.clone()]), m(Role::User, vec![file]));
        let other = ContentPart::file("text/plain", b"ac", None);
        assert_ne!(
            m(Role::User, vec![other]),
            m(Role::User, vec![ContentPart::file("text/plain", b"ab", None)])
        );
    }
}
