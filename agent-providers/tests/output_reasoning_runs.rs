//! Streams replayed by a local HTTP server for what `output_loops.rs` leaves
//! out: cache and reasoning token counts in the usage, structured runs with
//! reasoning on (the model thinks before its JSON answer or final-answer
//! call) on every wire format, and the exact reasoning replayed on step 2.
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
const THOUGHT: &str = "Sunny means true.";

fn lines(values: &[Value]) -> Vec<String> {
    values.iter().map(Value::to_string).collect()
}

/// Every `name` in a JSON tree (tool names, wherever each format puts them).
fn names(v: &Value) -> Vec<String> {
    match v {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("name", Value::String(s)) => vec![s.clone()],
                _ => names(v),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(names).collect(),
        _ => Vec::new(),
    }
}

// ---- OpenAI Chat Completions (and OpenRouter) ----

/// Chunks, then the usage chunk `include_usage` asks for, then `[DONE]`.
fn chat_reply(deltas: Vec<Value>, finish: &str) -> Reply {
    let mut chunks: Vec<Value> = deltas
        .into_iter()
        .map(|d| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]}))
        .collect();
    chunks.push(json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    chunks.push(
        json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 10,
        "completion_tokens": 40, "total_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 32}}}),
    );
    let mut bytes = frames(&lines(&chunks), false, "\n");
    bytes.push(Bytes::from("data: [DONE]\n\n"));
    Reply::ok(bytes)
}

fn chat_call_delta(name: &str, args: &str) -> Value {
    json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{name}"), "type": "function",
        "function": {"name": name, "arguments": args}}]})
}

fn chat_call(name: &str, args: &str) -> Reply {
    chat_reply(vec![chat_call_delta(name, args)], "tool_calls")
}

/// OpenAI streams no reasoning text on Chat Completions (only its count).
fn chat_text(text: &str) -> Reply {
    chat_reply(vec![json!({"role": "assistant", "content": text})], "stop")
}

/// OpenRouter streams the reasoning in a `reasoning` delta first.
fn openrouter_thought() -> Value {
    json!({"role": "assistant", "content": "", "reasoning": THOUGHT})
}

fn openrouter_reasoned_call(name: &str, args: &str) -> Reply {
    chat_reply(
        vec![openrouter_thought(), chat_call_delta(name, args)],
        "tool_calls",
    )
}

fn openrouter_reasoned_text(text: &str) -> Reply {
    chat_reply(vec![openrouter_thought(), json!({"content": text})], "stop")
}

// ---- OpenAI Responses ----

fn responses_completed(cached: u64, reasoning: u64) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {
        "input_tokens": 2000, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": reasoning}, "total_tokens": 2300}}})
}

/// A reasoning item with its summary streamed, encrypted content on done.
fn responses_reasoning(index: u64, id: &str, encrypted: &str) -> Vec<Value> {
    let added = json!({"type": "reasoning", "id": id, "summary": []});
    let done = json!({"type": "reasoning", "id": id, "encrypted_content": encrypted,
        "summary": [{"type": "summary_text", "text": THOUGHT}]});
    vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": index, "item_id": id,
            "summary_index": 0, "delta": THOUGHT}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done}),
    ]
}

fn responses_call_events(index: u64, name: &str, args: &str) -> Vec<Value> {
    let id = format!("fc_{name}");
    let added = json!({"type": "function_call", "id": id, "call_id": format!("call_{name}"), "name": name,
        "arguments": "", "status": "in_progress"});
    let mut done = added.clone();
    done["arguments"] = json!(args);
    done["status"] = json!("completed");
    vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        json!({"type": "response.function_call_arguments.delta", "output_index": index, "item_id": id,
            "delta": args}),
        json!({"type": "response.function_call_arguments.done", "output_index": index, "item_id": id,
            "arguments": args}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done}),
    ]
}

fn responses_text_events(index: u64, text: &str) -> Vec<Value> {
    let item = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []});
    vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        json!({"type": "response.output_text.delta", "output_index": index, "item_id": "msg_1",
            "content_index": 0, "delta": text}),
    ]
}

fn responses_reply(mut events: Vec<Value>) -> Reply {
    events.push(responses_completed(0, 32));
    Reply::ok(frames(&lines(&events), true, "\n"))
}

fn responses_call(name: &str, args: &str) -> Reply {
    responses_reply(responses_call_events(0, name, args))
}

fn responses_reasoned_call(name: &str, args: &str) -> Reply {
    let mut events = responses_reasoning(0, "rs_2", "ENC2");
    events.extend(responses_call_events(1, name, args));
    responses_reply(events)
}

fn responses_reasoned_text(text: &str) -> Reply {
    let mut events = responses_reasoning(0, "rs_2", "ENC2");
    events.extend(responses_text_events(1, text));
    responses_reply(events)
}

// ---- Anthropic ----

/// One message of content blocks, each (start block, deltas).
fn anthropic_reply(blocks: Vec<(Value, Vec<Value>)>, stop: &str) -> Reply {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ];
    for (index, (block, deltas)) in blocks.into_iter().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        events.extend(
            deltas
                .into_iter()
                .map(|d| json!({"type": "content_block_delta", "index": index, "delta": d})),
        );
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.extend([
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ]);
    Reply::ok(frames(&lines(&events), true, "\n"))
}

fn anthropic_thinking(signature: &str) -> (Value, Vec<Value>) {
    (
        json!({"type": "thinking", "thinking": "", "signature": ""}),
        vec![
            json!({"type": "thinking_delta", "thinking": THOUGHT}),
            json!({"type": "signature_delta", "signature": signature}),
        ],
    )
}

fn anthropic_tool_use(name: &str, args: &str) -> (Value, Vec<Value>) {
    (
        json!({"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": {}}),
        vec![json!({"type": "input_json_delta", "partial_json": args})],
    )
}

fn anthropic_text_block(text: &str) -> (Value, Vec<Value>) {
    (
        json!({"type": "text", "text": ""}),
        vec![json!({"type": "text_delta", "text": text})],
    )
}

fn anthropic_call(name: &str, args: &str) -> Reply {
    anthropic_reply(vec![anthropic_tool_use(name, args)], "tool_use")
}

fn anthropic_reasoned_call(name: &str, args: &str) -> Reply {
    anthropic_reply(
        vec![anthropic_thinking("SIG2"), anthropic_tool_use(name, args)],
        "tool_use",
    )
}

fn anthropic_reasoned_text(text: &str) -> Reply {
    anthropic_reply(
        vec![anthropic_thinking("SIG2"), anthropic_text_block(text)],
        "end_turn",
    )
}

// ---- Gemini ----

/// One chunk per part list; the last one finishes.
fn gemini_reply(chunks: Vec<Vec<Value>>) -> Reply {
    let count = chunks.len();
    let chunks: Vec<Value> = chunks
        .into_iter()
        .enumerate()
        .map(|(i, parts)| {
            let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
            if i + 1 == count {
                candidate["finishReason"] = json!("STOP");
            }
            json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                "thoughtsTokenCount": 30, "totalTokenCount": 45}, "modelVersion": "gemini-3-pro-preview",
                "responseId": "resp_g"})
        })
        .collect();
    Reply::ok(frames(&lines(&chunks), false, "\r\n"))
}

fn gemini_thought() -> Value {
    json!({"text": THOUGHT, "thought": true})
}

fn gemini_call_part(name: &str, args: &str) -> Value {
    json!({"functionCall": {"name": name, "args": serde_json::from_str::<Value>(args).unwrap()},
        "thoughtSignature": "GSIG"})
}

fn gemini_call(name: &str, args: &str) -> Reply {
    gemini_reply(vec![vec![gemini_call_part(name, args)]])
}

fn gemini_reasoned_call(name: &str, args: &str) -> Reply {
    gemini_reply(vec![vec![gemini_thought()], vec![gemini_call_part(name, args)]])
}

fn gemini_reasoned_text(text: &str) -> Reply {
    gemini_reply(vec![
        vec![gemini_thought()],
        vec![json!({"text": text, "thoughtSignature": "GSIG2"})],
    ])
}

// ---- Ollama ----

fn ollama_reply(messages: Vec<Value>) -> Reply {
    let mut out: Vec<Value> = messages
        .into_iter()
        .map(|m| json!({"model": "qwen3:8b", "created_at": "2025-01-01T00:00:00Z", "message": m, "done": false}))
        .collect();
    out.push(json!({"model": "qwen3:8b", "created_at": "2025-01-01T00:00:01Z",
        "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
        "prompt_eval_count": 10, "eval_count": 40}));
    let text: String = out.iter().map(|l| format!("{l}\n")).collect();
    Reply::ok(vec![Bytes::from(text)]).header("content-type", "application/x-ndjson")
}

fn ollama_thought() -> Value {
    json!({"role": "assistant", "content": "", "thinking": THOUGHT})
}

fn ollama_call_message(name: &str, args: &str) -> Value {
    json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name,
        "arguments": serde_json::from_str::<Value>(args).unwrap()}}]})
}

fn ollama_call(name: &str, args: &str) -> Reply {
    ollama_reply(vec![ollama_call_message(name, args)])
}

fn ollama_reasoned_call(name: &str, args: &str) -> Reply {
    ollama_reply(vec![ollama_thought(), ollama_call_message(name, args)])
}

fn ollama_reasoned_text(text: &str) -> Reply {
    ollama_reply(vec![
        ollama_thought(),
        json!({"role": "assistant", "content": text}),
    ])
}

// ---- The wire formats ----

/// One wire format with a reasoning model: its model at the server, its
/// streams, where its body carries the response schema, and the reasoning
/// setting it must carry for effort `high`.
struct Wire {
    name: &'static str,
    model: fn(&ModelServer) -> Arc<dyn LanguageModel>,
    call: fn(&str, &str) -> Reply,
    reasoned_call: fn(&str, &str) -> Reply,
    reasoned_text: fn(&str) -> Reply,
    schema: fn(&Value) -> Option<&Value>,
    reasoning: (&'static str, Value),
}

fn chat_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        OpenAiChatModel::openai("o4-mini")
            .base_url(format!("{}/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn openrouter_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        OpenAiChatModel::openrouter("deepseek/deepseek-r1")
            .base_url(format!("{}/api/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn responses_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        OpenAiResponsesModel::builder("gpt-5")
            .base_url(format!("{}/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn anthropic_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        AnthropicModel::builder("claude-sonnet-4-5")
            .base_url(format!("{}/v1", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn gemini_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        GeminiModel::builder("gemini-3-pro-preview")
            .base_url(format!("{}/v1beta", s.url()))
            .api_key("k")
            .build()
            .unwrap(),
    )
}

fn ollama_at(s: &ModelServer) -> Arc<dyn LanguageModel> {
    Arc::new(
        OllamaModel::builder("qwen3:8b")
            .base_url(s.url())
            .build()
            .unwrap(),
    )
}

fn wires() -> Vec<Wire> {
    vec![
        Wire {
            name: "openai chat",
            model: chat_at,
            call: chat_call,
            // OpenAI does not stream Chat Completions reasoning.
            reasoned_call: chat_call,
            reasoned_text: chat_text,
            schema: |b| b.pointer("/response_format/json_schema/schema"),
            reasoning: ("/reasoning_effort", json!("high")),
        },
        Wire {
            name: "openrouter",
            model: openrouter_at,
            call: chat_call,
            reasoned_call: openrouter_reasoned_call,
            reasoned_text: openrouter_reasoned_text,
            schema: |b| b.pointer("/response_format/json_schema/schema"),
            reasoning: ("/reasoning", json!({"effort": "high"})),
        },
        Wire {
            name: "openai responses",
            model: responses_at,
            call: responses_call,
            reasoned_call: responses_reasoned_call,
            reasoned_text: responses_reasoned_text,
            schema: |b| b.pointer("/text/format/schema"),
            reasoning: ("/reasoning", json!({"effort": "high", "summary": "auto"})),
        },
        Wire {
            name: "anthropic",
            model: anthropic_at,
            call: anthropic_call,
            reasoned_call: anthropic_reasoned_call,
            reasoned_text: anthropic_reasoned_text,
            schema: |b| b.pointer("/output_config/format/schema"),
            reasoning: ("/thinking", json!({"type": "enabled", "budget_tokens": 24_576})),
        },
        Wire {
            name: "gemini",
            model: gemini_at,
            call: gemini_call,
            reasoned_call: gemini_reasoned_call,
            reasoned_text: gemini_reasoned_text,
            schema: |b| b.pointer("/generationConfig/responseJsonSchema"),
            reasoning: (
                "/generationConfig/thinkingConfig",
                json!({"thinkingLevel": "high", "includeThoughts": true}),
            ),
        },
        Wire {
            name: "ollama",
            model: ollama_at,
            call: ollama_call,
            reasoned_call: ollama_reasoned_call,
            reasoned_text: ollama_reasoned_text,
            schema: |b| b.get("format"),
            reasoning: ("/think", json!(true)),
        },
    ]
}

/// A run with reasoning `high` and the `Verdict` output: step 1 calls
/// `weather`, step 2 thinks then answers in `mode`. Checks the typed value
/// and that every request asked for reasoning; returns the request bodies.
async fn reasoned_structured_run(wire: &Wire, mode: OutputMode) -> Vec<Value> {
    let answer = match mode {
        OutputMode::Tool => (wire.reasoned_call)(FINAL_ANSWER_TOOL, ANSWER),
        _ => (wire.reasoned_text)(ANSWER),
    };
    let server = serve(vec![(wire.call)("weather", ARGS), answer]).await;
    let agent = Agent::builder((wire.model)(&server))
        .tools(weather_tools())
        .output(OutputSpec::of::<Verdict>().mode(mode))
        .reasoning(ReasoningEffort::High)
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Is it sunny in Paris?"))
        .await
        .expect("hang guard")
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
    let (pointer, expected) = &wire.reasoning;
    for body in &bodies {
        assert_eq!(body.pointer(pointer), Some(expected), "{}: {body}", wire.name);
    }
    assert!(bodies[1].to_string().contains("Sunny in Paris"), "{}", wire.name);
    bodies
}

/// Native mode with reasoning on: every request carries both the reasoning
/// setting and the schema (Ollama only without tools, so never here), and
/// the reasoning streamed before the JSON does not reach the answer.
#[tokio::test]
async fn native_output_after_reasoning_on_every_wire_format() {
    for wire in wires() {
        let bodies = reasoned_structured_run(&wire, OutputMode::Native).await;
        for body in &bodies {
            let schema = (wire.schema)(body);
            if wire.name == "ollama" {
                assert!(schema.is_none(), "ollama: a format beside tools");
            } else {
                let schema = schema.unwrap_or_else(|| panic!("{}: no schema in {body}", wire.name));
                assert_eq!(
                    schema.pointer("/properties/sunny/type"),
                    Some(&json!("boolean")),
                    "{}",
                    wire.name
                );
            }
            assert!(!names(&body["tools"]).contains(&FINAL_ANSWER_TOOL.to_owned()));
        }
        // OpenAI's strict mode: the schema closed, named after the type.
        if wire.name.starts_with("openai") || wire.name == "openrouter" {
            let format = bodies[1]
                .pointer("/response_format/json_schema")
                .or_else(|| bodies[1].pointer("/text/format"))
                .unwrap();
            assert_eq!(
                (&format["name"], &format["strict"]),
                (&json!("Verdict"), &json!(true)),
                "{}",
                wire.name
            );
            assert_eq!(format["schema"]["additionalProperties"], false);
        }
    }
}

/// Tool mode with reasoning on: every request carries the reasoning setting
/// and offers `final_answer` beside `weather`, no schema; the answer comes
/// as the call made after the reasoning. Anthropic leaves the choice `auto`
/// (thinking refuses a forced tool).
#[tokio::test]
async fn tool_mode_output_after_reasoning_on_every_wire_format() {
    for wire in wires() {
        let bodies = reasoned_structured_run(&wire, OutputMode::Tool).await;
        for body in &bodies {
            let offered = names(&body["tools"]);
            assert!(
                offered.contains(&FINAL_ANSWER_TOOL.to_owned()) && offered.contains(&"weather".to_owned()),
                "{}: {offered:?}",
                wire.name
            );
            assert!((wire.schema)(body).is_none(), "{}", wire.name);
            if wire.name == "anthropic" {
                assert_eq!(body["tool_choice"]["type"], "auto");
            }
        }
    }
}

/// The o4-mini run's requests leave out `parallel_tool_calls`, which the
/// o series refuses, and the sampling settings.
#[tokio::test]
async fn o_series_run_sends_no_parallel_tool_calls() {
    let server = serve(vec![chat_call("weather", ARGS), chat_text("Sunny.")]).await;
    let agent = Agent::builder(chat_at(&server))
        .tools(weather_tools())
        .reasoning(ReasoningEffort::Low)
        .build();
    let result = agent.run("Weather in Paris?").await.unwrap();
    assert_eq!(result.text, "Sunny.");
    for r in server.received() {
        assert_eq!(r.body["reasoning_effort"], "low");
        assert!(r.body.get("parallel_tool_calls").is_none(), "{}", r.body);
        assert_eq!(r.body["tool_choice"], "auto");
    }
}

/// A run with reasoning `high`: step 1 (`first`) calls `weather`, step 2
/// answers "Sunny."; all the request bodies.
async fn reasoned_run(
    first: Reply,
    answer: Reply,
    model: fn(&ModelServer) -> Arc<dyn LanguageModel>,
) -> Vec<Value> {
    let server = serve(vec![first, answer]).await;
    let agent = Agent::builder(model(&server))
        .tools(weather_tools())
        .reasoning(ReasoningEffort::High)
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("Weather in Paris?"))
        .await
        .expect("hang guard")
        .unwrap();
    assert_eq!(result.text, "Sunny.");
    server.received().into_iter().map(|r| r.body).collect()
}

/// Responses, reasoning `high`: step 2 sends back exactly the user turn, the
/// reasoning item (id, encrypted content, summary), the call it led to
/// (with its item id) and the call's output, in that order.
#[tokio::test]
async fn responses_replay_sends_the_reasoning_item_before_its_call() {
    let mut first = responses_reasoning(0, "rs_1", "ENC1");
    first.extend(responses_call_events(1, "weather", ARGS));
    let bodies = reasoned_run(
        responses_reply(first),
        responses_reply(responses_text_events(0, "Sunny.")),
        responses_at,
    )
    .await;
    for body in &bodies {
        assert_eq!(body["reasoning"], json!({"effort": "high", "summary": "auto"}));
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["store"], false);
    }
    assert_eq!(
        bodies[1]["input"],
        json!([
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC1",
                "summary": [{"type": "summary_text", "text": THOUGHT}]},
            {"type": "function_call", "id": "fc_weather", "call_id": "call_weather", "name": "weather",
                "arguments": ARGS},
            {"type": "function_call_output", "call_id": "call_weather", "output": "Sunny in Paris"},
        ])
    );
}

/// Anthropic, reasoning `high`: both steps ask for thinking with the high
/// budget added to max_tokens; step 2 replays the signed thinking block
/// before its tool use, and the cache breakpoint sits on the tool result.
#[tokio::test]
async fn anthropic_replay_keeps_thinking_on_both_steps() {
    let bodies = reasoned_run(
        anthropic_reply(
            vec![anthropic_thinking("SIG1"), anthropic_tool_use("weather", ARGS)],
            "tool_use",
        ),
        anthropic_reply(vec![anthropic_text_block("Sunny.")], "end_turn"),
        anthropic_at,
    )
    .await;
    for body in &bodies {
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 24_576})
        );
        assert_eq!(body["max_tokens"], 8192 + 24_576);
        assert!(body.get("temperature").is_none());
    }
    assert_eq!(
        bodies[1]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": THOUGHT, "signature": "SIG1"},
                {"type": "tool_use", "id": "toolu_weather", "name": "weather", "input": {"location": "Paris"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_weather",
                "content": [{"type": "text", "text": "Sunny in Paris"}], "is_error": false,
                "cache_control": {"type": "ephemeral"}}]},
        ])
    );
}

/// Stream one request to `model` and return the usage of its Finish.
async fn usage_of(model: &dyn LanguageModel) -> loopwright_core::Usage {
    let stream = model
        .stream(ModelRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    let (events, err) = collect(stream).await;
    assert!(err.is_none(), "{err:?}");
    finish(&events).1
}

/// Anthropic repeats the cumulative cache counts in `message_delta`: they
/// are taken once, not added again to the input.
#[tokio::test]
async fn anthropic_cache_counts_repeated_in_message_delta_are_not_added_twice() {
    let cache = json!({"input_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20});
    let mut end = cache.clone();
    end["output_tokens"] = json!(7);
    let mut start = cache;
    start["output_tokens"] = json!(1);
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": start}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": end}),
        json!({"type": "message_stop"}),
    ];
    let server = serve(vec![Reply::ok(frames(&lines(&events), true, "\n"))]).await;
    let usage = usage_of(anthropic_at(&server).as_ref()).await;
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.cache_write_tokens,
            usage.output_tokens
        ),
        (Some(125), Some(100), Some(20), Some(7))
    );
}

/// OpenAI Responses: cached input and reasoning output counts (non-zero)
/// reach the usage beside the totals.
#[tokio::test]
async fn responses_cached_and_reasoning_tokens_reach_the_usage() {
    let mut events = responses_text_events(0, "hi");
    events.push(responses_completed(1536, 256));
    let server = serve(vec![Reply::ok(frames(&lines(&events), true, "\n"))]).await;
    let usage = usage_of(responses_at(&server).as_ref()).await;
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens,
            usage.total_tokens
        ),
        (Some(2000), Some(1536), Some(300), Some(256), Some(2300))
    );
}

/// Gemini: `cachedContentTokenCount` is the cached input; thoughts count as
/// output and as reasoning.
#[tokio::test]
async fn gemini_cached_and_thought_tokens_reach_the_usage() {
    let chunk = json!({"candidates": [{"content": {"parts": [{"text": "hi"}], "role": "model"},
        "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 1000,
        "cachedContentTokenCount": 800, "candidatesTokenCount": 20, "thoughtsTokenCount": 50,
        "totalTokenCount": 1070}});
    let server = serve(vec![Reply::ok(frames(&lines(&[chunk]), false, "\r\n"))]).await;
    let usage = usage_of(gemini_at(&server).as_ref()).await;
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens,
            usage.total_tokens
        ),
        (Some(1000), Some(800), Some(70), Some(50), Some(1070))
    );
}
