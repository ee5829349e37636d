//! Starting and stopping a server: [`Serve`] collects the agents and the
//! surfaces, [`Serve::start`] binds every address, [`Running::shutdown`]
//! ends it.
//!
//! Invariants:
//! - every address is bound before `start` returns (a bind failure is an
//!   error naming the surface and address); every step that can fail comes
//!   before the first task is spawned, so a failed `start` leaves nothing
//!   running;
//! - each surface instance has its own limiter and guard;
//! - shutdown stops accepting and refuses queued requests at once, lets
//!   runs in flight finish for the grace, then cancels them and gives them
//!   [`ANSWER_DRAIN`] to write their answers (an MCP call cut off by the
//!   shutdown gets its `isError` result before the MCP service stops), then
//!   gives connections [`CONNECTION_DRAIN`] to end before their tasks are
//!   aborted: `shutdown` always returns.
//! - every HTTP instance has the connection limits of [`crate::listen`] and
//!   a body limit ([`DEFAULT_BODY_LIMIT`]) answered in its own error shape;
//! - unless told to keep everything, every replica sweeps its store for what
//!   outlived the retention (`loopwright_runs::Runs::sweep_expired`), from its start
//!   until it stops.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::agents::ServedAgent;
use crate::limit::{DEFAULT_CONCURRENCY, DEFAULT_QUEUE};
use crate::listen::{DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
use crate::run::{Instance, Lifecycle};

mod start;

/// How long runs in flight may go on after a shutdown begins before they
/// are cancelled: long enough for a typical answer to finish.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long cancelled runs get to write their answers (an error event, an
/// MCP `isError` result) before the MCP sessions close.
const ANSWER_DRAIN: Duration = Duration::from_secs(2);

/// How long connections get to close after the runs are cancelled (a
/// cancelled run still writes its error event) before their tasks end.
const CONNECTION_DRAIN: Duration = Duration::from_secs(3);

/// The largest request body an instance reads: a conversation with a few
/// images inline. Larger bodies are answered 413 in the surface's shape.
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// MCP HTTP sessions one instance keeps at once; one more `initialize` is
/// answered 503 with a JSON-RPC error. A session costs about 60 KB.
pub const DEFAULT_MCP_SESSIONS: usize = 256;

/// How long an MCP HTTP session may stay without a message before it is
/// closed (a client that comes back after it initializes again, as the
/// specification asks). rmcp's own default is 5 minutes.
pub const DEFAULT_MCP_SESSION_IDLE: Duration = Duration::from_secs(60);

/// How often shutdown looks whether the runs in flight are done.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// A kind of surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Surface {
    /// OpenAI Chat Completions and Responses (`/v1/models`,
    /// `/v1/chat/completions`, `/v1/responses`).
    OpenAi,
    /// Anthropic Messages (`/v1/models`, `/v1/messages`).
    Anthropic,
    /// REST (`/v1/agents/{name}`, `/health`).
    Rest,
    /// MCP over streamable HTTP (`/mcp`).
    McpHttp,
    /// MCP over this process's standard input and output.
    McpStdio,
    /// A2A v1.0 over JSON-RPC: an agent card and an endpoint per agent
    /// (`/{name}/.well-known/agent-card.json`, `POST /{name}`).
    A2a,
}

impl std::fmt::Display for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Surface::OpenAi => "openai",
            Surface::Anthropic => "anthropic",
            Surface::Rest => "rest",
            Surface::McpHttp => "mcp-http",
            Surface::McpStdio => "mcp-stdio",
            Surface::A2a => "a2a",
        })
    }
}

/// A surface listening on an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bound {
    /// What it serves.
    pub surface: Surface,
    /// Where (the port chosen when 0 was asked for).
    pub addr: SocketAddr,
}

impl Bound {
    /// The URL clients use: the API base for OpenAI (`…/v1`), the host for
    /// Anthropic and REST, the endpoint for MCP (`…/mcp`).
    ///
    /// ```
    /// let b = loopwright_serve::Bound::new(loopwright_serve::Surface::OpenAi, "127.0.0.1:8080".parse().unwrap());
    /// assert_eq!(b.url(), "http://127.0.0.1:8080/v1");
    /// ```
    pub fn url(&self) -> String {
        let base = format!("http://{}", self.addr);
        match self.surface {
            Surface::OpenAi => format!("{base}/v1"),
            Surface::McpHttp => format!("{base}/mcp"),
            _ => base,
        }
    }

    /// A bound surface (for tests and displays).
    pub fn new(surface: Surface, addr: SocketAddr) -> Self {
        Self { surface, addr }
    }
}

/// A server to start: its agents, surfaces and limits.
///
/// ```
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// # let agent = loopwright_core::Agent::builder(model).build();
/// let serve = loopwright_serve::Serve::new()
///     .agent(loopwright_serve::ServedAgent::new(agent))
///     .openai("127.0.0.1:0".parse().unwrap())
///     .mcp_http("127.0.0.1:0".parse().unwrap())
///     .concurrency(2)
///     .queue(16);
/// # let _ = serve;
/// ```
#[derive(Debug, Clone)]
#[must_use = "a Serve does nothing until started"]
pub struct Serve {
    agents: Vec<ServedAgent>,
    listeners: Vec<(Surface, SocketAddr)>,
    mcp_stdio: bool,
    concurrency: usize,
    queue: Option<usize>,
    keys: Vec<String>,
    keys_given: bool,
    grace: Duration,
    allowed_hosts: Option<Vec<String>>,
    limits: crate::listen::ConnLimits,
    body_limit: usize,
    item_limit: usize,
    mcp_sessions: usize,
    mcp_session_idle: Duration,
    store: Option<Arc<dyn loopwright_store::Store>>,
    replica: Option<String>,
    run_lease: Duration,
    /// `None`: kept forever.
    retention: Option<Duration>,
    /// REST instances serve `loopwright dev`'s pages.
    ui: bool,
    /// The eval reports the pages ran (one list for every instance).
    evals: Arc<crate::run::EvalsKept>,
    /// Models a run may pick instead of its agent's.
    models: crate::run::OfferedModels,
    #[cfg(feature = "restate")]
    restate: Option<crate::Restate>,
}

impl Default for Serve {
    fn default() -> Self {
        Self::new()
    }
}

impl Serve {
    /// Nothing served yet; limits at their defaults.
    pub fn new() -> Self {
        Self {
            agents: Vec::new(),
            listeners: Vec::new(),
            mcp_stdio: false,
            concurrency: DEFAULT_CONCURRENCY,
            queue: Some(DEFAULT_QUEUE),
            keys: Vec::new(),
            keys_given: false,
            grace: DEFAULT_SHUTDOWN_GRACE,
            allowed_hosts: None,
            limits: crate::listen::ConnLimits {
                header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
                max_connections: DEFAULT_MAX_CONNECTIONS,
            },
            body_limit: DEFAULT_BODY_LIMIT,
            item_limit: crate::items::DEFAULT_ITEM_LIMIT,
            mcp_sessions: DEFAULT_MCP_SESSIONS,
            mcp_session_idle: DEFAULT_MCP_SESSION_IDLE,
            store: None,
            replica: None,
            run_lease: crate::DEFAULT_RUN_LEASE,
            retention: Some(crate::DEFAULT_RETENTION),
            ui: false,
            evals: Arc::default(),
            models: crate::run::OfferedModels::default(),
            #[cfg(feature = "restate")]
            restate: None,
        }
    }

    /// Make background runs durable workflows on Restate (feature
    /// `restate`): this replica serves Restate's endpoint on
    /// [`Restate::listen`](crate::Restate::listen) and registers it at
    /// start; a run survives the death of the replica running it (see
    /// [`crate::durable`]). Needs a [`store`](Self::store) every replica
    /// shares.
    ///
    /// ```no_run
    /// # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
    /// use loopwright_serve::{Restate, Serve, ServedAgent};
    /// let running = Serve::new()
    ///     .agent(ServedAgent::new(agent))
    ///     .rest("0.0.0.0:8080".parse()?)
    ///     .store(loopwright_store::open("postgres://loopwright@db/agents").await?)
    ///     .restate(Restate::new("http://restate:9070", "http://restate:8080", "0.0.0.0:9080".parse()?)
    ///         .advertise("http://agents-lb:9080"))
    ///     .start()
    ///     .await?;
    /// # running.shutdown().await; Ok(()) }
    /// ```
    #[cfg(feature = "restate")]
    pub fn restate(mut self, restate: crate::Restate) -> Self {
        self.restate = Some(restate);
        self
    }

    /// Keep background runs, their events, sessions and stored responses in
    /// `store` (default: in this process's memory, lost when it stops).
    /// Replicas sharing one PostgreSQL store serve the same runs, sessions
    /// and responses.
    ///
    /// ```no_run
    /// # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
    /// let store = loopwright_store::open("postgres://loopwright@db/agents").await?;
    /// let running = loopwright_serve::Serve::new()
    ///     .agent(loopwright_serve::ServedAgent::new(agent))
    ///     .rest("0.0.0.0:8080".parse()?)
    ///     .store(store)
    ///     .start()
    ///     .await?;
    /// # running.shutdown().await; Ok(()) }
    /// ```
    pub fn store(mut self, store: Arc<dyn loopwright_store::Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// This replica's name, recorded as the owner of the runs it drives
    /// (default: host name, process id and a random suffix).
    pub fn replica(mut self, name: impl Into<String>) -> Self {
        self.replica = Some(name.into());
        self
    }

    /// How long a replica may go without writing a background run it drives
    /// (it rewrites the record every sixth of this while the run goes)
    /// before any replica reading the run records it `failed`
    /// (`replica_lost`): what ends the runs of a replica that was killed.
    /// Default [`DEFAULT_RUN_LEASE`](crate::DEFAULT_RUN_LEASE) (60 s), at
    /// least [`MIN_RUN_LEASE`](crate::MIN_RUN_LEASE) (3 s); replicas'
    /// clocks must agree to well within it.
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().run_lease(std::time::Duration::from_secs(30));
    /// ```
    pub fn run_lease(mut self, lease: Duration) -> Self {
        self.run_lease = lease;
        self
    }

    /// How long stored responses and runs are kept after their record was
    /// last written (a response: once it ended), with their events and
    /// conversations: every replica deletes what is older every tenth of
    /// this (at most hourly). Default
    /// [`DEFAULT_RETENTION`](crate::DEFAULT_RETENTION) (30 days, as OpenAI
    /// keeps responses), at least [`MIN_RETENTION`](crate::MIN_RETENTION).
    /// A running run is never deleted; one awaiting approval for longer is.
    /// A response's turn that a later response continues stays as long as
    /// that one does. Sessions are not deleted by age.
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().retention(std::time::Duration::from_secs(7 * 24 * 3600));
    /// ```
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention.max(crate::MIN_RETENTION));
        self
    }

    /// Keep stored responses and runs until they are deleted (no sweep).
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().keep_forever();
    /// ```
    pub fn keep_forever(mut self) -> Self {
        self.retention = None;
        self
    }

    /// Serve `loopwright dev`'s pages on every REST instance, under `/ui/`
    /// (`/` redirects there): agents, a playground, runs and their
    /// timelines, sessions, tools (feature `ui`; [`Serve::start`] says so
    /// when this build leaves them out). The pages need no key to load;
    /// what they read and do asks for one as any client's requests do.
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().rest("127.0.0.1:0".parse().unwrap()).ui();
    /// ```
    pub fn ui(mut self) -> Self {
        self.ui = true;
        self
    }

    /// Offer `model` as `label` for runs that pick their model (the chat
    /// route's and a background run's `model`; the playground's model
    /// list): such a run is its agent's, on this model. Every replica
    /// serving a store must offer the same labels.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// let serve = loopwright_serve::Serve::new().offer_model("scripted/test", model);
    /// ```
    pub fn offer_model(mut self, label: impl Into<String>, model: impl loopwright_core::IntoModel) -> Self {
        let label = label.into();
        let model = model.into_model();
        match self.models.0.iter_mut().find(|(l, _)| *l == label) {
            Some(offered) => offered.1 = model,
            None => self.models.0.push((label, model)),
        }
        self
    }

    /// Serve this agent (names must be unique).
    pub fn agent(mut self, agent: ServedAgent) -> Self {
        self.agents.push(agent);
        self
    }

    /// An instance of `surface` on `addr` (any number of each).
    pub fn listen(mut self, surface: Surface, addr: SocketAddr) -> Self {
        if surface == Surface::McpStdio {
            self.mcp_stdio = true;
        } else {
            self.listeners.push((surface, addr));
        }
        self
    }

    /// The OpenAI Chat Completions and Responses surface on `addr`.
    pub fn openai(self, addr: SocketAddr) -> Self {
        self.listen(Surface::OpenAi, addr)
    }

    /// The Anthropic Messages surface on `addr`.
    pub fn anthropic(self, addr: SocketAddr) -> Self {
        self.listen(Surface::Anthropic, addr)
    }

    /// The REST surface on `addr`.
    pub fn rest(self, addr: SocketAddr) -> Self {
        self.listen(Surface::Rest, addr)
    }

    /// MCP over streamable HTTP at `http://addr/mcp`.
    pub fn mcp_http(self, addr: SocketAddr) -> Self {
        self.listen(Surface::McpHttp, addr)
    }

    /// A2A on `addr` (feature `a2a`): each agent's card at
    /// `http://addr/{name}/.well-known/agent-card.json`, its JSON-RPC
    /// endpoint at `POST http://addr/{name}` (v1.0, and v0.3's method
    /// names), its HTTP+JSON routes under it; messages are background runs
    /// (tasks), contexts sessions, a pause for approval `input-required`.
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().a2a("127.0.0.1:0".parse().unwrap());
    /// ```
    pub fn a2a(self, addr: SocketAddr) -> Self {
        self.listen(Surface::A2a, addr)
    }

    /// MCP over standard input and output (this process is the server a
    /// client started).
    pub fn mcp_stdio(self) -> Self {
        self.listen(Surface::McpStdio, SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// Runs in flight per instance ([`DEFAULT_CONCURRENCY`]).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// At most `n` requests waiting per instance; more are answered 503
    /// with `Retry-After` ([`DEFAULT_QUEUE`]). A waiting request holds its
    /// parsed conversation (never its raw body), at most the body limit
    /// plus [`BYTES_PER_VALUE`](crate::BYTES_PER_VALUE) for each JSON value
    /// the [item limit](Self::item_limit) lets it hold: this bounds what
    /// waiting requests hold to `n` such conversations.
    pub fn queue(mut self, n: usize) -> Self {
        self.queue = Some(n);
        self
    }

    /// Let any number of requests wait (memory then grows with them).
    pub fn unbounded_queue(mut self) -> Self {
        self.queue = None;
        self
    }

    /// How long a client has to send a request's headers once it starts a
    /// connection or a request ([`DEFAULT_HEADER_READ_TIMEOUT`]).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How long a connection with no request in progress may stay without
    /// reading or writing a byte ([`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// Connections open at once per instance ([`DEFAULT_MAX_CONNECTIONS`]).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.limits.max_connections = n.max(1);
        self
    }

    /// The largest request body read ([`DEFAULT_BODY_LIMIT`] bytes).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Messages a request's conversation may hold (input items on the
    /// Responses API), and content parts in all
    /// ([`DEFAULT_ITEM_LIMIT`](crate::DEFAULT_ITEM_LIMIT)), and
    /// [`VALUES_PER_ITEM`](crate::VALUES_PER_ITEM) times as many JSON values
    /// (objects weighing 8, arrays 2); more are answered 400 in the
    /// surface's shape, naming the count and the limit.
    /// A continued conversation (a session, a response's
    /// `previous_response_id`) is held, with the request's input, to this
    /// many messages and to the [body limit](Self::body_limit) in bytes of
    /// JSON, as if it were sent whole.
    ///
    /// ```
    /// let serve = loopwright_serve::Serve::new().item_limit(2_000);
    /// ```
    pub fn item_limit(mut self, n: usize) -> Self {
        self.item_limit = n.max(1);
        self
    }

    /// MCP HTTP sessions per instance ([`DEFAULT_MCP_SESSIONS`]).
    pub fn mcp_sessions(mut self, n: usize) -> Self {
        self.mcp_sessions = n.max(1);
        self
    }

    /// How long an MCP HTTP session may stay idle
    /// ([`DEFAULT_MCP_SESSION_IDLE`]).
    pub fn mcp_session_idle(mut self, idle: Duration) -> Self {
        self.mcp_session_idle = idle;
        self
    }

    /// Accept this bearer key (any of the keys given); with none, no key is
    /// asked for. An empty or blank key is no key: [`Serve::start`] refuses
    /// to start when every key given was empty, rather than serve without
    /// authentication.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.keys_given = true;
        let key = key.into();
        if !key.trim().is_empty() {
            self.keys.push(key.trim().to_owned());
        }
        self
    }

    /// How long runs may go on after shutdown begins
    /// ([`DEFAULT_SHUTDOWN_GRACE`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The host names accepted in `Host` and `Origin`. Default: for a
    /// loopback bind [`LOOPBACK_HOSTS`](crate::LOOPBACK_HOSTS), for any other bind no check.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }
}

/// A started server.
#[derive(Debug)]
#[must_use = "dropping a Running server leaves it serving until the runtime ends; call shutdown"]
pub struct Running {
    bound: Vec<Bound>,
    lifecycle: Lifecycle,
    instances: Vec<Arc<Instance>>,
    tasks: Vec<JoinHandle<()>>,
    stdio: Option<JoinHandle<()>>,
    grace: Duration,
    /// Restate's id of this replica's deployment (durable runs).
    #[cfg(feature = "restate")]
    deployment: Option<String>,
}

impl Running {
    /// The Restate deployment this replica registered (with
    /// [`Serve::restate`]): its id, as Restate's admin API names it.
    ///
    /// ```no_run
    /// # fn demo(running: &loopwright_serve::Running) {
    /// if let Some(id) = running.restate_deployment() {
    ///     eprintln!("durable runs: deployment {id}");
    /// }
    /// # }
    /// ```
    #[cfg(feature = "restate")]
    pub fn restate_deployment(&self) -> Option<&str> {
        self.deployment.as_deref()
    }

    /// Where each surface listens.
    pub fn addresses(&self) -> &[Bound] {
        &self.bound
    }

    /// The first address serving `surface`.
    pub fn address(&self, surface: Surface) -> Option<SocketAddr> {
        self.bound.iter().find(|b| b.surface == surface).map(|b| b.addr)
    }

    /// Runs in flight, over all instances.
    pub fn in_flight(&self) -> usize {
        self.instances.iter().map(|i| i.limiter.in_flight()).sum()
    }

    /// Requests waiting, over all instances.
    pub fn queued(&self) -> usize {
        self.instances.iter().map(|i| i.limiter.queued()).sum()
    }

    /// Resolves when the MCP client on standard input has gone (never,
    /// without the stdio surface).
    pub async fn stdio_closed(&mut self) {
        match &mut self.stdio {
            Some(task) => {
                let _ = task.await;
                self.stdio = None;
            }
            None => std::future::pending().await,
        }
    }

    /// Stop: accept nothing more, refuse waiting requests, let runs in
    /// flight finish within the grace, then cancel them.
    pub async fn shutdown(mut self) {
        self.lifecycle.stopping.cancel();
        let deadline = tokio::time::Instant::now() + self.grace;
        while self.in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        self.lifecycle.hard.cancel();
        // Cancelled runs write their answers before the MCP service stops.
        let deadline = tokio::time::Instant::now() + ANSWER_DRAIN;
        while self.in_flight() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(DRAIN_POLL).await;
        }
        self.lifecycle.closed.cancel();
        let mut tasks = std::mem::take(&mut self.tasks);
        tasks.extend(self.stdio.take());
        let aborts: Vec<_> = tasks.iter().map(JoinHandle::abort_handle).collect();
        if tokio::time::timeout(CONNECTION_DRAIN, futures::future::join_all(tasks))
            .await
            .is_err()
        {
            for abort in aborts {
                abort.abort();
            }
        }
    }
}
