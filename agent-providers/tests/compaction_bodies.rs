//! Compaction per wire format:
//! - the loop's own strategies (old results cleared, older turns
//!   summarised) leave histories every provider's body pairs correctly:
//!   each result follows its call, turns alternate where they must;
//! - the provider's own: Anthropic's context management (its edit, its beta
//!   header, the tokens it cleared read back) and OpenAI Responses
//!   compaction (its `context_management`, the compaction item kept and
//!   sent back verbatim, the items before it left out), with the
//!   `compacted` event, replayed by a local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashSet;
use std::sync::Arc;

use common::models::{anthropic, chat, gemini, ollama, responses};
use common::*;
use futures::StreamExt;
use loopwright_core::compaction::clear::CLEARED_NOTE;
use loopwright_core::compaction::summarize::SUMMARY_HEADER;
use loopwright_core::compaction::{Compaction, CompactionStrategy};
use loopwright_core::{
    Agent, AgentEvent, ContextBudget, LanguageModel, ToolOutput, ToolSet, model::ModelEvent,
    model::ModelRequest, tool_fn, toolset::StaticToolSource,
};
use loopwright_providers::{AnthropicModel, CONTEXT_MANAGEMENT_BETA, OpenAiResponsesModel};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Page {
    /// Which page.
    n: u32,
}

fn pages() -> ToolSet {
    let read = tool_fn("read", "Read a page.", |p: Page| async move {
        let text: String = (1..=40)
            .map(|i| format!("page {}, line {i}: words words words\n", p.n))
            .collect();
        Ok(ToolOutput::text(text))
    });
    ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(read))
        .build()
}

/// The last request of a long run compacted by `strategies` (the loop's
/// own), on a scripted model.
async fn compacted_request(strategies: Vec<CompactionStrategy>) -> ModelRequest {
    let mut steps: Vec<ScriptedStep> = (0..16)
        .map(|i| ScriptedStep::tool_calls(&[(&format!("c{i}"), "read", &format!(r#"{{"n": {i}}}"#))]))
        .collect();
    steps.push(ScriptedStep::text("Read."));
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model.clone()))
        .system("Read every page.")
        .tools(pages())
        .max_steps(20)
        .budget(ContextBudget::new(4_000).max_output_tokens(500))
        .compaction(Compaction::new(strategies))
        .build();
    let result = agent.run("read").await.unwrap();
    assert!(result.history.is_some(), "the run compacted");
    model.requests().pop().unwrap()
}

/// Call ids answered in a body, checked to follow their calls per format.
fn check_pairs(name: &str, body: &Value) -> usize {
    let mut answered = 0;
    match name {
        "anthropic" => {
            let turns = body["messages"].as_array().unwrap();
            for pair in turns.windows(2) {
                assert_ne!(pair[0]["role"], pair[1]["role"], "turns alternate");
            }
            for (i, turn) in turns.iter().enumerate() {
                for block in turn["content"].as_array().unwrap() {
                    if block["type"] == "tool_result" {
                        let id = &block["tool_use_id"];
                        let calls = turns[i - 1]["content"].as_array().unwrap();
                        assert!(
                            calls.iter().any(|c| c["type"] == "tool_use" && &c["id"] == id),
                            "{id}"
                        );
                        answered += 1;
                    }
                }
            }
        }
        "chat" | "ollama" => {
            let messages = body["messages"].as_array().unwrap();
            let mut open: HashSet<String> = HashSet::new();
            for m in messages {
                match m["role"].as_str().unwrap() {
                    "assistant" => {
                        open = m["tool_calls"]
                            .as_array()
                            .map(|c| {
                                c.iter()
                                    .map(|c| {
                                        c["id"]
                                            .as_str()
                                            .or(c["function"]["name"].as_str())
                                            .unwrap()
                                            .to_owned()
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                    }
                    "tool" => {
                        let id = m["tool_call_id"].as_str().or(m["tool_name"].as_str()).unwrap();
                        assert!(open.contains(id), "{id} answers no open call");
                        answered += 1;
                    }
                    _ => open.clear(),
                }
            }
        }
        "responses" => {
            let mut called = HashSet::new();
            for item in body["input"].as_array().unwrap() {
                match item["type"].as_str() {
                    Some("function_call") => {
                        called.insert(item["call_id"].clone());
                    }
                    Some("function_call_output") => {
                        assert!(called.contains(&item["call_id"]), "{}", item["call_id"]);
                        answered += 1;
                    }
                    _ => {}
                }
            }
        }
        "gemini" => {
            let contents = body["contents"].as_array().unwrap();
            for pair in contents.windows(2) {
                assert_ne!(pair[0]["role"], pair[1]["role"], "turns alternate");
            }
            for (i, turn) in contents.iter().enumerate() {
                let responses = turn["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p.get("functionResponse").is_some())
                    .count();
                if responses > 0 {
                    let calls = contents[i - 1]["parts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|p| p.get("functionCall").is_some())
                        .count();
                    assert_eq!(responses, calls);
                    answered += responses;
                }
            }
        }
        other => panic!("{other}"),
    }
    answered
}

fn bodies(request: &ModelRequest) -> Vec<(&'static str, Value)> {
    vec![
        ("anthropic", anthropic("claude-test").request_body(request)),
        ("chat", chat("gpt-test").request_body(request)),
        ("responses", responses("gpt-test").request_body(request)),
        ("gemini", gemini("gemini-test").request_body(request)),
        ("ollama", ollama("qwen3").request_body(request)),
    ]
}

#[tokio::test]
async fn cleared_results_keep_every_call_paired_on_every_provider() {
    let request = compacted_request(vec![CompactionStrategy::clear_tool_results()]).await;
    let calls = request.messages.iter().flat_map(|m| m.tool_calls()).count();
    for (name, body) in bodies(&request) {
        assert_eq!(check_pairs(name, &body), calls, "{name}");
        assert!(body.to_string().contains(CLEARED_NOTE), "{name}");
        assert!(
            body.to_string().contains("Read every page."),
            "{name}: the system prompt"
        );
    }
}

#[tokio::test]
async fn a_summary_replaces_older_turns_on_every_provider() {
    let summarizer = ScriptedModel::new(
        (0..8)
            .map(|_| ScriptedStep::text("Pages 0 to 12 were read; nothing odd."))
            .collect(),
    );
    let request = compacted_request(vec![CompactionStrategy::summarize_with(Arc::new(summarizer))]).await;
    let calls = request.messages.iter().flat_map(|m| m.tool_calls()).count();
    assert!(calls < 16, "older calls were summarised");
    for (name, body) in bodies(&request) {
        assert_eq!(check_pairs(name, &body), calls, "{name}");
        let text = body.to_string();
        assert!(
            text.contains(&SUMMARY_HEADER[..40]) && text.contains("Pages 0 to 12"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn anthropic_clears_old_tool_uses_on_its_side() {
    loopwright_providers::install_tls_provider();
    let mut lines = fixture("anthropic/anthropic-text.chunks.txt");
    for line in &mut lines {
        if line.contains("\"message_delta\"") {
            let mut event: Value = serde_json::from_str(line).unwrap();
            event["context_management"] = json!({"applied_edits": [
                {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4, "cleared_input_tokens": 12_000}]});
            *line = event.to_string();
        }
    }
    let server = serve(vec![Reply::ok(frames(&lines, true, "\n"))]).await;
    let model = AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let mut request = ModelRequest::new(vec![loopwright_core::Message::user("hi")]);
    request.compact_above = Some(50_000);
    let (events, error) = collect(model.stream(request).await.unwrap()).await;
    assert!(error.is_none());
    assert!(events.contains(&ModelEvent::Compacted {
        item: None,
        cleared_tokens: Some(12_000)
    }));
    let sent = &server.received()[0];
    assert_eq!(
        sent.body["context_management"],
        json!({"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 50_000}}]})
    );
    assert_eq!(sent.headers["anthropic-beta"], CONTEXT_MANAGEMENT_BETA);
}

/// A Responses stream: `items` done, then completed.
fn responses_reply(items: Vec<Value>) -> Reply {
    let mut lines: Vec<String> = items
        .into_iter()
        .map(|item| json!({"type": "response.output_item.done", "item": item}).to_string())
        .collect();
    lines.push(
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 90_000, "output_tokens": 20}}})
            .to_string(),
    );
    Reply::ok(frames(&lines, true, "\n"))
}

#[tokio::test]
async fn responses_compaction_items_are_kept_and_sent_back_alone() {
    loopwright_providers::install_tls_provider();
    let compaction = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "OPAQUE"});
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"n\": 1}"});
    let server = serve(vec![
        responses_reply(vec![compaction.clone(), call]),
        responses_reply(vec![]),
    ])
    .await;
    let model = OpenAiResponsesModel::builder("gpt-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let agent = Agent::builder(Arc::new(model) as Arc<dyn LanguageModel>)
        .system("Be brief.")
        .tools(pages())
        .budget(ContextBudget::new(100_000))
        .compaction(Compaction::new(vec![CompactionStrategy::provider()]).threshold(0.8))
        .build();
    let mut run = agent.run("read page one");
    let mut events = Vec::new();
    while let Some(e) = run.next().await {
        events.push(e);
    }
    let compacted = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::Compacted {
                strategy,
                tokens_before,
                ..
            } => Some((strategy.clone(), *tokens_before)),
            _ => None,
        })
        .expect("a compacted event");
    assert_eq!(compacted, ("provider".to_owned(), 90_000));
    let received = server.received();
    let limit = 100_000 - 256;
    assert_eq!(
        received[0].body["context_management"],
        json!([{"type": "compaction", "compact_threshold": (limit as f64 * 0.8) as u64}])
    );
    // The second request starts at the compaction item: the user message
    // before it is carried by the item.
    let input = received[1].body["input"].as_array().unwrap();
    assert_eq!(input[0], compaction);
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["type"], "function_call_output");
    assert!(!received[1].body.to_string().contains("read page one"));
}
