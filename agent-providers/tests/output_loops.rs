//! Structured output through a whole run on each wire format, replayed by a
//! local HTTP server: step 1 calls the `weather` tool, step 2 answers in
//! the structured shape (native: JSON text; tool mode: a `final_answer`
//! call). Also cache-token usage and reasoning replayed with reasoning on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::*;
use loopwright_core::output::FINAL_ANSWER_TOOL;
use loopwright_core::{
    Agent, LanguageModel, Message, OutputSpec, ReasoningEffort, model::ModelRequest, output::OutputMode,
};
use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};
use serde_json::{Value, json};

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Verdict {
    city: String,
    sunny: bool,
}

const ANSWER: &str = r#"{"city":"Paris","sunny":true}"#;
const ARGS: &str = r#"{"location":"Paris"}"#;

fn lines(values: &[Value]) -> Vec<String> {
    values.iter().map(Value::to_string).collect()
}

/// One provider: its model at the server, its streams, and where its body
/// carries the native response format.
struct Wire {
    name: &'static str,
    model: fn(&ModelServer) -> Arc<dyn LanguageModel>,
    call: fn(&str, &str) -> Reply,
    text: fn(&str) -> Reply,
    format: fn(&Value) -> Option<&Value>,
}

fn chat_reply(chunks: &[Value]) -> Reply {
    let mut bytes = frames(&lines(chunks), false, "\n");
    bytes.push(Bytes::from("data: [DONE]\n\n"));
    Reply::ok(bytes)
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": finish.map(|_| json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))})
}

fn chat_call(name: &str, args: &str) -> Reply {
    chat_reply(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": format!("call_{name}"), "type": "function",
            "function": {"name": name, "arguments": args}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])
}

fn chat_text(text: &str) -> Reply {
    chat_reply(&[
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some("stop")),
    ])
}

fn responses_completed() -> Value {
    json!({"type": "response.completed", "response": {"status": "completed",
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}

fn responses_call(name: &str, args: &str) -> Reply {
    let item = json!({"type": "function_call", "id": format!("fc_{name}"), "call_id": format!("call_{name}"),
        "name": name, "arguments": ""});
    let mut done = item.clone();
    done["arguments"] = json!(args);
    Reply::ok(frames(
        &lines(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 0,
                "item_id": format!("fc_{name}"), "delta": args}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
            responses_completed(),
        ]),
        true,
        "\n",
    ))
}

fn responses_text(text: &str) -> Reply {
    Reply::ok(frames(
        &lines(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "delta": text}),
            responses_completed(),
        ]),
        true,
        "\n",
    ))
}

fn anthropic_reply(block: Value, deltas: Vec<Value>, stop: &str) -> Reply {
    let mut events = vec![
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": block}),
    ];
    events.extend(
        deltas
            .into_iter()
            .map(|d| json!({"type": "content_block_delta", "index": 0, "delta": d})),
    );
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        json!({"type": "message_stop"}),
    ]);
    Reply::ok(frames(&lines(&events), true, "\n"))
}

fn anthropic_call(name: &str, args: &str) -> Reply {
    anthropic_reply(
        json!({"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": {}}),
        vec![json!({"type": "input_json_delta", "partial_json": args})],
        "tool_use",
    )
}

fn anthropic_text(text: &str) -> Reply {
    anthropic_reply(
        json!({"type": "text", "text": ""}),
        vec![json!({"type": "text_delta", "text": text})],
        "end_turn",
    )
}

fn gemini_reply(part: Value) -> Reply {
    let chunk = json!({"candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP",
        "index": 0}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}});
    Reply::ok(frames(&lines(&[chunk]), false, "\r\n"))
}

fn gemini_call(name: &str, args: &str) -> Reply {
    let args: Value = serde_json::from_str(args).unwrap();
    gemini_reply(json!({"functionCall": {"name": name, "args": args}}))
}

fn gemini_text(text: &str) -> Reply {
    gemini_reply(json!({"text": text}))
}

fn ollama_reply(message: Value) -> Reply {
    let lines = [
        json!({"model": "m", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false}),
        json!({"model": "m", "created_at": "2025-01-01T00:00:01Z", "message": {"role": "assistant", "content": ""},
            "done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Reply::ok(vec![Bytes::from(text)])
}

fn ollama_call(name: &str, args: &str) -> Reply {
    let args: Value = serde_json::from_str(args).unwrap();
    ollama_reply(json!({"role": "assistant", "content": "",
        "tool_calls": [{"function": {"index": 0, "name": name, "arguments": args}}]}))
}

fn ollama_text(text: &str) -> Reply {
    ollama_reply(json!({"role": "assistant", "content": text}))
}

/// Claude Sonnet 4.5 at the local server.
fn anthropic_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        AnthropicModel::builder("claude-sonnet-4-5")
            .base_url(format!("{}/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

/// GPT-5 through the Responses API at the local server.
fn responses_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        OpenAiResponsesModel::builder("gpt-5")
            .base_url(format!("{}/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn wires() -> Vec<Wire> {
    vec![
        Wire {
            name: "openai chat",
            model: |s| {
                Arc::new(
                    OpenAiChatModel::openai("gpt-4.1")
                        .base_url(format!("{}/v1", s.url()))
                        .api_key("k")
                        .build()
                        .unwrap(),
                )
            },
            call: chat_call,
            text: chat_text,
            format: |b| b.get("response_format"),
        },
        Wire {
            name: "openai responses",
            model: responses_at,
            call: responses_call,
            text: responses_text,
            format: |b| b.get("text").and_then(|t| t.get("format")),
        },
        Wire {
            name: "anthropic",
            model: anthropic_at,
            call: anthropic_call,
            text: anthropic_text,
            format: |b| b.get("output_config").and_then(|c| c.get("format")),
        },
        Wire {
            name: "gemini",
            model: |s| {
                Arc::new(
                    GeminiModel::builder("gemini-2.5-flash")
                        .base_url(format!("{}/v1beta", s.url()))
                        .api_key("k")
                        .build()
                        .unwrap(),
                )
            },
            call: gemini_call,
            text: gemini_text,
            format: |b| {
                b.get("generationConfig")
                    .and_then(|g| g.get("responseJsonSchema"))
            },
        },
        Wire {
            name: "ollama",
            model: |s| {
                Arc::new(
                    OllamaModel::builder("llama3.2")
                        .base_url(s.url())
                        .build()
                        .unwrap(),
                )
            },
            call: ollama_call,
            text: ollama_text,
            format: |b| b.get("format"),
        },
    ]
}

async fn structured_run(wire: &Wire, mode: OutputMode) -> Vec<Value> {
    let answer = match mode {
        OutputMode::Tool => (wire.call)(FINAL_ANSWER_TOOL, ANSWER),
        _ => (wire.text)(ANSWER),
    };
    let server = serve(vec![(wire.call)("weather", ARGS), answer]).await;
    let agent = Agent::builder((wire.model)(&server))
        .tools(weather_tools())
        .output(OutputSpec::of::<Verdict>().mode(mode))
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Is it sunny in Paris?"))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{}: {e}", wire.name));
    assert_eq!(
        result.output::<Verdict>().unwrap(),
        Verdict {
            city: "Paris".into(),
            sunny: true
        },
        "{}",
        wire.name
    );
    let bodies: Vec<Value> = server.received().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2, "{}", wire.name);
    // The weather tool's result reached the model before the answer.
    assert!(bodies[1].to_string().contains("Sunny in Paris"), "{}", wire.name);
    bodies
}

/// Native mode: each request carries the provider's response format (Ollama
/// leaves its grammar out while tools are offered); the JSON text answer is
/// validated and typed.
#[tokio::test]
async fn native_mode_on_every_wire_format() {
    for wire in wires() {
        let bodies = structured_run(&wire, OutputMode::Native).await;
        for body in &bodies {
            let format = (wire.format)(body);
            // Ollama's grammar and Gemini 2.5's JSON mode exclude tools: left out.
            if wire.name == "ollama" || wire.name == "gemini" {
                assert!(format.is_none(), "{}: format with tools", wire.name);
            } else {
                let format = format.unwrap_or_else(|| panic!("{}: no response format in {body}", wire.name));
                assert!(format.to_string().contains("sunny"), "{}: {format}", wire.name);
            }
            assert!(
                !body["tools"].to_string().contains(FINAL_ANSWER_TOOL),
                "{}",
                wire.name
            );
        }
    }
}

/// Tool mode: each request offers the final-answer tool and no response
/// format; the answer comes as its arguments.
#[tokio::test]
async fn tool_mode_on_every_wire_format() {
    for wire in wires() {
        let bodies = structured_run(&wire, OutputMode::Tool).await;
        for body in &bodies {
            assert!(
                body["tools"].to_string().contains(FINAL_ANSWER_TOOL),
                "{}: {body}",
                wire.name
            );
            assert!((wire.format)(body).is_none(), "{}", wire.name);
        }
    }
}

/// Anthropic reports cache reads and writes apart from `input_tokens`; the
/// usage holds all three as input, the cached and the written counts apart.
#[tokio::test]
async fn anthropic_cache_tokens_reach_the_usage() {
    let events = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}}),
        json!({"type": "message_stop"}),
    ];
    let server = serve(vec![Reply::ok(frames(&lines(&events), true, "\n"))]).await;
    let model = AnthropicModel::builder("claude-sonnet-4-5")
        .base_url(format!("{}/v1", server.url()))
        .api_key("k")
        .build()
        .unwrap();
    let (events, err) = collect(
        model
            .stream(ModelRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none(), "{err:?}");
    let (_, usage) = finish(&events);
    assert_eq!(usage.input_tokens, Some(125));
    assert_eq!(usage.cached_input_tokens, Some(100));
    assert_eq!(usage.cache_write_tokens, Some(20));
    assert_eq!(usage.output_tokens, Some(7));
}

/// A run with reasoning on: step 1 (`first`) calls `weather`, step 2
/// answers "Sunny."; the body of step 2's request.
async fn second_body_with_reasoning(
    first: Reply,
    answer: Reply,
    model: fn(&ModelServer) -> Arc<dyn LanguageModel>,
    effort: ReasoningEffort,
) -> Value {
    let server = serve(vec![first, answer]).await;
    let agent = Agent::builder(model(&server))
        .tools(weather_tools())
        .reasoning(effort)
        .build();
    let result = agent.run("Weather in Paris?").await.unwrap();
    assert_eq!(result.text, "Sunny.");
    server.received()[1].body.clone()
}

/// With reasoning on, Anthropic's step 2 both asks for thinking and replays
/// step 1's signed thinking block before its tool call.
#[tokio::test]
async fn anthropic_thinking_is_asked_for_and_replayed() {
    let first = [
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "check it"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG1"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ARGS}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    let second = second_body_with_reasoning(
        Reply::ok(frames(&lines(&first), true, "\n")),
        anthropic_text("Sunny."),
        anthropic_at,
        ReasoningEffort::Low,
    )
    .await;
    assert_eq!(
        second["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    let assistant = &second["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "check it", "signature": "SIG1"})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
}

/// With reasoning on, OpenAI Responses' step 2 asks for reasoning and sends
/// step 1's encrypted reasoning item back (the request is stateless).
#[tokio::test]
async fn responses_reasoning_is_asked_for_and_replayed() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC1",
        "summary": [{"type": "summary_text", "text": "check it"}]});
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather", "arguments": ARGS});
    let first = [
        json!({"type": "response.output_item.added", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": call}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
        responses_completed(),
    ];
    let second = second_body_with_reasoning(
        Reply::ok(frames(&lines(&first), true, "\n")),
        responses_text("Sunny."),
        responses_at,
        ReasoningEffort::High,
    )
    .await;
    assert_eq!(second["reasoning"], json!({"effort": "high", "summary": "auto"}));
    let input = second["input"].to_string();
    assert!(
        input.contains("ENC1") && input.contains("\"reasoning\""),
        "{input}"
    );
}
