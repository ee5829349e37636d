//! Recording accounting entries: as events, and to the sink when one is set.

use std::sync::Arc;
use std::time::Duration;

use super::emit::Emitter;
use super::events::AgentEvent;
use crate::accounting::{AccountingEntry, AccountingSink, EntryStatus, EntryTokens, LlmEntry, rfc3339_now};
use crate::usage::{FinishReason, Usage};

#[derive(Clone)]
pub(crate) struct Accountant {
    emit: Emitter,
    sink: Option<Arc<dyn AccountingSink>>,
}

/// What one model attempt did, for its entry.
pub(crate) struct LlmAttempt<'a> {
    pub label: &'a str,
    pub status: EntryStatus,
    pub latency: Duration,
    pub usage: Usage,
    pub stop_reason: Option<&'a FinishReason>,
    pub error: Option<String>,
}

impl Accountant {
    pub fn new(emit: Emitter, sink: Option<Arc<dyn AccountingSink>>) -> Self {
        Self { emit, sink }
    }

    pub async fn record(&self, entry: AccountingEntry) {
        if let Some(sink) = &self.sink
            && let Err(e) = sink.record(&entry)
        {
            tracing::warn!(target: "agent_core::accounting", error = %e, "could not write an accounting entry");
        }
        let _ = self.emit.send(AgentEvent::Accounting { entry }).await;
    }

    pub async fn llm(&self, attempt: LlmAttempt<'_>) {
        let (provider, model) = attempt.label.split_once('/').unwrap_or((attempt.label, ""));
        let stop_reason = attempt.stop_reason.map(|r| match serde_json::to_value(r) {
            Ok(serde_json::Value::String(s)) => s,
            Ok(other) => other.to_string(),
            Err(_) => format!("{r:?}"),
        });
        self.record(AccountingEntry::Llm(LlmEntry {
            timestamp: rfc3339_now(),
            status: attempt.status,
            provider: provider.to_owned(),
            model: model.to_owned(),
            latency_ms: millis(attempt.latency),
            tokens: EntryTokens::from(attempt.usage),
            stop_reason,
            error: attempt.error,
        }))
        .await;
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
