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

    /// A sender that does not keep the stream open.
    pub fn downgrade(&self) -> WeakEmitter {
        WeakEmitter {
            tx: self.tx.downgrade(),
        }
    }
}

/// Sends to a run's event stream only while the run itself still holds it
/// open: what a run's tool contexts carry (through its scope), so a tool
/// that keeps its context past the call (in a detached task) cannot keep the
/// stream open, and the run's reader still sees its end.
#[derive(Clone)]
pub(crate) struct WeakEmitter {
    tx: mpsc::WeakSender<AgentEvent>,
}

impl WeakEmitter {
    /// `Detached` also once the run has ended (its own sender is gone).
    pub async fn send(&self, event: AgentEvent) -> Result<(), Detached> {
        let tx = self.tx.upgrade().ok_or(Detached)?;
        tx.send(event).await.map_err(|_| Detached)
    }
}
