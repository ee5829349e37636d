//! Accepting connections for the HTTP surfaces (hyper, HTTP/1.1 and HTTP/2
//! with prior knowledge), with the limits a server on an open port needs.
//!
//! Invariants:
//! - a connection that sends nothing within the header-read timeout is
//!   closed, and so is one whose request headers are not complete within
//!   it (hyper's timer); a connection with no request in progress and no
//!   byte read or written for the idle timeout is closed too (gracefully:
//!   HTTP/2 gets `GOAWAY`), so a kept-alive connection cannot hold its slot
//!   for ever; a request in progress (a long run) is never idle;
//! - an HTTP/2 connection is pinged every [`H2_KEEP_ALIVE_INTERVAL`] and
//!   closed when a ping goes unanswered for [`H2_KEEP_ALIVE_TIMEOUT`];
//! - at most `max_connections` connections of an instance are open at once:
//!   one more is answered `503` with `Retry-After` in the surface's error
//!   shape and closed at once, so a client holding connections open can
//!   neither use up the process's file descriptors nor lock the others out
//!   for longer than the header-read timeout;
//! - these limits hold before any handler runs, so before the key check;
//! - once stopping, no connection is accepted and the open ones finish
//!   their requests, then close (HTTP/2: `GOAWAY`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, Kind, Shape};
use crate::limit::RETRY_AFTER_SECS;

/// How long a client has to send a request's headers, counted from the
/// connection's start or the end of its previous response. Long enough
/// for a slow mobile link to send a few KiB of headers; short enough that a
/// client holding idle connections frees its slots within half a minute
/// (hyper's own default; nginx uses 60 s, Go's servers commonly 10-30 s).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may stay with no request in progress and no byte
/// read or written before it is closed. Clients that keep connections
/// alive (the official OpenAI and Anthropic clients do) open a new one
/// when they come back; streamed answers write a keep-alive comment every
/// 15 s, so they are never idle while their run goes on.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Connections one instance keeps open at once. With the common soft limit
/// of 1,024 file descriptors, four surfaces at this cap still leave room
/// for MCP servers, model connections and files; raise it with the
/// descriptor limit (`ulimit -n`) for many clients.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How often an HTTP/2 connection is pinged.
pub const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(20);

/// How long an HTTP/2 ping may go unanswered before the connection closes.
pub const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the accept loop pauses after an accept error (such as running
/// out of file descriptors) before it tries again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// The limits of one instance's connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Serve `app` on `listener` until `stopping`, then until the open
/// connections are done.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shape: Shape,
    stopping: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut connections = JoinSet::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    loop {
        // Reap the connection tasks that ended.
        while connections.try_join_next().is_some() {}
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = stopping.cancelled() => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            connections.spawn(refuse(stream, peer, shape));
            continue;
        };
        // Without TCP_NODELAY a stream's small events wait for the
        // client's delayed ACK: ~40 ms a streamed answer.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
        let builder = builder.clone();
        let app = app.clone();
        let stopping = stopping.clone();
        connections.spawn(async move {
            let _slot = slot;
            connection(stream, peer, builder, app, limits, stopping).await;
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Serve one connection until it ends, closing it gracefully when it has
/// been idle too long or the server stops.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    builder: auto::Builder<TokioExecutor>,
    app: Router,
    limits: ConnLimits,
    stopping: CancellationToken,
) {
    // The version is detected from the first bytes, before hyper's own
    // timer runs: a client that sends nothing is closed here.
    match tokio::time::timeout(limits.header_read_timeout, stream.readable()).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => return,
        Err(_) => {
            tracing::debug!(%peer, "closed a connection that sent nothing");
            return;
        }
    }
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        inner: stream,
        activity: activity.clone(),
    });
    let service = Counted {
        inner: TowerToHyperService::new(app),
        activity: activity.clone(),
    };
    let connection = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(connection);
    let mut closing = false;
    loop {
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = stopping.cancelled(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = activity.idle(limits.idle_timeout), if !closing => {
                tracing::debug!(%peer, "closing an idle connection");
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// When a connection last read or wrote a byte, and how many of its
/// requests are in progress.
struct Activity {
    start: Instant,
    /// Milliseconds from `start` of the last byte read or written.
    last: AtomicU64,
    in_progress: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            last: AtomicU64::new(0),
            in_progress: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    /// Resolves once no request is in progress and nothing was read or
    /// written for `timeout`.
    async fn idle(&self, timeout: Duration) {
        loop {
            let last = self.start + Duration::from_millis(self.last.load(Ordering::Relaxed));
            let due = last + timeout;
            if Instant::now() >= due && self.in_progress.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep_until(due.max(Instant::now() + timeout / 4).into()).await;
        }
    }
}

/// A connection's I/O, noting each byte read or written.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The app, counting its requests in progress (until the response's head
/// is ready; a streamed body then writes, which counts as activity).
#[derive(Clone)]
struct Counted<S> {
    inner: S,
    activity: Arc<Activity>,
}

/// Counts a request out however its future ends.
struct InProgress(Arc<Activity>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.in_progress.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

impl<S, R> hyper::service::Service<R> for Counted<S>
where
    S: hyper::service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn call(&self, request: R) -> Self::Future {
        self.activity.in_progress.fetch_add(1, Ordering::SeqCst);
        let counted = InProgress(self.activity.clone());
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await;
            drop(counted);
            response
        })
    }
}

/// Answer a connection over the cap with a 503 and close it.
async fn refuse(mut stream: TcpStream, peer: SocketAddr, shape: Shape) {
    tracing::warn!(%peer, "refused a connection: the instance is at its connection limit");
    let error = ApiError::new(
        shape,
        Kind::Overloaded,
        "too many open connections to this server; retry later",
    );
    let body = error.body().to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {RETRY_AFTER_SECS}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(ACCEPT_ERROR_PAUSE * 20, async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}
