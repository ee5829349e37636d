//! # loopwright-store
//!
//! What must outlive a process, for [loopwright](https://docs.rs/loopwright)
//! agents: conversations (append-only turns with a version, so a concurrent
//! writer gets a conflict and no turn is lost), chains of turns (each turn
//! stored once, linked to the one it continues, as stored responses chain),
//! runs (their status and resumable state, updated by compare-and-set) and
//! each run's event log (events with sequence numbers, readable from any of
//! them, so a stream can be resumed by a client or another process). Old
//! runs, their logs and chains' turns are deleted by age
//! ([`RunStore::expire_runs`], [`ChainStore::expire_turns`]).
//!
//! Three back ends behind one [`Store`] trait, chosen by URL ([`open`]) or a
//! [`StoreBuilder`]:
//!
//! | URL | back end | for |
//! |---|---|---|
//! | `memory:` | [`MemoryStore`] | tests, programs that keep nothing |
//! | `sqlite:PATH` | [`SqliteStore`] (feature `sqlite`) | the embedded default: one file, nothing to install |
//! | `postgres://...` | [`PostgresStore`] (feature `postgres`) | many processes and machines |
//!
//! Each SQL back end is a cargo feature, both on by default: a URL whose
//! back end the build leaves out is [`StoreError::BackendNotBuilt`], naming
//! the feature. Through the `loopwright` crate, `store` brings this crate
//! with SQLite and `postgres` with PostgreSQL, so a SQLite user does not
//! build PostgreSQL's driver (nor a PostgreSQL user SQLite's C library).
//!
//! The SQL back ends use [sqlx](https://docs.rs/sqlx) with run-time queries
//! (no database is needed to build), share their statements and logic (what
//! differs between SQLite and PostgreSQL is a small dialect), and bring their
//! schema up to date when opened. Every write is one transaction: a turn, a
//! run update, a batch of events is whole or absent.
//!
//! [`Session`] is a [`Conversation`](loopwright_core::Conversation) kept in a
//! store by id:
//!
//! ```no_run
//! # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright_store::{Session, SessionError};
//!
//! let store = loopwright_store::open("sqlite:chats.db").await?;
//! let mut chat = Session::load(store, "user-42").await?;
//! match chat.send(&agent, "Where were we?").await {
//!     Ok(answer) => println!("{}", answer.text),
//!     // Another process appended first: the answer is here, the turn is not stored.
//!     Err(error @ SessionError::Store { .. }) if error.is_conflict() => {
//!         chat.reload().await?; // then send again
//!     }
//!     Err(error) => return Err(error.into()),
//! }
//! # Ok(()) }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod backend;
mod builder;
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
mod codec;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod dialect;
mod error;
mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod migrations;
mod notify;
mod paused;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
mod session;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod traits;

pub use builder::{DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_BUSY_TIMEOUT, StoreBuilder, open};
pub use error::{BoxError, StoreError};
pub use memory::MemoryStore;
pub use notify::{EventSubscription, FALLBACK_POLL};
pub use paused::{Claimed, PausedError, PausedRuns};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PostgresStore;
pub use record::{
    ConversationSummary, FIRST_RUN_VERSION, RunRecord, RunStatus, StoredChain, StoredConversation,
    UnknownStatus,
};
pub use session::{Session, SessionError, SessionTurn};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use sqlite::SqliteStore;
pub use traits::{ChainStore, ConversationStore, EventLog, RunStore, Store};
