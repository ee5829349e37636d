//! Driving a [`Render`] from a run: from a stored response's event log
//! ([`follow_log`], on any replica), or from a run of this request that is
//! not stored ([`run_direct`]); the events sent to a client or not.
//!
//! Invariants:
//! - a response's last event comes from its run's record (written before
//!   the log's `finished` event), so a stream and a later `GET` agree;
//! - a log that cannot be read ends the stream with an `error` event (the
//!   official client raises on it), never silently;
//! - a synchronous response whose client leaves is cancelled
//!   ([`CancelOnDrop`](crate::run::CancelOnDrop)), as a Chat Completions run is; a background one
//!   goes on.

use std::sync::Arc;

use axum::response::sse::Event;
use futures::StreamExt;
use loopwright_core::AgentEvent;
use loopwright_core::agent::PendingKind;
use loopwright_store::Store;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::object::{Outcome, Status};
use super::render::Render;
use crate::run::Started;
use crate::sse::closed_or;
use loopwright_runs::{Logged, follow};

/// Events buffered between the log's reader and the renderer.
const LOG_BUFFER: usize = 64;

/// Where rendered events go.
pub(super) enum Sink<'a> {
    /// Nowhere: only the response's object is wanted.
    Nowhere,
    /// To a client, skipping events up to `skip` (`starting_after`).
    Client {
        tx: &'a mpsc::Sender<Event>,
        skip: Option<u64>,
    },
}

/// How following a response ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Followed {
    /// Its last event was rendered.
    Ended,
    /// The client left first.
    ClientGone,
    /// Its log or record cannot be read (the error was sent to the client).
    Unreadable(String),
}

impl Sink<'_> {
    /// Send `events`; `false` once the client is gone.
    async fn send(&self, events: Vec<Value>) -> bool {
        let Sink::Client { tx, skip } = self else {
            return true;
        };
        for event in events {
            let seq = event["sequence_number"].as_u64().unwrap_or(0);
            if skip.is_some_and(|skip| seq <= skip) {
                continue;
            }
            let kind = event["type"].as_str().unwrap_or("message").to_owned();
            if tx
                .send(Event::default().event(kind).data(event.to_string()))
                .await
                .is_err()
            {
                return false;
            }
        }
        true
    }

    /// Wait for `next`, or `None` once the client is gone.
    async fn or_gone<T>(&self, next: impl Future<Output = T>) -> Option<T> {
        match self {
            Sink::Nowhere => Some(next.await),
            Sink::Client { tx, .. } => closed_or(tx, next).await,
        }
    }

    /// End the stream with an `error` event: the API's error event, with
    /// the `error` object the official client raises on.
    async fn fail(&self, message: &str) {
        if let Sink::Client { tx, .. } = self {
            let data = json!({
                "type": "error", "code": "server_error", "message": message, "param": null,
                "error": {"type": "server_error", "code": "server_error", "message": message},
            });
            let _ = tx
                .send(Event::default().event("error").data(data.to_string()))
                .await;
        }
    }
}

/// Render stored response `id` from its event log to its end (or the
/// client's leaving).
pub(super) async fn follow_log(
    store: Arc<dyn Store>,
    id: &str,
    render: &mut Render,
    sink: Sink<'_>,
) -> Followed {
    let (tx, mut rx) = mpsc::channel(LOG_BUFFER);
    let reader = tokio::spawn(follow(store.clone(), id.to_owned(), None, tx, |logged| logged));
    let followed = follow_events(&store, id, render, &sink, &mut rx).await;
    reader.abort();
    if let Followed::Unreadable(message) = &followed {
        sink.fail(message).await;
    }
    followed
}

async fn follow_events(
    store: &Arc<dyn Store>,
    id: &str,
    render: &mut Render,
    sink: &Sink<'_>,
    rx: &mut mpsc::Receiver<Logged>,
) -> Followed {
    if !sink.send(render.begin()).await {
        return Followed::ClientGone;
    }
    loop {
        let Some(next) = sink.or_gone(rx.recv()).await else {
            return Followed::ClientGone;
        };
        let event = match next {
            Some(Logged::Event(_, event)) => event,
            Some(Logged::Unreadable(message)) => return Followed::Unreadable(message),
            // The reader stopped without `finished`: the record says how
            // the run ended.
            None => return finish_from_record(store, id, render, sink).await,
        };
        if event.get("type").and_then(Value::as_str) == Some("finished") {
            return finish_from_record(store, id, render, sink).await;
        }
        let Ok(event) = serde_json::from_value::<AgentEvent>(event) else {
            continue;
        };
        if !sink.send(render.step(&event)).await {
            return Followed::ClientGone;
        }
        // Paused on the client's tools: the response is complete, its
        // function calls the client's to answer (a call a person decides
        // keeps a background response going).
        if let AgentEvent::AwaitingApproval { pending, .. } = &event
            && pending.iter().any(|p| p.kind == PendingKind::ClientTool)
        {
            crate::run::await_record(store, id).await;
            return finish_from_record(store, id, render, sink).await;
        }
    }
}

async fn finish_from_record(
    store: &Arc<dyn Store>,
    id: &str,
    render: &mut Render,
    sink: &Sink<'_>,
) -> Followed {
    let record = match store.load_run(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Followed::Unreadable(format!("response {id} was deleted while it was read")),
        Err(e) => return Followed::Unreadable(format!("response {id} cannot be read: {e}")),
    };
    let Some(outcome) = Outcome::of_record(&record) else {
        return Followed::Unreadable(format!(
            "response {id}: its run stopped writing events while it was {}",
            record.status
        ));
    };
    if sink.send(render.finish(outcome)).await {
        Followed::Ended
    } else {
        Followed::ClientGone
    }
}

/// Render a run of this request (a response that is not stored) to its
/// end; the run is cancelled (dropped) when the client leaves.
pub(super) async fn run_direct(started: Started, render: &mut Render, sink: Sink<'_>) -> Followed {
    let mut started = started;
    if !sink.send(render.begin()).await {
        return Followed::ClientGone;
    }
    loop {
        let Some(next) = sink.or_gone(started.run.next()).await else {
            return Followed::ClientGone;
        };
        let Some(event) = next else { break };
        if !sink.send(render.step(&event)).await {
            return Followed::ClientGone;
        }
    }
    let outcome = match started.run.await.or_else(loopwright_core::RunError::into_result) {
        Ok(result) => Outcome::of_result(&result),
        Err(aborted) => Outcome {
            status: Status::Failed(format!("the run stopped without a result: {aborted}")),
            output: None,
            usage: Default::default(),
        },
    };
    if sink.send(render.finish(outcome)).await {
        Followed::Ended
    } else {
        Followed::ClientGone
    }
}
