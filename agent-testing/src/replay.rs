//! Record and replay: a run's model calls and tool calls written to a
//! cassette once, against the real provider and servers, then served from
//! it in tests and CI with no network and no servers.
//!
//! A cassette is a directory of JSON-lines files a person can read and
//! edit:
//! - `model.jsonl`: one line per model call ([`ModelCall`]): the request's
//!   hash, the request ([`RequestSummary`]: model, system prompt, messages,
//!   tools, tool choice, settings) and every item its stream yielded (the
//!   [`ModelEvent`](loopwright_types::ModelEvent)s, tagged by `type` as they
//!   serialise, and an `{"type": "error", "kind": ...}` item where it failed);
//! - `tools/<source>.jsonl`: per tool source (an MCP server, the coding
//!   tools), its listings and its calls ([`ToolLine`]): tool, input,
//!   progress reports and outcome.
//!
//! The hash is SHA-256 over the request summary's canonical JSON (keys
//! sorted), stable across Rust versions and platforms, and recomputed from
//! the summary when a cassette is read: edit a recorded request (a prompt
//! that changed on purpose) and it is found under its new hash. Left out of
//! the hash, as they never change an answer: [`VOLATILE_FIELDS`]
//! (`cancellation`, `prompt_caching`, the tools' `annotations`). What a
//! request carries is hashed as it is: a system prompt with today's date in
//! it (`${DATE}` in an agent file) differs tomorrow.
//!
//! A replay yields the recorded events at once (no pacing). A request the
//! cassette lacks is, in [`ReplayMode::Strict`], a model error naming the
//! nearest recorded request and its first difference in words
//! (`message 1 (user) text differs: recorded "What time is it?" vs "What
//! time is it now?"`); in [`ReplayMode::RecordMissing`] it goes to the live
//! model and is added to the cassette. Identical requests are served in
//! recorded order, the last one again once all were served.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use loopwright_core::Agent;
//! use loopwright_testing::replay::{Cassette, ReplayMode};
//! # use loopwright_testing::{ScriptedModel, ScriptedStep};
//! # let live: Arc<dyn loopwright_types::LanguageModel> = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("Paris")]));
//! let dir = tempfile::tempdir().unwrap();
//! // Once, against the real provider:
//! let cassette = Cassette::record(dir.path()).unwrap();
//! let agent = Agent::builder(cassette.model(live.clone())).build();
//! assert_eq!(agent.run("Capital of France?").await.unwrap().text, "Paris");
//! // In every test after that, offline:
//! let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
//! let agent = Agent::builder(cassette.model(live)).build();
//! assert_eq!(agent.run("Capital of France?").await.unwrap().text, "Paris");
//! # });
//! ```

mod diff;
mod events;
mod lines;
mod model;
mod request;
mod tools;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use diff::{DIFF_CONTEXT_CHARS, first_difference};
pub use events::{RecordedError, RecordedItem};
pub use lines::MAX_CASSETTE_FILE_BYTES;
pub use model::{MODEL_FILE, ModelCall, RecordingModel, ReplayMiss, ReplayModel};
pub use request::{HASH_PREFIX, RequestSettings, RequestSummary, ToolSummary, VOLATILE_FIELDS, hash_value};
pub use tools::{
    CallOutcome, RecordedKind, RecordedProgress, RecordedToolCall, RecordingToolSource, ReplayToolSource,
    TOOLS_DIR, ToolLine, ToolListing,
};

use loopwright_types::LanguageModel;
use loopwright_types::ToolSource;
use model::ModelLog;
use tools::{ToolLog, file_name};

/// What a replay does with a request (or a tool call) the cassette lacks.
///
/// ```
/// assert_eq!(loopwright_testing::replay::ReplayMode::default(), loopwright_testing::replay::ReplayMode::Strict);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReplayMode {
    /// An error naming the nearest recorded request and what differs.
    #[default]
    Strict,
    /// Ask the live model (or tool source) and add the call to the cassette.
    RecordMissing,
}

/// Why a cassette could not be used.
///
/// ```
/// use loopwright_testing::replay::{Cassette, CassetteError, ReplayMode};
/// let err = Cassette::replay("/no/such/cassette", ReplayMode::Strict).unwrap_err();
/// assert!(matches!(err, CassetteError::Missing { .. }));
/// assert_eq!(err.to_string(), "cassette /no/such/cassette: no such directory (record one with record mode first)");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// A strict replay's directory does not exist.
    #[error("cassette {}: no such directory (record one with record mode first)", path.display())]
    Missing {
        /// The directory.
        path: PathBuf,
    },
    /// A line is not a cassette entry.
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read, written or created.
    #[error("cassette {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl CassetteError {
    pub(crate) fn io(path: &Path, error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(error),
        }
    }
}

/// A cassette directory, open for recording or for replay. Cheap to clone;
/// every model and tool source wrapped with the same cassette shares its
/// files.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let cassette = loopwright_testing::replay::Cassette::record(dir.path()).unwrap();
/// assert!(!cassette.is_replay());
/// assert_eq!(cassette.dir(), dir.path());
/// ```
#[derive(Clone)]
pub struct Cassette {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// `None` when recording.
    replay: Option<ReplayMode>,
    model: Arc<ModelLog>,
    tools: Mutex<HashMap<String, Arc<ToolLog>>>,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cassette")
            .field("dir", &self.inner.dir)
            .field("replay", &self.inner.replay)
            .finish()
    }
}

impl Cassette {
    /// A new recording in `dir` (created when missing). A recording is a
    /// fresh take: the cassette files already there (`model.jsonl`,
    /// `tools/*.jsonl`) are replaced; other files are left alone. To add to
    /// a cassette, replay it in [`ReplayMode::RecordMissing`].
    pub fn record(dir: impl AsRef<Path>) -> Result<Self, CassetteError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|e| CassetteError::io(&dir, e))?;
        remove_if_there(&dir.join(MODEL_FILE))?;
        for file in tool_files(&dir)? {
            remove_if_there(&file)?;
        }
        Ok(Self::with(
            dir.clone(),
            None,
            ModelLog::empty(dir.join(MODEL_FILE)),
            HashMap::new(),
        ))
    }

    /// The cassette in `dir`, for replay. Every file is read now: a
    /// malformed line is an error naming its file and line. In
    /// [`ReplayMode::Strict`] the directory must exist; in
    /// [`ReplayMode::RecordMissing`] a missing one is created as it records.
    pub fn replay(dir: impl AsRef<Path>, mode: ReplayMode) -> Result<Self, CassetteError> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() && mode == ReplayMode::Strict {
            return Err(CassetteError::Missing { path: dir });
        }
        let model = ModelLog::load(dir.join(MODEL_FILE))?;
        let mut tools = HashMap::new();
        for file in tool_files(&dir)? {
            let log = ToolLog::load(file)?;
            tools.insert(log.source().to_owned(), Arc::new(log));
        }
        Ok(Self::with(dir, Some(mode), model, tools))
    }

    fn with(
        dir: PathBuf,
        replay: Option<ReplayMode>,
        model: ModelLog,
        tools: HashMap<String, Arc<ToolLog>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir,
                replay,
                model: Arc::new(model),
                tools: Mutex::new(tools),
            }),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Whether this cassette replays (else it records).
    pub fn is_replay(&self) -> bool {
        self.inner.replay.is_some()
    }

    /// The replay mode, `None` when recording.
    ///
    /// ```
    /// use loopwright_testing::replay::{Cassette, ReplayMode};
    /// let dir = tempfile::tempdir().unwrap();
    /// let c = Cassette::replay(dir.path(), ReplayMode::RecordMissing).unwrap();
    /// assert_eq!(c.replay_mode(), Some(ReplayMode::RecordMissing));
    /// ```
    pub fn replay_mode(&self) -> Option<ReplayMode> {
        self.inner.replay
    }

    /// `live` as this cassette uses it: a [`RecordingModel`] when
    /// recording, a [`ReplayModel`] when replaying.
    pub fn model(&self, live: Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> {
        if self.is_replay() {
            Arc::new(ReplayModel::new(live, self))
        } else {
            Arc::new(RecordingModel::new(live, self))
        }
    }

    /// `live` as this cassette uses it: a [`RecordingToolSource`] when
    /// recording, a [`ReplayToolSource`] when replaying (calling `live` only
    /// for what is missing, in [`ReplayMode::RecordMissing`]).
    pub fn tool_source(&self, live: Arc<dyn ToolSource>) -> Arc<dyn ToolSource> {
        if self.is_replay() {
            let name = live.name().to_owned();
            Arc::new(ReplayToolSource::new(&name, self, Some(live)))
        } else {
            Arc::new(RecordingToolSource::new(live, self))
        }
    }

    /// The tool source `name` served from the cassette alone (no live
    /// source: nothing is started or connected); `None` when the cassette
    /// has no recording of it, or records.
    pub fn replayed_source(&self, name: &str) -> Option<Arc<dyn ToolSource>> {
        let known = self.inner.tools.lock().ok()?.contains_key(name);
        (self.is_replay() && known)
            .then(|| Arc::new(ReplayToolSource::new(name, self, None)) as Arc<dyn ToolSource>)
    }

    /// The names of the tool sources recorded, sorted.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let c = loopwright_testing::replay::Cassette::replay(dir.path(), Default::default()).unwrap();
    /// assert!(c.recorded_sources().is_empty());
    /// ```
    pub fn recorded_sources(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .tools
            .lock()
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    pub(crate) fn model_log(&self) -> Arc<ModelLog> {
        self.inner.model.clone()
    }

    /// The log of source `name` (created empty when new).
    pub(crate) fn tool_log(&self, name: &str) -> Arc<ToolLog> {
        let path = self.inner.dir.join(TOOLS_DIR).join(file_name(name));
        match self.inner.tools.lock() {
            Ok(mut tools) => tools
                .entry(name.to_owned())
                .or_insert_with(|| Arc::new(ToolLog::empty(name, path)))
                .clone(),
            Err(_) => Arc::new(ToolLog::empty(name, path)),
        }
    }
}

fn remove_if_there(path: &Path) -> Result<(), CassetteError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CassetteError::io(path, e)),
        _ => Ok(()),
    }
}

/// The `tools/*.jsonl` files of a cassette directory, sorted.
fn tool_files(dir: &Path) -> Result<Vec<PathBuf>, CassetteError> {
    let tools = dir.join(TOOLS_DIR);
    let entries = match std::fs::read_dir(&tools) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CassetteError::io(&tools, e)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}
