//! Third-party reference servers nobody here wrote, pinned in tests-deps/
//! (npm) and installed by scripts/test.sh: `@modelcontextprotocol/server-filesystem`
//! and `@modelcontextprotocol/server-memory`. The tests FAIL when they are
//! not installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;

use common::*;
use loopwright_mcp::{McpClientOptions, McpServerConfig, McpToolSource};
use serde_json::json;

fn npm_bin(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/.bin")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix tests-deps`",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// A fresh directory, removed when the returned guard is dropped, and its
/// real path.
fn temp_dir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let guard = tempfile::Builder::new()
        .prefix(&format!("loopwright-mcp-{tag}-"))
        .tempdir()
        .unwrap();
    // The server resolves symlinks (/tmp may be one); compare real paths.
    let dir = guard.path().canonicalize().unwrap();
    (guard, dir)
}

#[tokio::test]
async fn filesystem_server_reads_writes_and_refuses_outside_its_directory() {
    let (_guard, dir) = temp_dir("fs");
    std::fs::write(dir.join("notes.txt"), "first line\n").unwrap();
    let config = McpServerConfig::stdio("fs", npm_bin("mcp-server-filesystem")).arg(dir.to_string_lossy());
    let source = connect(config).await;
    let read = call(
        &tool(&source, "read_text_file").await,
        json!({"path": dir.join("notes.txt")}),
    )
    .await;
    assert_eq!((read.as_text().as_str(), read.is_error), ("first line\n", false));
    let written = call(
        &tool(&source, "write_file").await,
        json!({"path": dir.join("new.txt"), "content": "from the agent"}),
    )
    .await;
    assert!(!written.is_error, "{}", written.as_text());
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).unwrap(),
        "from the agent"
    );
    let listing = call(&tool(&source, "list_directory").await, json!({"path": dir})).await;
    assert!(
        listing.as_text().contains("[FILE] new.txt"),
        "{}",
        listing.as_text()
    );
    // Outside the allowed directory: an error result (isError kept), not a crash.
    let outside = call(
        &tool(&source, "read_text_file").await,
        json!({"path": "/etc/hostname"}),
    )
    .await;
    assert!(outside.is_error, "{}", outside.as_text());
    assert!(
        outside.as_text().contains("mcp server fs") || outside.as_text().to_lowercase().contains("denied"),
        "{}",
        outside.as_text()
    );
    source.close().await;
}

#[tokio::test]
async fn filesystem_server_takes_the_clients_roots() {
    let ((_args_guard, args_dir), (_root_guard, root_dir)) = (temp_dir("fs-args"), temp_dir("fs-root"));
    let config =
        McpServerConfig::stdio("fs", npm_bin("mcp-server-filesystem")).arg(args_dir.to_string_lossy());
    let options = McpClientOptions::default().root_path(&root_dir);
    let source = tokio::time::timeout(HANG_GUARD, McpToolSource::connect_with(config, options))
        .await
        .unwrap()
        .unwrap();
    // The server asks for roots after initialization; poll until it has them.
    let list = tool(&source, "list_allowed_directories").await;
    let until = tokio::time::Instant::now() + HANG_GUARD;
    loop {
        let text = call(&list, json!({})).await.as_text();
        if text.contains(&*root_dir.to_string_lossy()) {
            assert!(!text.contains(&*args_dir.to_string_lossy()), "{text}");
            break;
        }
        assert!(tokio::time::Instant::now() < until, "roots never applied: {text}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    source.close().await;
}

#[tokio::test]
async fn memory_server_keeps_a_graph_in_the_file_its_env_names() {
    let (_guard, dir) = temp_dir("memory");
    let file = dir.join("memory.jsonl");
    let config = McpServerConfig::stdio("memory", npm_bin("mcp-server-memory"))
        .env("MEMORY_FILE_PATH", file.to_string_lossy());
    let source = connect(config).await;
    let created = call(
        &tool(&source, "create_entities").await,
        json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]}),
    )
    .await;
    assert!(!created.is_error, "{}", created.as_text());
    let graph = call(&tool(&source, "read_graph").await, json!({})).await;
    assert!(
        graph.as_text().contains("wrote the first program"),
        "{}",
        graph.as_text()
    );
    let found = call(&tool(&source, "search_nodes").await, json!({"query": "Ada"})).await;
    assert!(found.as_text().contains("person"), "{}", found.as_text());
    assert!(
        std::fs::read_to_string(&file).unwrap().contains("Ada"),
        "the server wrote elsewhere"
    );
    source.close().await;
}
