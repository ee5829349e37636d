//! [`ModelServer`]: one fake LLM server for every wire format the tests
//! speak, playing scripted [`Reply`]s and recording the requests it gets.
//!
//! It listens on a loopback port and answers every `POST`, whatever its path
//! (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`,
//! `/v1beta/models/M:streamGenerateContent`, `/api/chat`, a proxy's prefix...),
//! from its script, in this order of precedence:
//!
//! 1. the first [`Builder::when`] rule the request matches (its fixed reply;
//!    nothing is consumed);
//! 2. the model's own replies ([`Builder::model`]), by the body's `model`
//!    field, or the path's `models/M:` for Gemini;
//! 3. the [`Builder::respond`] function, or else the [`Builder::replies`].
//!
//! A list of replies plays in order and its last reply repeats, or, with
//! [`Builder::each_once`], later requests get a 500 (`no scripted reply`). A
//! request no part of the script answers gets a 404 naming its model. `GET
//! /v1/models` and `GET /api/tags` list [`Builder::listing`]'s models (OpenAI's
//! and Ollama's shapes), for tests of local model discovery.
//!
//! Invariant: every request is recorded (path with its query, headers, JSON
//! body, raw bytes, arrival) before its reply is chosen and sent, so a client
//! that read a reply finds its request in [`ModelServer::received`]; the one
//! exception is [`Builder::unrecorded`], for tests whose bodies would weigh on
//! the test process. The state's lock is never held across an `.await`. The
//! reply bodies for each format are built in [`sse`].

pub mod sse;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};

/// How long an [`Reply::aborted`] reply waits after its chunks before the
/// connection dies, so the client reads them first.
const ABORT_DELAY: Duration = Duration::from_millis(200);

/// One scripted answer: a status, headers, body chunks, and how the body
/// ends (closed, stalled or aborted).
///
/// ```
/// use loopwright_test_support::model_server::{Reply, sse};
/// let answer: Reply = sse::answer("Hello.").into(); // 200, text/event-stream
/// let refused = Reply::status(429, r#"{"error": {"message": "slow down"}}"#).header("retry-after", "0");
/// let cut = Reply::ok(vec!["data: {}\n\n".into()]).aborted();
/// # let _ = (answer, refused, cut);
/// ```
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<Bytes>,
    end: End,
    /// The body waits for this before its first chunk.
    gate: Option<Arc<tokio::sync::Notify>>,
}

type BodyStream = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// A reply's body, counted in `dropped` when it is dropped before it
/// ended (its client went away, or cancelled the request).
struct Watched {
    inner: BodyStream,
    ended: bool,
    dropped: Arc<AtomicUsize>,
}

impl futures::Stream for Watched {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let next = self.inner.as_mut().poll_next(cx);
        if matches!(next, std::task::Poll::Ready(None)) {
            self.ended = true;
        }
        next
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.ended {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// How a reply's body ends after its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Close,
    /// Nothing more, the response left open.
    Stall,
    /// The connection reset (a body that errors mid-stream).
    Abort,
}

impl Reply {
    /// A 200 event stream sending `chunks`, one write each.
    pub fn ok(chunks: Vec<Bytes>) -> Self {
        Self::with(200, "text/event-stream", chunks)
    }

    /// A 200 event stream sending `body` in one write.
    pub fn sse(body: impl Into<String>) -> Self {
        Self::ok(vec![Bytes::from(body.into())])
    }

    /// A 200 stream of JSON lines (Ollama's `/api/chat`), in one write.
    pub fn ndjson(body: impl Into<String>) -> Self {
        Self::with(200, "application/x-ndjson", vec![Bytes::from(body.into())])
    }

    /// A JSON reply with this status (an error, usually).
    pub fn status(status: u16, body: &str) -> Self {
        Self::with(status, "application/json", vec![Bytes::from(body.to_owned())])
    }

    fn with(status: u16, content_type: &str, chunks: Vec<Bytes>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks,
            end: End::Close,
            gate: None,
        }
    }

    /// This reply with the header `name` set to `value` (replacing one of
    /// that name).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// This reply with its body held until `gate` is notified (its status
    /// and headers go at once): to order it after another request, whose
    /// reply (a [`Builder::respond`] function) notifies the gate.
    pub fn after(mut self, gate: Arc<tokio::sync::Notify>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// This reply with the response left open after its chunks, sending
    /// nothing more.
    pub fn stalled(mut self) -> Self {
        self.end = End::Stall;
        self
    }

    /// This reply with the connection reset after its chunks (a body that
    /// fails mid-stream).
    pub fn aborted(mut self) -> Self {
        self.end = End::Abort;
        self
    }

    /// A 500 for a request past a script played [`Builder::each_once`].
    fn exhausted() -> Self {
        Self::status(500, r#"{"error":{"message":"no scripted reply"}}"#)
    }

    /// A 404 for a request no part of the script answers.
    fn unscripted(model: &str) -> Self {
        let body = json!({"error": {"message": format!("no script for model {model}")}});
        Self::status(404, &body.to_string())
    }

    /// The response; `dropped` counts it when its client goes away before
    /// its body ended.
    fn into_response(self, dropped: Arc<AtomicUsize>) -> axum::response::Response {
        let chunks = futures::stream::iter(self.chunks.into_iter().map(Ok::<_, std::io::Error>));
        let stream: BodyStream = match self.end {
            End::Close => Box::pin(chunks),
            End::Stall => Box::pin(chunks.chain(futures::stream::pending())),
            End::Abort => {
                let die = futures::stream::once(async {
                    tokio::time::sleep(ABORT_DELAY).await;
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "scripted abort",
                    ))
                });
                Box::pin(chunks.chain(die))
            }
        };
        let stream: BodyStream = match self.gate {
            Some(gate) => Box::pin(
                futures::stream::once(async move { gate.notified().await })
                    .filter_map(|()| async { None })
                    .chain(stream),
            ),
            None => stream,
        };
        let body = Body::from_stream(Watched {
            inner: stream,
            ended: false,
            dropped,
        });
        let mut response = axum::response::Response::new(body);
        *response.status_mut() = StatusCode::from_u16(self.status)
            .unwrap_or_else(|_| panic!("{} is not an HTTP status", self.status));
        for (name, value) in self.headers {
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) else {
                panic!("a scripted header is not valid HTTP: {name}: {value}");
            };
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// A 200 event stream sending `body` ([`Reply::sse`]).
impl From<String> for Reply {
    fn from(body: String) -> Self {
        Self::sse(body)
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The method.
    pub method: Method,
    /// The path with its query (`/v1beta/models/m:streamGenerateContent?alt=sse`).
    pub path: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as sent.
    pub bytes: Bytes,
    /// When it arrived (its body read).
    pub arrived: Instant,
}

impl Received {
    /// The model it names: the body's `model`, else the path's `models/M:`
    /// (Gemini), else "".
    ///
    /// ```no_run
    /// # async fn f() {
    /// let server = loopwright_test_support::model_server::ModelServer::start(vec![]).await;
    /// let models: Vec<String> = server.received().iter().map(|r| r.model()).collect();
    /// # }
    /// ```
    pub fn model(&self) -> String {
        if let Some(model) = self.body["model"].as_str() {
            return model.to_owned();
        }
        self.path
            .split_once("/models/")
            .and_then(|(_, rest)| rest.split_once(':'))
            .map_or_else(String::new, |(model, _)| model.to_owned())
    }
}

/// Whether a rule of [`Builder::when`] applies to a request.
type Predicate = Arc<dyn Fn(&Received) -> bool + Send + Sync>;
/// The reply [`Builder::respond`] computes for a request.
type Responder = Arc<dyn Fn(&Received) -> Reply + Send + Sync>;

/// Replies played in order.
struct Sequence {
    replies: Vec<Reply>,
    next: usize,
}

impl Sequence {
    /// The next reply; past the end, the last again (or none when `once`).
    fn next(&mut self, once: bool) -> Option<Reply> {
        let index = if once {
            self.next
        } else {
            self.next.min(self.replies.len().checked_sub(1)?)
        };
        self.next += 1;
        self.replies.get(index).cloned()
    }
}

/// The script and what was received.
struct State {
    rules: Vec<(Predicate, Reply)>,
    models: HashMap<String, Sequence>,
    respond: Option<Responder>,
    replies: Option<Sequence>,
    once: bool,
    record: bool,
    received: Vec<Received>,
    /// Replies whose client went away before their body ended.
    dropped: Arc<AtomicUsize>,
}

impl State {
    /// The reply to `request` (see the module docs for the precedence).
    fn reply(&mut self, request: &Received) -> Reply {
        if let Some((_, reply)) = self.rules.iter().find(|(applies, _)| applies(request)) {
            return reply.clone();
        }
        let once = self.once;
        let model = request.model();
        if let Some(sequence) = self.models.get_mut(&model) {
            return sequence.next(once).unwrap_or_else(Reply::exhausted);
        }
        if let Some(respond) = &self.respond {
            return respond(request);
        }
        match &mut self.replies {
            Some(sequence) => sequence.next(once).unwrap_or_else(Reply::exhausted),
            None => Reply::unscripted(&model),
        }
    }
}

/// How a [`ModelServer`] answers: see the module docs.
///
/// ```no_run
/// use loopwright_test_support::model_server::{ModelServer, Reply, sse};
/// use serde_json::json;
/// # async fn f() {
/// let server = ModelServer::builder()
///     .model("coder", vec![sse::tool_call("write", json!({"path": "a"})).into(), sse::answer("Done.").into()])
///     .model("claude-test", vec![sse::anthropic_answer("Hi.").into()])
///     .when(|r| r.body.to_string().contains("summarise"), sse::answer("A summary.").into())
///     .start()
///     .await;
/// # }
/// ```
pub struct Builder {
    state: State,
    listing: Vec<String>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("models", &self.state.models.keys().collect::<Vec<_>>())
            .field("listing", &self.listing)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Replies to the requests nothing else answers, in order (the last
    /// one repeats).
    pub fn replies(mut self, replies: Vec<Reply>) -> Self {
        self.state.replies = Some(Sequence { replies, next: 0 });
        self
    }

    /// Replies to the requests for `model`, in order (the last one
    /// repeats), whatever other models' requests come between.
    pub fn model(mut self, model: &str, replies: Vec<Reply>) -> Self {
        self.state
            .models
            .insert(model.to_owned(), Sequence { replies, next: 0 });
        self
    }

    /// `reply` to every request `applies` to, before the rest of the script
    /// (which it leaves where it was).
    pub fn when(mut self, applies: impl Fn(&Received) -> bool + Send + Sync + 'static, reply: Reply) -> Self {
        self.state.rules.push((Arc::new(applies), reply));
        self
    }

    /// The reply to each request no rule or model answers, computed from it
    /// (instead of [`Builder::replies`]).
    pub fn respond(mut self, respond: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Self {
        self.state.respond = Some(Arc::new(respond));
        self
    }

    /// Each reply is played once: a request past the end of its list gets a
    /// 500 (`no scripted reply`) instead of the last reply again.
    pub fn each_once(mut self) -> Self {
        self.state.once = true;
        self
    }

    /// The models `GET /v1/models` and `GET /api/tags` list (`["test"]`
    /// unless told).
    pub fn listing<S: Into<String>>(mut self, models: impl IntoIterator<Item = S>) -> Self {
        self.listing = models.into_iter().map(Into::into).collect();
        self
    }

    /// Requests are neither kept nor parsed (for bodies too big to hold):
    /// [`ModelServer::received`] stays empty, and rules and functions see a
    /// `Null` body.
    pub fn unrecorded(mut self) -> Self {
        self.state.record = false;
        self
    }

    /// Serves on a loopback port from the current runtime (it stops with
    /// the runtime).
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start(self) -> ModelServer {
        let (app, server) = self.app();
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(listener) => listener,
            Err(error) => panic!("the model server could not bind a loopback port: {error}"),
        };
        let server = server(listener.local_addr());
        tokio::spawn(serve(listener, app));
        server
    }

    /// Serves on a loopback port from a thread and runtime of its own
    /// (living as long as the process), so it never competes with the
    /// caller's runtime for its workers: for benches.
    ///
    /// # Panics
    ///
    /// When the thread or its runtime cannot be started, or no loopback port
    /// can be bound.
    pub fn start_on_own_thread(self) -> ModelServer {
        let (app, server) = self.app();
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("model-server".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(runtime) => runtime,
                    Err(error) => panic!("the model server's runtime did not start: {error}"),
                };
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await;
                    // The caller reports a failed bind; a caller gone stops the server.
                    let addr = listener
                        .as_ref()
                        .map_err(|e| std::io::Error::new(e.kind(), e.to_string()));
                    if tx.send(addr.and_then(|l| l.local_addr())).is_ok()
                        && let Ok(listener) = listener
                    {
                        serve(listener, app).await;
                    }
                });
            });
        if let Err(error) = spawned {
            panic!("the model server's thread did not start: {error}");
        }
        match rx.recv() {
            Ok(addr) => server(addr),
            Err(_) => panic!("the model server's thread ended before it listened (see its panic)"),
        }
    }

    /// The router, and what makes the handle once the address is known.
    fn app(
        self,
    ) -> (
        axum::Router,
        impl FnOnce(std::io::Result<SocketAddr>) -> ModelServer,
    ) {
        let state = Arc::new(Mutex::new(self.state));
        let listing = Arc::new(self.listing);
        let shared = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, bytes: Bytes| {
                let (state, listing) = (shared.clone(), listing.clone());
                async move { handle(&state, &listing, method, uri, headers, bytes) }
            },
        );
        let server = move |addr: std::io::Result<SocketAddr>| match addr {
            Ok(addr) => ModelServer { addr, state },
            Err(error) => panic!("the model server could not bind a loopback port: {error}"),
        };
        (app, server)
    }
}

/// Serves `app` on `listener` until the runtime ends.
///
/// # Panics
///
/// When serving fails.
async fn serve(listener: tokio::net::TcpListener, app: axum::Router) {
    if let Err(error) = axum::serve(listener, app).await {
        panic!("the model server stopped: {error}");
    }
}

/// Records the request, then answers it: a listing, or the script's reply.
fn handle(
    state: &Mutex<State>,
    listing: &[String],
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> axum::response::Response {
    let arrived = Instant::now();
    let mut state = lock(state);
    let body = if state.record {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let request = Received {
        method,
        path: uri.to_string(),
        headers,
        body,
        bytes,
        arrived,
    };
    let reply = match (request.method.clone(), uri.path()) {
        (Method::GET, "/v1/models") => {
            let data: Vec<Value> = listing.iter().map(|id| json!({"id": id})).collect();
            Reply::status(200, &json!({"object": "list", "data": data}).to_string())
        }
        (Method::GET, "/api/tags") => {
            let models: Vec<Value> = listing.iter().map(|name| json!({"name": name})).collect();
            Reply::status(200, &json!({"models": models}).to_string())
        }
        _ => state.reply(&request),
    };
    if state.record {
        state.received.push(request);
    }
    let dropped = state.dropped.clone();
    drop(state);
    reply.into_response(dropped)
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running fake model server: see the module docs.
///
/// ```no_run
/// use loopwright_test_support::model_server::{ModelServer, sse};
/// # async fn f() {
/// let server = ModelServer::start(vec![sse::answer("Hello.").into()]).await;
/// let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
/// // ... run a client against it, then:
/// assert_eq!(server.bodies()[0]["model"], "test");
/// # let _ = base_url;
/// # }
/// ```
pub struct ModelServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ModelServer {
    /// A server playing `replies` in order (the last one repeats).
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::builder().replies(replies).start().await
    }

    /// A server to script: rules, models, a function, replies.
    pub fn builder() -> Builder {
        Builder {
            state: State {
                rules: Vec::new(),
                models: HashMap::new(),
                respond: None,
                replies: None,
                once: false,
                record: true,
                received: Vec::new(),
                dropped: Arc::default(),
            },
            listing: vec!["test".to_owned()],
        }
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, for providers given a host (Ollama, Gemini).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://ADDR/v1`, for providers given an OpenAI- or Anthropic-style
    /// base URL.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// How many replies' clients went away before their body ended (a
    /// request the client cancelled: a stalled reply counts once its
    /// client drops it).
    pub fn cancelled(&self) -> usize {
        lock(&self.state).dropped.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state).received.clone()
    }

    /// Every request received so far, forgotten here.
    pub fn take_received(&self) -> Vec<Received> {
        std::mem::take(&mut lock(&self.state).received)
    }

    /// Forgets the requests received so far.
    pub fn clear(&self) {
        lock(&self.state).received.clear();
    }

    /// The JSON bodies of the `POST`s (the model calls) received so far.
    pub fn bodies(&self) -> Vec<Value> {
        let state = lock(&self.state);
        let posts = state.received.iter().filter(|r| r.method == Method::POST);
        posts.map(|r| r.body.clone()).collect()
    }

    /// The JSON bodies of the requests for `model` ([`Received::model`]).
    pub fn bodies_for(&self, model: &str) -> Vec<Value> {
        let state = lock(&self.state);
        let posts = state.received.iter().filter(|r| r.method == Method::POST);
        posts
            .filter(|r| r.model() == model)
            .map(|r| r.body.clone())
            .collect()
    }

    /// The body of the last request.
    ///
    /// # Panics
    ///
    /// When there was none.
    pub fn last_body(&self) -> Value {
        match lock(&self.state).received.last() {
            Some(request) => request.body.clone(),
            None => panic!("the model server received no request"),
        }
    }
}
