//! The values a store keeps: [`StoredConversation`] (listed as
//! [`ConversationSummary`]), [`StoredChain`],
//! [`RunRecord`] and [`RunStatus`].
//!
//! Invariant: plain serde data, the same whichever back end holds it; a
//! version counts the writes that made the value (0: never written).

use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use loopwright_core::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of a run record once [`create_run`](crate::RunStore::create_run)
/// stored it.
pub const FIRST_RUN_VERSION: u64 = 1;

/// A conversation as a store holds it: every message of every stored turn,
/// in order, and its version (the number of turns appended).
///
/// ```
/// let chat = loopwright_store::StoredConversation::new("c1", vec![loopwright_core::Message::user("hi")], 1);
/// assert_eq!((chat.id.as_str(), chat.messages.len(), chat.version), ("c1", 1, 1));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredConversation {
    /// The conversation's id.
    pub id: String,
    /// Every message, in order.
    pub messages: Vec<Message>,
    /// The number of turns appended: pass it as the next
    /// [`append_turn`](crate::ConversationStore::append_turn)'s expected
    /// version.
    pub version: u64,
}

impl StoredConversation {
    /// A conversation with these messages at this version.
    pub fn new(id: impl Into<String>, messages: Vec<Message>, version: u64) -> Self {
        Self {
            id: id.into(),
            messages,
            version,
        }
    }
}

/// A conversation as a listing shows it: its id, its version (the turns
/// appended) and when its last turn was written.
///
/// ```
/// let c = loopwright_store::ConversationSummary::new("c1", 2, 1_700_000_000_000);
/// assert_eq!((c.id.as_str(), c.version), ("c1", 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConversationSummary {
    /// The conversation's id.
    pub id: String,
    /// The number of turns appended.
    pub version: u64,
    /// When its last turn was written (Unix milliseconds).
    pub updated_at: i64,
}

impl ConversationSummary {
    /// A summary of conversation `id`.
    pub fn new(id: impl Into<String>, version: u64, updated_at: i64) -> Self {
        Self {
            id: id.into(),
            version,
            updated_at,
        }
    }
}

/// A chain of turns as a store reads it: every message of every turn, the
/// first turn's first, and how many turns (see
/// [`ChainStore`](crate::ChainStore)).
///
/// ```
/// let chain = loopwright_store::StoredChain::new("r2", vec![loopwright_core::Message::user("hi")], 2);
/// assert_eq!((chain.id.as_str(), chain.turns), ("r2", 2));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredChain {
    /// The chain's last turn.
    pub id: String,
    /// Every message, in order.
    pub messages: Vec<Message>,
    /// How many turns the chain has.
    pub turns: u64,
}

impl StoredChain {
    /// A chain ending at turn `id` with these messages over `turns` turns.
    pub fn new(id: impl Into<String>, messages: Vec<Message>, turns: u64) -> Self {
        Self {
            id: id.into(),
            messages,
            turns,
        }
    }
}

/// Where a run is.
///
/// ```
/// use loopwright_store::RunStatus;
/// assert_eq!(RunStatus::AwaitingApproval.as_str(), "awaiting_approval");
/// assert_eq!("completed".parse::<RunStatus>(), Ok(RunStatus::Completed));
/// assert_eq!(serde_json::to_string(&RunStatus::Running).unwrap(), "\"running\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Running in some process (its `owner`).
    Running,
    /// Stopped at a tool call that waits for a person's decision; its state
    /// resumes it.
    AwaitingApproval,
    /// Ended with an answer.
    Completed,
    /// Ended with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Running,
        RunStatus::AwaitingApproval,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    /// The status as stored (snake case).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::AwaitingApproval => "awaiting_approval",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the run has ended (completed, failed or cancelled).
    ///
    /// ```
    /// assert!(!loopwright_store::RunStatus::AwaitingApproval.is_finished());
    /// ```
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no [`RunStatus`].
///
/// ```
/// let error = "exploded".parse::<loopwright_store::RunStatus>().unwrap_err();
/// assert!(error.to_string().contains("exploded"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown run status {0:?} (expected running, awaiting_approval, completed, failed or cancelled)")]
pub struct UnknownStatus(pub String);

impl FromStr for RunStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

/// A run as a store keeps it: who runs it, where it is, its resumable state
/// (a `RunState` as JSON), its result or error once it ended, and a version
/// for compare-and-set updates.
///
/// Timestamps are Unix milliseconds stamped by the store: `created_at` by
/// [`create_run`](crate::RunStore::create_run), `updated_at` by every write;
/// the values passed in are not used.
///
/// ```
/// use loopwright_store::{RunRecord, RunStatus};
/// let run = RunRecord::new("run-1", "support-agent")
///     .with_status(RunStatus::AwaitingApproval)
///     .with_state(serde_json::json!({"messages": []}));
/// assert_eq!(run.version, loopwright_store::FIRST_RUN_VERSION);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The run's id.
    pub id: String,
    /// The agent that runs it (a name the application resolves).
    pub agent: String,
    /// The conversation or session it belongs to, if any.
    pub session: Option<String>,
    /// Where it is.
    pub status: RunStatus,
    /// Its resumable state.
    pub state: Option<Value>,
    /// Its result, once completed.
    pub result: Option<Value>,
    /// Its error, once failed.
    pub error: Option<Value>,
    /// The process or worker running it.
    pub owner: Option<String>,
    /// Writes so far ([`FIRST_RUN_VERSION`] once created).
    pub version: u64,
    /// When it was created (Unix milliseconds).
    pub created_at: i64,
    /// When it was last written (Unix milliseconds).
    pub updated_at: i64,
}

impl RunRecord {
    /// A running run of `agent`, with no state yet, stamped now.
    pub fn new(id: impl Into<String>, agent: impl Into<String>) -> Self {
        let now = now_millis();
        Self {
            id: id.into(),
            agent: agent.into(),
            session: None,
            status: RunStatus::Running,
            state: None,
            result: None,
            error: None,
            owner: None,
            version: FIRST_RUN_VERSION,
            created_at: now,
            updated_at: now,
        }
    }

    /// With this status.
    pub fn with_status(mut self, status: RunStatus) -> Self {
        self.status = status;
        self
    }

    /// With this resumable state.
    pub fn with_state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Belonging to this session.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Run by this owner.
    pub fn with_owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
