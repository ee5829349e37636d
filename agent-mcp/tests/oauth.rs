//! OAuth against an authorization server this test controls (in process,
//! real sockets; see `oauth/world.rs`): the loopback sign-in listener
//! against stray and forged requests, and client credentials, refresh and
//! step-up against an authorization server that answers hostile things.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod oauth {
    pub mod world;
}

use std::sync::atomic::Ordering;
use std::time::Duration;

use loopwright_core::{ToolContext, ToolSource};
use loopwright_mcp::oauth::MemoryTokenStore;
use loopwright_mcp::{McpClientOptions, McpError, McpServerConfig, McpToolSource};
use oauth::world::{Probes, TestBrowser, World};
use serde_json::json;

/// Guard against a hang only; never an assertion on time.
const HANG_GUARD: Duration = Duration::from_secs(60);

async fn connect(config: McpServerConfig, options: McpClientOptions) -> Result<McpToolSource, McpError> {
    tokio::time::timeout(HANG_GUARD, McpToolSource::connect_with(config, options))
        .await
        .expect("connect hung")
}

/// Call `echo` and return its text.
async fn echo(source: &McpToolSource, text: &str) -> Result<String, String> {
    let tools = source.tools().await.map_err(|e| e.to_string())?;
    let tool = tools
        .into_iter()
        .find(|t| t.definition().name.ends_with("echo"))
        .expect("no echo tool");
    let out = tokio::time::timeout(
        HANG_GUARD,
        tool.call(json!({"text": text}), ToolContext::new("c")),
    )
    .await
    .expect("call hung")
    .map_err(|e| e.to_string())?;
    if out.is_error {
        return Err(out.as_text());
    }
    Ok(out.as_text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_listener_answers_strays_400_and_waits_for_its_redirect() {
    let world = World::start().await;
    let browser = TestBrowser::with_probes(Probes::Hostile);
    let store = MemoryTokenStore::default();
    let options = McpClientOptions::default()
        .with_token_store(store.clone())
        .with_browser(browser.clone());
    let source = connect(world.server(json!({"clientId": "app"}), "30s"), options)
        .await
        .expect("the sign-in should complete with the right redirect");
    assert_eq!(echo(&source, "hello").await.unwrap(), "hello");
    source.close().await;

    browser.delivered().await;
    let answers = browser.answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 5, "{answers:#?}");
    for (answer, why) in answers[..4].iter().zip([
        "only answers GET /callback",
        "it carries no state",
        "its state does not match",
        "only answers GET /callback",
    ]) {
        assert!(answer.starts_with("400 ") && answer.contains(why), "{answer}");
        assert!(answer.contains("still waiting"), "{answer}");
    }
    assert!(answers[4].starts_with("200 Signed in"), "{answers:#?}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
}
