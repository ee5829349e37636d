//! `FallbackModel` over real providers and local HTTP servers, through the
//! agent loop: the second provider's answer is used, the first one's partial
//! output is discarded, tools run once and every attempt is accounted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use common::*;
use futures::StreamExt;
use loopwright_core::accounting::{AccountingEntry, EntryStatus};
use loopwright_core::{
    Agent, AgentEvent, AgentResult, ExitReason, FallbackModel, LanguageModel, ToolSet, tool_fn,
    toolset::StaticToolSource,
};
use loopwright_providers::{AnthropicModel, HttpOptions, OpenAiChatModel};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    /// City.
    location: String,
}

/// A `weather` tool that counts its runs.
fn counted_weather() -> (ToolSet, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let tools = ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(tool_fn(
            "weather",
            "Weather for a city.",
            move |w: Weather| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok(format!("Sunny in {}", w.location)) }
            },
        )))
        .build();
    (tools, runs)
}

/// An OpenAI-compatible model on a local server, without transport retries
/// so each scripted reply is one attempt.
fn chat_model(provider: &str, server: &ModelServer, model: &str) -> Arc<dyn LanguageModel> {
    Arc::new(
        OpenAiChatModel::compatible(provider, format!("{}/v1", server.url()), model)
            .api_key("sk-test")
            .http_options(HttpOptions {
                max_retries: 0,
                ..HttpOptions::default()
            })
            .build()
            .unwrap(),
    )
}

fn data(value: Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn delta(delta: Value, finish: Option<&str>) -> Bytes {
    data(
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn usage_and_done() -> Vec<Bytes> {
    vec![
        data(
            json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}),
        ),
        Bytes::from("data: [DONE]\n\n"),
    ]
}

/// A whole streamed answer calling `weather` for Paris.
fn tool_call_answer(id: &str) -> Reply {
    let mut chunks = vec![
        delta(json!({"role": "assistant", "content": null}), None),
        delta(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            None,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"location\":"}}]}),
            None,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            None,
        ),
        delta(json!({}), Some("tool_calls")),
    ];
    chunks.extend(usage_and_done());
    Reply::ok(chunks)
}

/// A whole streamed text answer.
fn text_answer(text: &str) -> Reply {
    let mut chunks = vec![
        delta(json!({"role": "assistant", "content": text}), None),
        delta(json!({}), Some("stop")),
    ];
    chunks.extend(usage_and_done());
    Reply::ok(chunks)
}

/// Some text and half a tool call, then the connection dies.
fn dying_answer() -> Reply {
    Reply::ok(vec![
        delta(json!({"role": "assistant", "content": "PARTIAL-TEXT from alpha"}), None),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_dead", "type": "function", "function": {"name": "weather", "arguments": "{\"locat"}}]}),
            None,
        ),
    ])
    .aborted()
}

async fn run(model: FallbackModel, tools: ToolSet) -> (Vec<AgentEvent>, AgentResult) {
    let agent = Agent::builder(Arc::new(model)).tools(tools).build();
    let mut run = agent.run("What is the weather in Paris?");
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        events.push(e);
    }
    (
        events,
        run.await.or_else(loopwright_core::RunError::into_result).unwrap(),
    )
}

fn llm_entries(events: &[AgentEvent]) -> Vec<(String, EntryStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Accounting {
                entry: AccountingEntry::Llm(l),
            } => Some((l.provider.clone(), l.status)),
            _ => None,
        })
        .collect()
}

fn fallbacks(events: &[AgentEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModelFallback { from, to, error } => Some((from.clone(), to.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

/// Runs the agent with `alpha` failing as scripted and `beta` answering with
/// a tool call then text; checks what every case shares and returns the
/// fallback errors.
async fn fallback_case(alpha_replies: Vec<Reply>) -> (Vec<AgentEvent>, Vec<String>) {
    let alpha = serve(alpha_replies).await;
    let beta = serve(vec![
        tool_call_answer("call_beta"),
        text_answer("It is sunny in Paris."),
    ])
    .await;
    let model = FallbackModel::new(vec![
        chat_model("alpha", &alpha, "alpha-1"),
        chat_model("beta", &beta, "beta-1"),
    ])
    .retries(0);
    let (tools, runs) = counted_weather();
    let (events, result) = run(model, tools).await;

    // The second provider's answer is used.
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(result.text, "It is sunny in Paris.");
    // The tool ran exactly once, with beta's call.
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let history = serde_json::to_string(&result.messages).unwrap();
    assert!(
        history.contains("call_beta") && history.contains("Sunny in Paris"),
        "{history}"
    );
    // Nothing of alpha's partial output is in the history.
    assert!(!history.contains("PARTIAL-TEXT"), "{history}");
    assert!(!history.contains("call_dead"), "{history}");
    // Each step tried alpha then fell back to beta.
    let fallbacks = fallbacks(&events);
    assert_eq!(fallbacks.len(), 2, "{fallbacks:?}");
    for (from, to, _) in &fallbacks {
        assert_eq!((from.as_str(), to.as_str()), ("alpha/alpha-1", "beta/beta-1"));
    }
    // One accounting entry per attempt: each request a server received.
    assert_eq!(alpha.received().len(), 2);
    assert_eq!(beta.received().len(), 2);
    assert_eq!(
        llm_entries(&events),
        [
            ("alpha".to_owned(), EntryStatus::Error),
            ("beta".to_owned(), EntryStatus::Ok),
            ("alpha".to_owned(), EntryStatus::Error),
            ("beta".to_owned(), EntryStatus::Ok),
        ]
    );
    // Both providers got the same conversation in each step.
    assert_eq!(
        alpha.received()[0].body["messages"],
        beta.received()[0].body["messages"]
    );
    assert_eq!(
        alpha.received()[1].body["messages"],
        beta.received()[1].body["messages"]
    );
    let errors = fallbacks.into_iter().map(|(_, _, error)| error).collect();
    (events, errors)
}

#[tokio::test]
async fn a_server_error_before_streaming_falls_back() {
    let server_error = || Reply::status(500, r#"{"error":{"message":"alpha is down"}}"#);
    let (_, errors) = fallback_case(vec![server_error(), server_error()]).await;
    assert!(errors.iter().all(|e| e.contains("alpha is down")), "{errors:?}");
}

#[tokio::test]
async fn an_auth_error_falls_back() {
    let unauthorized = || Reply::status(401, r#"{"error":{"message":"invalid api key"}}"#);
    let (_, errors) = fallback_case(vec![unauthorized(), unauthorized()]).await;
    assert!(errors.iter().all(|e| e.contains("invalid api key")), "{errors:?}");
}

#[tokio::test]
async fn a_connection_dying_mid_stream_discards_the_partial_answer() {
    let (events, errors) = fallback_case(vec![
        dying_answer(),
        Reply::status(503, r#"{"error":{"message":"still down"}}"#),
    ])
    .await;
    // The partial text did stream before the connection died, and the first
    // fallback is for the broken stream, not an HTTP status.
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(streamed.starts_with("PARTIAL-TEXT from alpha"), "{streamed}");
    assert!(!errors[0].contains("still down"), "{errors:?}");
    assert!(errors[1].contains("still down"), "{errors:?}");
}

#[tokio::test]
async fn transport_retries_stay_inside_one_attempt() {
    // With the default transport retries, alpha's 500s are retried inside
    // one attempt before the fallback: still one accounting entry for it.
    let alpha = serve(vec![
        Reply::status(500, r#"{"error":{"message":"down"}}"#),
        Reply::status(500, r#"{"error":{"message":"down"}}"#),
        Reply::status(500, r#"{"error":{"message":"down"}}"#),
        Reply::status(500, r#"{"error":{"message":"down"}}"#),
    ])
    .await;
    let beta = serve(vec![text_answer("from beta")]).await;
    let retrying: Arc<dyn LanguageModel> = Arc::new(
        OpenAiChatModel::compatible("alpha", format!("{}/v1", alpha.url()), "alpha-1")
            .http_options(HttpOptions {
                max_retries: 1,
                initial_backoff: std::time::Duration::from_millis(1),
                ..HttpOptions::default()
            })
            .build()
            .unwrap(),
    );
    let model = FallbackModel::new(vec![retrying, chat_model("beta", &beta, "beta-1")]).retries(0);
    let (tools, runs) = counted_weather();
    let (events, result) = run(model, tools).await;
    assert_eq!(result.text, "from beta");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(alpha.received().len(), 2);
    assert_eq!(
        llm_entries(&events),
        [
            ("alpha".to_owned(), EntryStatus::Error),
            ("beta".to_owned(), EntryStatus::Ok)
        ]
    );
    assert_eq!(fallbacks(&events).len(), 1);
}

/// An Anthropic Messages stream of these content blocks.
fn anthropic_answer(blocks: &[(Value, Vec<Value>)], stop_reason: &str) -> Reply {
    let mut lines = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
    ];
    for (index, (start, deltas)) in blocks.iter().enumerate() {
        lines.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            lines.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        lines.push(json!({"type": "content_block_stop", "index": index}));
    }
    lines.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 5}}));
    lines.push(json!({"type": "message_stop"}));
    let lines: Vec<String> = lines.iter().map(Value::to_string).collect();
    Reply::ok(frames(&lines, true, "\n"))
}

#[tokio::test]
async fn openai_dying_mid_stream_falls_back_to_anthropic() {
    let alpha = serve(vec![dying_answer(), dying_answer()]).await;
    let claude = serve(vec![
        anthropic_answer(
            &[(
                json!({"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}),
                vec![json!({"type": "input_json_delta", "partial_json": "{\"location\":\"Paris\"}"})],
            )],
            "tool_use",
        ),
        anthropic_answer(
            &[(
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": "Sunny, says Claude."})],
            )],
            "end_turn",
        ),
    ])
    .await;
    let anthropic: Arc<dyn LanguageModel> = Arc::new(
        AnthropicModel::builder("claude-test")
            .base_url(format!("{}/v1", claude.url()))
            .api_key("sk-ant")
            .build()
            .unwrap(),
    );
    let model = FallbackModel::new(vec![chat_model("alpha", &alpha, "alpha-1"), anthropic]).retries(0);
    let (tools, runs) = counted_weather();
    let (events, result) = run(model, tools).await;
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(result.text, "Sunny, says Claude.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let history = serde_json::to_string(&result.messages).unwrap();
    assert!(
        history.contains("toolu_1") && history.contains("Sunny in Paris"),
        "{history}"
    );
    assert!(
        !history.contains("PARTIAL-TEXT") && !history.contains("call_dead"),
        "{history}"
    );
    let fallbacks = fallbacks(&events);
    assert_eq!(fallbacks.len(), 2, "{fallbacks:?}");
    assert!(
        fallbacks
            .iter()
            .all(|(from, to, _)| from == "alpha/alpha-1" && to == "anthropic/claude-test")
    );
    assert_eq!(
        llm_entries(&events),
        [
            ("alpha".to_owned(), EntryStatus::Error),
            ("anthropic".to_owned(), EntryStatus::Ok),
            ("alpha".to_owned(), EntryStatus::Error),
            ("anthropic".to_owned(), EntryStatus::Ok),
        ]
    );
    // Claude's second request carries its own tool call and the one result.
    let body = &claude.received()[1].body;
    let text = body["messages"].to_string();
    assert!(text.contains("toolu_1") && !text.contains("call_dead"), "{text}");
}
