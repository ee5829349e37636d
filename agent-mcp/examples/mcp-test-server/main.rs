//! A deliberately misbehaving MCP server for loopwright-mcp's integration tests
//! (written with rmcp's server side; not a product; built with the
//! `test-server` feature).
//!
//! Transports: stdio (default), `--http PORT` (streamable HTTP at `/mcp`) or
//! `--ws PORT` (WebSocket at `/`, subprotocol `mcp` required). With a port
//! of 0 a free one is picked; the HTTP and WebSocket modes print
//! `listening on URL` on stdout once they accept connections.
//!
//! Faults: `--slow-init MS` delays the answer to `initialize`, `--garbage`
//! prints non-JSON lines on stdout (stdio) or sends a non-JSON SSE event
//! before every event stream (HTTP), `--pid-file PATH` writes its pid,
//! `--stderr-env NAME` prints that variable's value on stderr, `--linger-ms MS`
//! waits that long after stdin closed before exiting, `--docs-only` offers
//! one resource and no tools (`tools/list` is "method not found"). It is a
//! 2025-11-25 server (`server/discover` is "method not found", so clients
//! fall back to `initialize`) unless `--modern` makes it answer
//! `server/discover` and speak 2026-07-28 too. The
//! tools misbehave on request (see `server.rs`). In stdio mode a SIGTERM
//! is logged (`got SIGTERM`, see `TEST_SERVER_LOG`) before it exits.

mod jobs;
mod net;
mod server;

use std::time::Duration;

use rmcp::ServiceExt;

use server::TestServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let value_of = |flag: &str| args.iter().position(|a| a == flag).and_then(|p| args.get(p + 1));
    if let Some(path) = value_of("--pid-file") {
        std::fs::write(path, std::process::id().to_string())?;
    }
    let garbage = args.iter().any(|a| a == "--garbage");
    let mut server = TestServer::default();
    server.docs_only = args.iter().any(|a| a == "--docs-only");
    server.modern = args.iter().any(|a| a == "--modern");
    server.slow_init = value_of("--slow-init").map(|ms| Duration::from_millis(ms.parse().unwrap_or(60_000)));
    eprintln!("mcp-test-server starting");
    if let Some(name) = value_of("--stderr-env") {
        // A server that logs its configuration, credentials included.
        eprintln!("{name}={}", std::env::var(name).unwrap_or_default());
    }
    if let Some(port) = value_of("--http") {
        return net::serve_http(server, port.parse()?, garbage).await;
    }
    if let Some(port) = value_of("--ws") {
        return net::serve_ws(server, port.parse()?).await;
    }
    // Record a SIGTERM (then exit as a default handler would), so tests can
    // tell a server that left on stdin close from one that was signalled.
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::spawn(async move {
        if sigterm.recv().await.is_some() {
            server::log("got SIGTERM");
            std::process::exit(143);
        }
    });
    if garbage {
        // Not JSON-RPC: a well-behaved client skips or survives it.
        println!("this line is not JSON");
        println!("{{\"neither\": \"is this a message\"}}");
    }
    let linger = value_of("--linger-ms").map(|ms| Duration::from_millis(ms.parse().unwrap_or(0)));
    let service = server.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    // A server slow to shut down after stdin closed (server-everything
    // takes ~300 ms): still running, not ignoring the close.
    if let Some(linger) = linger {
        tokio::time::sleep(linger).await;
    }
    Ok(())
}
