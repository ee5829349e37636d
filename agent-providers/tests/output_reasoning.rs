//! Request bodies for structured output, reasoning, prompt caching and
//! provider options: the cases `output_bodies.rs` leaves out (every effort
//! on the Responses API, schemas strict mode refuses, nested strict
//! objects, model families that do or do not reason, Anthropic's named tool
//! choice and explicit budgets under thinking, cache breakpoints on a
//! tool-result turn, each provider's own options key).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::models::*;
use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};

use std::sync::Arc;

use loopwright_core::{
    ContentPart, Message, ReasoningEffort, Role, ToolCall, ToolChoice, ToolDefinition, ToolOutputPart,
    ToolResult, message::ImageSource, model::ModelRequest, model::ReasoningConfig, model::ResponseFormat,
};
use serde_json::{Value, json};

use ReasoningEffort::{High, Low, Medium, Minimal};

/// The efforts in order, `None` first (spelled out: `None` is also
/// `Option::None`).
const EFFORTS: [ReasoningEffort; 5] = [ReasoningEffort::None, Minimal, Low, Medium, High];

fn request() -> ModelRequest {
    let mut r = ModelRequest::new(vec![Message::user("Weather?")]);
    r.system = Some("Be brief.".into());
    r.tools = Arc::new(vec![ToolDefinition::new(
        "weather",
        "Weather.",
        json!({"type": "object", "properties": {"location": {"type": "string"}}}),
    )]);
    r
}

fn with_format(schema: Value) -> ModelRequest {
    let mut r = request();
    r.response_format = Some(ResponseFormat::json_schema("forecast", schema));
    r
}

fn with_reasoning(reasoning: impl Into<ReasoningConfig>) -> ModelRequest {
    let mut r = request();
    r.reasoning = Some(reasoning.into());
    r.temperature = Some(0.3);
    r.top_p = Some(0.5);
    r
}

/// A schema with an optional property that cannot be null: no strict form.
fn optional_not_null() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "note": {"type": "string"}},
        "required": ["city"]})
}

/// A schema using `oneOf`, which OpenAI's strict mode refuses.
fn with_one_of() -> Value {
    json!({"type": "object", "properties": {"temp": {"oneOf": [{"type": "number"}, {"type": "string"}]}},
        "required": ["temp"]})
}

/// An object nested in another, the inner one with a nullable optional.
fn nested() -> Value {
    json!({"type": "object", "required": ["place"], "properties": {"place": {"type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}}, "required": ["city"]}}})
}

/// The strict form of [`nested`]: both objects closed, the nullable
/// optional required.
fn nested_strict() -> Value {
    json!({"type": "object", "required": ["place"], "additionalProperties": false, "properties": {"place": {
        "type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
        "required": ["city", "zip"], "additionalProperties": false}}})
}

/// OpenAI Responses: the exact `reasoning` object for every effort on each
/// reasoning family, with the sampling settings removed.
#[test]
fn responses_reasoning_effort_for_every_effort_per_model_family() {
    let expected = [
        ("gpt-5", ["minimal", "minimal", "low", "medium", "high"]),
        ("gpt-5.1", ["none", "low", "low", "medium", "high"]),
        ("o4-mini", ["low", "low", "low", "medium", "high"]),
    ];
    for (model, wires) in expected {
        for (effort, wire) in EFFORTS.into_iter().zip(wires) {
            let body = responses(model).request_body(&with_reasoning(effort));
            assert_eq!(
                body["reasoning"],
                json!({"effort": wire, "summary": "auto"}),
                "{model} {effort:?}"
            );
            assert!(
                body.get("temperature").is_none() && body.get("top_p").is_none(),
                "{model} {effort:?}"
            );
        }
    }
}

/// Models that do not reason get no reasoning field on either OpenAI wire
/// format, and keep their sampling settings.
#[test]
fn openai_models_that_do_not_reason_keep_sampling_and_get_no_reasoning() {
    for model in ["gpt-4.1", "gpt-4o", "gpt-5-chat-latest"] {
        let r = with_reasoning(High);
        for body in [chat(model).request_body(&r), responses(model).request_body(&r)] {
            assert!(body.get("reasoning_effort").is_none(), "{model}: {body}");
            assert!(body.get("reasoning").is_none(), "{model}: {body}");
            assert_eq!(body["temperature"], json!(0.3f32), "{model}");
            assert_eq!(body["top_p"], json!(0.5f32), "{model}");
        }
    }
    // Another OpenAI-compatible server is not assumed to take either field.
    let compatible = OpenAiChatModel::compatible("deepseek", "http://127.0.0.1:1/v1", "deepseek-reasoner")
        .build()
        .unwrap()
        .request_body(&with_reasoning(High));
    assert!(compatible.get("reasoning_effort").is_none() && compatible.get("reasoning").is_none());
    assert_eq!(compatible["temperature"], json!(0.3f32));
}

/// The o series refuses `parallel_tool_calls` on Chat Completions; gpt-5
/// and gpt-4.1 take it.
#[test]
fn o_series_chat_body_leaves_out_parallel_tool_calls() {
    let mut r = request();
    r.parallel_tool_calls = Some(false);
    for model in ["o1", "o3", "o3-mini", "o4-mini"] {
        let body = chat(model).request_body(&r);
        assert!(body.get("parallel_tool_calls").is_none(), "{model}: {body}");
        assert_eq!(body["tool_choice"], "auto", "{model}");
    }
    for model in ["gpt-5", "gpt-4.1"] {
        assert_eq!(
            chat(model).request_body(&r)["parallel_tool_calls"],
            false,
            "{model}"
        );
    }
}

/// A schema with an optional property that cannot be null has no strict
/// form: both OpenAI wire formats send it unchanged with `strict: false`.
#[test]
fn openai_schema_without_a_strict_form_is_sent_as_given() {
    let chat_body = chat("gpt-4.1").request_body(&with_format(optional_not_null()));
    assert_eq!(
        chat_body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "forecast", "schema": optional_not_null(),
            "strict": false}})
    );
    let responses_body = responses("gpt-4.1").request_body(&with_format(optional_not_null()));
    assert_eq!(
        responses_body["text"],
        json!({"format": {"type": "json_schema", "name": "forecast", "schema": optional_not_null(),
            "strict": false}})
    );
}

/// A keyword strict mode refuses (`oneOf`) makes the schema go as given,
/// non-strict, on both OpenAI wire formats.
#[test]
fn openai_schema_with_a_keyword_strict_mode_refuses_is_sent_non_strict() {
    let chat_body = chat("gpt-4.1").request_body(&with_format(with_one_of()));
    assert_eq!(chat_body["response_format"]["json_schema"]["strict"], false);
    assert_eq!(
        chat_body["response_format"]["json_schema"]["schema"],
        with_one_of()
    );
    let responses_body = responses("gpt-5").request_body(&with_format(with_one_of()));
    assert_eq!(responses_body["text"]["format"]["strict"], false);
    assert_eq!(responses_body["text"]["format"]["schema"], with_one_of());
}

/// The strict adaptation reaches nested objects: OpenAI Chat, Responses and
/// Anthropic all get both objects closed and the nullable optional required.
#[test]
fn strict_schema_closes_nested_objects() {
    let r = with_format(nested());
    let chat_body = chat("gpt-4.1").request_body(&r);
    assert_eq!(
        chat_body["response_format"]["json_schema"]["schema"],
        nested_strict()
    );
    assert_eq!(chat_body["response_format"]["json_schema"]["strict"], true);
    let responses_body = responses("gpt-5").request_body(&r);
    assert_eq!(responses_body["text"]["format"]["schema"], nested_strict());
    assert_eq!(responses_body["text"]["format"]["strict"], true);
    assert_eq!(
        anthropic("claude-sonnet-4-5").request_body(&r)["output_config"],
        json!({"format": {"type": "json_schema", "schema": nested_strict()}})
    );
}

/// Thinking for Claude 3.7 and every Claude 4; none (and the temperature
/// kept) for the Claude 3 and 3.5 models.
#[test]
fn anthropic_thinking_by_model_family() {
    for model in [
        "claude-3-7-sonnet-20250219",
        "claude-sonnet-4-20250514",
        "claude-opus-4-1-20250805",
        "claude-haiku-4-5",
    ] {
        let body = anthropic(model).request_body(&with_reasoning(Medium));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 10_000}),
            "{model}"
        );
        assert!(body.get("temperature").is_none(), "{model}");
    }
    for model in [
        "claude-3-5-haiku-latest",
        "claude-3-5-sonnet-20241022",
        "claude-3-haiku-20240307",
    ] {
        let body = anthropic(model).request_body(&with_reasoning(Medium));
        assert!(body.get("thinking").is_none(), "{model}: {body}");
        assert_eq!(body["temperature"], json!(0.3f32), "{model}");
        assert_eq!(body["max_tokens"], 8192, "{model}");
    }
}

/// Under thinking a named tool choice becomes `auto` (keeping the parallel
/// switch) and an explicit budget is added to an explicit output limit;
/// without thinking the named choice stays.
#[test]
fn anthropic_thinking_makes_a_named_tool_choice_auto_and_adds_the_budget_to_an_explicit_limit() {
    let mut r = with_reasoning(ReasoningConfig::from(Medium).budget_tokens(3000));
    r.tool_choice = ToolChoice::Tool {
        name: "weather".into(),
    };
    r.parallel_tool_calls = Some(false);
    r.max_output_tokens = Some(2000);
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 3000})
    );
    assert_eq!(body["max_tokens"], 5000);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    r.reasoning = None;
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    assert!(body.get("thinking").is_none());
    assert_eq!(body["max_tokens"], 2000);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "weather", "disable_parallel_tool_use": true})
    );
}

/// Number of `cache_control` marks anywhere in a body.
fn marks(body: &Value) -> usize {
    body.to_string().matches("cache_control").count()
}

/// In a tool loop the last user turn is the tool result: its block gets
/// the breakpoint; a system message of the history joins the cached system
/// block; three breakpoints in all.
#[test]
fn anthropic_cache_breakpoint_on_a_tool_result_turn() {
    let mut r = request();
    r.prompt_caching = true;
    r.messages = Arc::new(vec![
        Message::system("Use metric."),
        Message::user("Weather in Paris?"),
        Message::new(
            Role::Assistant,
            vec![ContentPart::ToolCall(ToolCall::new(
                "toolu_1",
                "weather",
                json!({"location": "Paris"}),
            ))],
        ),
        Message::new(
            Role::Tool,
            vec![ContentPart::ToolResult(ToolResult {
                call_id: "toolu_1".into(),
                parts: vec![ToolOutputPart::text("Sunny")],
                is_error: false,
            })],
        ),
    ]);
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    let mark = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.\n\nUse metric.", "cache_control": mark}])
    );
    assert_eq!(body["tools"][0]["cache_control"], mark);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert!(messages[0]["content"][0].get("cache_control").is_none());
    assert!(messages[1]["content"][0].get("cache_control").is_none());
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "Sunny"}],
            "is_error": false, "cache_control": mark})
    );
    assert_eq!(marks(&body), 3);
}

/// Without a system prompt or tools, caching marks only the last block of
/// the last user turn (not its first block) and adds no system or tools.
#[test]
fn anthropic_caching_without_system_or_tools_marks_only_the_last_block() {
    let image = ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let mut r = ModelRequest::new(vec![Message::new(
        Role::User,
        vec![ContentPart::text("What is this?"), ContentPart::Image { image }],
    )]);
    r.prompt_caching = true;
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    assert!(body.get("system").is_none() && body.get("tools").is_none());
    let content = &body["messages"][0]["content"];
    assert!(content[0].get("cache_control").is_none());
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(marks(&body), 1);
}

/// Gemini 2.5 Pro cannot stop thinking: its smallest budget for `none`,
/// the effort's budget otherwise, and an explicit budget as given.
#[test]
fn gemini_pro_thinking_budget_for_every_effort() {
    let thinking = |r: &ModelRequest| {
        gemini("gemini-2.5-pro").request_body(r)["generationConfig"]["thinkingConfig"].clone()
    };
    for (effort, budget) in EFFORTS.into_iter().zip([128, 1024, 4096, 10_000, 24_576]) {
        assert_eq!(
            thinking(&with_reasoning(effort)),
            json!({"thinkingBudget": budget, "includeThoughts": true}),
            "{effort:?}"
        );
    }
    assert_eq!(
        thinking(&with_reasoning(ReasoningConfig::from(Low).budget_tokens(2048))),
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
    // Gemini keeps the sampling settings with thinking.
    let config = &gemini("gemini-2.5-pro").request_body(&with_reasoning(High))["generationConfig"];
    assert_eq!(
        (&config["temperature"], &config["topP"]),
        (&json!(0.3f32), &json!(0.5f32))
    );
}

/// Ollama `think` for every effort: on or off for qwen3 and deepseek-r1, a
/// level for gpt-oss.
#[test]
fn ollama_think_for_every_effort() {
    let think = |model: &str, effort: ReasoningEffort| {
        ollama(model).request_body(&with_reasoning(effort))["think"].clone()
    };
    for model in ["qwen3:8b", "deepseek-r1:8b"] {
        let wires = [false, true, true, true, true].map(Value::from);
        for (effort, wire) in EFFORTS.into_iter().zip(wires) {
            assert_eq!(think(model, effort), wire, "{model} {effort:?}");
        }
    }
    let wires = [
        json!(false),
        json!("low"),
        json!("low"),
        json!("medium"),
        json!("high"),
    ];
    for (effort, wire) in EFFORTS.into_iter().zip(wires) {
        assert_eq!(think("gpt-oss:20b", effort), wire, "gpt-oss {effort:?}");
    }
}

/// Each provider reads the request's options under its own key (OpenAI's
/// two wire formats share `openai`; OpenRouter has its own), after its body
/// options: the request wins, another provider's options are ignored.
#[test]
fn request_options_under_each_providers_key_win_over_body_options() {
    let mut r = request();
    for key in ["openai", "openrouter", "anthropic", "google", "ollama"] {
        r.provider_options
            .insert(key.into(), json!({"shared": key, key: true}));
    }
    let body_options = || json!({"shared": "body", "from_body": 1});
    let bodies = [
        (
            "openai",
            OpenAiChatModel::openai("gpt-4.1")
                .api_key("k")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
        (
            "openrouter",
            OpenAiChatModel::openrouter("openai/gpt-4.1")
                .api_key("k")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
        (
            "openai",
            OpenAiResponsesModel::builder("gpt-4.1")
                .api_key("k")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
        (
            "anthropic",
            AnthropicModel::builder("claude-sonnet-4-5")
                .api_key("k")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
        (
            "google",
            GeminiModel::builder("gemini-2.5-flash")
                .api_key("k")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
        (
            "ollama",
            OllamaModel::builder("llama3.2")
                .body_options(body_options())
                .build()
                .unwrap()
                .request_body(&r),
        ),
    ];
    for (key, body) in bodies {
        assert_eq!(body["shared"], key, "{body}");
        assert_eq!(body["from_body"], 1, "{key}");
        assert_eq!(body[key], true, "{key}");
        let foreign = ["openai", "openrouter", "anthropic", "google", "ollama"]
            .into_iter()
            .filter(|k| *k != key && body.get(*k).is_some())
            .collect::<Vec<_>>();
        assert!(foreign.is_empty(), "{key} took {foreign:?}");
    }
}
