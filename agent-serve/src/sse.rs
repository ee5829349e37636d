//! Server-sent events from a task that drives a run.
//!
//! Invariant: the task ends as soon as the client is gone, even while the
//! run is quiet (a long tool call): [`closed_or`] races each wait against
//! the channel closing, so the run (owned by the task) is dropped, which
//! cancels it.

use std::convert::Infallible;
use std::future::Future;

use axum::response::sse::{Event, KeepAlive, Sse};
use tokio::sync::mpsc;

/// Events buffered between the run and a slow client.
const SSE_BUFFER: usize = 64;

/// A stream of the events `produce` sends, with keep-alive comments so
/// proxies do not time out a long run.
pub(crate) fn event_stream<F, Fut>(produce: F) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>>
where
    F: FnOnce(mpsc::Sender<Event>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(SSE_BUFFER);
    tokio::spawn(produce(tx));
    let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// `wait`'s output, or `None` once the client is gone.
pub(crate) async fn closed_or<T>(tx: &mpsc::Sender<Event>, wait: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        () = tx.closed() => None,
        value = wait => Some(value),
    }
}
