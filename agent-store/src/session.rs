//! [`Session`]: a [`Conversation`] kept in a store by id.
//!
//! Invariant: the session appends exactly the messages the store does not
//! have yet (its own unsaved turns, in order) at the version it loaded, as
//! one turn; a store that refuses (a conflict, the database down) leaves the
//! turn in memory, unsaved, and the caller has its result. Nothing is ever
//! rewritten: a turn is an append.

use std::future::IntoFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use loopwright_core::{
    Agent, AgentEvent, AgentResult, Conversation, Message, RunError, agent::Turn, agent::TurnInput,
};

use crate::error::StoreError;
use crate::traits::Store;

/// A conversation loaded from a store by id, whose turns are appended to
/// the store as they end. Another process may append to the same id: the
/// one that loaded the older version gets [`SessionError::Store`] with a
/// [`StoreError::Conflict`], keeps its turn's result, and can
/// [`reload`](Session::reload) and send again.
///
/// ```no_run
/// # async fn demo(agent: loopwright_core::Agent) -> Result<(), Box<dyn std::error::Error>> {
/// use futures::StreamExt;
/// use loopwright_store::Session;
///
/// let store = loopwright_store::open("sqlite:chats.db").await?;
/// let mut chat = Session::load(store.clone(), "user-42").await?;
/// let mut turn = chat.send(&agent, "What did we decide yesterday?");
/// while let Some(event) = turn.next().await {
///     if let loopwright_core::AgentEvent::TextDelta { text } = event { print!("{text}") }
/// }
/// let result = turn.await?; // stored now (or an error saying why not)
/// # let _ = result; Ok(()) }
/// ```
#[derive(Debug)]
pub struct Session {
    store: Arc<dyn Store>,
    id: String,
    conversation: Conversation,
    /// The stored version the conversation was built on.
    version: u64,
    /// How many of the conversation's messages the store has.
    stored: usize,
}

impl Session {
    /// Loads conversation `id` (an empty one when the store has none).
    pub async fn load(store: Arc<dyn Store>, id: impl Into<String>) -> Result<Self, StoreError> {
        let id = id.into();
        let (messages, version) = match store.load_conversation(&id).await? {
            Some(stored) => (stored.messages, stored.version),
            None => (Vec::new(), 0),
        };
        Ok(Self {
            store,
            stored: messages.len(),
            conversation: Conversation::from_messages(messages),
            id,
            version,
        })
    }

    /// Drops what was not stored and loads the conversation again (after a
    /// conflict: then send again).
    pub async fn reload(&mut self) -> Result<(), StoreError> {
        let fresh = Self::load(self.store.clone(), self.id.clone()).await?;
        *self = fresh;
        Ok(())
    }

    /// The conversation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The stored version this session is at.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The conversation in memory (stored turns, then unsaved ones).
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// Every message in memory.
    pub fn messages(&self) -> &[Message] {
        self.conversation.messages()
    }

    /// The messages in memory the store does not have (a turn whose store
    /// write failed, or one whose [`SessionTurn`] was dropped before it was
    /// stored).
    pub fn unsaved(&self) -> &[Message] {
        self.conversation
            .messages()
            .get(self.stored..)
            .unwrap_or_default()
    }

    /// Appends the [`unsaved`](Self::unsaved) messages as one turn (after a
    /// [`StoreError::Unavailable`], say); returns the new version, or the
    /// current one when there was nothing to store.
    pub async fn save(&mut self) -> Result<u64, StoreError> {
        let unsaved = self.unsaved().to_vec();
        if unsaved.is_empty() {
            return Ok(self.version);
        }
        self.version = self.store.append_turn(&self.id, self.version, &unsaved).await?;
        self.stored += unsaved.len();
        Ok(self.version)
    }

    /// Sends a user prompt, or any message (images, several parts), to
    /// `agent`; the turn streams like [`Conversation::send`]'s and is
    /// stored when its result is taken.
    pub fn send<'a>(&'a mut self, agent: &Agent, prompt: impl Into<TurnInput>) -> SessionTurn<'a> {
        let message: Message = prompt.into().into_message();
        let unsaved = self.unsaved().to_vec();
        let Session {
            store,
            id,
            conversation,
            version,
            stored,
        } = self;
        SessionTurn {
            turn: conversation.send(agent, message.clone()),
            prompt: message,
            unsaved,
            store,
            id,
            version,
            stored,
        }
    }
}

/// Why a [`Session`]'s turn did not end stored with an answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The run did not end with an answer (as awaiting its [`Turn`] says);
    /// what it did was stored like any turn.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The turn ran but the store did not take it: a
    /// [`StoreError::Conflict`] (another writer appended first: reload and
    /// send again), the database down ([`Session::save`] later), ... The
    /// turn stays in the session's memory, unsaved; here is its result.
    #[error("the turn ran but was not stored: {error}")]
    Store {
        /// Why the store refused.
        #[source]
        error: StoreError,
        /// The turn's result, however the run ended.
        result: Box<AgentResult>,
    },
}

impl SessionError {
    /// Whether another writer appended first (reload and send again).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Store { error, .. } if error.is_conflict())
    }

    /// The turn's result, when the run got one.
    pub fn result(&self) -> Option<&AgentResult> {
        match self {
            Self::Run(error) => error.result(),
            Self::Store { result, .. } => Some(result),
        }
    }
}

/// One turn of a [`Session`]: the run's events as a [`Stream`], then
/// `.await` on it, which stores the turn.
/// Dropped without that, the turn still joins the session's memory once its
/// run ended, unsaved: the next turn or [`Session::save`] stores it.
#[must_use = "a turn is cancelled when dropped, and stored only by `.await`"]
pub struct SessionTurn<'a> {
    turn: Turn<'a>,
    prompt: Message,
    /// The session's unsaved messages before this turn.
    unsaved: Vec<Message>,
    store: &'a Arc<dyn Store>,
    id: &'a str,
    version: &'a mut u64,
    stored: &'a mut usize,
}

impl SessionTurn<'_> {
    /// Cancels the turn's run.
    pub fn cancel(&self) {
        self.turn.cancel();
    }

    /// Drains the events not read yet and appends the turn to the store; the
    /// result as awaiting a [`Turn`] gives it, or [`SessionError::Store`]
    /// with the result when the store refused.
    async fn into_result(self) -> Result<AgentResult, SessionError> {
        let Self {
            turn,
            prompt,
            mut unsaved,
            store,
            id,
            version,
            stored,
        } = self;
        let result = match turn.await.or_else(RunError::into_result) {
            Ok(result) => result,
            Err(aborted) => return Err(SessionError::Run(RunError::Aborted(aborted))),
        };
        // What `Conversation` added (see its invariant): the prompt and the
        // run's messages, unless the model said nothing.
        if !result.messages.is_empty() {
            unsaved.push(prompt);
            unsaved.extend(result.messages.iter().cloned());
        }
        if !unsaved.is_empty() {
            match store.append_turn(id, *version, &unsaved).await {
                Ok(new_version) => {
                    *version = new_version;
                    *stored += unsaved.len();
                }
                Err(error) => {
                    return Err(SessionError::Store {
                        error,
                        result: Box::new(result),
                    });
                }
            }
        }
        result.into_answer().map_err(SessionError::Run)
    }
}

impl<'a> IntoFuture for SessionTurn<'a> {
    type Output = Result<AgentResult, SessionError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.into_result())
    }
}

impl Stream for SessionTurn<'_> {
    type Item = AgentEvent;

    /// The run's events, as [`Turn`] gives them.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        Pin::new(&mut self.turn).poll_next(cx)
    }
}
