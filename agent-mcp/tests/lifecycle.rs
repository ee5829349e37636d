//! Lifecycle faults of the in-repo test server: how a stdio server is ended
//! (stdin close, SIGTERM, SIGKILL), its stderr in tracing, progress after a
//! cancel, a close racing a reconnect, and one server down among several.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use loopwright_core::{ToolContext, ToolSource, tool::ProgressReporter};
use loopwright_mcp::McpServerConfig;
use serde_json::json;

#[tokio::test]
async fn a_server_that_leaves_on_stdin_close_is_never_signalled() {
    let log = temp_log("stdin-close");
    // A long grace, so a slow machine cannot turn "not yet" into a SIGTERM.
    let config = test_server("calm")
        .env("TEST_SERVER_LOG", log.to_string_lossy())
        .shutdown_grace(Duration::from_secs(30));
    let source = connect(config).await;
    let pid = source.pid().unwrap();
    call(&tool(&source, "echo").await, json!({"text": "hi"})).await;
    source.close().await;
    assert!(process_gone(pid), "server survived close");
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !seen.contains("got SIGTERM"),
        "closing stdin was not enough: {seen}"
    );
}

#[tokio::test]
async fn a_server_lingering_after_stdin_close_is_terminated_after_the_grace() {
    let log = temp_log("linger");
    // Lingers two minutes after stdin closes: only SIGTERM (after the default
    // grace, STDIN_CLOSE_GRACE) can end it before the hang guard.
    let config = test_server("lingering")
        .args(["--linger-ms", "120000"])
        .env("TEST_SERVER_LOG", log.to_string_lossy());
    let source = connect(config).await;
    let pid = source.pid().unwrap();
    tokio::time::timeout(HANG_GUARD, source.close())
        .await
        .expect("close waited for the lingering server");
    assert!(process_gone(pid), "server survived close");
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("got SIGTERM"), "never SIGTERMed: {seen}");
}

#[tokio::test]
async fn a_group_member_that_ignores_sigterm_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("stubborn.pid");
    // The shell ignores TERM, so the backgrounded sleep inherits that; the
    // server itself (exec'd) leaves on stdin close.
    let script = format!(
        "trap '' TERM; sleep 300 >/dev/null 2>&1 & echo $! > '{}'; exec '{}'",
        pid_file.display(),
        common::test_server_bin().to_string_lossy(),
    );
    let source = connect(McpServerConfig::stdio("stubborn", "sh").args(["-c", script.as_str()])).await;
    let sleeper: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(sleeper));
    source.close().await;
    // close() returns once the whole group is gone: SIGTERM was not enough.
    assert!(
        process_gone(sleeper),
        "a SIGTERM-proof group member survived close"
    );
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

// One thread, so the stderr-forwarding task logs under this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn stderr_lines_become_tracing_events_naming_the_server() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // With one dispatcher registered, tracing-core asks the registering
    // thread's default, so a callsite another test's thread hits first is
    // cached "never" for this subscriber. A second live dispatcher makes it
    // ask every registered one.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let source = connect(test_server("chatty-stderr")).await;
    // The test server writes this line to stderr as it starts.
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while !captured.text().contains("mcp-test-server starting") {
        assert!(
            tokio::time::Instant::now() < until,
            "stderr never reached tracing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let line = captured
        .text()
        .lines()
        .find(|l| l.contains("mcp-test-server starting"))
        .unwrap()
        .to_string();
    assert!(line.contains("loopwright_mcp::stderr"), "{line}");
    assert!(line.contains("server=chatty-stderr"), "{line}");
    source.close().await;
}

#[tokio::test]
async fn progress_that_arrives_after_a_timeout_is_dropped_and_the_server_stays_usable() {
    let log = temp_log("late-progress");
    let config = test_server("late")
        .env("TEST_SERVER_LOG", log.to_string_lossy())
        .call_timeout(Duration::from_millis(50));
    let source = connect(config).await;
    let (reporter, mut rx) = ProgressReporter::channel("p1");
    // 100 steps, 5 ms apart, cancellation ignored: most arrive after the timeout.
    let out = tool(&source, "progress")
        .await
        .call(
            json!({"steps": 100}),
            ToolContext::new("p1").with_progress(reporter),
        )
        .await
        .unwrap();
    assert!(
        out.is_error && out.as_text().contains("timed out"),
        "{}",
        out.as_text()
    );
    while rx.try_recv().is_some() {}
    assert!(
        wait_for_line(&log, "progress done").await,
        "the server never finished"
    );
    // The late notifications reached the client and were dropped there.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rx.try_recv().is_none(), "progress reported after the call ended");
    // A new call on the same session gets none of the old call's reports.
    let (reporter, mut rx) = ProgressReporter::channel("p2");
    let ctx = ToolContext::new("p2").with_progress(reporter);
    let out = tool(&source, "progress")
        .await
        .call(json!({"steps": 0}), ctx)
        .await
        .unwrap();
    assert_eq!(out.as_text(), "did 0 steps");
    assert!(rx.try_recv().is_none(), "a stale notification reached a new call");
    source.close().await;
}

#[tokio::test]
async fn a_close_during_a_reconnect_leaves_no_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let config = test_server("racy")
        .args(["--slow-init", "5000", "--pid-file", &pid_file.to_string_lossy()])
        .connect_timeout(Duration::from_secs(30));
    let source = connect(config).await;
    let first = source.pid().unwrap();
    // Both tools before the crash: listing after it would reconnect first.
    let echo = tool(&source, "echo").await;
    assert!(call(&tool(&source, "crash").await, json!({})).await.is_error);
    // This call reconnects: a new server starts and takes 5 s to initialize;
    // the source is closed well inside that.
    let pending = tokio::spawn(async move { echo.call(json!({"text": "x"}), ToolContext::new("c")).await });
    let until = tokio::time::Instant::now() + HANG_GUARD;
    let second = loop {
        let written = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        match written {
            Some(pid) if pid != first => break pid,
            _ => assert!(tokio::time::Instant::now() < until, "no reconnect started"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    source.close().await;
    let out = tokio::time::timeout(HANG_GUARD, pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(out.is_error, "{}", out.as_text());
    // The source is still alive (not dropped): only close could end the new server.
    assert!(
        wait_gone(second).await,
        "the server started by the reconnect outlived close"
    );
    drop(source);
}

#[tokio::test]
async fn a_server_that_stays_down_leaves_the_others_working() {
    let down = NetServer::start("--http", 0, &[]).await;
    let gone = connect(McpServerConfig::http("gone", down.url.clone())).await;
    let healthy = connect(test_server("healthy")).await;
    let (gone_echo, healthy_echo) = (tool(&gone, "echo").await, tool(&healthy, "echo").await);
    down.kill().await;
    let (dead, alive) = tokio::join!(
        call(&gone_echo, json!({"text": "x"})),
        call(&healthy_echo, json!({"text": "fine"})),
    );
    assert!(
        dead.is_error && dead.as_text().contains("mcp server gone"),
        "{}",
        dead.as_text()
    );
    assert_eq!((alive.as_text().as_str(), alive.is_error), ("fine", false));
    // Still down: still an error naming it, and still no effect on the other.
    let again = call(&gone_echo, json!({"text": "x"})).await;
    assert!(
        again.is_error && again.as_text().contains("mcp server gone"),
        "{}",
        again.as_text()
    );
    assert!(gone.tools().await.is_err(), "a server that is down listed tools");
    assert_eq!(call(&healthy_echo, json!({"text": "ok"})).await.as_text(), "ok");
    gone.close().await;
    healthy.close().await;
}

#[tokio::test]
async fn a_stdio_server_starts_in_its_configured_directory() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "pwd > started-in.txt; exec '{}'",
        common::test_server_bin().to_string_lossy()
    );
    let config = McpServerConfig::stdio("placed", "sh")
        .args(["-c", script.as_str()])
        .cwd(dir.path());
    let source = connect(config).await;
    let written = std::fs::read_to_string(dir.path().join("started-in.txt")).unwrap();
    assert_eq!(
        std::fs::canonicalize(written.trim()).unwrap(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
    source.close().await;
}

#[tokio::test]
async fn a_close_cut_short_still_ends_the_group() {
    // A long stdin grace: close() is still waiting for the grandchild to go
    // when it is cut short. The cut-short close owned the connection it took
    // out of the source, so dropping it kills the group at once: nothing
    // waits for the source itself to be dropped. (Checking that the
    // grandchild is alive just before would race with that kill.)
    let source = connect(test_server("cut").shutdown_grace(Duration::from_secs(60))).await;
    let out = call(&tool(&source, "spawn_grandchild").await, json!({})).await;
    let grandchild: u32 = out.as_text().parse().unwrap();
    assert!(!process_gone(grandchild));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), source.close())
            .await
            .is_err(),
        "close should still be waiting"
    );
    assert!(
        wait_gone(grandchild).await,
        "the grandchild outlived a close that was cut short"
    );
    // The source stays usable as a closed source: a second close returns.
    tokio::time::timeout(HANG_GUARD, source.close())
        .await
        .expect("a second close hung");
}

#[tokio::test]
async fn credentials_in_a_server_url_never_reach_an_error() {
    let secret = "url-secret-5531";
    // Refused at connect, on each remote transport: the transport's error
    // quotes the URL, the reported error does not quote the credential.
    for config in [
        McpServerConfig::http("h", format!("http://127.0.0.1:1/mcp?api_key={secret}")),
        McpServerConfig::sse("s", format!("http://127.0.0.1:1/sse?token={secret}")),
        McpServerConfig::websocket("w", format!("ws://127.0.0.1:1/ws?token={secret}")),
    ] {
        let error = tokio::time::timeout(HANG_GUARD, loopwright_mcp::McpToolSource::connect(config))
            .await
            .expect("connect hung")
            .map(|_| ())
            .expect_err("a refused connect succeeded")
            .to_string();
        assert!(!error.contains(secret), "{error}");
    }
    // Down mid-session: the error result (which the model reads) neither.
    let server = NetServer::start("--http", 0, &[]).await;
    let source = connect(McpServerConfig::http(
        "gone",
        format!("{}?token={secret}", server.url),
    ))
    .await;
    let echo = tool(&source, "echo").await;
    server.kill().await;
    let result = call(&echo, json!({"text": "x"})).await;
    assert!(result.is_error, "{}", result.as_text());
    assert!(!result.as_text().contains(secret), "{}", result.as_text());
    source.close().await;
}
