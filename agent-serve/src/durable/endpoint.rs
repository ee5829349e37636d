//! This replica's Restate endpoint: the workflow served over HTTP/2 on the
//! listen address, registered with Restate's admin API at start.
//!
//! Invariants: the endpoint serves before it is registered (registration
//! asks it what it serves); registering is idempotent, so N replicas behind
//! one advertised address start in any order; at the end of the shutdown's
//! grace every execution still here is dropped, writing nothing, and Restate
//! continues it on another replica.

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use restate_sdk::hyper::HyperEndpoint;
use restate_sdk::prelude::{Endpoint, IntoServiceDefinition};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use super::{Client, RunWorkflow};
use crate::ServeError;
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
            RunWorkflow { runs, instance }
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

/// Accept Restate's HTTP/2 connections until the server stops accepting;
/// drop every connection (and the executions on it) at the hard stop.
async fn serve(
    listener: TcpListener,
    endpoint: Endpoint,
    stopping: tokio_util::sync::CancellationToken,
    hard: tokio_util::sync::CancellationToken,
) {
    let endpoint = HyperEndpoint::new(endpoint);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept(), if !stopping.is_cancelled() => {
                let Ok((stream, _)) = accepted else { continue };
                // Each journal entry is a small frame answered by another:
                // Nagle's algorithm would hold each for the peer's delayed
                // acknowledgement (about 40 ms a step).
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, "TCP_NODELAY not set on a Restate connection");
                }
                let endpoint = endpoint.clone();
                connections.spawn(async move {
                    let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), endpoint)
                        .await;
                    if let Err(e) = served {
                        tracing::debug!(error = %e, "a Restate connection ended");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = hard.cancelled() => break,
        }
    }
    connections.abort_all();
}
