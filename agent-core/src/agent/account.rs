//! Recording accounting entries: as events, and to the sink when one is set.

use std::sync::Arc;
use std::time::Duration;

use super::emit::Emitter;
use super::events::AgentEvent;
use crate::accounting::{AccountingEntry, AccountingSink, EntryStatus, EntryTokens, GuardEntry, LlmEntry};
use loopwright_types::util::rfc3339_now;
use loopwright_types::{FinishReason, Usage};

/// Stamps each entry with the run's agent path, then records it: metrics
/// (labelled by agent), the sink, an `accounting` event.
#[derive(Clone)]
pub(crate) struct Accountant {
    emit: Emitter,
    sink: Option<Arc<dyn AccountingSink>>,
    path: Arc<str>,
    /// The run's guard checks so far, for its result and paused state.
    /// Locked only to push or copy, never across an `.await`.
    guards: Arc<std::sync::Mutex<Vec<GuardEntry>>>,
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
    pub fn new(emit: Emitter, sink: Option<Arc<dyn AccountingSink>>, path: &str) -> Self {
        Self {
            emit,
            sink,
            path: Arc::from(path),
            guards: Arc::default(),
        }
    }

    /// The run's guard checks so far (a resumed run's from before its
    /// pause included).
    pub fn guard_entries(&self) -> Vec<GuardEntry> {
        self.guards
            .lock()
            .map(|g| g.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// A resumed run's checks from before its pause.
    pub fn resume_guards(&self, entries: Vec<GuardEntry>) {
        let mut guards = self
            .guards
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all = entries;
        all.append(&mut guards);
        *guards = all;
    }

    pub async fn record(&self, mut entry: AccountingEntry) {
        entry.set_agent_path(&self.path);
        record_metrics(&entry, &self.path);
        if let Some(sink) = &self.sink
            && let Err(e) = sink.record(&entry).await
        {
            tracing::warn!(target: "loopwright_core::accounting", error = %e, "could not write an accounting entry");
        }
        let _ = self.emit.send(AgentEvent::Accounting { entry }).await;
    }

    /// A `guardrail_checked` event: sent, accounted and traced (an event
    /// of the current span).
    pub async fn guard_checked(&self, event: AgentEvent) -> bool {
        let entry = crate::accounting::GuardEntry::of(&event);
        let sent = self.emit.send(event).await.is_ok();
        if let Some(entry) = entry {
            tracing::info!(
                target: "loopwright_core::guardrail",
                guard = %entry.guard,
                point = %entry.point,
                verdict = ?entry.verdict,
                checks = entry.checks,
                "loopwright.guardrail"
            );
            let mut stamped = entry.clone();
            stamped.agent_path = Some(self.path.to_string());
            self.guards
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(stamped);
            self.record(AccountingEntry::Guard(entry)).await;
        }
        sent
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
            agent_path: None,
        }))
        .await;
    }
}

/// Metric names (the `metrics` facade; the application picks an exporter).
pub(crate) const MODEL_CALLS_METRIC: &str = "loopwright_model_calls_total";
pub(crate) const MODEL_LATENCY_METRIC: &str = "loopwright_model_latency_seconds";
pub(crate) const TOKENS_METRIC: &str = "loopwright_tokens_total";
pub(crate) const TOOL_CALLS_METRIC: &str = "loopwright_tool_calls_total";
pub(crate) const TOOL_LATENCY_METRIC: &str = "loopwright_tool_latency_seconds";

fn status_label(status: EntryStatus) -> &'static str {
    match status {
        EntryStatus::Ok => "ok",
        EntryStatus::Error => "error",
        EntryStatus::Cancelled => "cancelled",
    }
}

/// Every metric is labelled `agent` with the agent path.
fn record_metrics(entry: &AccountingEntry, agent: &str) {
    let a = agent.to_owned();
    match entry {
        AccountingEntry::Llm(e) => {
            let (p, m) = (e.provider.clone(), e.model.clone());
            metrics::counter!(MODEL_CALLS_METRIC, "agent" => a.clone(), "provider" => p.clone(), "model" => m.clone(), "status" => status_label(e.status)).increment(1);
            metrics::histogram!(MODEL_LATENCY_METRIC, "agent" => a.clone(), "provider" => p.clone(), "model" => m.clone())
                .record(e.latency_ms as f64 / 1000.0);
            for (kind, n) in [
                ("input", e.tokens.input),
                ("output", e.tokens.output),
                ("cached", e.tokens.cached),
                ("cache_write", e.tokens.cache_write),
                ("reasoning", e.tokens.reasoning),
            ] {
                metrics::counter!(TOKENS_METRIC, "agent" => a.clone(), "provider" => p.clone(), "model" => m.clone(), "kind" => kind).increment(n);
            }
        }
        AccountingEntry::Tool(e) => {
            metrics::counter!(TOOL_CALLS_METRIC, "agent" => a.clone(), "tool" => e.tool.clone(), "source" => e.source.clone(), "status" => status_label(e.status)).increment(1);
            metrics::histogram!(TOOL_LATENCY_METRIC, "agent" => a, "tool" => e.tool.clone(), "source" => e.source.clone())
                .record(e.latency_ms as f64 / 1000.0);
        }
        AccountingEntry::Guard(_) => {}
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
