//! `--approve deny` and MCP tool annotations: a server's `readOnlyHint` is
//! its own claim, believed only when its config entry says `"trust": true`.
//! Against the reference server `@modelcontextprotocol/server-everything`,
//! whose `echo` tool says it is read-only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::{Value, json};

/// Run one `everything__echo` call under `--approve deny`, with the server
/// entry's `trust` set as given; the events printed.
async fn echo_under_deny(trust: Option<bool>) -> Vec<Value> {
    let server = ModelServer::start(vec![
        tool_call("everything__echo", json!({"message": "hi"})).into(),
        answer("Done.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut entry = json!({"command": npm_bin("mcp-server-everything"), "args": ["stdio"]});
    if let Some(trust) = trust {
        entry["trust"] = json!(trust);
    }
    let config = write_config(dir.path(), &server, json!({"mcpServers": {"everything": entry}}));
    local_events(&config, &["--approve", "deny", "Echo hi"], dir.path()).await
}

fn echo_result(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "everything__echo")
        .expect("a result for the echo call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_servers_read_only_claim_does_not_get_past_deny() {
    for trust in [None, Some(false)] {
        let events = echo_under_deny(trust).await;
        let asked = events.iter().find(|e| e["type"] == "approval_resolved").unwrap();
        assert_eq!(asked["approved"], false, "{asked}");
        let result = echo_result(&events);
        assert_eq!(result["is_error"], true, "{result}");
        assert!(
            result["output"].to_string().contains("denied by --approve deny"),
            "{result}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_servers_read_only_tool_runs_under_deny() {
    let events = echo_under_deny(Some(true)).await;
    assert!(
        !events.iter().any(|e| e["type"] == "approval_requested"),
        "a read-only tool of a trusted server needs no approval"
    );
    let result = echo_result(&events);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result["output"].to_string().contains("Echo: hi"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trust_that_is_not_a_boolean_is_a_configuration_error() {
    let server = ModelServer::start(vec![answer("unused").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let entry = json!({"command": npm_bin("mcp-server-everything"), "args": ["stdio"], "trust": "yes"});
    let config = write_config(dir.path(), &server, json!({"mcpServers": {"everything": entry}}));
    let out = run_local(&config, &["--list-tools"], &[], dir.path()).await;
    let (_, stderr) = texts(&out);
    assert!(
        stderr.contains("everything") && stderr.contains("`trust`"),
        "{stderr}"
    );
}
