//! Serve agents to other programs: as a model behind the OpenAI Chat
//! Completions (or Responses) or Anthropic Messages API that every client
//! already speaks, as tools of an MCP server, as A2A agents, or over plain
//! REST.
//!
//! ```no_run
//! # async fn demo(agent: loopwright_core::Agent) -> Result<(), loopwright_serve::ServeError> {
//! use loopwright_serve::{Serve, ServedAgent};
//! let running = Serve::new()
//!     .agent(ServedAgent::new(agent).with_description("Answers questions about the codebase."))
//!     .openai("127.0.0.1:8080".parse().unwrap())
//!     .concurrency(4)
//!     .start()
//!     .await?;
//! for bound in running.addresses() {
//!     eprintln!("{} on http://{}", bound.surface, bound.addr);
//! }
//! running.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Each surface instance (one per address) has its own limit on runs in
//! flight ([`DEFAULT_CONCURRENCY`]), strict FIFO, with an optional queue
//! bound answered 503 with `Retry-After`. A client that disconnects while
//! queued leaves the queue and its run never starts; one that disconnects
//! while its run is going cancels it. Loopback binds accept only loopback
//! `Host` and `Origin` headers (DNS rebinding protection); bearer keys are
//! optional. Shutdown stops accepting, lets runs finish within a grace
//! ([`DEFAULT_SHUTDOWN_GRACE`]), then cancels them.
//!
//! The agents are shared by every request: their MCP connections are one
//! per configured server, calls multiplexed, never one per request.
//!
//! Background runs (`POST /v1/agents/{name}/runs`) live in a store
//! ([`Serve::store`]) every replica can share; with the `restate` feature
//! they can be durable workflows on Restate (`Serve::restate`, the
//! `durable` module): a replica's death then costs nothing already done.
//! [loopwright-runs](https://docs.rs/loopwright-runs) drives them; this
//! crate serves them over HTTP.
//!
//! With the `a2a` feature (default), [`Serve::a2a`] makes each agent an A2A
//! agent: its card, its messages as tasks (background runs) over JSON-RPC
//! and HTTP+JSON, streamed, listed, cancelled and subscribed to from any
//! replica, a pause for approval answered by the client's next message.
//!
//! With the `ui` feature (default), [`Serve::ui`] adds `loopwright dev`'s
//! pages to each REST instance, under `/ui/`: agents, a playground, runs
//! with their live timelines, sessions and tools, compiled in and fetching
//! nothing from elsewhere.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "a2a")]
mod a2a;
mod agents;
#[cfg(feature = "anthropic")]
mod anthropic;
mod client_tools;
mod error;
mod guard;
mod items;
mod limit;
mod listen;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_http;
#[cfg(feature = "openai")]
mod openai;
#[cfg(feature = "openai")]
mod responses;
#[cfg(feature = "rest")]
mod rest;
mod run;
mod server;
mod sse;
mod stored_turn;
#[cfg(feature = "ui")]
mod ui;

pub use agents::ServedAgent;
pub use error::ServeError;
pub use guard::LOOPBACK_HOSTS;
pub use items::{BYTES_PER_VALUE, DEFAULT_ITEM_LIMIT, VALUES_PER_ITEM};
pub use limit::{DEFAULT_CONCURRENCY, DEFAULT_QUEUE, IN_FLIGHT_GAUGE, QUEUED_GAUGE, RETRY_AFTER_SECS};
pub use listen::{
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, H2_KEEP_ALIVE_INTERVAL,
    H2_KEEP_ALIVE_TIMEOUT,
};
#[cfg(feature = "restate")]
#[doc(inline)]
pub use loopwright_runs::durable;
#[cfg(feature = "restate")]
pub use loopwright_runs::durable::Restate;
pub use loopwright_runs::{DEFAULT_RETENTION, DEFAULT_RUN_LEASE, MIN_RETENTION, MIN_RUN_LEASE};
pub use server::{
    Bound, DEFAULT_BODY_LIMIT, DEFAULT_MCP_SESSION_IDLE, DEFAULT_MCP_SESSIONS, DEFAULT_SHUTDOWN_GRACE,
    Running, Serve, Surface,
};

/// rmcp, as this crate uses it (its server side), for applications that
/// add their own MCP handlers beside the agents.
#[cfg(feature = "mcp")]
pub use rmcp;
