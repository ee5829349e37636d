//! Sending events to the application.
//!
//! A durable run's emitter can hold events back: while its engine replays
//! journaled steps, what the loop sends is kept (not sent), then dropped when
//! the next step is journaled too, or sent when a step runs again, a decision
//! is waited for or the run ends (see [`crate::durable`]). An emitter that
//! does not hold (every run without an engine) sends at once.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use super::events::AgentEvent;

/// Events waiting for the application before the loop waits for it: enough to
/// absorb a burst of deltas, small enough that a stalled reader applies
/// back-pressure instead of buffering a whole answer.
pub(crate) const EVENT_BUFFER: usize = 256;

/// The receiver is gone: nobody listens to the run any more.
#[derive(Debug)]
pub(crate) struct Detached;

/// Events held while a durable run replays. Locked only to push or take,
/// never across an `.await`.
#[derive(Default)]
struct Hold {
    /// False once the replay is over: events go out at once.
    holding: bool,
    events: Vec<AgentEvent>,
    /// The engine's execution of the run (from 1); a later one announces
    /// itself with `resumed` before the first event it releases.
    attempt: u32,
}

type SharedHold = Arc<Mutex<Hold>>;

/// Keep `event` when holding; give it back otherwise.
fn keep(hold: &Option<SharedHold>, event: AgentEvent) -> Option<AgentEvent> {
    let Some(hold) = hold else { return Some(event) };
    let mut hold = hold.lock().unwrap_or_else(PoisonError::into_inner);
    if hold.holding {
        hold.events.push(event);
        None
    } else {
        Some(event)
    }
}

#[derive(Clone)]
pub(crate) struct Emitter {
    tx: mpsc::Sender<AgentEvent>,
    hold: Option<SharedHold>,
}

impl Emitter {
    /// An emitter that sends at once.
    pub fn new() -> (Self, mpsc::Receiver<AgentEvent>) {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        (Self { tx, hold: None }, rx)
    }

    /// An emitter that holds events until [`Emitter::release`] (a durable
    /// run in its `attempt`th execution, whose engine may replay first).
    pub fn holding(attempt: u32) -> (Self, mpsc::Receiver<AgentEvent>) {
        let (mut emit, rx) = Self::new();
        emit.hold = Some(Arc::new(Mutex::new(Hold {
            holding: true,
            events: Vec::new(),
            attempt,
        })));
        (emit, rx)
    }

    pub async fn send(&self, event: AgentEvent) -> Result<(), Detached> {
        match keep(&self.hold, event) {
            Some(event) => self.tx.send(event).await.map_err(|_| Detached),
            None => Ok(()),
        }
    }

    /// Stop holding: send what was held (after `resumed`, the first time in
    /// an execution after the first), then everything at once.
    pub async fn release(&self) {
        let Some(hold) = &self.hold else { return };
        let (resumed, held) = {
            let mut hold = hold.lock().unwrap_or_else(PoisonError::into_inner);
            let first = std::mem::replace(&mut hold.holding, false);
            let resumed = (first && hold.attempt > 1).then_some(AgentEvent::Resumed {
                attempt: hold.attempt,
            });
            (resumed, std::mem::take(&mut hold.events))
        };
        for event in resumed.into_iter().chain(held) {
            let _ = self.tx.send(event).await;
        }
    }

    /// Drop what was held (its step was journaled: it went out before), and
    /// go on holding.
    pub fn discard_held(&self) {
        if let Some(hold) = &self.hold {
            hold.lock().unwrap_or_else(PoisonError::into_inner).events.clear();
        }
    }

    /// A sender that does not keep the stream open.
    pub fn downgrade(&self) -> WeakEmitter {
        WeakEmitter {
            tx: self.tx.downgrade(),
            hold: self.hold.clone(),
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
    hold: Option<SharedHold>,
}

impl WeakEmitter {
    /// `Detached` also once the run has ended (its own sender is gone).
    pub async fn send(&self, event: AgentEvent) -> Result<(), Detached> {
        let tx = self.tx.upgrade().ok_or(Detached)?;
        match keep(&self.hold, event) {
            Some(event) => tx.send(event).await.map_err(|_| Detached),
            None => Ok(()),
        }
    }
}
