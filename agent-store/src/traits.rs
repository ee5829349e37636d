//! The store traits: [`ConversationStore`], [`ChainStore`], [`RunStore`],
//! [`EventLog`] and [`Store`], all four at once.
//!
//! Invariants: every write is one transaction, whole or absent; versions and
//! sequence numbers make concurrent writers safe (a writer that lost gets
//! [`StoreError::Conflict`] and nothing of its write is stored); deleting by
//! age is safe with any number of callers at once (each row is deleted
//! once, and no caller fails for another's).

use std::fmt::Debug;

use async_trait::async_trait;
use loopwright_core::Message;
use serde_json::Value;

use crate::error::StoreError;
use crate::notify::{EventSubscription, FALLBACK_POLL};
use crate::record::{ConversationSummary, RunRecord, RunStatus, StoredChain, StoredConversation};

/// Conversations as append-only turns with a version.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use loopwright_core::Message;
/// let store = loopwright_store::open("memory:").await?;
/// let v1 = store.append_turn("c1", 0, &[Message::user("hi"), Message::assistant("hello")]).await?;
/// let chat = store.load_conversation("c1").await?.unwrap();
/// assert_eq!((chat.messages.len(), chat.version), (2, v1));
/// // A writer that loaded version 0 too is told so, and writes nothing:
/// assert!(store.append_turn("c1", 0, &[Message::user("hey")]).await.unwrap_err().is_conflict());
/// # Ok(()) }
/// ```
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// The conversation `id`, or `None` when it has no turn.
    async fn load_conversation(&self, id: &str) -> Result<Option<StoredConversation>, StoreError>;

    /// Appends one turn's messages; `expected_version` is the version the
    /// caller loaded (0 for a new conversation). Returns the new version
    /// (`expected_version + 1`); a version that moved on is
    /// [`StoreError::Conflict`], and nothing is written.
    async fn append_turn(
        &self,
        id: &str,
        expected_version: u64,
        messages: &[Message],
    ) -> Result<u64, StoreError>;

    /// Deletes every turn of `id`; whether there was any.
    async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError>;

    /// At most `limit` conversations, the one written last first.
    ///
    /// ```
    /// # async fn demo() -> Result<(), loopwright_store::StoreError> {
    /// use loopwright_store::ConversationStore;
    /// let store = loopwright_store::open("memory:").await?;
    /// store.append_turn("c1", 0, &[loopwright_core::Message::user("hi")]).await?;
    /// let listed = store.list_conversations(10).await?;
    /// assert_eq!((listed[0].id.as_str(), listed[0].version), ("c1", 1));
    /// # Ok(()) }
    /// ```
    async fn list_conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>, StoreError>;
}

/// Run records with compare-and-set updates.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use loopwright_store::{RunRecord, RunStatus};
/// let store = loopwright_store::open("memory:").await?;
/// let run = RunRecord::new("r1", "agent");
/// store.create_run(&run).await?;
/// let v2 = store.update_run(&run.clone().with_status(RunStatus::Completed), 1).await?;
/// assert_eq!(v2, 2);
/// assert_eq!(store.list_runs(Some(RunStatus::Completed), 10).await?.len(), 1);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Stores a new run at version [`FIRST_RUN_VERSION`](crate::FIRST_RUN_VERSION)
    /// (the record's version and timestamps are not used); an id that
    /// exists is [`StoreError::Conflict`].
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError>;

    /// The run `id`, if stored.
    async fn load_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// Compare-and-set: writes `run` (at version `expected_version + 1`,
    /// `updated_at` now, `created_at` kept) only if the stored version is
    /// `expected_version`; returns the new version. A version that moved on,
    /// or a run that is not there, is [`StoreError::Conflict`].
    async fn update_run(&self, run: &RunRecord, expected_version: u64) -> Result<u64, StoreError>;

    /// Runs with this status (all when `None`), the most recently written
    /// first, at most `limit`.
    async fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>, StoreError>;

    /// The runs of session `session`, the newest first (by creation), at
    /// most `limit` (a chat's turn in progress is its first, while it
    /// runs).
    ///
    /// ```
    /// # async fn demo() -> Result<(), loopwright_store::StoreError> {
    /// use loopwright_store::RunRecord;
    /// let store = loopwright_store::open("memory:").await?;
    /// store.create_run(&RunRecord::new("r1", "agent").with_session("chat-7")).await?;
    /// store.create_run(&RunRecord::new("r2", "agent")).await?;
    /// let runs = store.session_runs("chat-7", 10).await?;
    /// assert_eq!(runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["r1"]);
    /// # Ok(()) }
    /// ```
    async fn session_runs(&self, session: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError>;

    /// Deletes the run `id` and its event log in one transaction; whether
    /// the run was there. A writer that loaded it before is refused
    /// ([`StoreError::Conflict`]) as for a run that never was.
    ///
    /// ```
    /// # async fn demo() -> Result<(), loopwright_store::StoreError> {
    /// let store = loopwright_store::open("memory:").await?;
    /// store.create_run(&loopwright_store::RunRecord::new("r1", "agent")).await?;
    /// store.append_events("r1", &[(0, serde_json::json!({"type": "run_started"}))]).await?;
    /// assert!(store.delete_run("r1").await?);
    /// assert!(store.load_run("r1").await?.is_none());
    /// assert!(store.read_events("r1", None, 10).await?.is_empty());
    /// # Ok(()) }
    /// ```
    async fn delete_run(&self, id: &str) -> Result<bool, StoreError>;

    /// Deletes at most `limit` runs that are not running and were last
    /// written before `cutoff` (Unix milliseconds), each with its event
    /// log, in one transaction; how many. Callers at once delete each run
    /// once (on PostgreSQL they take different runs); call again until
    /// fewer than `limit` come back.
    ///
    /// ```
    /// # async fn demo() -> Result<(), loopwright_store::StoreError> {
    /// use loopwright_store::{RunRecord, RunStatus};
    /// let store = loopwright_store::open("memory:").await?;
    /// store.create_run(&RunRecord::new("done", "agent")).await?;
    /// store.update_run(&RunRecord::new("done", "agent").with_status(RunStatus::Completed), 1).await?;
    /// store.create_run(&RunRecord::new("going", "agent")).await?;
    /// let later = store.load_run("done").await?.unwrap().updated_at + 1;
    /// assert_eq!(store.expire_runs(later, 100).await?, 1); // a running run is never expired
    /// assert!(store.load_run("done").await?.is_none() && store.load_run("going").await?.is_some());
    /// # Ok(()) }
    /// ```
    async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, StoreError>;
}

/// Chains of turns: each turn stored once, under an id, linked to the turn
/// it continues (as a stored response continues the one before it), so a
/// chain of `n` turns costs what its turns do, not `n` copies of the
/// conversation. A namespace of its own: no conversation id
/// ([`ConversationStore`]) reaches a chain's turn, nor a turn id a
/// conversation.
///
/// Reading a chain walks its links back from its last turn, at most as many
/// as that turn's depth (its chain's length, written when it was stored
/// from the depth of the turn it continues). A released turn (its owner
/// deleted it, or it expired) is no chain's last turn any more, but is still
/// read as part of the chains that continue it, and deleted once no turn
/// that is not released continues it.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use loopwright_core::Message;
/// let store = loopwright_store::open("memory:").await?;
/// store.put_turn("r1", None, &[Message::user("hi"), Message::assistant("hello")]).await?;
/// let depth = store.put_turn("r2", Some("r1"), &[Message::user("and?"), Message::assistant("bye")]).await?;
/// assert_eq!(depth, 2);
/// let chain = store.load_chain("r2", 10).await?.unwrap();
/// assert_eq!((chain.messages.len(), chain.turns), (4, 2));
/// // Released, r1 is no chain's end, but r2's chain still reads it.
/// assert!(store.release_turn("r1").await?);
/// assert!(store.load_chain("r1", 10).await?.is_none());
/// assert_eq!(store.load_chain("r2", 10).await?.unwrap().messages.len(), 4);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait ChainStore: Send + Sync {
    /// Stores turn `id` continuing turn `previous` (the first of a chain
    /// when `None`); returns its depth (the chain's length up to it). An id
    /// that is stored already, or a `previous` that is not (never stored,
    /// or deleted meanwhile), is [`StoreError::Conflict`] and nothing is
    /// written.
    async fn put_turn(
        &self,
        id: &str,
        previous: Option<&str>,
        messages: &[Message],
    ) -> Result<u64, StoreError>;

    /// The chain ending at turn `id`, its first turn's messages first;
    /// `None` when `id` is not stored or was released. A chain longer than
    /// `max_turns` is [`StoreError::Invalid`] and is not read; a link that
    /// is missing or out of order is [`StoreError::Corrupt`].
    async fn load_chain(&self, id: &str, max_turns: u64) -> Result<Option<StoredChain>, StoreError>;

    /// Releases turn `id`: deleted at once when no turn continues it (and
    /// with it each released turn before it that nothing else continues),
    /// else kept for the chains that continue it and deleted with the last
    /// of them. Whether `id` was stored and not released.
    async fn release_turn(&self, id: &str) -> Result<bool, StoreError>;

    /// Releases every turn stored before `cutoff` (Unix milliseconds), then
    /// deletes every released turn that no turn still held continues
    /// (directly or through released ones), in one transaction; how many
    /// were deleted. A turn is never deleted while a chain that is not
    /// released reads it; callers at once take turns.
    async fn expire_turns(&self, cutoff: i64) -> Result<u64, StoreError>;
}

/// A run's event log: events with sequence numbers, readable from any
/// sequence number, so a stream can be resumed by a client or by another
/// process.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use serde_json::json;
/// let store = loopwright_store::open("memory:").await?;
/// let mut tail = store.subscribe_events("r1").await?; // before the first read: no wake is missed
/// store.append_events("r1", &[(1, json!({"type": "text_delta"})), (2, json!({"type": "finished"}))]).await?;
/// tail.wait().await;
/// let events = store.read_events("r1", Some(1), 100).await?;
/// assert_eq!(events, vec![(2, json!({"type": "finished"}))]);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends events with their sequence numbers in one transaction; a
    /// sequence number already there (or twice in `events`) is
    /// [`StoreError::Conflict`], and nothing is written.
    async fn append_events(&self, run_id: &str, events: &[(u64, Value)]) -> Result<(), StoreError>;

    /// Events with a sequence number above `after` (all when `None`), in
    /// order, at most `limit`.
    async fn read_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Value)>, StoreError>;

    /// A subscription to appends to `run_id`'s log, by this process or (on
    /// PostgreSQL, through `LISTEN`/`NOTIFY`) any other; on SQLite, other
    /// processes' appends are seen by a short poll. Subscribe before reading,
    /// then read from the last sequence number after each
    /// [`wait`](EventSubscription::wait): a wake is a hint, never an event.
    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError>;

    /// Resolves when events may have been appended to `run_id` since the
    /// call (or after a short poll). An append between a reader's last read
    /// and this call is seen only at the poll: a reader that tails a log
    /// keeps one [`subscribe_events`](Self::subscribe_events) instead.
    async fn wait_for_events(&self, run_id: &str) {
        match self.subscribe_events(run_id).await {
            Ok(mut subscription) => subscription.wait().await,
            Err(_) => tokio::time::sleep(FALLBACK_POLL).await,
        }
    }
}

/// Everything that must outlive a process: conversations, chains of turns,
/// runs and their event logs. [`open`](crate::open) gives one by URL.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// let store: std::sync::Arc<dyn loopwright_store::Store> = loopwright_store::open("sqlite:agent.db").await?;
/// # let _ = store; Ok(()) }
/// ```
pub trait Store: ConversationStore + ChainStore + RunStore + EventLog + Send + Sync + Debug {}

impl<T: ConversationStore + ChainStore + RunStore + EventLog + Send + Sync + Debug> Store for T {}
