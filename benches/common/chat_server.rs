//! A local Chat Completions server for the end-to-end benches (axum, on a
//! thread and runtime of its own, so it never competes with the measured
//! runtime's workers): the model calls one tool a step until the request
//! holds `steps` tool results, then answers "done". It records each
//! request's body and the moment it arrived. Shared by `benches/e2e.rs` and
//! `benches/latency.rs`.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use serde_json::{Value, json};

/// What the server plays, and what it saw.
#[derive(Default)]
pub struct Script {
    /// How many tool calls (one a step) before the answer.
    pub steps: AtomicUsize,
    /// The tool to call (its exposed name) and its arguments.
    pub tool: Mutex<(String, Value)>,
    /// Every request body, in order.
    pub bodies: Mutex<Vec<Bytes>>,
    /// When each request arrived.
    pub arrivals: Mutex<Vec<Instant>>,
}

impl Script {
    /// Play `steps` calls of `tool` with `args`, then the answer.
    pub fn play(&self, steps: usize, tool: impl Into<String>, args: Value) {
        self.steps.store(steps, Ordering::SeqCst);
        *self.tool.lock().unwrap() = (tool.into(), args);
    }

    /// Forget the bodies and arrivals seen so far.
    pub fn clear(&self) {
        self.bodies.lock().unwrap().clear();
        self.arrivals.lock().unwrap().clear();
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let mut c = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    if finish.is_some() {
        c["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    }
    format!("data: {c}\n\n")
}

/// The reply to a request: a call while fewer than `steps` tool results
/// are in it, else the answer.
fn reply(script: &Script, body: &[u8]) -> String {
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let done = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    if done < script.steps.load(Ordering::SeqCst) {
        let (tool, args) = script.tool.lock().unwrap().clone();
        let call = json!([{"index": 0, "id": format!("call_{done}"), "type": "function",
            "function": {"name": tool, "arguments": args.to_string()}}]);
        chunk(json!({"role": "assistant", "tool_calls": call}), None)
            + &chunk(json!({}), Some("tool_calls"))
            + "data: [DONE]\n\n"
    } else {
        chunk(json!({"role": "assistant", "content": "done"}), None)
            + &chunk(json!({}), Some("stop"))
            + "data: [DONE]\n\n"
    }
}

/// Serve `script` on 127.0.0.1 (`/v1/chat/completions`) from a thread of
/// its own; its address.
pub fn start(script: Arc<Script>) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/chat/completions",
                axum::routing::post(move |body: Bytes| {
                    let script = script.clone();
                    async move {
                        script.arrivals.lock().unwrap().push(Instant::now());
                        let text = reply(&script, &body);
                        script.bodies.lock().unwrap().push(body);
                        ([("content-type", "text/event-stream")], text)
                    }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}
