//! [`RecordingToolSource`] and [`ReplayToolSource`]: any tool source (an
//! MCP server, the coding tools, the application's own) written to a
//! cassette and served from it, so a test runs without the servers it was
//! recorded with.
//!
//! Invariants: a recording passes listings and results through unchanged
//! and writes one line per listing that differs from the one before and one
//! per call once it ended (a call dropped before its end, by a timeout or a
//! cancelled run, is written as `unfinished`); a replay never touches the
//! live source for what it has recorded; calls with the same tool and input
//! are served in recorded order, the last one again once all were served.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lines::{Appender, read};
use super::request::hash_value;
use super::{CassetteError, ReplayMode};
use loopwright_types::tool::ToolProgress;
use loopwright_types::tool::{ProgressReporter, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use loopwright_types::{SourceKind, ToolSource, ToolSourceError};

/// The folder of a cassette holding one file per tool source.
pub const TOOLS_DIR: &str = "tools";

/// One line of a tool source's file.
///
/// ```
/// let line = r#"{"type":"call","source":"time","tool":"now","input":{},"outcome":{"error":"no clock"}}"#;
/// let parsed: loopwright_testing::replay::ToolLine = serde_json::from_str(line).unwrap();
/// assert!(matches!(parsed, loopwright_testing::replay::ToolLine::Call(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolLine {
    /// The tools the source listed.
    List(ToolListing),
    /// One call and how it ended.
    Call(RecordedToolCall),
}

/// A source's tool listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolListing {
    /// The source's name.
    pub source: String,
    /// `native` or `external`.
    pub kind: RecordedKind,
    /// The source's instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The tools, under their own names.
    pub tools: Vec<ToolDefinition>,
}

/// [`SourceKind`] in a cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RecordedKind {
    /// [`SourceKind::Native`].
    Native,
    /// [`SourceKind::External`].
    External,
}

impl From<SourceKind> for RecordedKind {
    fn from(kind: SourceKind) -> Self {
        match kind {
            SourceKind::Native => Self::Native,
            _ => Self::External,
        }
    }
}

impl From<RecordedKind> for SourceKind {
    fn from(kind: RecordedKind) -> Self {
        match kind {
            RecordedKind::Native => Self::Native,
            RecordedKind::External => Self::External,
        }
    }
}

/// A recorded tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedToolCall {
    /// The source's name.
    pub source: String,
    /// The tool's own name.
    pub tool: String,
    /// The arguments.
    pub input: Value,
    /// The progress the tool reported, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progress: Vec<RecordedProgress>,
    /// How the call ended.
    pub outcome: CallOutcome,
}

/// One progress report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedProgress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// A note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a recorded call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool's output.
    Output(ToolOutput),
    /// The tool failed with this error (as the loop shows it).
    Error(String),
    /// The tool was cancelled.
    Cancelled,
    /// The call was dropped before it ended (a timeout, a cancelled run);
    /// replayed as a call that waits for its cancellation.
    Unfinished,
}

/// The key a call is found by: its tool and canonical input.
fn call_key(tool: &str, input: &Value) -> String {
    hash_value(&serde_json::json!({"tool": tool, "input": input}))
}

/// A tool source's file: its listings and calls, and where new ones go.
#[derive(Debug)]
pub(crate) struct ToolLog {
    source: String,
    appender: Appender,
    state: Mutex<ToolState>,
}

#[derive(Debug, Default)]
struct ToolState {
    listings: Vec<ToolListing>,
    listings_served: usize,
    calls: Vec<(usize, RecordedToolCall)>,
    by_key: HashMap<String, Vec<usize>>,
    served: HashMap<String, usize>,
}

impl ToolState {
    fn push_call(&mut self, line: usize, call: RecordedToolCall) {
        self.by_key
            .entry(call_key(&call.tool, &call.input))
            .or_default()
            .push(self.calls.len());
        self.calls.push((line, call));
    }
}

/// The file name of a source: its name with every character other than
/// letters, digits, `-`, `_` and `.` replaced by `_`.
pub(crate) fn file_name(source: &str) -> String {
    let safe: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.jsonl")
}

impl ToolLog {
    pub(crate) fn empty(source: &str, path: PathBuf) -> Self {
        Self {
            source: source.to_owned(),
            appender: Appender::new(path),
            state: Mutex::new(ToolState::default()),
        }
    }

    /// The file at `path`; the source's name from its lines (else from the
    /// file name).
    pub(crate) fn load(path: PathBuf) -> Result<Self, CassetteError> {
        let lines = read::<ToolLine>(&path)?;
        let mut state = ToolState::default();
        let mut source = None;
        for (line, entry) in lines {
            match entry {
                ToolLine::List(listing) => {
                    source.get_or_insert_with(|| listing.source.clone());
                    state.listings.push(listing);
                }
                ToolLine::Call(call) => {
                    source.get_or_insert_with(|| call.source.clone());
                    state.push_call(line, call);
                }
            }
        }
        let source = source.unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        Ok(Self {
            source,
            appender: Appender::new(path),
            state: Mutex::new(state),
        })
    }

    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    fn path(&self) -> &Path {
        self.appender.path()
    }

    fn write(&self, line: &ToolLine) -> Option<usize> {
        match self.appender.append(line) {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::warn!(error = %e, "the tool call was not recorded");
                None
            }
        }
    }

    /// Record a listing unless it equals the last one.
    fn record_listing(&self, listing: ToolListing) {
        let Ok(mut state) = self.state.lock() else { return };
        if state.listings.last() == Some(&listing) {
            return;
        }
        state.listings.push(listing.clone());
        drop(state);
        self.write(&ToolLine::List(listing));
    }

    fn record_call(&self, call: RecordedToolCall) {
        if let Some(line) = self.write(&ToolLine::Call(call.clone()))
            && let Ok(mut state) = self.state.lock()
        {
            state.push_call(line, call);
        }
    }

    /// The next listing (the last one again once all were served).
    fn next_listing(&self) -> Option<ToolListing> {
        let mut state = self.state.lock().ok()?;
        let n = state.listings.len();
        if n == 0 {
            return None;
        }
        let index = state.listings_served.min(n - 1);
        state.listings_served += 1;
        Some(state.listings[index].clone())
    }

    fn first_listing(&self) -> Option<ToolListing> {
        self.state.lock().ok()?.listings.first().cloned()
    }

    /// The recorded call for (tool, input), or why there is none.
    fn lookup(&self, tool: &str, input: &Value) -> Result<RecordedToolCall, String> {
        let key = call_key(tool, input);
        let Ok(mut state) = self.state.lock() else {
            return Err("the cassette's lock is poisoned".into());
        };
        if let Some(indices) = state.by_key.get(&key).cloned() {
            let served = state.served.entry(key).or_insert(0);
            let index = indices[(*served).min(indices.len() - 1)];
            *served += 1;
            return Ok(state.calls[index].1.clone());
        }
        let nearest = state
            .calls
            .iter()
            .filter(|(_, c)| c.tool == tool)
            .max_by_key(|(_, c)| shared_keys(&c.input, input))
            .map(|(line, c)| format!("nearest is line {line}: recorded input {} vs {input}", c.input))
            .unwrap_or_else(|| format!("it has no recorded call of {tool}"));
        Err(format!(
            "the call of {tool} with {input} is not in the cassette {}; {nearest}",
            self.path().display()
        ))
    }
}

/// How many top-level keys two inputs share with equal values.
fn shared_keys(a: &Value, b: &Value) -> usize {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.iter().filter(|(k, v)| y.get(*k) == Some(v)).count(),
        _ => usize::from(a == b),
    }
}

/// A tool source whose listings and calls are written to a cassette.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use loopwright_types::{StaticToolSource, ToolContext, ToolSource, tool_fn};
/// use loopwright_testing::replay::{Cassette, RecordingToolSource};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
/// let live = StaticToolSource::native("app").with_tool(tool_fn("ping", "Pong.", |_: NoArgs| async { Ok("pong") }));
/// let dir = tempfile::tempdir().unwrap();
/// let source = RecordingToolSource::new(Arc::new(live), &Cassette::record(dir.path()).unwrap());
/// let tools = source.tools().await.unwrap();
/// let out = tools[0].call(serde_json::json!({}), ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out.as_text(), "pong");
/// let file = std::fs::read_to_string(dir.path().join("tools/app.jsonl")).unwrap();
/// assert_eq!(file.lines().count(), 2); // the listing and the call
/// # });
/// ```
pub struct RecordingToolSource {
    inner: Arc<dyn ToolSource>,
    log: Arc<ToolLog>,
}

impl RecordingToolSource {
    /// Record `inner` into `cassette` (under its name).
    pub fn new(inner: Arc<dyn ToolSource>, cassette: &super::Cassette) -> Self {
        let log = cassette.tool_log(inner.name());
        Self { inner, log }
    }
}

fn listing(source: &dyn ToolSource, tools: &[Arc<dyn Tool>]) -> ToolListing {
    ToolListing {
        source: source.name().to_owned(),
        kind: source.kind().into(),
        instructions: source.instructions(),
        tools: tools.iter().map(|t| t.definition().clone()).collect(),
    }
}

#[async_trait]
impl ToolSource for RecordingToolSource {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn kind(&self) -> SourceKind {
        self.inner.kind()
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        let tools = self.inner.tools().await?;
        self.log.record_listing(listing(&*self.inner, &tools));
        Ok(tools
            .into_iter()
            .map(|tool| {
                Arc::new(RecordingTool {
                    inner: tool,
                    log: self.log.clone(),
                }) as Arc<dyn Tool>
            })
            .collect())
    }

    fn instructions(&self) -> Option<String> {
        self.inner.instructions()
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
}

/// A tool whose calls are recorded.
struct RecordingTool {
    inner: Arc<dyn Tool>,
    log: Arc<ToolLog>,
}

/// A call being recorded; written as `unfinished` when dropped unended.
struct PendingCall {
    call: Option<RecordedToolCall>,
    log: Arc<ToolLog>,
}

impl PendingCall {
    fn finish(mut self, progress: Vec<RecordedProgress>, outcome: CallOutcome) {
        if let Some(mut call) = self.call.take() {
            call.progress = progress;
            call.outcome = outcome;
            self.log.record_call(call);
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.log.record_call(call);
        }
    }
}

fn recorded(p: ToolProgress) -> RecordedProgress {
    RecordedProgress {
        progress: p.progress,
        total: p.total,
        message: p.message,
    }
}

/// Call `tool`, forwarding its progress to `ctx`'s reporter, and record it.
async fn call_recorded(
    tool: &dyn Tool,
    log: &Arc<ToolLog>,
    input: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let pending = PendingCall {
        call: Some(RecordedToolCall {
            source: log.source().to_owned(),
            tool: tool.definition().name.clone(),
            input: input.clone(),
            progress: Vec::new(),
            outcome: CallOutcome::Unfinished,
        }),
        log: log.clone(),
    };
    let outer = ctx.progress().clone();
    let (reporter, mut reports) = ProgressReporter::channel(ctx.call_id().to_owned());
    let call = tool.call(input, ctx.with_progress(reporter));
    tokio::pin!(call);
    let mut progress = Vec::new();
    let mut forward = |p: ToolProgress| {
        outer.report(p.progress, p.total, p.message.clone());
        progress.push(recorded(p));
    };
    let result = loop {
        tokio::select! {
            result = &mut call => break result,
            Some(p) = reports.recv() => forward(p),
        }
    };
    while let Some(p) = reports.try_recv() {
        forward(p);
    }
    let outcome = match &result {
        Ok(output) => CallOutcome::Output(output.clone()),
        Err(ToolError::Cancelled) => CallOutcome::Cancelled,
        Err(e) => CallOutcome::Error(e.to_string()),
    };
    pending.finish(progress, outcome);
    result
}

#[async_trait]
impl Tool for RecordingTool {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        call_recorded(&*self.inner, &self.log, input, ctx).await
    }

    fn timeout_for(&self, input: &Value) -> Option<std::time::Duration> {
        self.inner.timeout_for(input)
    }
}

/// A tool source served from a cassette: its recorded listing, and each
/// call's recorded result (progress reports included). A call that is not
/// recorded is, in [`ReplayMode::Strict`], an error result naming the
/// nearest recorded call of that tool, and in [`ReplayMode::RecordMissing`]
/// goes to the live source (when there is one) and is recorded.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use loopwright_types::{StaticToolSource, ToolContext, ToolSource, tool_fn};
/// use loopwright_testing::replay::{Cassette, RecordingToolSource, ReplayMode};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Text { text: String }
/// let live = StaticToolSource::native("app").with_tool(tool_fn("echo", "Echo.", |t: Text| async move { Ok(t.text) }));
/// let dir = tempfile::tempdir().unwrap();
/// let recording = RecordingToolSource::new(Arc::new(live), &Cassette::record(dir.path()).unwrap());
/// let echo = recording.tools().await.unwrap().remove(0);
/// echo.call(serde_json::json!({"text": "hi"}), ToolContext::new("c1")).await.unwrap();
///
/// let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
/// let replayed = cassette.replayed_source("app").unwrap();
/// let echo = replayed.tools().await.unwrap().remove(0);
/// let out = echo.call(serde_json::json!({"text": "hi"}), ToolContext::new("c2")).await.unwrap();
/// assert_eq!(out.as_text(), "hi");
/// let miss = echo.call(serde_json::json!({"text": "ho"}), ToolContext::new("c3")).await.unwrap_err();
/// assert!(miss.to_string().contains(r#"recorded input {"text":"hi"} vs {"text":"ho"}"#), "{miss}");
/// # });
/// ```
pub struct ReplayToolSource {
    name: String,
    log: Arc<ToolLog>,
    live: Option<Arc<dyn ToolSource>>,
    mode: ReplayMode,
}

impl ReplayToolSource {
    /// Serve the source `name` of `cassette`; `live` answers what is not
    /// recorded in [`ReplayMode::RecordMissing`] (and is never called in
    /// [`ReplayMode::Strict`]).
    pub fn new(name: &str, cassette: &super::Cassette, live: Option<Arc<dyn ToolSource>>) -> Self {
        Self {
            name: name.to_owned(),
            log: cassette.tool_log(name),
            live,
            mode: cassette.replay_mode().unwrap_or(ReplayMode::Strict),
        }
    }

    fn record_missing(&self) -> Option<&Arc<dyn ToolSource>> {
        match self.mode {
            ReplayMode::RecordMissing => self.live.as_ref(),
            ReplayMode::Strict => None,
        }
    }
}

#[async_trait]
impl ToolSource for ReplayToolSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        match (self.log.first_listing(), &self.live) {
            (Some(listing), _) => listing.kind.into(),
            (None, Some(live)) => live.kind(),
            (None, None) => SourceKind::External,
        }
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        let listing = match (self.log.next_listing(), self.record_missing()) {
            (Some(listing), _) => listing,
            (None, Some(live)) => {
                let tools = live.tools().await?;
                let listing = listing(&**live, &tools);
                self.log.record_listing(listing.clone());
                listing
            }
            (None, None) => {
                return Err(ToolSourceError::new(
                    &self.name,
                    format!(
                        "the cassette {} has no tool listing of it",
                        self.log.path().display()
                    ),
                ));
            }
        };
        Ok(listing
            .tools
            .into_iter()
            .map(|definition| {
                Arc::new(ReplayTool {
                    definition,
                    log: self.log.clone(),
                    live: self.record_missing().cloned(),
                }) as Arc<dyn Tool>
            })
            .collect())
    }

    fn instructions(&self) -> Option<String> {
        self.log.first_listing().and_then(|l| l.instructions)
    }
}

/// A tool served from a cassette.
struct ReplayTool {
    definition: ToolDefinition,
    log: Arc<ToolLog>,
    /// The live source, for calls not recorded (record-missing mode only).
    live: Option<Arc<dyn ToolSource>>,
}

#[async_trait]
impl Tool for ReplayTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = &self.definition.name;
        match self.log.lookup(name, &input) {
            Ok(call) => {
                for p in call.progress {
                    ctx.progress().report(p.progress, p.total, p.message);
                }
                match call.outcome {
                    CallOutcome::Output(output) => Ok(output),
                    CallOutcome::Error(message) => Err(ToolError::Execution(message)),
                    CallOutcome::Cancelled => Err(ToolError::Cancelled),
                    CallOutcome::Unfinished => {
                        ctx.cancellation().cancelled().await;
                        Err(ToolError::Cancelled)
                    }
                }
            }
            Err(miss) => {
                let Some(live) = &self.live else {
                    return Err(ToolError::Execution(miss));
                };
                let tools = live
                    .tools()
                    .await
                    .map_err(|e| ToolError::Execution(e.to_string()))?;
                let Some(tool) = tools.iter().find(|t| &t.definition().name == name) else {
                    return Err(ToolError::Execution(format!(
                        "{miss}; the live source has no tool {name}"
                    )));
                };
                call_recorded(&**tool, &self.log, input, ctx).await
            }
        }
    }
}
