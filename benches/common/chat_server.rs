//! The end-to-end benches' model (tests-support's fake model server, on a
//! thread and runtime of its own, so it never competes with the measured
//! runtime's workers): it calls one tool a step until the request holds
//! `steps` tool results, then answers "done". The server records each
//! request's body and the moment it arrived. Shared by `benches/e2e.rs`,
//! `benches/latency.rs` and `benches/tool_search.rs`.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use loopwright_test_support::model_server::{ModelServer, Received, Reply, sse};
use serde_json::Value;

/// What the server plays.
#[derive(Default)]
pub struct Script {
    /// How many tool calls (one a step) before the answer.
    pub steps: AtomicUsize,
    /// The tool to call (its exposed name) and its arguments.
    pub tool: Mutex<(String, Value)>,
}

impl Script {
    /// Play `steps` calls of `tool` with `args`, then the answer.
    pub fn play(&self, steps: usize, tool: impl Into<String>, args: Value) {
        self.steps.store(steps, Ordering::SeqCst);
        *self.tool.lock().unwrap() = (tool.into(), args);
    }
}

/// The reply to a request: a call while fewer than `steps` tool results
/// are in it, else the answer.
fn reply(script: &Script, request: &Received) -> Reply {
    let done = request.body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    if done < script.steps.load(Ordering::SeqCst) {
        let (tool, args) = script.tool.lock().unwrap().clone();
        sse::chat_calls(&[(&format!("call_{done}"), &tool, args)]).into()
    } else {
        sse::answer("done").into()
    }
}

/// Serve `script` on 127.0.0.1 from a thread of its own.
pub fn start(script: Arc<Script>) -> ModelServer {
    ModelServer::builder()
        .respond(move |request| reply(&script, request))
        .start_on_own_thread()
}
