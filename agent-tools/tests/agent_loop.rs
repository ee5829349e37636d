//! An end-to-end run of loopwright-core's loop with a scripted model: Read, then
//! Edit, then Bash on a temporary repository.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;

use loopwright_core::{Agent, ContentPart, Role, ToolSet};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use loopwright_tools::{Workspace, coding_tools};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_edit_bash_on_a_temporary_repository() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("src")).unwrap();
    std::fs::write(repo.path().join("src/greeting.txt"), "hello world\nsecond line\n").unwrap();

    let read = json!({"file_path": "src/greeting.txt"}).to_string();
    let edit =
        json!({"file_path": "src/greeting.txt", "old_string": "hello", "new_string": "goodbye"}).to_string();
    let bash = json!({"command": "cat greeting.txt && echo status-ok", "cwd": "src"}).to_string();
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("call_read", "Read", &read)]),
        ScriptedStep::tool_calls(&[("call_edit", "Edit", &edit)]),
        ScriptedStep::tool_calls(&[("call_bash", "Bash", &bash)]),
        ScriptedStep::text("Changed the greeting."),
    ]);
    let tools = ToolSet::builder()
        .source(coding_tools(Workspace::limited(repo.path()).unwrap()))
        .build();
    let agent = Agent::builder(Arc::new(model.clone())).tools(tools).build();
    let result = agent
        .run("Change hello to goodbye in src/greeting.txt")
        .await
        .unwrap();

    assert!(result.outcome.answered(), "{:?}", result.outcome);
    assert_eq!(result.text, "Changed the greeting.");
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/greeting.txt")).unwrap(),
        "goodbye world\nsecond line\n"
    );

    // Every call has exactly one result, and the results say what happened.
    let mut calls = Vec::new();
    let mut results: HashMap<String, Vec<(bool, String)>> = HashMap::new();
    for message in &result.messages {
        for part in &message.content {
            match part {
                ContentPart::ToolCall(call) => {
                    assert_eq!(message.role, Role::Assistant);
                    calls.push(call.id.clone());
                }
                ContentPart::ToolResult(r) => {
                    assert_eq!(message.role, Role::Tool);
                    results
                        .entry(r.call_id.clone())
                        .or_default()
                        .push((r.is_error, r.text()));
                }
                _ => {}
            }
        }
    }
    assert_eq!(calls, ["call_read", "call_edit", "call_bash"]);
    assert_eq!(results.len(), 3);
    for id in &calls {
        assert_eq!(results[id].len(), 1, "{id} has {} results", results[id].len());
        assert!(!results[id][0].0, "{id} failed: {}", results[id][0].1);
    }
    assert_eq!(
        results["call_read"][0].1,
        "     1\thello world\n     2\tsecond line"
    );
    assert!(
        results["call_edit"][0]
            .1
            .contains("-hello world\n+goodbye world\n"),
        "{}",
        results["call_edit"][0].1
    );
    assert!(
        results["call_bash"][0]
            .1
            .starts_with("exit code: 0\nstdout:\ngoodbye world\nsecond line\nstatus-ok\n"),
        "{}",
        results["call_bash"][0].1
    );

    // The model was offered the six tools under their bare names.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let mut offered: Vec<String> = requests[0].tools.iter().map(|t| t.name.clone()).collect();
    offered.sort();
    assert_eq!(offered, ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]);
}
