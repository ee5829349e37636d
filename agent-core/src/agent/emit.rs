//! Sending events to the application.

use tokio::sync::mpsc;

use super::events::AgentEvent;

/// Events waiting for the application before the loop waits for it: enough to
/// absorb a burst of deltas, small enough that a stalled reader applies
/// back-pressure instead of buffering a whole answer.
pub(crate) const EVENT_BUFFER: usize = 256;

/// The receiver is gone: nobody listens to the run any more.
#[derive(Debug)]
pub(crate) struct Detached;

#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::Sender<AgentEvent>,
}

impl Emitter {
    pub fn new() -> (Self, mpsc::Receiver<AgentEvent>) {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        (Self { tx }, rx)
    }

    pub async fn send(&self, event: AgentEvent) -> Result<(), Detached> {
        self.tx.send(event).await.map_err(|_| Detached)
    }
}
