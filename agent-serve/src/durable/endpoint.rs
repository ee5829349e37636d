//! This replica's Restate endpoint: the workflow served over HTTP/2 on the
//! listen address, registered with Restate's admin API at start.
//!
//! Invariants: the endpoint serves before it is registered (registration
//! asks it what it serves); registering is idempotent, so N replicas behind
//! one advertised address start in any order; at the end of the shutdown's
//! grace every execution still here is dropped, writing nothing, and Restate
//! continues it on another replica.

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use restate_sdk::hyper::HyperEndpoint;
use restate_sdk::prelude::{Endpoint, IntoServiceDefinition};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::{Client, RunWorkflow};
use crate::ServeError;
use crate::listen::{H2_KEEP_ALIVE_INTERVAL, H2_KEEP_ALIVE_TIMEOUT};
use crate::run::{Instance, Lifecycle};
use crate::runs::Runs;

/// Bind the endpoint, serve it, register it: the serving task and the
/// deployment's id.
pub(crate) async fn start(
    client: &Client,
    runs: Arc<Runs>,
    instance: Arc<Instance>,
    lifecycle: &Lifecycle,
) -> Result<(JoinHandle<()>, String), ServeError> {
    let config = &client.config;
    let listener = TcpListener::bind(config.listen())
        .await
        .map_err(|source| ServeError::Bind {
            surface: "restate",
            addr: config.listen(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Bind {
        surface: "restate",
        addr: config.listen(),
        source,
    })?;
    let endpoint = Endpoint::builder()
        .bind(
            RunWorkflow {
                runs,
                instance,
                overlap_below: config.overlap_below(),
            }
            .into_service_definition()
            .options(config.service_options()),
        )
        .build();
    let task = tokio::spawn(serve(
        listener,
        endpoint,
        lifecycle.stopping.clone(),
        lifecycle.hard.clone(),
    ));
    match client.register().await {
        Ok(deployment) => {
            tracing::info!(
                %bound,
                advertised = %config.advertised(),
                admin = %config.admin(),
                %deployment,
                "durable runs: registered with Restate (registering again is harmless)"
            );
            Ok((task, deployment))
        }
        Err(e) => {
            task.abort();
            Err(ServeError::Restate {
                message: e.to_string(),
            })
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
                connections.spawn(connection(stream, endpoint.clone(), stopping.clone()));
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
async fn connection(stream: tokio::net::TcpStream, endpoint: HyperEndpoint, stopping: CancellationToken) {
    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT)
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
