//! This replica's Restate endpoint: the workflow served over HTTP/2 on the
//! listen address, registered with Restate's admin API at start.
//!
//! Invariants: the endpoint serves before it is registered (registration
//! asks it what it serves); registering is idempotent, so N replicas behind
//! one advertised address start in any order; at the end of the shutdown's
//! grace every execution still here is dropped, writing nothing, and Restate
//! continues it on another replica.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use restate_sdk::hyper::HyperEndpoint;
use restate_sdk::prelude::{Endpoint, IntoServiceDefinition};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::{RestateError, RunWorkflow};
use crate::{Host, Runs};

/// HTTP/2 pings on Restate's connections: one after `interval` of
/// silence, the connection closed when it is not answered within
/// `timeout`.
#[derive(Debug, Clone, Copy)]
struct Pings {
    interval: Duration,
    timeout: Duration,
}

impl Runs {
    /// Serve the durable runs' workflow on `listener` (bound to the
    /// [`Restate::listen`](super::Restate::listen) address) for `host`
    /// until it stops, and register it with Restate: the serving task and
    /// the deployment's id. Restate's connections are pinged after
    /// `ping_interval` of silence and closed when a ping goes unanswered for
    /// `ping_timeout` (a half-open one is closed, and its executions with
    /// it). An error when these runs are not durable
    /// ([`Runs::with_restate`]) or Restate did not take the endpoint.
    ///
    /// ```no_run
    /// # async fn demo(runs: std::sync::Arc<loopwright_runs::Runs>, host: std::sync::Arc<dyn loopwright_runs::Host>) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// let listener = tokio::net::TcpListener::bind("0.0.0.0:9080").await?;
    /// let (task, deployment) = runs
    ///     .serve_restate(listener, host, Duration::from_secs(20), Duration::from_secs(20))
    ///     .await?;
    /// println!("registered as {deployment}");
    /// # drop(task); Ok(()) }
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "restate")))]
    pub async fn serve_restate(
        self: &Arc<Self>,
        listener: TcpListener,
        host: Arc<dyn Host>,
        ping_interval: Duration,
        ping_timeout: Duration,
    ) -> Result<(JoinHandle<()>, String), RestateError> {
        let Some(client) = &self.restate else {
            return Err(RestateError::not_configured());
        };
        let config = &client.config;
        let (stopping, hard) = (host.stopping().clone(), host.hard_stop().clone());
        let endpoint = Endpoint::builder()
            .bind(
                RunWorkflow {
                    runs: self.clone(),
                    host,
                    overlap_below: config.overlap_below(),
                }
                .into_service_definition()
                .options(config.service_options()),
            )
            .build();
        let pings = Pings {
            interval: ping_interval,
            timeout: ping_timeout,
        };
        let task = tokio::spawn(serve(listener, endpoint, stopping, hard, pings));
        match client.register().await {
            Ok(deployment) => Ok((task, deployment)),
            Err(e) => {
                task.abort();
                Err(e)
            }
        }
    }
}

/// Accept Restate's HTTP/2 connections (pinged like every surface's, so a
/// half-open one is closed, and its executions with it) until the server
/// stops accepting: then the listener closes (Restate's next connection
/// goes to another replica), each connection is told to take no new
/// invocation (GOAWAY) and finishes what it carries; at the hard stop every
/// connection (and the executions on it) is dropped.
async fn serve(
    listener: TcpListener,
    endpoint: Endpoint,
    stopping: CancellationToken,
    hard: CancellationToken,
    pings: Pings,
) {
    let endpoint = HyperEndpoint::new(endpoint);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // Each journal entry is a small frame answered by another:
                // Nagle's algorithm would hold each for the peer's delayed
                // acknowledgement (about 40 ms a step).
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "TCP_NODELAY not set on a Restate connection");
                }
                connections.spawn(connection(stream, endpoint.clone(), stopping.clone(), pings));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = stopping.cancelled() => break,
            () = hard.cancelled() => break,
        }
    }
    drop(listener);
    tokio::select! {
        () = async { while connections.join_next().await.is_some() {} } => {}
        () = hard.cancelled() => connections.abort_all(),
    }
}

/// One of Restate's connections, until it ends or is told to stop.
async fn connection(
    stream: tokio::net::TcpStream,
    endpoint: HyperEndpoint,
    stopping: CancellationToken,
    pings: Pings,
) {
    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(pings.interval)
        .keep_alive_timeout(pings.timeout)
        .serve_connection(TokioIo::new(stream), endpoint);
    let mut served = std::pin::pin!(served);
    let ended = tokio::select! {
        ended = served.as_mut() => ended,
        () = stopping.cancelled() => {
            served.as_mut().graceful_shutdown();
            served.await
        }
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "a Restate connection ended");
    }
}
