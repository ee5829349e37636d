//! Accounting: one entry per model attempt (failed ones too) and per tool
//! call, sent as `accounting` events and to an optional [`AccountingSink`].
//!
//! [`JsonlSink`] appends one JSON object per line and flushes each line, so a
//! crash loses at most the line being written; on open it cuts a torn last
//! line left by an earlier crash, so every line in the file is whole.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

/// How a model attempt or tool call ended.
///
/// ```
/// assert_eq!(serde_json::to_string(&agent_core::EntryStatus::Ok).unwrap(), "\"ok\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    /// It succeeded.
    Ok,
    /// It failed.
    Error,
    /// It was cancelled.
    Cancelled,
}

/// Token counts of an entry (absent ones are 0).
///
/// ```
/// let t = agent_core::EntryTokens::from(agent_core::Usage { input_tokens: Some(3), output_tokens: Some(4), ..Default::default() });
/// assert_eq!((t.input, t.output, t.total), (3, 4, 7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EntryTokens {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Cached prompt tokens.
    pub cached: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Total.
    pub total: u64,
}

impl From<Usage> for EntryTokens {
    fn from(u: Usage) -> Self {
        Self {
            input: u.input_tokens.unwrap_or(0),
            output: u.output_tokens.unwrap_or(0),
            cached: u.cached_input_tokens.unwrap_or(0),
            reasoning: u.reasoning_tokens.unwrap_or(0),
            total: u.total().unwrap_or(0),
        }
    }
}

/// One accounting entry, tagged `"type"`: `llm` or `tool`.
///
/// ```
/// use agent_core::{AccountingEntry, EntryStatus, ToolEntry};
/// let e = AccountingEntry::Tool(ToolEntry {
///     timestamp: "2026-01-01T00:00:00.000Z".into(), status: EntryStatus::Ok, tool: "Read".into(),
///     source: "coding".into(), original_name: "Read".into(), latency_ms: 3,
///     characters_in: 20, characters_out: 400, error: None, details: None, budget: None,
/// });
/// assert_eq!(serde_json::to_value(&e).unwrap()["type"], "tool");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AccountingEntry {
    /// A model attempt.
    Llm(LlmEntry),
    /// A tool call.
    Tool(ToolEntry),
}

/// A model attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmEntry {
    /// When it ended (RFC 3339, UTC, milliseconds).
    pub timestamp: String,
    /// How it ended.
    pub status: EntryStatus,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// From the request to the end of the stream.
    pub latency_ms: u64,
    /// Tokens used.
    pub tokens: EntryTokens,
    /// The finish reason (snake_case), when the stream finished.
    pub stop_reason: Option<String>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEntry {
    /// When it ended (RFC 3339, UTC, milliseconds).
    pub timestamp: String,
    /// How it ended.
    pub status: EntryStatus,
    /// The exposed name.
    pub tool: String,
    /// The tool's source (empty for an unknown tool).
    pub source: String,
    /// The tool's own name.
    pub original_name: String,
    /// Wall time of the call (0 when it did not run).
    pub latency_ms: u64,
    /// Characters of the arguments (as JSON).
    pub characters_in: u64,
    /// Characters of the result the model got.
    pub characters_out: u64,
    /// The error text, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it did not run or failed: `unknown_tool`, `invalid_input`,
    /// `denied`, `timeout`, `cancelled`, `budget_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Projected, limit and remaining tokens, when the context budget
    /// replaced the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::BudgetFigures>,
}

/// Where accounting entries are kept besides the event stream.
pub trait AccountingSink: Send + Sync + std::fmt::Debug {
    /// Record one entry. Errors are logged by the loop, never fatal.
    fn record(&self, entry: &AccountingEntry) -> io::Result<()>;
}

/// Appends entries to a JSONL file, one line each, flushed per line.
///
/// ```
/// use agent_core::{AccountingSink, JsonlSink};
/// let path = std::env::temp_dir().join(format!("acct-doc-{}.jsonl", std::process::id()));
/// let sink = JsonlSink::open(&path).unwrap();
/// # let _ = std::fs::remove_file(&path);
/// ```
#[derive(Debug)]
pub struct JsonlSink {
    file: Mutex<File>,
}

impl JsonlSink {
    /// Open (or create) the file for appending, cutting a torn last line.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let len = file.metadata()?.len();
        if len > 0 {
            // Find the last newline; anything after it is a torn line.
            let mut content = Vec::new();
            file.seek(SeekFrom::Start(0))?;
            file.read_to_end(&mut content)?;
            if content.last() != Some(&b'\n') {
                let keep = content.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                file.set_len(keep as u64)?;
            }
        }
        Ok(Self {
            file: Mutex::new(file),
        })
    }
}

impl AccountingSink for JsonlSink {
    fn record(&self, entry: &AccountingEntry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut file = self
            .file
            .lock()
            .map_err(|_| io::Error::other("accounting file lock poisoned"))?;
        // One write of the whole line: appended whole or (on a crash) cut
        // at the end, which the next open repairs.
        file.write_all(&line)?;
        file.flush()
    }
}

/// Now as RFC 3339 in UTC with milliseconds, such as `2026-11-22T05:59:01.123Z`.
///
/// ```
/// let t = agent_core::rfc3339_now();
/// assert_eq!(t.len(), 24);
/// assert!(t.ends_with('Z'));
/// ```
pub fn rfc3339_now() -> String {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_514), (2026, 3, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
