//! [`MemoryStore`]: a store in this process's memory, for tests and for
//! programs that keep nothing.
//!
//! Invariant: the same behaviour as the database back ends (versions,
//! conflicts, whole-or-absent writes, ordered events), with one lock taken
//! and released inside each call, never across an `.await`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use loopwright_core::Message;
use serde_json::Value;

use crate::codec::{chain_too_long, missing_previous, version_detail};
use crate::error::{StoreError, check_id, to_i64};
use crate::notify::{EventSubscription, Notifier};
use crate::record::{
    ConversationSummary, FIRST_RUN_VERSION, RunRecord, RunStatus, StoredChain, StoredConversation, now_millis,
};
use crate::traits::{ChainStore, ConversationStore, EventLog, RunStore};

/// A store in memory (`memory:`): gone with the process.
///
/// ```
/// # async fn demo() -> Result<(), loopwright_store::StoreError> {
/// use loopwright_store::ConversationStore;
/// let store = loopwright_store::MemoryStore::new();
/// store.append_turn("c1", 0, &[loopwright_core::Message::user("hi")]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    data: Mutex<Data>,
    notifier: Notifier,
}

#[derive(Debug, Default)]
struct Data {
    /// Messages and the number of turns.
    /// Each conversation's messages, version and last write (Unix ms).
    conversations: HashMap<String, (Vec<Message>, u64, i64)>,
    runs: HashMap<String, RunRecord>,
    events: HashMap<String, BTreeMap<u64, Value>>,
    /// Chains' turns by id.
    turns: HashMap<String, ChainTurn>,
}

/// One turn of a chain.
#[derive(Debug)]
struct ChainTurn {
    previous: Option<String>,
    depth: u64,
    messages: Vec<Message>,
    released: bool,
    created_at: i64,
    /// Turns that continue this one.
    children: usize,
}

impl Data {
    /// Deletes the released turns among `ids` that nothing continues, then
    /// each released turn before them that nothing else continues; how many.
    fn collect_turns(&mut self, mut ids: Vec<String>) -> u64 {
        let mut deleted = 0;
        while let Some(id) = ids.pop() {
            if !self.turns.get(&id).is_some_and(|t| t.released && t.children == 0) {
                continue;
            }
            let Some(turn) = self.turns.remove(&id) else {
                continue;
            };
            deleted += 1;
            if let Some(previous) = turn.previous
                && let Some(before) = self.turns.get_mut(&previous)
            {
                before.children = before.children.saturating_sub(1);
                ids.push(previous);
            }
        }
        deleted
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn data(&self) -> MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl ConversationStore for MemoryStore {
    async fn load_conversation(&self, id: &str) -> Result<Option<StoredConversation>, StoreError> {
        Ok(self
            .data()
            .conversations
            .get(id)
            .map(|(messages, version, _)| StoredConversation::new(id, messages.clone(), *version)))
    }

    async fn append_turn(
        &self,
        id: &str,
        expected_version: u64,
        messages: &[Message],
    ) -> Result<u64, StoreError> {
        check_id(id, "conversation")?;
        to_i64(expected_version + 1, "version")?;
        let mut data = self.data();
        let found = data.conversations.get(id).map(|(_, version, _)| *version);
        if found.unwrap_or(0) != expected_version {
            return Err(StoreError::conflict(
                format!("conversation {id:?}"),
                version_detail(expected_version, found),
            ));
        }
        let entry = data.conversations.entry(id.to_owned()).or_default();
        entry.0.extend_from_slice(messages);
        entry.1 = expected_version + 1;
        entry.2 = now_millis();
        Ok(entry.1)
    }

    async fn delete_conversation(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.data().conversations.remove(id).is_some())
    }

    async fn list_conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>, StoreError> {
        let data = self.data();
        let mut listed: Vec<ConversationSummary> = data
            .conversations
            .iter()
            .map(|(id, (_, version, at))| ConversationSummary::new(id.clone(), *version, *at))
            .collect();
        listed.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        listed.truncate(limit);
        Ok(listed)
    }
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        check_id(&run.id, "run")?;
        let mut data = self.data();
        if data.runs.contains_key(&run.id) {
            return Err(StoreError::conflict(
                format!("run {:?}", run.id),
                "it exists already",
            ));
        }
        let mut stored = run.clone();
        let now = now_millis();
        stored.version = FIRST_RUN_VERSION;
        stored.created_at = now;
        stored.updated_at = now;
        data.runs.insert(run.id.clone(), stored);
        Ok(())
    }

    async fn load_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        Ok(self.data().runs.get(id).cloned())
    }

    async fn update_run(&self, run: &RunRecord, expected_version: u64) -> Result<u64, StoreError> {
        to_i64(expected_version + 1, "version")?;
        let mut data = self.data();
        let Some(stored) = data.runs.get_mut(&run.id) else {
            return Err(StoreError::conflict(
                format!("run {:?}", run.id),
                version_detail(expected_version, None),
            ));
        };
        if stored.version != expected_version {
            return Err(StoreError::conflict(
                format!("run {:?}", run.id),
                version_detail(expected_version, Some(stored.version)),
            ));
        }
        let created_at = stored.created_at;
        *stored = run.clone();
        stored.version = expected_version + 1;
        stored.created_at = created_at;
        stored.updated_at = now_millis();
        Ok(stored.version)
    }

    async fn list_runs(&self, status: Option<RunStatus>, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let data = self.data();
        let mut runs: Vec<RunRecord> = data
            .runs
            .values()
            .filter(|run| status.is_none_or(|status| run.status == status))
            .cloned()
            .collect();
        runs.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn session_runs(&self, session: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let data = self.data();
        let mut runs: Vec<RunRecord> = data
            .runs
            .values()
            .filter(|run| run.session.as_deref() == Some(session))
            .cloned()
            .collect();
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn delete_run(&self, id: &str) -> Result<bool, StoreError> {
        let mut data = self.data();
        data.events.remove(id);
        Ok(data.runs.remove(id).is_some())
    }

    async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, StoreError> {
        let mut data = self.data();
        let mut doomed: Vec<(i64, String)> = data
            .runs
            .values()
            .filter(|run| run.status != RunStatus::Running && run.updated_at < cutoff)
            .map(|run| (run.updated_at, run.id.clone()))
            .collect();
        doomed.sort();
        doomed.truncate(limit);
        for (_, id) in &doomed {
            data.runs.remove(id);
            data.events.remove(id);
        }
        Ok(doomed.len() as u64)
    }
}

#[async_trait]
impl ChainStore for MemoryStore {
    async fn put_turn(
        &self,
        id: &str,
        previous: Option<&str>,
        messages: &[Message],
    ) -> Result<u64, StoreError> {
        check_id(id, "turn")?;
        if previous == Some(id) {
            return Err(StoreError::Invalid(format!("turn {id:?} cannot continue itself")));
        }
        let mut data = self.data();
        if data.turns.contains_key(id) {
            return Err(StoreError::conflict(format!("turn {id:?}"), "it exists already"));
        }
        let depth = match previous {
            None => 1,
            Some(previous) => match data.turns.get_mut(previous) {
                Some(before) => {
                    before.children += 1;
                    before.depth + 1
                }
                None => return Err(missing_previous(id, previous)),
            },
        };
        to_i64(depth, "depth")?;
        data.turns.insert(
            id.to_owned(),
            ChainTurn {
                previous: previous.map(str::to_owned),
                depth,
                messages: messages.to_vec(),
                released: false,
                created_at: now_millis(),
                children: 0,
            },
        );
        Ok(depth)
    }

    async fn load_chain(&self, id: &str, max_turns: u64) -> Result<Option<StoredChain>, StoreError> {
        let data = self.data();
        let Some(last) = data.turns.get(id).filter(|turn| !turn.released) else {
            return Ok(None);
        };
        if last.depth > max_turns {
            return Err(chain_too_long(id, last.depth, max_turns));
        }
        let mut turns = Vec::new();
        let mut at = Some((id, last));
        for depth in (1..=last.depth).rev() {
            let Some((turn_id, turn)) = at.filter(|(_, turn)| turn.depth == depth) else {
                return Err(StoreError::corrupt(
                    format!("turn {id:?}"),
                    format!("its chain has no turn at depth {depth}"),
                ));
            };
            turns.push(&turn.messages);
            at = match &turn.previous {
                Some(previous) => Some((
                    previous.as_str(),
                    data.turns.get(previous).ok_or_else(|| {
                        StoreError::corrupt(
                            format!("turn {turn_id:?}"),
                            format!("the turn it continues, {previous:?}, is missing"),
                        )
                    })?,
                )),
                None => None,
            };
        }
        let messages = turns.into_iter().rev().flatten().cloned().collect();
        Ok(Some(StoredChain::new(id, messages, last.depth)))
    }

    async fn release_turn(&self, id: &str) -> Result<bool, StoreError> {
        let mut data = self.data();
        let Some(turn) = data.turns.get_mut(id) else {
            return Ok(false);
        };
        let was_held = !turn.released;
        turn.released = true;
        data.collect_turns(vec![id.to_owned()]);
        Ok(was_held)
    }

    async fn expire_turns(&self, cutoff: i64) -> Result<u64, StoreError> {
        let mut data = self.data();
        let mut released = Vec::new();
        for (id, turn) in &mut data.turns {
            if turn.created_at < cutoff {
                turn.released = true;
            }
            if turn.released {
                released.push(id.clone());
            }
        }
        Ok(data.collect_turns(released))
    }
}

#[async_trait]
impl EventLog for MemoryStore {
    async fn append_events(&self, run_id: &str, events: &[(u64, Value)]) -> Result<(), StoreError> {
        check_id(run_id, "run")?;
        {
            let mut data = self.data();
            let log = data.events.entry(run_id.to_owned()).or_default();
            let mut seen = std::collections::HashSet::new();
            for (seq, _) in events {
                to_i64(*seq, "sequence number")?;
                if log.contains_key(seq) || !seen.insert(*seq) {
                    return Err(StoreError::conflict(
                        format!("event {seq} of run {run_id:?}"),
                        "that sequence number is stored already",
                    ));
                }
            }
            for (seq, event) in events {
                log.insert(*seq, event.clone());
            }
        }
        self.notifier.notify(run_id);
        Ok(())
    }

    async fn read_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Value)>, StoreError> {
        let data = self.data();
        let Some(log) = data.events.get(run_id) else {
            return Ok(Vec::new());
        };
        let from = match after {
            Some(after) => std::ops::Bound::Excluded(after),
            None => std::ops::Bound::Unbounded,
        };
        Ok(log
            .range((from, std::ops::Bound::Unbounded))
            .take(limit)
            .map(|(seq, event)| (*seq, event.clone()))
            .collect())
    }

    async fn subscribe_events(&self, run_id: &str) -> Result<EventSubscription, StoreError> {
        // Only this process writes here: no poll.
        Ok(EventSubscription::new(self.notifier.subscribe(run_id), None))
    }
}
