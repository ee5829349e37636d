//! `"resources": true` in an MCP server's config entry, through the `loopwright`
//! command, against npm `@modelcontextprotocol/server-everything`:
//! `--list-tools` shows the two resource tools only when it is set, and a
//! scripted model lists the resources, then reads one, whose text reaches
//! the next model request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;

use common::*;
use serde_json::{Value, json};

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

/// server-everything's entry, with `resources` when given.
fn everything(resources: Option<bool>) -> Value {
    let mut entry = json!({"command": npm_bin("mcp-server-everything"), "args": ["stdio"]});
    if let Some(on) = resources {
        entry["resources"] = json!(on);
    }
    json!({"mcpServers": {"everything": entry}})
}

/// The document server-everything serves at [`ARCHITECTURE`].
fn architecture_doc() -> String {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/@modelcontextprotocol/server-everything/dist/docs");
    std::fs::read_to_string(docs.join("architecture.md")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_true_makes_list_tools_show_the_resource_tools() {
    let server = ModelServer::start(vec![answer("unused").into()]).await;
    for (resources, shown) in [(None, false), (Some(false), false), (Some(true), true)] {
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(dir.path(), &server, everything(resources));
        let out = run_local(&config, &["--list-tools"], &[], dir.path()).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
        let listed = json_lines(&stdout);
        let has = |name: &str| listed.iter().any(|t| t["name"] == name);
        assert!(has("everything__echo"), "{stdout}");
        assert_eq!(
            has("everything__list_resources"),
            shown,
            "{resources:?}: {stdout}"
        );
        assert_eq!(has("everything__read_resource"), shown, "{resources:?}: {stdout}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_lists_then_reads_a_resource_through_the_cli() {
    let server = ModelServer::start(vec![
        tool_call("everything__list_resources", json!({})).into(),
        tool_call("everything__read_resource", json!({"uri": ARCHITECTURE})).into(),
        answer("It describes the architecture.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, everything(Some(true)));
    let events = local_events(&config, &["What does the architecture doc say?"], dir.path()).await;
    let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(results.iter().all(|r| r["is_error"] == false), "{results:?}");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 3);
    let tool_messages = |body: &Value| -> Vec<String> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    let listed = tool_messages(&bodies[1]);
    assert!(
        listed[0].contains(&format!("- {ARCHITECTURE} (architecture.md, text/markdown")),
        "{listed:?}"
    );
    let read = tool_messages(&bodies[2]);
    assert_eq!(read.last(), Some(&architecture_doc()));
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "finished", "{finished}");
}
