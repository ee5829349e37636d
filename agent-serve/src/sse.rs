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
pub(crate) async fn closed_or<S, T>(tx: &mpsc::Sender<S>, wait: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        () = tx.closed() => None,
        value = wait => Some(value),
    }
}

/// Drive `started` to its end, sending what `render` makes of each piece
/// the client sees. The result, why it stopped and the structured answer
/// to show; `None` when the client left or the run failed (the failure was
/// sent as `failure` makes it).
pub(crate) async fn relay(
    started: crate::run::Started,
    structured: bool,
    tx: &mpsc::Sender<Event>,
    mut render: impl FnMut(crate::run::Piece) -> Vec<Event>,
    failure: impl Fn(&str) -> Event,
) -> Option<(loopwright_core::AgentResult, crate::run::Stop, Option<String>)> {
    use futures::StreamExt;
    let mut started = started;
    let mut transcript = crate::run::Transcript::new(structured);
    loop {
        let event = closed_or(tx, started.run.next()).await?;
        let Some(event) = event else { break };
        let Some(piece) = transcript.piece(&event) else {
            continue;
        };
        for e in render(piece) {
            tx.send(e).await.ok()?;
        }
    }
    let message = match started.run.await.or_else(loopwright_core::RunError::into_result) {
        Ok(result) => match crate::run::ending(&result) {
            crate::run::Ending::Answer { stop, output } => return Some((result, stop, output)),
            crate::run::Ending::Failed(message) => message,
        },
        Err(aborted) => format!("the run stopped without a result: {aborted}"),
    };
    let _ = tx.send(failure(&message)).await;
    None
}
