//! [`Responder`]: the answer slot an event carries when the loop waits for
//! the application (an approval, a plan decision).
//!
//! Invariants: clones share one slot and the first answer counts; once every
//! clone is dropped unanswered the waiting side sees its receiver closed,
//! so it can tell "nobody will answer" from "not answered yet".

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// Answers one waiting question with a `T`. Cloning shares the same answer
/// slot: the first answer counts, later ones are ignored.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (responder, rx) = loopwright_types::Responder::<u32>::new();
/// let copy = responder.clone();
/// assert!(responder.respond(7));
/// assert!(!copy.respond(8));
/// assert_eq!(rx.await.unwrap(), 7);
/// # }
/// ```
#[derive(Debug)]
pub struct Responder<T> {
    slot: Arc<Mutex<Option<oneshot::Sender<T>>>>,
}

impl<T> Responder<T> {
    /// A responder and the receiver of its answer.
    pub fn new() -> (Self, oneshot::Receiver<T>) {
        let (tx, rx) = oneshot::channel();
        (
            Self {
                slot: Arc::new(Mutex::new(Some(tx))),
            },
            rx,
        )
    }

    /// Answer. Returns false when already answered (or nobody waits any
    /// more).
    pub fn respond(&self, answer: T) -> bool {
        let sender = self.slot.lock().ok().and_then(|mut slot| slot.take());
        sender.is_some_and(|tx| tx.send(answer).is_ok())
    }
}

impl<T> Clone for Responder<T> {
    fn clone(&self) -> Self {
        Self {
            slot: self.slot.clone(),
        }
    }
}

/// A responder nobody waits for (what a deserialised event holds).
impl<T> Default for Responder<T> {
    fn default() -> Self {
        Self {
            slot: Arc::new(Mutex::new(None)),
        }
    }
}

/// Two responders are equal when they share a slot.
impl<T> PartialEq for Responder<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.slot, &other.slot)
    }
}
