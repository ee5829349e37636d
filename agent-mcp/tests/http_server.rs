//! The in-repo fault server over streamable HTTP (`mcp-test-server --http`):
//! the faults of the stdio tests, seen through rmcp's HTTP client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use loopwright_core::{ToolContext, ToolOutputPart, ToolSource, tool::ProgressReporter};
use loopwright_mcp::{McpError, McpServerConfig, McpToolSource};
use serde_json::json;

fn http(name: &str, server: &NetServer) -> McpServerConfig {
    McpServerConfig::http(name, server.url.clone())
}

#[tokio::test]
async fn pages_instructions_results_and_progress_over_http() {
    let server = NetServer::start("--http", 0, &[]).await;
    let source = connect(http("web", &server)).await;
    let names: Vec<_> = source
        .tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    assert!(names.len() >= 12, "{names:?}");
    assert!(source.instructions().unwrap().contains("call echo"));
    assert_eq!(
        call(&tool(&source, "echo").await, json!({"text": "hi"}))
            .await
            .as_text(),
        "hi"
    );
    let image = call(&tool(&source, "image").await, json!({})).await;
    assert!(matches!(image.parts[0], ToolOutputPart::Image { .. }));
    let failed = call(&tool(&source, "fail").await, json!({})).await;
    assert!(failed.is_error);
    let huge = call(&tool(&source, "huge").await, json!({"kb": 2048})).await;
    assert_eq!(huge.as_text().len(), 2048 * 1024);

    let (reporter, mut rx) = ProgressReporter::channel("p");
    let out = tool(&source, "progress")
        .await
        .call(json!({"steps": 3}), ToolContext::new("p").with_progress(reporter))
        .await
        .unwrap();
    assert_eq!(out.as_text(), "did 3 steps");
    let mut steps = Vec::new();
    while let Some(p) = rx.try_recv() {
        steps.push(p.progress);
    }
    assert_eq!(steps, [1.0, 2.0, 3.0]);
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_hanging_call_times_out_and_is_cancelled_on_the_server() {
    let log = temp_log("http-timeout");
    let server =
        NetServer::start_with("--http", 0, &[], &[("TEST_SERVER_LOG", &log.to_string_lossy())]).await;
    let source =
        connect(McpServerConfig::http("sleepy", server.url.clone()).call_timeout(Duration::from_millis(300)))
            .await;
    let out = call(&tool(&source, "slow").await, json!({"ms": 600_000})).await;
    assert!(out.is_error);
    assert!(out.as_text().contains("mcp server sleepy"), "{}", out.as_text());
    assert!(out.as_text().contains("timed out"), "{}", out.as_text());
    assert!(
        wait_for_line(&log, "cancelled slow").await,
        "server never saw notifications/cancelled"
    );
    assert_eq!(
        call(&tool(&source, "echo").await, json!({"text": "still here"}))
            .await
            .as_text(),
        "still here"
    );
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_result_then_a_restarted_server_is_reconnected() {
    let server = NetServer::start("--http", 0, &[]).await;
    let port = server.port();
    let source = connect(http("crashy", &server)).await;
    let crash = call(&tool(&source, "crash").await, json!({})).await;
    assert!(crash.is_error);
    assert!(
        crash.as_text().contains("mcp server crashy"),
        "{}",
        crash.as_text()
    );
    server.kill().await;
    // Down: a clear error naming the server, no hang.
    let down = call(&tool(&source, "echo").await, json!({"text": "x"})).await;
    assert!(down.is_error);
    assert!(down.as_text().contains("mcp server crashy"), "{}", down.as_text());
    // Back on the same port: the next call opens a new session.
    let server = NetServer::start("--http", port, &[]).await;
    let back = call(&tool(&source, "echo").await, json!({"text": "back"})).await;
    assert_eq!((back.as_text().as_str(), back.is_error), ("back", false));
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn a_slow_initialize_over_http_times_out() {
    let server = NetServer::start("--http", 0, &["--slow-init", "600000"]).await;
    let config = http("stuck", &server).connect_timeout(Duration::from_millis(500));
    let result = tokio::time::timeout(HANG_GUARD, McpToolSource::connect(config))
        .await
        .expect("connect hung");
    match result {
        Err(McpError::Timeout { server, .. }) => assert_eq!(server, "stuck"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    server.kill().await;
}

#[tokio::test]
async fn a_garbage_event_in_the_stream_is_survived() {
    let server = NetServer::start("--http", 0, &["--garbage"]).await;
    let source = connect(http("noisy", &server)).await;
    assert_eq!(
        call(&tool(&source, "echo").await, json!({"text": "ok"}))
            .await
            .as_text(),
        "ok"
    );
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn list_changed_over_http_shows_the_new_tool() {
    let server = NetServer::start("--http", 0, &[]).await;
    let source = connect(http("web", &server)).await;
    let mut changes = source.changes().unwrap();
    let before = *changes.borrow_and_update();
    assert_eq!(
        call(&tool(&source, "add_tool").await, json!({})).await.as_text(),
        "added"
    );
    tokio::time::timeout(HANG_GUARD, changes.changed())
        .await
        .expect("no list_changed over http")
        .unwrap();
    assert!(*changes.borrow() > before);
    assert_eq!(
        call(&tool(&source, "extra").await, json!({})).await.as_text(),
        "extra ran"
    );
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn configured_headers_reach_the_server_with_variables_resolved_at_connect() {
    let server = NetServer::start("--http", 0, &[]).await;
    // Cargo sets CARGO_PKG_NAME for the test process; the other has a default.
    let config = http("web", &server)
        .header("X-Package", "${CARGO_PKG_NAME}")
        .header("X-Fallback", "${AGENT_MCP_TEST_UNSET_VARIABLE:-fallback}");
    let source = connect(config).await;
    let header = tool(&source, "header").await;
    assert_eq!(
        call(&header, json!({"name": "x-package"})).await.as_text(),
        "loopwright-mcp"
    );
    assert_eq!(
        call(&header, json!({"name": "x-fallback"})).await.as_text(),
        "fallback"
    );
    source.close().await;
    server.kill().await;
}

/// Lines of the server log equal to `line`.
fn count_lines(log: &std::path::Path, line: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

#[tokio::test]
async fn a_call_delivered_whose_reply_is_lost_is_not_sent_again() {
    let log = temp_log("http-lost-reply");
    let server =
        NetServer::start_with("--http", 0, &[], &[("TEST_SERVER_LOG", &log.to_string_lossy())]).await;
    let proxy = LossyProxy::start(&server.url).await;
    let source = connect(McpServerConfig::http("lossy", proxy.url.clone())).await;
    let echo = tool(&source, "echo").await;

    proxy.lose_replies(true);
    let lost = call(&echo, json!({"text": "once"})).await;
    assert!(lost.is_error, "{}", lost.as_text());
    assert!(lost.as_text().contains("mcp server lossy"), "{}", lost.as_text());
    assert!(
        lost.as_text().contains("may have reached the server"),
        "{}",
        lost.as_text()
    );
    // It ran once on the server and was not resent.
    assert_eq!(count_lines(&log, "called echo"), 1);

    proxy.lose_replies(false);
    let next = call(&echo, json!({"text": "twice"})).await;
    assert_eq!((next.as_text().as_str(), next.is_error), ("twice", false));
    assert_eq!(count_lines(&log, "called echo"), 2);
    source.close().await;
    server.kill().await;
}

#[tokio::test]
async fn connect_all_connects_every_server_at_once() {
    const SERVERS: usize = 3;
    let server = NetServer::start("--http", 0, &[]).await;
    // Each proxy holds its initialize until all three are initializing: a
    // sequential connect would wait at the barrier until its timeout.
    let barrier = Arc::new(tokio::sync::Barrier::new(SERVERS));
    let mut proxies = Vec::new();
    for _ in 0..SERVERS {
        proxies.push(LossyProxy::start_with(&server.url, Some(barrier.clone())).await);
    }
    let configs = proxies.iter().enumerate().map(|(i, p)| {
        McpServerConfig::http(format!("s{i}"), p.url.clone()).connect_timeout(Duration::from_secs(20))
    });
    let connected = tokio::time::timeout(HANG_GUARD, loopwright_mcp::connect_all(configs))
        .await
        .expect("connect_all hung");
    assert!(connected.failed.is_empty(), "{:?}", connected.failed);
    assert_eq!(connected.sources.len(), SERVERS);
    connected.close_all().await;
    server.kill().await;
}

/// A reverse proxy in front of the test server. While told to lose replies,
/// it forwards each `tools/call`, waits for the server's whole answer (so the
/// tool has run), then answers the client `502 Bad Gateway`: a request that
/// was delivered and whose reply was lost, as a failing gateway loses it.
struct LossyProxy {
    url: String,
    lose: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl LossyProxy {
    async fn start(upstream: &str) -> Self {
        Self::start_with(upstream, None).await
    }

    /// With `hold`, each `initialize` waits at that barrier before it is
    /// forwarded: proxies sharing one barrier of N answer only when N
    /// clients are initializing at once.
    async fn start_with(upstream: &str, hold: Option<Arc<tokio::sync::Barrier>>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let lose = Arc::new(AtomicBool::new(false));
        let state = Upstream {
            client: {
                // reqwest has no bundled TLS provider: ring, as the crate installs it.
                if rustls::crypto::CryptoProvider::get_default().is_none() {
                    let _ = rustls::crypto::ring::default_provider().install_default();
                }
                reqwest::Client::new()
            },
            url: upstream.to_string(),
            lose: lose.clone(),
            hold,
        };
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let state = state.clone();
            async move { forward(state, request).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, lose, task }
    }

    fn lose_replies(&self, on: bool) {
        self.lose.store(on, Ordering::SeqCst);
    }
}

impl Drop for LossyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where and how a [`LossyProxy`] forwards.
#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    url: String,
    lose: Arc<AtomicBool>,
    hold: Option<Arc<tokio::sync::Barrier>>,
}

async fn forward(upstream: Upstream, request: axum::extract::Request) -> axum::response::Response {
    use axum::http::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
    use axum::response::IntoResponse;
    let hop_by_hop =
        |name: &axum::http::HeaderName| [HOST, CONTENT_LENGTH, TRANSFER_ENCODING, CONNECTION].contains(name);
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let text = String::from_utf8_lossy(&body);
    let is_call = text.contains("\"tools/call\"");
    if let Some(hold) = &upstream.hold
        && text.contains("\"initialize\"")
    {
        hold.wait().await;
    }
    let mut out = upstream.client.request(parts.method, &upstream.url).body(body);
    for (name, value) in parts.headers.iter().filter(|(n, _)| !hop_by_hop(n)) {
        out = out.header(name, value);
    }
    let Ok(response) = out.send().await else {
        return axum::http::StatusCode::BAD_GATEWAY.into_response();
    };
    if is_call && upstream.lose.load(Ordering::SeqCst) {
        let _ = response.bytes().await; // the server has answered: the tool ran
        return axum::http::StatusCode::BAD_GATEWAY.into_response();
    }
    let mut builder = axum::response::Response::builder().status(response.status());
    for (name, value) in response.headers().iter().filter(|(n, _)| !hop_by_hop(n)) {
        builder = builder.header(name, value);
    }
    builder
        .body(axum::body::Body::from_stream(response.bytes_stream()))
        .unwrap()
}

#[tokio::test]
async fn server_requests_mid_call_and_agent_cancellation_over_http() {
    let log = temp_log("http-requests");
    let server =
        NetServer::start_with("--http", 0, &[], &[("TEST_SERVER_LOG", &log.to_string_lossy())]).await;
    let options = loopwright_mcp::McpClientOptions::default().root_path("/srv/app");
    let source = tokio::time::timeout(
        HANG_GUARD,
        McpToolSource::connect_with(http("web", &server), options),
    )
    .await
    .unwrap()
    .unwrap();
    let ping = call(&tool(&source, "ask_ping").await, json!({})).await;
    assert!(ping.as_text().starts_with("answered"), "{}", ping.as_text());
    let roots = call(&tool(&source, "ask_roots").await, json!({})).await;
    assert_eq!(
        roots.as_text(),
        r#"answered: {"roots":[{"uri":"file:///srv/app","name":"app"}]}"#
    );
    // No sampling handler: declined with "method not found".
    let sampling = call(&tool(&source, "ask_sampling").await, json!({})).await;
    let text = sampling.as_text();
    assert!(text.starts_with("refused:") && text.contains("-32601"), "{text}");

    let (token, pending) = spawn_cancellable_slow(&source).await;
    assert!(wait_for_line(&log, "called slow").await, "the call never arrived");
    token.cancel();
    let result = tokio::time::timeout(HANG_GUARD, pending).await.unwrap().unwrap();
    assert!(
        matches!(result, Err(loopwright_core::ToolError::Cancelled)),
        "{result:?}"
    );
    assert!(
        wait_for_line(&log, "cancelled slow").await,
        "the server never saw notifications/cancelled"
    );
    source.close().await;
    server.kill().await;
}
