//! A run's events, followed in the store's event log as they come: any
//! replica follows them, and a client that reconnects after event N (an SSE
//! client's `Last-Event-ID`) gets exactly the events after that one.
//!
//! Invariants: each event is sent once, in sequence order, with its
//! sequence number; the following ends after the `finished` event, or when
//! the run's record says it ended and no event follows (a replica that died
//! between the two writes), or as soon as the receiver is gone, even while
//! the run is quiet; a paused run is followed on; a store that cannot be
//! read ends it with [`Logged::Unreadable`], never silently.

use std::sync::Arc;
use std::time::Duration;

use loopwright_store::Store;
use serde_json::Value;
use tokio::sync::mpsc;

/// Events read per query.
const PAGE: usize = 256;

/// How long the tail waits for a wake before it looks at the run's record.
const RECORD_CHECK: Duration = Duration::from_secs(2);

/// What [`follow`] reads from a run's log.
///
/// ```
/// use loopwright_runs::Logged;
/// let logged = Logged::Event(0, serde_json::json!({"type": "run_started"}));
/// assert!(matches!(logged, Logged::Event(0, _)));
/// ```
#[derive(Debug, Clone)]
pub enum Logged {
    /// An event and its sequence number.
    Event(u64, Value),
    /// The log cannot be read (the last thing sent).
    Unreadable(String),
}

/// Send `run_id`'s events after `after` to `tx`, each as `wrap` makes it,
/// until the run finishes (its `finished` event is the last one sent) or
/// `tx` closes.
///
/// ```
/// # async fn demo(store: std::sync::Arc<dyn loopwright_store::Store>) {
/// use loopwright_runs::{Logged, follow};
/// // Every event after the 10th as one line of text.
/// let (tx, mut rx) = tokio::sync::mpsc::channel(64);
/// tokio::spawn(follow(store, "run_0123".into(), Some(10), tx, |logged| match logged {
///     Logged::Event(seq, event) => format!("{seq}: {event}"),
///     Logged::Unreadable(why) => format!("error: {why}"),
/// }));
/// while let Some(line) = rx.recv().await {
///     println!("{line}");
/// }
/// # }
/// ```
pub async fn follow<T: Send>(
    store: Arc<dyn Store>,
    run_id: String,
    after: Option<u64>,
    tx: mpsc::Sender<T>,
    wrap: impl Fn(Logged) -> T + Send,
) {
    let mut subscription = match store.subscribe_events(&run_id).await {
        Ok(subscription) => subscription,
        Err(e) => return unreadable(&tx, &wrap, e).await,
    };
    let mut last = after;
    loop {
        let page = match store.read_events(&run_id, last, PAGE).await {
            Ok(page) => page,
            Err(e) => return unreadable(&tx, &wrap, e).await,
        };
        let full = page.len() == PAGE;
        for (seq, event) in page {
            last = Some(seq);
            let finished = event.get("type").and_then(Value::as_str) == Some("finished");
            if tx.send(wrap(Logged::Event(seq, event))).await.is_err() || finished {
                return;
            }
        }
        if full {
            continue;
        }
        let woken = tokio::select! {
            () = tx.closed() => return,
            woken = tokio::time::timeout(RECORD_CHECK, subscription.wait()) => woken,
        };
        match woken {
            Ok(()) => {}
            Err(_) => {
                // Quiet for a while: has the run ended without its
                // `finished` event (its replica died between the writes)?
                let ended = matches!(store.load_run(&run_id).await, Ok(Some(r)) if r.status.is_finished());
                if ended && matches!(store.read_events(&run_id, last, 1).await, Ok(rest) if rest.is_empty()) {
                    return;
                }
            }
        }
    }
}

/// Tell the follower the run's events cannot be read (a follower that left
/// is told nothing: there is nobody to tell).
async fn unreadable<T>(tx: &mpsc::Sender<T>, wrap: &impl Fn(Logged) -> T, e: impl std::fmt::Display) {
    let _ = tx
        .send(wrap(Logged::Unreadable(format!(
            "the run's events cannot be read: {e}"
        ))))
        .await;
}
