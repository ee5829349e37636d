//! JSON in and out of the databases, and the rows both SQL back ends read.
//!
//! Invariant: what is written is serde_json's own text, so it always reads
//! back; what does not read back is [`StoreError::Corrupt`] naming the table
//! and the row's key.

use loopwright_core::Message;
use serde_json::Value;

use crate::error::{StoreError, to_u64};
use crate::record::{RunRecord, RunStatus, StoredChain, StoredConversation};

pub(crate) const TURNS: &str = "loopwright_conversation_turns";
pub(crate) const RUNS: &str = "loopwright_runs";
pub(crate) const EVENTS: &str = "loopwright_events";
pub(crate) const CHAIN_TURNS: &str = "loopwright_chain_turns";

/// JSON text of `value` (serialising our own types cannot fail; if it did,
/// the error says what).
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("{what} does not serialise: {e}")))
}

pub(crate) fn optional_json(value: Option<&Value>, what: &str) -> Result<Option<String>, StoreError> {
    value.map(|v| to_json(v, what)).transpose()
}

fn decode<T: serde::de::DeserializeOwned>(
    text: &str,
    location: impl FnOnce() -> String,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::corrupt(location(), e.to_string()))
}

/// One stored turn: its version and its messages' JSON.
pub(crate) struct TurnRow {
    pub(crate) version: i64,
    pub(crate) messages: String,
}

/// Folds a conversation's turns (in version order) into one conversation;
/// `None` when there is none. A turn that does not decode, or a version out
/// of sequence, is [`StoreError::Corrupt`].
pub(crate) fn conversation(id: &str, rows: Vec<TurnRow>) -> Result<Option<StoredConversation>, StoreError> {
    if rows.is_empty() {
        return Ok(None);
    }
    let location = |version: i64| format!("{TURNS} row (conversation {id:?}, version {version})");
    let mut messages = Vec::new();
    let mut version = 0u64;
    for row in rows {
        let stored = to_u64(row.version, || location(row.version))?;
        if stored != version + 1 {
            return Err(StoreError::corrupt(
                location(row.version),
                format!("turn {} is missing (versions must run 1, 2, 3, ...)", version + 1),
            ));
        }
        let turn: Vec<Message> = decode(&row.messages, || location(row.version))?;
        messages.extend(turn);
        version = stored;
    }
    Ok(Some(StoredConversation::new(id, messages, version)))
}

/// One stored run, as text and numbers.
pub(crate) struct RunRow {
    pub(crate) id: String,
    pub(crate) agent: String,
    pub(crate) session: Option<String>,
    pub(crate) status: String,
    pub(crate) state: Option<String>,
    pub(crate) result: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) owner: Option<String>,
    pub(crate) version: i64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl RunRow {
    pub(crate) fn decode(self) -> Result<RunRecord, StoreError> {
        let location = |column: &str| format!("{RUNS} row {:?} (column {column})", self.id);
        let status: RunStatus = self.status.parse().map_err(|e: crate::record::UnknownStatus| {
            StoreError::corrupt(location("status"), e.to_string())
        })?;
        let value = |text: &Option<String>, column: &str| -> Result<Option<Value>, StoreError> {
            text.as_deref()
                .map(|t| decode(t, || location(column)))
                .transpose()
        };
        let mut record = RunRecord::new(self.id.clone(), self.agent.clone());
        record.session = self.session.clone();
        record.status = status;
        record.state = value(&self.state, "state")?;
        record.result = value(&self.result, "result")?;
        record.error = value(&self.error, "error")?;
        record.owner = self.owner.clone();
        record.version = to_u64(self.version, || location("version"))?;
        record.created_at = self.created_at;
        record.updated_at = self.updated_at;
        Ok(record)
    }
}

/// The JSON columns of a run to write.
pub(crate) struct RunJson {
    pub(crate) state: Option<String>,
    pub(crate) result: Option<String>,
    pub(crate) error: Option<String>,
}

impl RunJson {
    pub(crate) fn of(run: &RunRecord) -> Result<Self, StoreError> {
        Ok(Self {
            state: optional_json(run.state.as_ref(), "the run's state")?,
            result: optional_json(run.result.as_ref(), "the run's result")?,
            error: optional_json(run.error.as_ref(), "the run's error")?,
        })
    }
}

/// One stored event.
pub(crate) fn event(run_id: &str, seq: i64, text: &str) -> Result<(u64, Value), StoreError> {
    let location = || format!("{EVENTS} row (run {run_id:?}, seq {seq})");
    Ok((to_u64(seq, location)?, decode(text, location)?))
}

/// The error for turn `id` continuing a turn that is not stored.
pub(crate) fn missing_previous(id: &str, previous: &str) -> StoreError {
    StoreError::conflict(
        format!("turn {id:?}"),
        format!("the turn it continues, {previous:?}, is not stored (deleted or expired)"),
    )
}

/// The error for a chain longer than its reader takes.
pub(crate) fn chain_too_long(id: &str, depth: u64, max_turns: u64) -> StoreError {
    StoreError::Invalid(format!(
        "the chain ending at turn {id:?} has {depth} turns, more than the {max_turns} it may be read with"
    ))
}

/// One stored turn of a chain, as read back from its last turn: its id,
/// depth and messages' JSON.
pub(crate) struct ChainRow {
    pub(crate) id: String,
    pub(crate) depth: i64,
    pub(crate) messages: String,
}

/// Folds a chain's turns, read back from its last turn (depth `depth`), into
/// one chain; the turns must run `depth`, `depth - 1`, ..., 1 (else
/// [`StoreError::Corrupt`]).
pub(crate) fn chain(id: &str, depth: u64, rows: Vec<ChainRow>) -> Result<StoredChain, StoreError> {
    let mut turns: Vec<Vec<Message>> = Vec::with_capacity(rows.len());
    let mut expected = depth;
    for row in rows {
        let location = || format!("{CHAIN_TURNS} row {:?}", row.id);
        if expected == 0 || to_u64(row.depth, location)? != expected {
            return Err(StoreError::corrupt(
                location(),
                format!(
                    "depth {} where the chain of turn {id:?} needs {expected}",
                    row.depth
                ),
            ));
        }
        turns.push(decode(&row.messages, location)?);
        expected -= 1;
    }
    if expected != 0 {
        return Err(StoreError::corrupt(
            format!("{CHAIN_TURNS} (the chain of turn {id:?})"),
            format!("the turn at depth {expected} is missing"),
        ));
    }
    let messages = turns.into_iter().rev().flatten().collect();
    Ok(StoredChain::new(id, messages, depth))
}

/// The detail of a version conflict.
pub(crate) fn version_detail(expected: u64, found: Option<u64>) -> String {
    match found {
        Some(found) => format!("expected version {expected}, the store has {found}"),
        None => format!("expected version {expected}, the store has none"),
    }
}
