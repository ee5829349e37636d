//! A local model server that plays a script per model, in the Chat
//! Completions format (`/v1/chat/completions`) and the Anthropic Messages
//! format (`/v1/messages`), for runs where several agents with different
//! models call it at once (each model's replies stay in order).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// Serves each model's replies in order (the last one repeats) and keeps
/// every request body.
pub struct RoutedServer {
    pub addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
}

type Scripts = Arc<Mutex<HashMap<String, (usize, Vec<String>)>>>;

fn next_reply(scripts: &Scripts, model: &str) -> Option<String> {
    let mut scripts = scripts.lock().unwrap();
    let (next, replies) = scripts.get_mut(model)?;
    let reply = replies[(*next).min(replies.len() - 1)].clone();
    *next += 1;
    Some(reply)
}

impl RoutedServer {
    /// Serve `scripts`: model id -> SSE bodies, one per request.
    pub async fn start(scripts: Vec<(&str, Vec<String>)>) -> Self {
        let scripts: Scripts = Arc::new(Mutex::new(
            scripts
                .into_iter()
                .map(|(model, replies)| (model.to_owned(), (0, replies)))
                .collect(),
        ));
        let bodies = Arc::new(Mutex::new(Vec::<Value>::new()));
        let (s, b) = (scripts.clone(), bodies.clone());
        let reply = move |body: axum::Json<Value>| {
            let (s, b) = (s.clone(), b.clone());
            async move {
                let model = body.0["model"].as_str().unwrap_or_default().to_owned();
                b.lock().unwrap().push(body.0);
                match next_reply(&s, &model) {
                    Some(sse) => (
                        axum::http::StatusCode::OK,
                        [("content-type", "text/event-stream")],
                        sse,
                    ),
                    None => (
                        axum::http::StatusCode::NOT_FOUND,
                        [("content-type", "application/json")],
                        json!({"error": {"message": format!("no script for model {model}")}}).to_string(),
                    ),
                }
            }
        };
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(reply.clone()))
            .route("/v1/messages", axum::routing::post(reply));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, bodies }
    }

    /// The base URL of both formats (`.../v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The request bodies for `model`, in arrival order.
    pub fn bodies_for(&self, model: &str) -> Vec<Value> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b["model"] == model)
            .cloned()
            .collect()
    }
}

fn chat_chunk(delta: Value, finish: Option<&str>) -> String {
    let mut c = json!({
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1770770843, "model": "test",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    if finish.is_some() {
        c["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110});
    }
    format!("data: {c}\n\n")
}

/// A Chat Completions step calling each `(id, tool, arguments)` at once.
pub fn chat_calls(calls: &[(&str, &str, Value)]) -> String {
    let mut body = chat_chunk(json!({"role": "assistant", "content": null}), None);
    for (index, (id, tool, arguments)) in calls.iter().enumerate() {
        let call = json!([{"index": index, "id": id, "type": "function",
            "function": {"name": tool, "arguments": arguments.to_string()}}]);
        body += &chat_chunk(json!({"tool_calls": call}), None);
    }
    body + &chat_chunk(json!({}), Some("tool_calls")) + "data: [DONE]\n\n"
}

/// A Chat Completions step reasoning `reasoning` (as `reasoning_content`),
/// then answering `text`.
pub fn chat_reasoned_answer(reasoning: &str, text: &str) -> String {
    chat_chunk(json!({"role": "assistant", "reasoning_content": reasoning}), None)
        + &chat_chunk(json!({"content": text}), None)
        + &chat_chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}

/// A Chat Completions step answering `text`.
pub fn chat_answer(text: &str) -> String {
    chat_chunk(json!({"role": "assistant", "content": text}), None)
        + &chat_chunk(json!({}), Some("stop"))
        + "data: [DONE]\n\n"
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start() -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_test", "type": "message", "role": "assistant",
            "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 200, "output_tokens": 1}}}),
    )
}

fn message_end(stop_reason: &str) -> String {
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 20}}),
    ) + &event("message_stop", json!({"type": "message_stop"}))
}

/// An Anthropic Messages step calling `tool` with `input`.
pub fn anthropic_call(id: &str, tool: &str, input: Value) -> String {
    message_start()
        + &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": id, "name": tool, "input": {}}}),
        )
        + &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        )
        + &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )
        + &message_end("tool_use")
}

/// An Anthropic Messages step answering `text`.
pub fn anthropic_answer(text: &str) -> String {
    message_start()
        + &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        )
        + &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        )
        + &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )
        + &message_end("end_turn")
}
