//! What the provider tests share: the fake model server of tests-support
//! (a real HTTP server on 127.0.0.1:0 playing scripted replies, recording
//! the requests), the recorded fixtures, and readers of model streams.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod models;

use std::time::Duration;

use futures::StreamExt;
use loopwright_core::{ModelError, model::ModelEvent, model::ModelStream};
pub use loopwright_test_support::model_server::sse::frames;
pub use loopwright_test_support::model_server::{ModelServer, Reply};
use serde_json::Value;

/// Generous guard against a hung test (never a timing assertion).
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// A fake model server playing `replies` once each, in order (a request
/// past them gets a 500, `no scripted reply`), on any path.
pub async fn serve(replies: Vec<Reply>) -> ModelServer {
    ModelServer::builder().replies(replies).each_once().start().await
}

pub fn fixture(path: &str) -> Vec<String> {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full)
        .unwrap_or_else(|e| panic!("{full}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Gemini's recorded replies: a tool call, then a text answer.
pub fn gemini_call_then_text() -> Vec<Reply> {
    vec![
        Reply::ok(frames(
            &fixture("gemini/google-tool-call.chunks.txt"),
            false,
            "\r\n",
        )),
        Reply::ok(frames(&fixture("gemini/google-text.chunks.txt"), false, "\r\n")),
    ]
}

/// Collect a stream: all events, and the error that ended it, if any.
pub async fn collect(stream: ModelStream) -> (Vec<ModelEvent>, Option<ModelError>) {
    tokio::time::timeout(HANG_GUARD, async move {
        let mut events = Vec::new();
        let mut stream = stream;
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(e) => {
                    assert!(stream.next().await.is_none(), "stream continued after an error");
                    return (events, Some(e));
                }
            }
        }
        (events, None)
    })
    .await
    .expect("hang guard")
}

/// All text deltas joined.
pub fn text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let ModelEvent::TextDelta { text } = e {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect()
}

/// All reasoning deltas joined.
pub fn reasoning(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let ModelEvent::ReasoningDelta { text } = e {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect()
}

/// Completed tool calls as (id, name, parsed input).
pub fn calls(events: &[ModelEvent]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallComplete {
                id, name, input_json, ..
            } => Some((
                id.clone(),
                name.clone(),
                serde_json::from_str(input_json).expect("tool input is JSON"),
            )),
            _ => None,
        })
        .collect()
}

/// The single Finish, checked to be last and unique.
pub fn finish(events: &[ModelEvent]) -> (loopwright_core::model::FinishReason, loopwright_core::Usage) {
    let count = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finish { .. }))
        .count();
    assert_eq!(count, 1, "exactly one Finish: {events:?}");
    match events.last() {
        Some(ModelEvent::Finish { reason, usage }) => (reason.clone(), *usage),
        other => panic!("Finish is not last: {other:?}"),
    }
}

/// A compact tag per event kind, to check ordering.
pub fn kinds(events: &[ModelEvent]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in events {
        let k = match e {
            ModelEvent::TextDelta { .. } => "text",
            ModelEvent::ReasoningDelta { .. } => "reasoning",
            ModelEvent::ReasoningDone { .. } => "reasoning_done",
            ModelEvent::ToolCallStart { .. } => "call_start",
            ModelEvent::ToolCallDelta { .. } => "call_delta",
            ModelEvent::ToolCallComplete { .. } => "call_complete",
            ModelEvent::Usage { .. } => "usage",
            ModelEvent::Finish { .. } => "finish",
            _ => "other",
        };
        if out.last() != Some(&k) {
            out.push(k);
        }
    }
    out
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    /// City.
    location: String,
}

/// A tool set with one `weather` tool.
pub fn weather_tools() -> loopwright_core::ToolSet {
    loopwright_core::ToolSet::builder()
        .source(
            loopwright_core::toolset::StaticToolSource::native("app").with_tool(loopwright_core::tool_fn(
                "weather",
                "Weather for a city.",
                |w: Weather| async move { Ok(format!("Sunny in {}", w.location)) },
            )),
        )
        .build()
}
