//! `tool_input_delta` events on every wire format that streams arguments,
//! against recorded streams replayed by a local server: the deltas of a
//! call, in order, join into its input, and all come before its
//! `tool_call` event.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent, LanguageModel};
use loopwright_providers::{AnthropicModel, GeminiModel, OpenAiChatModel, OpenAiResponsesModel};
use serde_json::{Value, json};

fn chat_frames(path: &str) -> Reply {
    let mut bytes = frames(&fixture(path), false, "\n");
    bytes.push(Bytes::from("data: [DONE]\n\n"));
    Reply::ok(bytes)
}

/// A Responses stream answering `text` (no recorded one is text only).
fn responses_text(text: &str) -> Reply {
    let lines: Vec<String> = [
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": text}),
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 5, "output_tokens": 2}}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    Reply::ok(frames(&lines, true, "\n"))
}

/// Run one prompt on `model` (at most `steps` steps with tools): every
/// event.
async fn events_of(model: Arc<dyn LanguageModel>, steps: u32) -> Vec<AgentEvent> {
    let agent = Agent::builder(model).max_steps(steps).build();
    let mut run = agent.run("go");
    let mut events = Vec::new();
    tokio::time::timeout(HANG_GUARD, async {
        while let Some(e) = run.next().await {
            events.push(e);
        }
    })
    .await
    .expect("hang guard");
    events
}

/// Check the deltas against the calls; the number of calls with deltas.
fn check(events: &[AgentEvent]) -> usize {
    let mut joined: HashMap<&str, String> = HashMap::new();
    let mut called = 0;
    for (i, event) in events.iter().enumerate() {
        match event {
            AgentEvent::ToolInputDelta { call_id, delta, .. } => {
                joined.entry(call_id).or_default().push_str(delta);
            }
            AgentEvent::ToolCall { call_id, input, .. } => {
                let text = joined
                    .get(call_id.as_str())
                    .unwrap_or_else(|| panic!("no delta before call {call_id}"));
                let streamed: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
                assert_eq!(&streamed, input, "call {call_id}");
                assert!(
                    !events[i..]
                        .iter()
                        .any(|e| matches!(e, AgentEvent::ToolInputDelta { call_id: c, .. } if c == call_id)),
                    "a delta of {call_id} after its tool_call"
                );
                called += 1;
            }
            _ => {}
        }
    }
    called
}

#[tokio::test]
async fn anthropic_streams_the_inputs_of_its_calls() {
    loopwright_providers::install_tls_provider();
    let server = serve(vec![
        Reply::ok(frames(
            &fixture("anthropic/anthropic-json-tool.chunks.txt"),
            true,
            "\n",
        )),
        Reply::ok(frames(
            &fixture("anthropic/anthropic-text.chunks.txt"),
            true,
            "\n",
        )),
    ])
    .await;
    let model = AnthropicModel::builder("claude-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(check(&events_of(Arc::new(model), 1).await), 1);
}

#[tokio::test]
async fn chat_completions_streams_the_inputs_of_its_calls() {
    loopwright_providers::install_tls_provider();
    for path in [
        "openai-chat/groq-tool-call.chunks.txt",
        "openai-chat/xai-tool-call.chunks.txt",
    ] {
        let server = serve(vec![
            chat_frames(path),
            chat_frames("openai-chat/openai-text.chunks.txt"),
        ])
        .await;
        let model = OpenAiChatModel::compatible("recorded", format!("{}/v1", server.url()), "m")
            .build()
            .unwrap();
        assert_eq!(check(&events_of(Arc::new(model), 1).await), 1, "{path}");
    }
}

#[tokio::test]
async fn responses_streams_the_inputs_of_its_calls() {
    loopwright_providers::install_tls_provider();
    // The recording holds four responses: a call in each of three, then text.
    let mut replies = Vec::new();
    let mut response = Vec::new();
    for line in fixture("openai-responses/openai-reasoning-calculator-3-calls.chunks.txt") {
        let done = line.contains("\"type\":\"response.completed\"");
        response.push(line);
        if done {
            replies.push(Reply::ok(frames(&std::mem::take(&mut response), true, "\n")));
        }
    }
    assert_eq!(replies.len(), 4);
    replies.push(responses_text("Done."));
    let server = serve(replies).await;
    let model = OpenAiResponsesModel::builder("gpt-test")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    assert_eq!(check(&events_of(Arc::new(model), 3).await), 3);
}

#[tokio::test]
async fn gemini_sends_each_input_whole_as_one_delta() {
    loopwright_providers::install_tls_provider();
    let server = serve(gemini_call_then_text()).await;
    let model = GeminiModel::builder("gemini-test")
        .base_url(server.url())
        .api_key("k")
        .build()
        .unwrap();
    let events = events_of(Arc::new(model), 1).await;
    assert_eq!(check(&events), 1);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolInputDelta { .. }))
        .count();
    assert_eq!(deltas, 1);
}
