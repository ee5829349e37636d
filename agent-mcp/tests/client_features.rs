//! What the client offers servers: roots, sampling and elicitation handlers
//! (sampling refused with an error when absent, elicitation declined), and
//! prompts discovery — against the in-repo server speaking 2025-11-25, which
//! sends those requests mid-call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); servers still send it.

use crate::common;

use common::*;
use loopwright_mcp::rmcp::ErrorData;
use loopwright_mcp::rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
};
use loopwright_mcp::{ElicitationHandler, McpClientOptions, McpToolSource, SamplingHandler};
use serde_json::json;

#[tokio::test]
async fn without_handlers_sampling_is_refused_and_elicitation_declined() {
    let log = temp_log("caps-none");
    let source = connect(test_server("plain").env("TEST_SERVER_LOG", log.to_string_lossy())).await;
    let out = call(&tool(&source, "ask_sampling").await, json!({})).await;
    let text = out.as_text();
    assert!(text.starts_with("refused:"), "{text}");
    assert!(
        text.contains("sampling/createMessage") && text.contains("no handler installed"),
        "{text}"
    );
    // Called directly (not by a run), nobody can answer: declined, not refused.
    let out = call(&tool(&source, "ask_elicitation").await, json!({})).await;
    assert_eq!(out.as_text(), r#"answered: {"action":"decline"}"#);
    // A ping mid-call is always answered.
    let ping = call(&tool(&source, "ask_ping").await, json!({})).await;
    assert!(ping.as_text().starts_with("answered"), "{}", ping.as_text());
    // No roots configured: an empty list, and no capability advertised;
    // elicitation (form and URL) and the tasks extension are.
    let roots = call(&tool(&source, "ask_roots").await, json!({})).await;
    assert_eq!(roots.as_text(), r#"answered: {"roots":[]}"#);
    assert!(
        wait_for_line(
            &log,
            r#"initialize capabilities {"extensions":{"io.modelcontextprotocol/tasks":{}},"elicitation":{"form":{},"url":{}}}"#
        )
        .await,
        "capabilities: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    source.close().await;
}

struct Sampler;

#[async_trait::async_trait]
impl SamplingHandler for Sampler {
    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        assert_eq!(params.max_tokens, 16);
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("hi from the client, {server}")},
            "model": "test-model"
        }))
        .unwrap())
    }
}

struct Elicitor;

#[async_trait::async_trait]
impl ElicitationHandler for Elicitor {
    async fn elicit(&self, _server: &str, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ada"})))
    }
}

#[tokio::test]
async fn installed_handlers_and_roots_answer_the_server() {
    let log = temp_log("caps-all");
    let options = McpClientOptions::default()
        .root_path("/srv/project one")
        .sampling(Sampler)
        .elicitation(Elicitor);
    let config = test_server("rich").env("TEST_SERVER_LOG", log.to_string_lossy());
    let source = tokio::time::timeout(HANG_GUARD, McpToolSource::connect_with(config, options))
        .await
        .unwrap()
        .unwrap();
    let sampled = call(&tool(&source, "ask_sampling").await, json!({}))
        .await
        .as_text();
    assert!(sampled.contains("hi from the client, rich"), "{sampled}");
    let elicited = call(&tool(&source, "ask_elicitation").await, json!({}))
        .await
        .as_text();
    assert!(
        elicited.contains(r#""action":"accept""#) && elicited.contains("Ada"),
        "{elicited}"
    );
    let roots = call(&tool(&source, "ask_roots").await, json!({})).await.as_text();
    assert_eq!(
        roots,
        r#"answered: {"roots":[{"uri":"file:///srv/project%20one","name":"project one"}]}"#
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    for capability in ["\"roots\"", "\"sampling\"", "\"elicitation\""] {
        assert!(
            logged.contains(capability),
            "{capability} not advertised: {logged}"
        );
    }
    source.close().await;
}

#[tokio::test]
async fn prompts_are_discovered_and_filled_in() {
    let source = connect(test_server("p")).await;
    let prompts = source.prompts().await;
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].name, "greet");
    assert_eq!(prompts[0].arguments.as_ref().unwrap()[0].name, "name");
    let args = json!({"name": "Grace"}).as_object().cloned().unwrap();
    let filled = source.get_prompt("greet", args).await.unwrap();
    let text = serde_json::to_string(&filled.messages).unwrap();
    assert!(text.contains("Say hello to Grace."), "{text}");
    let missing = source
        .get_prompt("nope", serde_json::Map::new())
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("mcp server p"), "{missing}");
    source.close().await;
}
