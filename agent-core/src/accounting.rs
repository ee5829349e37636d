//! Accounting: one entry per model attempt (failed ones too) and per tool
//! call, sent as `accounting` events and to an optional [`AccountingSink`].
//!
//! [`JsonlSink`] appends one JSON object per line, each line in one write,
//! on a blocking thread (never on the async runtime's threads), so a crash
//! loses at most the line being written; on open it cuts a torn last line
//! left by an earlier crash (reading only the file's tail), so every line in
//! the file is whole or absent. A last line that is whole JSON but lacks its
//! newline (written by another tool) is kept and ended.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use loopwright_types::Usage;

/// How a model attempt or tool call ended.
///
/// ```
/// assert_eq!(serde_json::to_string(&loopwright_core::accounting::EntryStatus::Ok).unwrap(), "\"ok\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
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
/// let t = loopwright_core::accounting::EntryTokens::from(loopwright_core::Usage::new(3, 4));
/// assert_eq!((t.input, t.output, t.total), (3, 4, 7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EntryTokens {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
    /// Cached prompt tokens.
    pub cached: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write: u64,
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
            cache_write: u.cache_write_tokens.unwrap_or(0),
            reasoning: u.reasoning_tokens.unwrap_or(0),
            total: u.total().unwrap_or(0),
        }
    }
}

/// One accounting entry, tagged `"type"`: `llm`, `tool` or `guard`.
///
/// ```
/// use loopwright_core::accounting::AccountingEntry;
/// let line = r#"{"type":"tool","timestamp":"2026-01-01T00:00:00.000Z","status":"ok","tool":"Read",
///   "source":"coding","original_name":"Read","latency_ms":3,"characters_in":20,"characters_out":400}"#;
/// let e: AccountingEntry = serde_json::from_str(line).unwrap();
/// assert!(matches!(e, AccountingEntry::Tool(ref t) if t.latency_ms == 3));
/// assert_eq!(serde_json::to_value(&e).unwrap()["type"], "tool");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AccountingEntry {
    /// A model attempt.
    Llm(LlmEntry),
    /// A tool call.
    Tool(ToolEntry),
    /// A guardrail's checks of one thing (an input, a step's answer, a
    /// call's arguments or result).
    Guard(GuardEntry),
}

/// A guardrail's checks of one thing.
///
/// ```
/// use loopwright_core::accounting::AccountingEntry;
/// let line = r#"{"type":"guard","timestamp":"2026-01-01T00:00:00.000Z","guard":"pii","point":"output",
///   "verdict":"replace","step":1,"checks":3,"latency_ms":0}"#;
/// let e: AccountingEntry = serde_json::from_str(line).unwrap();
/// assert!(matches!(e, AccountingEntry::Guard(ref g) if g.checks == 3));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GuardEntry {
    /// When the last check ended (RFC 3339, UTC, milliseconds).
    pub timestamp: String,
    /// The guard's name.
    pub guard: String,
    /// Where.
    pub point: crate::guardrail::GuardPoint,
    /// The strongest verdict of its checks.
    pub verdict: crate::guardrail::GuardAction,
    /// The step (0: the input).
    pub step: u32,
    /// The tool call, at the tool points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// How many checks.
    pub checks: u32,
    /// Their time in all.
    pub latency_ms: u64,
    /// The path of the agent whose run it checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_path: Option<String>,
}

impl GuardEntry {
    /// The entry of a `guardrail_checked` event (`None` for any other).
    pub(crate) fn of(event: &crate::AgentEvent) -> Option<Self> {
        match event {
            crate::AgentEvent::GuardrailChecked {
                guard,
                point,
                verdict,
                step,
                call_id,
                checks,
                duration_ms,
            } => Some(Self {
                timestamp: loopwright_types::util::rfc3339_now(),
                guard: guard.clone(),
                point: *point,
                verdict: *verdict,
                step: *step,
                call_id: call_id.clone(),
                checks: *checks,
                latency_ms: *duration_ms,
                agent_path: None,
            }),
            _ => None,
        }
    }
}

impl AccountingEntry {
    /// The path of the agent that made the entry, when it was recorded by
    /// a run (see [`LlmEntry::agent_path`]).
    ///
    /// ```
    /// use loopwright_core::accounting::AccountingEntry;
    /// let line = r#"{"type":"llm","timestamp":"2026-01-01T00:00:00.000Z","status":"ok","provider":"openai","model":"m",
    ///   "latency_ms":9,"tokens":{"input":1,"output":2,"cached":0,"reasoning":0,"total":3},"stop_reason":"stop",
    ///   "agent_path":"coordinator/researcher"}"#;
    /// let e: AccountingEntry = serde_json::from_str(line).unwrap();
    /// assert_eq!(e.agent_path(), Some("coordinator/researcher"));
    /// ```
    pub fn agent_path(&self) -> Option<&str> {
        match self {
            Self::Llm(e) => e.agent_path.as_deref(),
            Self::Tool(e) => e.agent_path.as_deref(),
            Self::Guard(e) => e.agent_path.as_deref(),
        }
    }

    pub(crate) fn set_agent_path(&mut self, path: &str) {
        let slot = match self {
            Self::Llm(e) => &mut e.agent_path,
            Self::Tool(e) => &mut e.agent_path,
            Self::Guard(e) => &mut e.agent_path,
        };
        *slot = Some(path.to_owned());
    }
}

/// A model attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// The agent that made it, as a path from the agent the application
    /// ran (`coordinator/researcher`; a lone agent's name, `agent` by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_path: Option<String>,
}

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// `denied`, `timeout`, `cancelled`, `budget_exceeded`, `not_run` (a
    /// call made on the concluding step, which runs no tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Projected, limit and remaining tokens, when the context budget
    /// replaced the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<loopwright_types::budget::BudgetFigures>,
    /// The agent that made it, as a path from the agent the application
    /// ran (`coordinator/researcher`; a lone agent's name, `agent` by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_path: Option<String>,
}

/// Where accounting entries are kept besides the event stream.
///
/// The loop awaits each record, so a slow sink slows the run rather than
/// losing entries; do blocking I/O off the async threads (as [`JsonlSink`]
/// does).
///
/// ```
/// use loopwright_core::accounting::{AccountingEntry, AccountingSink};
/// #[derive(Debug, Default)]
/// struct Count(std::sync::atomic::AtomicUsize);
/// #[async_trait::async_trait]
/// impl AccountingSink for Count {
///     async fn record(&self, _entry: &AccountingEntry) -> std::io::Result<()> {
///         self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait AccountingSink: Send + Sync + std::fmt::Debug {
    /// Record one entry. Errors are logged by the loop, never fatal.
    async fn record(&self, entry: &AccountingEntry) -> io::Result<()>;
}

/// Bytes read at a time, backwards from the end, when looking for the last
/// newline on open (a line is rarely longer; longer ones take more reads).
const TAIL_CHUNK: u64 = 4096;

/// Appends entries to a JSONL file, one line each.
///
/// ```
/// use loopwright_core::accounting::JsonlSink;
/// let path = std::env::temp_dir().join(format!("acct-doc-{}.jsonl", std::process::id()));
/// let sink = JsonlSink::open(&path).unwrap();
/// # let _ = std::fs::remove_file(&path);
/// ```
#[derive(Debug, Clone)]
pub struct JsonlSink {
    file: Arc<Mutex<File>>,
}

impl JsonlSink {
    /// Open (or create) the file for appending, cutting a torn last line
    /// (one that is not JSON; a whole JSON line missing only its newline
    /// gets one). Only the tail after the last newline is read.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let len = file.metadata()?.len();
        if let Some(keep) = whole_lines_end(&mut file, len)? {
            let mut tail = Vec::new();
            file.seek(SeekFrom::Start(keep))?;
            file.read_to_end(&mut tail)?;
            if serde_json::from_slice::<serde_json::Value>(&tail).is_ok() {
                file.write_all(b"\n")?;
            } else {
                file.set_len(keep)?;
            }
        }
        Ok(Self {
            file: Arc::new(Mutex::new(file)),
        })
    }

    /// Append one line in one write (whole, or cut at the end by a crash,
    /// which the next open repairs).
    fn write_line(file: &Mutex<File>, line: &[u8]) -> io::Result<()> {
        let mut file = file
            .lock()
            .map_err(|_| io::Error::other("accounting file lock poisoned"))?;
        file.write_all(line)?;
        file.flush()
    }
}

/// Where the whole lines of a file of `len` bytes end, when a torn line
/// follows them (`None` when the file ends with a newline or is empty).
/// Reads backwards from the end, [`TAIL_CHUNK`] bytes at a time.
fn whole_lines_end(file: &mut File, len: u64) -> io::Result<Option<u64>> {
    if len == 0 {
        return Ok(None);
    }
    let mut end = len;
    let mut buf = vec![0u8; TAIL_CHUNK as usize];
    let mut last_chunk = true;
    while end > 0 {
        let start = end.saturating_sub(TAIL_CHUNK);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if last_chunk && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        last_chunk = false;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(start + i as u64 + 1));
        }
        end = start;
    }
    Ok(Some(0))
}

#[async_trait]
impl AccountingSink for JsonlSink {
    async fn record(&self, entry: &AccountingEntry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        let file = self.file.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn_blocking(move || Self::write_line(&file, &line))
                .await
                .map_err(io::Error::other)?,
            // Outside a runtime there is no async thread to keep free.
            Err(_) => Self::write_line(&file, &line),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn repaired(content: &[u8]) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("acct-tail-{}-{}", std::process::id(), content.len()));
        std::fs::write(&dir, content).unwrap();
        drop(JsonlSink::open(&dir).unwrap());
        let out = std::fs::read(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        out
    }

    #[test]
    fn torn_tails_are_cut_and_whole_files_kept() {
        assert_eq!(repaired(b"{\"a\":1}\n{\"b\""), b"{\"a\":1}\n");
        assert_eq!(repaired(b"{\"a\":1}\n"), b"{\"a\":1}\n");
        assert_eq!(repaired(b"torn without any newline"), b"");
        // Whole JSON missing only its newline is kept, and ended.
        assert_eq!(repaired(b"{\"a\":1}\n{\"b\":2}"), b"{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(repaired(b"{\"only\":true}"), b"{\"only\":true}\n");
        // A torn line longer than one chunk, after whole lines.
        let mut long = b"{\"whole\":true}\n".to_vec();
        let keep = long.len();
        long.extend(std::iter::repeat_n(b'x', 3 * TAIL_CHUNK as usize + 17));
        assert_eq!(repaired(&long), &long[..keep]);
        // A newline exactly at a chunk boundary.
        let mut edge = vec![b'y'; TAIL_CHUNK as usize - 1];
        edge.push(b'\n');
        edge.extend(std::iter::repeat_n(b'z', TAIL_CHUNK as usize));
        assert_eq!(repaired(&edge), &edge[..TAIL_CHUNK as usize]);
    }
}
