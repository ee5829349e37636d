//! A run's events as server-sent events, read from the store's event log:
//! any replica serves them, and a client that reconnects with
//! `Last-Event-ID` (or `?after=N`) gets exactly the events after that one.
//!
//! Invariants: each event is sent once, in sequence order, with `id:` its
//! sequence number; the stream ends after the `finished` event, or when the
//! run's record says it ended and no event follows (a replica that died
//! between the two writes); a paused run's stream stays open; a store that
//! cannot be read ends the stream with an `error` event, never silently.

use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use loopwright_store::Store;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::sse::closed_or;

/// Events read per query.
const PAGE: usize = 256;

/// How long the tail waits for a wake before it looks at the run's record.
const RECORD_CHECK: Duration = Duration::from_secs(2);

/// Send `run_id`'s events after `after` to `tx` until the run finishes or
/// the client leaves.
pub(crate) async fn tail(store: Arc<dyn Store>, run_id: String, after: Option<u64>, tx: mpsc::Sender<Event>) {
    let mut subscription = match store.subscribe_events(&run_id).await {
        Ok(subscription) => subscription,
        Err(e) => {
            let _ = tx
                .send(error_event(&format!("the run's events cannot be read: {e}")))
                .await;
            return;
        }
    };
    let mut last = after;
    loop {
        let page = match store.read_events(&run_id, last, PAGE).await {
            Ok(page) => page,
            Err(e) => {
                let _ = tx
                    .send(error_event(&format!("the run's events cannot be read: {e}")))
                    .await;
                return;
            }
        };
        let full = page.len() == PAGE;
        for (seq, event) in page {
            last = Some(seq);
            let finished = event.get("type").and_then(Value::as_str) == Some("finished");
            let sse = Event::default().id(seq.to_string()).data(event.to_string());
            if tx.send(sse).await.is_err() || finished {
                return;
            }
        }
        if full {
            continue;
        }
        match closed_or(&tx, tokio::time::timeout(RECORD_CHECK, subscription.wait())).await {
            None => return,
            Some(Ok(())) => {}
            Some(Err(_)) => {
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

/// The stream's end when the log cannot be read: the REST error object,
/// tagged `type` like every event.
fn error_event(message: &str) -> Event {
    Event::default()
        .data(json!({"type": "error", "error": {"type": "server_error", "message": message}}).to_string())
}
