//! The answer is not held back by server shutdown: standard output reaches
//! its end as soon as the run ends, while `loopwright` still waits for a slow
//! MCP server to exit (so no process is left).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::json;
use tokio::io::AsyncReadExt;

/// How long the test server keeps running after its stdin closed: far
/// longer than reading the answer takes, so the order below is not a race.
const LINGER_MS: &str = "5000";

#[tokio::test]
async fn stdout_ends_with_the_run_while_a_slow_server_is_still_shutting_down() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(vec![answer("All done.").into()]).await;
    let pid_file = dir.path().join("server.pid");
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {"test": {
            "command": mcp_test_server(),
            "args": ["--linger-ms", LINGER_MS, "--pid-file", pid_file.to_str().unwrap()],
            "shutdownTimeout": "20s"}}}),
    );
    let config = config.to_str().unwrap();
    let mut child = agent_command(
        &["--config", config, "--model", "local/test", "--quiet", "go"],
        &[],
        dir.path(),
    )
    .spawn()
    .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut answer = String::new();
    tokio::time::timeout(HANG_GUARD, stdout.read_to_string(&mut answer))
        .await
        .expect("stdout never ended")
        .unwrap();
    assert_eq!(answer, "All done.\n");
    // The end of stdout came first: the server is still lingering, and
    // agent waits for it.
    assert!(
        child.try_wait().unwrap().is_none(),
        "agent exited before its server did"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("agent hung")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // The server left on its own (stdin closed), and is gone.
    let log = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        log.is_empty()
            || log
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
        "the server outlived agent: {log}"
    );
}
