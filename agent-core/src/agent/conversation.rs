//! [`Conversation`]: a history that outlives its runs, persisted as JSON.
//!
//! Invariant: a turn's messages join the history when its run ends, however
//! it ended, so the history says what happened (a tool that ran is never
//! forgotten) and keeps one result per tool call; a turn that compacted
//! the history replaces it with the compacted one. A turn that ended before
//! the model said anything (an authentication error, a cancellation before
//! the first answer) leaves the history as it was, so the same prompt can be
//! sent again; so does a turn dropped before it ended.

use std::future::IntoFuture;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};

use super::Agent;
use super::events::AgentEvent;
use super::outcome::AgentResult;
use super::run::{AgentRun, RunAborted, RunError};
use loopwright_types::Message;
use loopwright_types::Usage;

/// A conversation kept across turns: plain data, so it serialises to JSON and
/// back, and any agent can take the next turn (a cheaper model for a quick
/// question, another with more tools).
///
/// ```no_run
/// use loopwright_core::{Agent, Conversation};
/// # async fn demo(agent: Agent) -> Result<(), Box<dyn std::error::Error>> {
/// let mut chat = Conversation::new();
/// let first = chat.send(&agent, "My name is Ada.").await?;
/// std::fs::write("chat.json", serde_json::to_string(&chat)?)?;
///
/// let mut chat: Conversation = serde_json::from_str(&std::fs::read_to_string("chat.json")?)?;
/// let second = chat.send(&agent, "What is my name?").await?;
/// assert_eq!(chat.turns(), 2);
/// # let _ = (first, second); Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Conversation {
    /// Every message so far, in order.
    #[serde(default)]
    messages: Vec<Message>,
    /// Usage of every turn so far.
    #[serde(default)]
    usage: Usage,
    /// Turns that joined the history.
    #[serde(default)]
    turns: u32,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// A conversation continuing from these messages.
    ///
    /// ```
    /// let chat = loopwright_core::Conversation::from_messages(vec![loopwright_core::Message::user("hi")]);
    /// assert_eq!(chat.messages().len(), 1);
    /// ```
    pub fn from_messages(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// The messages so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Usage of every turn so far (turns that ended badly included).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Turns that joined the history.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Send a user prompt, or any message (images, several parts), to
    /// `agent` with this history. The returned turn streams the run's
    /// events like an [`AgentRun`]; awaiting it gives the result. The
    /// history holds the turn once its run has ended.
    pub fn send<'a>(&'a mut self, agent: &Agent, prompt: impl Into<TurnInput>) -> Turn<'a> {
        let message = prompt.into().0;
        let mut messages = self.messages.clone();
        messages.push(message.clone());
        let run = agent.run(messages);
        Turn {
            conversation: self,
            prompt: Some(message),
            run,
            finished: None,
        }
    }

    /// Add a finished run's messages after its prompt (see the module's
    /// invariant).
    fn commit(&mut self, prompt: Message, result: &AgentResult) {
        self.usage += result.usage;
        if let Some(history) = &result.history {
            // Compacted: the history holds the prompt and the turn.
            self.messages.clone_from(history);
            self.turns += 1;
            return;
        }
        if result.messages.is_empty() {
            return;
        }
        self.messages.push(prompt);
        self.messages.extend(result.messages.iter().cloned());
        self.turns += 1;
    }
}

/// What a conversation's turn sends: a prompt or a message.
///
/// ```
/// use loopwright_core::{Message, agent::TurnInput};
/// let _: TurnInput = "Hi".into();
/// let _: TurnInput = Message::user("Hi").into();
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TurnInput(Message);

impl TurnInput {
    /// The message sent.
    pub fn into_message(self) -> Message {
        self.0
    }
}

impl From<&str> for TurnInput {
    fn from(prompt: &str) -> Self {
        Self(Message::user(prompt))
    }
}

impl From<String> for TurnInput {
    fn from(prompt: String) -> Self {
        Self(Message::user(prompt))
    }
}

impl From<Message> for TurnInput {
    fn from(message: Message) -> Self {
        Self(message)
    }
}

/// One turn of a [`Conversation`]: a stream of [`AgentEvent`]s, then the
/// result. The turn joins the conversation once its run has ended: when the
/// `finished` event is read, when the result is taken, or when the turn is
/// dropped after its run ended. Dropping it before cancels the run and
/// leaves the conversation as it was.
#[must_use = "a turn is cancelled when dropped: read its events, or await it"]
pub struct Turn<'a> {
    conversation: &'a mut Conversation,
    /// Taken once the turn is committed.
    prompt: Option<Message>,
    run: AgentRun,
    /// The result, once it was committed while the events were read.
    finished: Option<AgentResult>,
}

impl Turn<'_> {
    /// Cancel the turn's run.
    pub fn cancel(&self) {
        self.run.cancel();
    }

    /// Drain the events not read yet; the result however the run ended.
    async fn into_outcome(mut self) -> Result<AgentResult, RunAborted> {
        if let Some(result) = self.finished.take() {
            return Ok(result);
        }
        while self.run.next().await.is_some() {}
        self.commit_finished();
        self.finished.take().ok_or(RunAborted)
    }

    /// Commit the run's result if it is there and the turn is not committed
    /// yet.
    fn commit_finished(&mut self) {
        if self.prompt.is_some()
            && let Some(Ok(result)) = self.run.take_finished()
            && let Some(prompt) = self.prompt.take()
        {
            self.conversation.commit(prompt, &result);
            self.finished = Some(result);
        }
    }
}

impl Drop for Turn<'_> {
    /// A turn whose run ended joins the conversation even when its events
    /// were not read to the end.
    fn drop(&mut self) {
        self.commit_finished();
    }
}

impl<'a> IntoFuture for Turn<'a> {
    type Output = Result<AgentResult, RunError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    /// Drain the events not read yet; the result as awaiting an
    /// [`AgentRun`] gives it. The conversation holds the turn.
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { RunError::check(self.into_outcome().await?) })
    }
}

impl Stream for Turn<'_> {
    type Item = AgentEvent;

    /// The run's events; at `finished` (the result is sent just before it)
    /// the turn joins the conversation.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = &mut *self;
        let next = Pin::new(&mut this.run).poll_next(cx);
        if let Poll::Ready(None | Some(AgentEvent::Finished { .. })) = &next {
            this.commit_finished();
        }
        next
    }
}
