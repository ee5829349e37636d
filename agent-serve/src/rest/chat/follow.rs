//! A chat run's log as the UI message stream: from the run's start, or,
//! for a request that decided its pending calls, from where it paused.
//!
//! Invariants: the stream ends with `finish` (the run ended, or paused:
//! `finishReason` `tool-calls`) or an `error` chunk, then `[DONE]`; a
//! paused run's stream ends only once its record says it awaits its
//! decisions, so the client's next request finds it paused; the stream
//! of a run already going (a resumed one) starts at its log's first event,
//! and the chunks it gives are the same as the first reader's.

use std::sync::Arc;

use axum::http::HeaderValue;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use loopwright_core::AgentEvent;
use loopwright_store::Store;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::chunks::{Chunks, Decided};
use crate::sse::{closed_or, event_stream};
use loopwright_runs::{Logged, follow};

/// Events buffered between the log's reader and the stream.
const LOG_BUFFER: usize = 64;

/// What to stream.
pub(super) struct Followed {
    pub(super) store: Arc<dyn Store>,
    /// The run, whose id is the assistant message's.
    pub(super) run_id: String,
    /// Stream the log's events after this one (`None`: all).
    pub(super) after: Option<u64>,
    /// What the request decided.
    pub(super) decided: Decided,
}

/// The UI message stream of `followed`.
pub(super) fn stream(followed: Followed) -> Response {
    let mut response = event_stream(move |tx| async move {
        let mut followed = followed;
        // Whether the client stayed to the end or not, the run goes on
        // (its stream can be resumed).
        pump(&mut followed, &tx).await;
    })
    .into_response();
    let headers = response.headers_mut();
    headers.insert("x-vercel-ai-ui-message-stream", HeaderValue::from_static("v1"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    response
}

fn chunk(value: &Value) -> Event {
    Event::default().data(value.to_string())
}

/// Send `chunks`; false once the client is gone.
async fn send(tx: &mpsc::Sender<Event>, chunks: Vec<Value>) -> bool {
    for c in chunks {
        if tx.send(chunk(&c)).await.is_err() {
            return false;
        }
    }
    true
}

/// Stream the log to its end (true) or the client's leaving (false).
async fn pump(f: &mut Followed, tx: &mpsc::Sender<Event>) -> bool {
    let decided = std::mem::take(&mut f.decided);
    let (log_tx, mut rx) = mpsc::channel(LOG_BUFFER);
    let reader = tokio::spawn(follow(f.store.clone(), f.run_id.clone(), f.after, log_tx, |l| l));
    let ended = pump_log(f, Chunks::new(decided), tx, &mut rx).await;
    reader.abort();
    ended
}

async fn pump_log(
    f: &Followed,
    mut ui: Chunks,
    tx: &mpsc::Sender<Event>,
    rx: &mut mpsc::Receiver<Logged>,
) -> bool {
    if !send(tx, vec![json!({"type": "start", "messageId": f.run_id})]).await {
        return false;
    }
    loop {
        let Some(next) = closed_or(tx, rx.recv()).await else {
            return false;
        };
        let value = match next {
            Some(Logged::Event(_, value)) => value,
            Some(Logged::Unreadable(message)) => return end_with_error(tx, &mut ui, &message).await,
            None => return ended_without_finish(f, tx, &mut ui).await,
        };
        let Ok(event) = serde_json::from_value::<AgentEvent>(value) else {
            continue;
        };
        let last = match &event {
            AgentEvent::Finished { .. } => true,
            AgentEvent::AwaitingApproval { .. } => {
                crate::run::await_record(&f.store, &f.run_id).await;
                true
            }
            _ => false,
        };
        if !send(tx, ui.of(&event)).await {
            return false;
        }
        if last {
            return tx.send(Event::default().data("[DONE]")).await.is_ok();
        }
    }
}

/// The open blocks closed, an error chunk, `[DONE]`.
async fn end_with_error(tx: &mpsc::Sender<Event>, ui: &mut Chunks, message: &str) -> bool {
    let mut chunks = ui.close();
    chunks.push(json!({"type": "error", "errorText": message}));
    send(tx, chunks).await && tx.send(Event::default().data("[DONE]")).await.is_ok()
}

/// The log's reader stopped before `finished`: the record says why.
async fn ended_without_finish(f: &Followed, tx: &mpsc::Sender<Event>, ui: &mut Chunks) -> bool {
    let message = match f.store.load_run(&f.run_id).await {
        Ok(Some(record)) => match record
            .error
            .as_ref()
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
        {
            Some(message) => message.to_owned(),
            None => format!("the run stopped writing events while it was {}", record.status),
        },
        Ok(None) => format!("run {} was deleted while it was streamed", f.run_id),
        Err(e) => format!("run {} cannot be read: {e}", f.run_id),
    };
    end_with_error(tx, ui, &message).await
}
