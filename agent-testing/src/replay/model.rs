//! [`RecordingModel`] and [`ReplayModel`]: a model's calls written to a
//! cassette and served from it.
//!
//! Invariants: a recording passes every event through unchanged and in
//! order, and writes its line once the stream ended (finish, error, end of
//! stream, or the consumer dropping it), so a cassette line always holds a
//! whole call; a replay yields exactly the recorded items, then ends; calls
//! with the same request hash are served in recorded order, the last one
//! again once all were served.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::diff::{agreement, first_difference};
use super::events::RecordedItem;
use super::lines::{Appender, read};
use super::request::RequestSummary;
use super::{CassetteError, ReplayMode};
use loopwright_types::ModelCapabilities;
use loopwright_types::fallback::model_label;
use loopwright_types::model_error::ModelError;
use loopwright_types::{LanguageModel, ModelRequest, ModelStream};

/// The model calls file of a cassette directory.
pub const MODEL_FILE: &str = "model.jsonl";

/// One line of [`MODEL_FILE`]: a request and what its stream yielded.
///
/// ```
/// use loopwright_types::{Message, ModelRequest};
/// use loopwright_testing::replay::{ModelCall, RequestSummary};
/// let request = RequestSummary::of("local/m", &ModelRequest::new(vec![Message::user("hi")]));
/// let call = ModelCall::new(request, vec![]);
/// assert_eq!(call.hash, call.request.hash());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelCall {
    /// The request's hash (recomputed from `request` when read, so an
    /// edited request is found by its new hash).
    pub hash: String,
    /// The request.
    pub request: RequestSummary,
    /// What the stream yielded, in order.
    pub events: Vec<RecordedItem>,
    /// What the model could do (absent when nothing beyond text and
    /// tools): an offline replay ([`ReplayModel::offline`]) claims the same.
    #[serde(default, skip_serializing_if = "is_default")]
    pub capabilities: ModelCapabilities,
}

fn is_default(c: &ModelCapabilities) -> bool {
    *c == ModelCapabilities::default()
}

impl ModelCall {
    /// A call with its hash.
    pub fn new(request: RequestSummary, events: Vec<RecordedItem>) -> Self {
        Self {
            hash: request.hash(),
            request,
            events,
            capabilities: ModelCapabilities::default(),
        }
    }

    /// The same call, made to a model with these capabilities.
    pub fn with_capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
}

/// The recorded calls of a cassette and the file new ones go to.
#[derive(Debug)]
pub(crate) struct ModelLog {
    appender: Appender,
    state: Mutex<Calls>,
}

#[derive(Debug, Default)]
struct Calls {
    /// (line, call), in file order.
    calls: Vec<(usize, ModelCall)>,
    /// Hash -> indices in `calls`.
    by_hash: HashMap<String, Vec<usize>>,
    /// Hash -> calls served so far.
    served: HashMap<String, usize>,
}

impl Calls {
    fn push(&mut self, line: usize, call: ModelCall) {
        self.by_hash
            .entry(call.hash.clone())
            .or_default()
            .push(self.calls.len());
        self.calls.push((line, call));
    }
}

/// What a replay found for a request.
enum Lookup {
    Hit(Vec<RecordedItem>),
    Miss(ReplayMiss),
}

impl ModelLog {
    /// An empty log writing to `path`.
    pub(crate) fn empty(path: PathBuf) -> Self {
        Self {
            appender: Appender::new(path),
            state: Mutex::new(Calls::default()),
        }
    }

    /// The calls recorded in `path` (none when it does not exist).
    pub(crate) fn load(path: PathBuf) -> Result<Self, CassetteError> {
        let log = Self::empty(path.clone());
        if path.exists() {
            let mut state = Calls::default();
            for (line, mut call) in read::<ModelCall>(&path)? {
                call.hash = call.request.hash();
                state.push(line, call);
            }
            if let Ok(mut s) = log.state.lock() {
                *s = state;
            }
        }
        Ok(log)
    }

    pub(crate) fn path(&self) -> &Path {
        self.appender.path()
    }

    /// Append a call to the file and to the calls served.
    fn record(&self, call: ModelCall) {
        match self.appender.append(&call) {
            Ok(line) => {
                if let Ok(mut state) = self.state.lock() {
                    state.push(line, call);
                }
            }
            Err(e) => tracing::warn!(error = %e, "the model call was not recorded"),
        }
    }

    /// The capabilities recorded with the first call of `model`.
    fn capabilities_of(&self, model: &str) -> Option<ModelCapabilities> {
        let state = self.state.lock().ok()?;
        state
            .calls
            .iter()
            .find(|(_, c)| c.request.model == model)
            .map(|(_, c)| c.capabilities)
    }

    /// The recorded stream for `request`, or what is nearest.
    fn lookup(&self, request: &RequestSummary, hash: &str) -> Lookup {
        let Ok(mut state) = self.state.lock() else {
            return Lookup::Miss(self.miss(hash, None));
        };
        if let Some(indices) = state.by_hash.get(hash).cloned() {
            let served = state.served.entry(hash.to_owned()).or_insert(0);
            let index = indices[(*served).min(indices.len() - 1)];
            *served += 1;
            return Lookup::Hit(state.calls[index].1.events.clone());
        }
        let nearest = state
            .calls
            .iter()
            .max_by_key(|(_, c)| agreement(&c.request, request))
            .map(|(line, c)| {
                let what = first_difference(&c.request, request).unwrap_or_default();
                (*line, what)
            });
        Lookup::Miss(self.miss(hash, nearest))
    }

    fn miss(&self, hash: &str, nearest: Option<(usize, String)>) -> ReplayMiss {
        ReplayMiss {
            hash: hash.to_owned(),
            path: self.path().to_path_buf(),
            nearest_line: nearest.as_ref().map(|(l, _)| *l),
            difference: nearest.map(|(_, d)| d),
        }
    }
}

/// A request the cassette has no recording of (the source of the
/// [`ModelError::InvalidRequest`] a strict replay answers it with).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use loopwright_types::{LanguageModel, Message, ModelRequest};
/// use loopwright_testing::replay::{Cassette, ReplayMiss, ReplayMode, ReplayModel};
/// let dir = tempfile::tempdir().unwrap();
/// let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
/// let model = ReplayModel::offline(&cassette, "local", "m");
/// let Err(error) = model.stream(ModelRequest::new(vec![Message::user("hi")])).await else { panic!() };
/// let miss = ReplayMiss::of(&error).unwrap();
/// assert_eq!(miss.nearest_line, None);
/// assert!(error.to_string().ends_with("model.jsonl; it has no recorded model calls"), "{error}");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("request {hash} is not in the cassette {}; {}", path.display(), nearest(*nearest_line, difference.as_deref()))]
#[non_exhaustive]
pub struct ReplayMiss {
    /// The request's hash.
    pub hash: String,
    /// The cassette's model file.
    pub path: PathBuf,
    /// The line of the nearest recorded request, if any was recorded.
    pub nearest_line: Option<usize>,
    /// What differs from it, in words.
    pub difference: Option<String>,
}

fn nearest(line: Option<usize>, difference: Option<&str>) -> String {
    match (line, difference) {
        (Some(line), Some(d)) => format!("nearest is line {line}: {d}"),
        _ => "it has no recorded model calls".to_owned(),
    }
}

impl ReplayMiss {
    /// The miss a strict replay's error carries, if it is one.
    pub fn of(error: &ModelError) -> Option<&ReplayMiss> {
        match error {
            ModelError::InvalidRequest {
                source: Some(source), ..
            } => source.downcast_ref::<ReplayMiss>(),
            _ => None,
        }
    }
}

impl From<ReplayMiss> for ModelError {
    fn from(miss: ReplayMiss) -> Self {
        ModelError::InvalidRequest {
            status: None,
            message: miss.to_string(),
            source: Some(Arc::new(miss)),
        }
    }
}

/// A model whose calls are written to a cassette: each request's summary
/// and hash with every event its stream yielded (see
/// [`Cassette`](super::Cassette) for the format). Events pass through
/// unchanged.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use loopwright_core::Agent;
/// use loopwright_testing::replay::{Cassette, RecordingModel};
/// # use loopwright_testing::{ScriptedModel, ScriptedStep};
/// # let live = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("4")]));
/// let dir = tempfile::tempdir().unwrap();
/// let cassette = Cassette::record(dir.path()).unwrap();
/// let model = Arc::new(RecordingModel::new(live, &cassette));
/// let answer = Agent::builder(model).build().run("2 + 2?").await.unwrap();
/// assert_eq!(answer.text, "4");
/// assert_eq!(std::fs::read_to_string(dir.path().join("model.jsonl")).unwrap().lines().count(), 1);
/// # });
/// ```
pub struct RecordingModel {
    inner: Arc<dyn LanguageModel>,
    log: Arc<ModelLog>,
}

impl RecordingModel {
    /// Record `inner`'s calls into `cassette`.
    pub fn new(inner: Arc<dyn LanguageModel>, cassette: &super::Cassette) -> Self {
        Self {
            inner,
            log: cassette.model_log(),
        }
    }
}

#[async_trait]
impl LanguageModel for RecordingModel {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn capabilities(&self) -> ModelCapabilities {
        self.inner.capabilities()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        record_stream(&*self.inner, &self.log, request).await
    }
}

/// Call `model` and record the call into `log`.
async fn record_stream(
    model: &dyn LanguageModel,
    log: &Arc<ModelLog>,
    request: ModelRequest,
) -> Result<ModelStream, ModelError> {
    let summary = RequestSummary::of(model_label(model), &request);
    let capabilities = model.capabilities();
    match model.stream(request).await {
        Ok(stream) => Ok(Recording {
            inner: stream,
            pending: Some(Pending {
                summary,
                capabilities,
                items: Vec::new(),
                log: log.clone(),
            }),
        }
        .boxed()),
        Err(e) => {
            let call = ModelCall::new(summary, vec![RecordedItem::from(Err(e.clone()))]);
            log.record(call.with_capabilities(capabilities));
            Err(e)
        }
    }
}

/// A call being recorded.
struct Pending {
    summary: RequestSummary,
    capabilities: ModelCapabilities,
    items: Vec<RecordedItem>,
    log: Arc<ModelLog>,
}

impl Pending {
    fn write(self) {
        let call = ModelCall::new(self.summary, self.items).with_capabilities(self.capabilities);
        self.log.record(call);
    }
}

/// A stream passing its items through and recording them.
struct Recording {
    inner: ModelStream,
    /// Taken once the line is written.
    pending: Option<Pending>,
}

impl Stream for Recording {
    type Item = Result<loopwright_types::ModelEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(item) = &next {
            match item {
                Some(item) => {
                    let recorded = RecordedItem::from(item.clone());
                    let ends = recorded.ends_stream();
                    if let Some(p) = self.pending.as_mut() {
                        p.items.push(recorded);
                    }
                    if ends && let Some(p) = self.pending.take() {
                        p.write();
                    }
                }
                None => {
                    if let Some(p) = self.pending.take() {
                        p.write();
                    }
                }
            }
        }
        next
    }
}

impl Drop for Recording {
    /// A stream dropped before its end is recorded as far as it went.
    fn drop(&mut self) {
        if let Some(p) = self.pending.take() {
            p.write();
        }
    }
}

/// A model served from a cassette: a request whose hash is recorded gets
/// the recorded stream (no network); one that is not is, in
/// [`ReplayMode::Strict`], an [`ModelError::InvalidRequest`] whose message
/// (and [`ReplayMiss`] source) names the nearest recorded request and what
/// differs, and in [`ReplayMode::RecordMissing`] goes to the live model and
/// is recorded.
///
/// The live model gives the replay its name and capabilities (the agent
/// asks what a model can do before it builds a request); in strict mode it
/// is never called.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use loopwright_core::{Agent, ExitReason};
/// use loopwright_testing::replay::{Cassette, RecordingModel, ReplayMode, ReplayModel};
/// # use loopwright_testing::{ScriptedModel, ScriptedStep};
/// # let live = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("4")]));
/// let dir = tempfile::tempdir().unwrap();
/// let recording = Arc::new(RecordingModel::new(live.clone(), &Cassette::record(dir.path()).unwrap()));
/// let _ = Agent::builder(recording).build().run("2 + 2?").await.unwrap();
///
/// let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
/// let agent = Agent::builder(Arc::new(ReplayModel::new(live, &cassette))).build();
/// assert_eq!(agent.run("2 + 2?").await.unwrap().text, "4");
/// let miss = agent.run("2 + 3?").await.unwrap_err();
/// assert!(miss.to_string().contains(r#"message 1 (user) text differs: recorded "2 + 2?" vs "2 + 3?""#), "{miss}");
/// # });
/// ```
pub struct ReplayModel {
    live: Arc<dyn LanguageModel>,
    log: Arc<ModelLog>,
    mode: ReplayMode,
}

impl ReplayModel {
    /// Serve `cassette`'s calls, with `live`'s name and capabilities (and,
    /// in [`ReplayMode::RecordMissing`], its answers to what is missing).
    pub fn new(live: Arc<dyn LanguageModel>, cassette: &super::Cassette) -> Self {
        Self {
            live,
            log: cassette.model_log(),
            mode: cassette.replay_mode().unwrap_or(ReplayMode::Strict),
        }
    }

    /// Serve `cassette`'s calls as the model `provider/model_id`, without
    /// any live model: no provider is built, no key is needed, and a miss
    /// is always an error. It claims the capabilities recorded with that
    /// model's calls (the agent shapes its requests by them).
    ///
    /// ```
    /// use loopwright_types::LanguageModel;
    /// use loopwright_testing::replay::{Cassette, ReplayMode, ReplayModel};
    /// let dir = tempfile::tempdir().unwrap();
    /// let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    /// let model = ReplayModel::offline(&cassette, "openai", "gpt-4.1");
    /// assert_eq!(model.model_id(), "gpt-4.1");
    /// ```
    pub fn offline(
        cassette: &super::Cassette,
        provider: impl Into<String>,
        model_id: impl Into<String>,
    ) -> Self {
        let (provider, model) = (provider.into(), model_id.into());
        let log = cassette.model_log();
        let capabilities = log
            .capabilities_of(&format!("{provider}/{model}"))
            .unwrap_or_default();
        let stand_in = Offline {
            provider,
            model,
            capabilities,
        };
        Self {
            live: Arc::new(stand_in),
            log,
            mode: ReplayMode::Strict,
        }
    }
}

#[async_trait]
impl LanguageModel for ReplayModel {
    fn provider(&self) -> &str {
        self.live.provider()
    }

    fn model_id(&self) -> &str {
        self.live.model_id()
    }

    fn capabilities(&self) -> ModelCapabilities {
        self.live.capabilities()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let summary = RequestSummary::of(model_label(&*self.live), &request);
        let hash = summary.hash();
        match self.log.lookup(&summary, &hash) {
            Lookup::Hit(items) => replay(items),
            Lookup::Miss(miss) => match self.mode {
                ReplayMode::RecordMissing => record_stream(&*self.live, &self.log, request).await,
                ReplayMode::Strict => Err(miss.into()),
            },
        }
    }
}

/// The recorded items as a stream: an error alone is the call's own
/// failure (returned before any event).
fn replay(items: Vec<RecordedItem>) -> Result<ModelStream, ModelError> {
    if let [RecordedItem::Error(e)] = items.as_slice() {
        return Err(e.clone().into_error());
    }
    Ok(futures::stream::iter(items.into_iter().map(RecordedItem::into_result)).boxed())
}

/// The stand-in of [`ReplayModel::offline`]: a name and capabilities.
struct Offline {
    provider: String,
    model: String,
    capabilities: ModelCapabilities,
}

#[async_trait]
impl LanguageModel for Offline {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        Err(ModelError::InvalidRequest {
            status: None,
            message: "an offline replay has no live model".into(),
            source: None,
        })
    }
}
