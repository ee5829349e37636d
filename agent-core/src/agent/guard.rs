//! Applying the [`ContextBudget`] in the loop: projecting each request and
//! admitting tool results (see [`crate::budget`]).

use std::sync::{Arc, Mutex};

use loopwright_types::budget::{BudgetFigures, ContextBudget, MESSAGE_OVERHEAD_TOKENS};
use loopwright_types::tool::{ToolDefinition, render_parts_text};
use loopwright_types::{ContentPart, Message, ToolOutputPart};

/// Tokens counted for an image: providers bill roughly this for a typical
/// screenshot-sized image.
pub(crate) const IMAGE_TOKENS: u64 = 1_000;

/// Names of the guard's metrics.
pub(crate) const GUARD_EVENTS_METRIC: &str = "loopwright_context_guard_events_total";
pub(crate) const GUARD_REMAINING_METRIC: &str = "loopwright_context_guard_remaining_tokens";

pub(crate) struct Guard {
    budget: ContextBudget,
    provider: String,
    model: String,
    /// Token counts of the history's messages, in order (cached).
    counts: Vec<u64>,
    /// (tool definitions, system prompt, tokens of both).
    fixed: Option<(Arc<Vec<ToolDefinition>>, Option<String>, u64)>,
}

impl Guard {
    pub fn new(budget: ContextBudget, provider: &str, model: &str) -> Self {
        Self {
            budget,
            provider: provider.to_owned(),
            model: model.to_owned(),
            counts: Vec::new(),
            fixed: None,
        }
    }

    pub fn limit(&self) -> u64 {
        self.budget.limit()
    }

    /// Tokens of a request with this system prompt, these tools and this
    /// history (from the model's provider's latest compaction item on,
    /// which is all it reads), plus `extra` messages not in the history.
    pub fn project(
        &mut self,
        system: Option<&str>,
        tools: &Arc<Vec<ToolDefinition>>,
        history: &[Message],
        extra: &[Message],
    ) -> u64 {
        let counter = self.budget.counter.clone();
        let stale = match &self.fixed {
            Some((t, s, _)) => !Arc::ptr_eq(t, tools) || s.as_deref() != system,
            None => true,
        };
        if stale {
            let defs = serde_json::to_string(tools.as_ref()).unwrap_or_default();
            let tokens = counter.count(system.unwrap_or_default()) + counter.count(&defs);
            self.fixed = Some((tools.clone(), system.map(str::to_owned), tokens));
        }
        for m in &history[self.counts.len().min(history.len())..] {
            let tokens = self
                .budget
                .cache
                .get_or_count(m, || message_tokens(counter.as_ref(), m));
            self.counts.push(tokens);
        }
        let fixed = self.fixed.as_ref().map_or(0, |f| f.2);
        let start = crate::compaction::provider_start(history, &self.provider);
        let history_tokens: u64 = self.counts[start.min(history.len())..history.len()].iter().sum();
        let extra_tokens: u64 = extra.iter().map(|m| message_tokens(counter.as_ref(), m)).sum();
        let projected = fixed + history_tokens + extra_tokens;
        metrics::gauge!(GUARD_REMAINING_METRIC, "provider" => self.provider.clone(), "model" => self.model.clone())
            .set(self.limit().saturating_sub(projected) as f64);
        projected
    }

    /// Forget the per-position counts: the history was replaced (compacted),
    /// not grown. Counts of unchanged messages come back from the cache.
    pub fn forget_history(&mut self) {
        self.counts.clear();
    }

    /// Count a guard event in the metrics.
    pub fn record(&self, trigger: &'static str, outcome: &'static str) {
        metrics::counter!(GUARD_EVENTS_METRIC,
            "provider" => self.provider.clone(), "model" => self.model.clone(),
            "trigger" => trigger, "outcome" => outcome)
        .increment(1);
    }

    /// A gate admitting tool results while `projected` tokens are in use.
    pub fn results_gate(&self, projected: u64) -> ResultsGate {
        ResultsGate {
            limit: self.limit(),
            used: Mutex::new(projected),
            counter: self.budget.counter.clone(),
        }
    }
}

/// Admits one step's tool results until the budget is spent.
pub(crate) struct ResultsGate {
    limit: u64,
    used: Mutex<u64>,
    counter: Arc<dyn loopwright_types::budget::TokenCounter>,
}

impl ResultsGate {
    /// `Ok` when a result of these parts fits (and is now counted); `Err`
    /// with the figures when it would not.
    pub fn admit(&self, parts: &[ToolOutputPart]) -> Result<(), BudgetFigures> {
        let tokens = parts_tokens(self.counter.as_ref(), parts) + MESSAGE_OVERHEAD_TOKENS;
        let Ok(mut used) = self.used.lock() else {
            return Ok(());
        };
        let projected = *used + tokens;
        if projected > self.limit {
            return Err(BudgetFigures {
                projected,
                limit: self.limit,
                remaining: self.limit.saturating_sub(*used),
            });
        }
        *used = projected;
        Ok(())
    }
}

pub(crate) fn parts_tokens(
    counter: &dyn loopwright_types::budget::TokenCounter,
    parts: &[ToolOutputPart],
) -> u64 {
    let media: u64 = parts
        .iter()
        .map(|p| match p {
            ToolOutputPart::Image { .. } => IMAGE_TOKENS,
            ToolOutputPart::Audio { audio } | ToolOutputPart::File { file: audio, .. } => media_tokens(audio),
            _ => 0,
        })
        .sum();
    counter.count(&render_parts_text(parts)) + media
}

/// Tokens counted for a file or an audio clip: its decoded bytes at four
/// per token (a PDF's text, roughly), at least [`IMAGE_TOKENS`] for one
/// behind a URL.
fn media_tokens(source: &loopwright_types::media::FileSource) -> u64 {
    source
        .decoded_len()
        .map_or(IMAGE_TOKENS, |bytes| (bytes as u64).div_ceil(4))
}

pub(crate) fn message_tokens(counter: &dyn loopwright_types::budget::TokenCounter, message: &Message) -> u64 {
    let mut tokens = MESSAGE_OVERHEAD_TOKENS;
    for part in &message.content {
        tokens += match part {
            ContentPart::Text { text } => counter.count(text),
            ContentPart::Image { .. } => IMAGE_TOKENS,
            ContentPart::Reasoning(r) => counter.count(&r.text),
            ContentPart::ToolCall(call) => counter.count(&call.name) + counter.count(&call.input.to_string()),
            ContentPart::ToolResult(result) => parts_tokens(counter, &result.parts),
            ContentPart::File { file, .. } => media_tokens(file),
            ContentPart::Audio { audio } => media_tokens(audio),
            // Opaque: its size on the wire, roughly.
            ContentPart::Compaction(item) => counter.count(&item.data.to_string()),
            _ => 0,
        };
    }
    tokens
}
