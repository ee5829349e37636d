//! A real local HTTP server (axum on 127.0.0.1:0) that plays scripted
//! responses and records the requests it received.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod models;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, Uri};
use bytes::Bytes;
use futures::StreamExt;
use loopwright_core::{ModelError, model::ModelEvent, model::ModelStream};
use serde_json::Value;

/// Generous guard against a hung test (never a timing assertion).
pub const HANG_GUARD: Duration = Duration::from_secs(20);

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
    /// Keep the connection open after the chunks, sending nothing.
    pub stall: bool,
    /// Abort the connection after the chunks (a body that errors mid-stream).
    pub abort: bool,
}

impl Reply {
    pub fn ok(chunks: Vec<Bytes>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            stall: false,
            abort: false,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::from(body.to_owned())],
            stall: false,
            abort: false,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn aborted(mut self) -> Self {
        self.abort = true;
        self
    }

    pub fn stalled(mut self) -> Self {
        self.stall = true;
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    replies: VecDeque<Reply>,
    received: Vec<Received>,
}

pub struct Server {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let shared = Arc::new(Mutex::new(Shared {
            replies: replies.into(),
            received: Vec::new(),
        }));
        let state = shared.clone();
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let state = state.clone();
            async move {
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let reply = {
                    let mut s = state.lock().unwrap();
                    s.received.push(Received {
                        path: uri.to_string(),
                        headers,
                        body,
                    });
                    s.replies.pop_front()
                };
                let reply = reply
                    .unwrap_or_else(|| Reply::status(500, r#"{"error":{"message":"no scripted reply"}}"#));
                let chunks = futures::stream::iter(reply.chunks.into_iter().map(Ok::<_, std::io::Error>));
                let body = if reply.abort {
                    let dead = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "scripted abort");
                    // Let the client read the chunks before the connection dies.
                    let die = futures::stream::once(async move {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Err(dead)
                    });
                    Body::from_stream(chunks.chain(die))
                } else if reply.stall {
                    Body::from_stream(chunks.chain(futures::stream::pending()))
                } else {
                    Body::from_stream(chunks)
                };
                let mut response = axum::response::Response::new(body);
                *response.status_mut() = StatusCode::from_u16(reply.status).unwrap();
                for (k, v) in reply.headers {
                    response.headers_mut().insert(
                        axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        axum::http::HeaderValue::from_str(&v).unwrap(),
                    );
                }
                response
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}"),
            shared,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap().received.clone()
    }

    pub fn last_body(&self) -> Value {
        self.received().last().expect("a request").body.clone()
    }
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

/// Frame payloads as SSE: one chunk per event, `event: <type>` when asked,
/// the given line end.
pub fn sse(lines: &[String], named: bool, eol: &str) -> Vec<Bytes> {
    lines
        .iter()
        .map(|line| {
            let mut s = String::new();
            if named {
                let v: Value = serde_json::from_str(line).unwrap();
                s.push_str(&format!("event: {}{eol}", v["type"].as_str().unwrap()));
            }
            s.push_str(&format!("data: {line}{eol}{eol}"));
            Bytes::from(s)
        })
        .collect()
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
