//! `--plan`: the model proposes a plan before its first tool call; `auto`
//! follows it (shown on stderr), `deny` shows it and stops (exit 7), `ask`
//! shows it on the terminal and needs `y` (see tests/terminal.rs for the
//! terminal itself).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::json;

/// The plan the local model proposes, as a Chat Completions answer.
fn plan_answer() -> String {
    answer(
        &json!({"steps": [
            {"description": "Echo hello through the test server", "tool": "test__echo", "risk": "low"}
        ], "warnings": ["Nothing to worry about."]})
        .to_string(),
    )
}

#[tokio::test]
async fn plan_auto_shows_the_plan_and_follows_it() {
    let server = ModelServer::start(vec![
        plan_answer().into(),
        tool_call("test__echo", json!({"text": "hello"})).into(),
        answer("Echoed.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(&config, &["--plan", "go"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Echoed.\n", "the plan's JSON is not the answer");
    assert!(
        stderr.contains("plan:\n1. Echo hello through the test server (tool: test__echo, risk: low)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Warnings:\n- Nothing to worry about."),
        "{stderr}"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    // The plan call offers no tools; the next one carries the approved plan.
    assert!(bodies[0].get("tools").is_none(), "{}", bodies[0]);
    let last = bodies[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("The user approved this plan."),
        "{last}"
    );
}

#[tokio::test]
async fn plan_deny_shows_the_plan_and_ends_with_status_7_before_any_tool() {
    let server = ModelServer::start(vec![
        plan_answer().into(),
        tool_call("test__echo", json!({"text": "hello"})).into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(
        &config,
        &["--plan", "--approve", "deny", "--events", "go"],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert_eq!(server.bodies().len(), 1, "one model call");
    let events = json_lines(&stdout);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"tool_call"), "{kinds:?}");
    let proposed = events.iter().find(|e| e["type"] == "plan_proposed").unwrap();
    assert_eq!(proposed["plan"]["steps"][0]["tool"], "test__echo");
    let resolved = events.iter().find(|e| e["type"] == "plan_resolved").unwrap();
    assert_eq!(resolved["approved"], false);
    assert_eq!(resolved["reason"], "rejected by --approve deny");
    let finished = events.last().unwrap();
    assert_eq!(finished["exit"], "plan_rejected");
}
