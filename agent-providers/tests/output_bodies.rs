//! Request bodies for structured output, reasoning, prompt caching and body
//! options, for each of the five wire formats.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::models::*;
use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};

use loopwright_core::{
    Message, ReasoningEffort, ToolChoice, ToolDefinition, model::ModelRequest, model::ReasoningConfig,
    model::ResponseFormat,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// A schema OpenAI's strict mode can take once adapted (its optional
/// property accepts null).
fn adaptable() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "note": {"type": ["string", "null"]}},
        "required": ["city"]})
}

/// A schema with an optional property that cannot be null: no strict form.
fn loose() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}, "note": {"type": "string"}}})
}

fn request() -> ModelRequest {
    let mut r = ModelRequest::new(vec![Message::user("Weather?")]);
    r.system = Some("Be brief.".into());
    r.tools = Arc::new(vec![
        ToolDefinition::new("search", "Search.", json!({"type": "object"})),
        ToolDefinition::new("weather", "Weather.", json!({"type": "object"})),
    ]);
    r
}

fn with_format(schema: Value) -> ModelRequest {
    let mut r = request();
    r.response_format = Some(ResponseFormat::json_schema("forecast", schema));
    r
}

fn no_tools_format() -> ModelRequest {
    let mut r = with_format(adaptable());
    r.tools = Arc::new(Vec::new());
    r
}

fn with_effort(effort: ReasoningEffort) -> ModelRequest {
    let mut r = request();
    r.reasoning = Some(effort.into());
    r.temperature = Some(0.3);
    r.top_p = Some(0.5);
    r
}

/// OpenAI Chat: the schema made strict where it can be, else sent as given
/// with `strict: false`.
#[test]
fn openai_chat_response_format_strict_when_possible() {
    let body = chat("gpt-4.1").request_body(&with_format(adaptable()));
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "forecast");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["city", "note"])
    );
    assert_eq!(format["json_schema"]["schema"]["additionalProperties"], false);
    let body = chat("gpt-4.1").request_body(&with_format(loose()));
    assert_eq!(body["response_format"]["json_schema"]["strict"], false);
    assert_eq!(body["response_format"]["json_schema"]["schema"], loose());
}

/// OpenAI Chat: every effort on reasoning models, sampling settings dropped;
/// nothing for a model that does not reason.
#[test]
fn openai_chat_reasoning_effort_per_model() {
    use ReasoningEffort::*;
    let expected = [
        ("o4-mini", ["low", "low", "low", "medium", "high"]),
        ("gpt-5-mini", ["minimal", "minimal", "low", "medium", "high"]),
        ("gpt-5.1", ["none", "low", "low", "medium", "high"]),
    ];
    for (model, efforts) in expected {
        for (effort, wire) in [None, Minimal, Low, Medium, High].into_iter().zip(efforts) {
            let body = chat(model).request_body(&with_effort(effort));
            assert_eq!(body["reasoning_effort"], wire, "{model} {effort:?}");
            assert!(body.get("temperature").is_none() && body.get("top_p").is_none());
        }
    }
    let body = chat("gpt-4.1").request_body(&with_effort(High));
    assert!(body.get("reasoning_effort").is_none());
    assert_eq!(body["temperature"], json!(0.3f32));
}

/// OpenRouter takes its own `reasoning` object with the effort as named.
#[test]
fn openrouter_reasoning_object() {
    let model = OpenAiChatModel::openrouter("deepseek/deepseek-r1")
        .api_key("k")
        .build()
        .unwrap();
    for effort in ReasoningEffort::ALL {
        let body = model.request_body(&with_effort(effort));
        assert_eq!(body["reasoning"], json!({"effort": effort.as_str()}));
        assert!(body.get("reasoning_effort").is_none());
    }
}

/// OpenAI Responses: `text.format` and `reasoning: {effort, summary}`.
#[test]
fn openai_responses_text_format_and_reasoning() {
    let body = responses("gpt-5").request_body(&with_format(adaptable()));
    let format = &body["text"]["format"];
    assert_eq!(
        (&format["type"], &format["name"], &format["strict"]),
        (&json!("json_schema"), &json!("forecast"), &json!(true))
    );
    assert_eq!(format["schema"]["additionalProperties"], false);
    for (effort, wire) in [(ReasoningEffort::Low, "low"), (ReasoningEffort::High, "high")] {
        let body = responses("o3").request_body(&with_effort(effort));
        assert_eq!(body["reasoning"], json!({"effort": wire, "summary": "auto"}));
        assert!(body.get("temperature").is_none());
    }
    let body = responses("gpt-4.1").request_body(&with_effort(ReasoningEffort::High));
    assert!(body.get("reasoning").is_none());
    // Encrypted reasoning is asked for only from models that reason.
    assert!(body.get("include").is_none());
    assert_eq!(
        responses("o3").request_body(&request())["include"],
        json!(["reasoning.encrypted_content"])
    );
}

/// Anthropic: `output_config.format` with the schema made strict.
#[test]
fn anthropic_output_config_format() {
    let body = anthropic("claude-sonnet-4-5").request_body(&with_format(adaptable()));
    let format = &body["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false);
}

/// Anthropic thinking: the budget of each effort, added to max_tokens;
/// temperature dropped, top_p kept only from 0.95, forced tool choice made
/// auto; nothing for None or a model that cannot think.
#[test]
fn anthropic_thinking_per_effort_and_its_constraints() {
    let model = AnthropicModel::builder("claude-sonnet-4-5")
        .api_key("k")
        .default_max_tokens(4096)
        .build()
        .unwrap();
    for (effort, budget) in [
        (ReasoningEffort::Minimal, 1024),
        (ReasoningEffort::Low, 4096),
        (ReasoningEffort::Medium, 10_000),
        (ReasoningEffort::High, 24_576),
    ] {
        let mut r = with_effort(effort);
        r.tool_choice = ToolChoice::Required;
        let body = model.request_body(&r);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": budget}),
            "{effort:?}"
        );
        assert_eq!(body["max_tokens"], 4096 + budget);
        assert!(body.get("temperature").is_none() && body.get("top_p").is_none());
        assert_eq!(body["tool_choice"]["type"], "auto");
    }
    let mut r = request();
    r.reasoning = Some(ReasoningConfig::from(ReasoningEffort::Low).budget_tokens(100));
    r.top_p = Some(0.97);
    let body = model.request_body(&r);
    assert_eq!(
        body["thinking"]["budget_tokens"], 1024,
        "clamped to Anthropic's smallest budget"
    );
    assert_eq!(body["top_p"], json!(0.97f32));
    let body = model.request_body(&with_effort(ReasoningEffort::None));
    assert!(body.get("thinking").is_none());
    assert_eq!(body["max_tokens"], 4096);
    let body = anthropic("claude-3-5-haiku-latest").request_body(&with_effort(ReasoningEffort::High));
    assert!(body.get("thinking").is_none());
    assert_eq!(body["temperature"], json!(0.3f32));
}

/// Anthropic prompt caching: breakpoints on the system prompt, the last tool
/// and the last user turn; none when caching is off.
#[test]
fn anthropic_cache_breakpoints() {
    let mut r = request();
    r.messages = Arc::new(vec![
        Message::user("first"),
        Message::assistant("ok"),
        Message::user("second"),
    ]);
    r.prompt_caching = true;
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    let mark = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "Be brief.", "cache_control": mark}])
    );
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"], mark);
    assert!(body["messages"][0]["content"][0].get("cache_control").is_none());
    assert_eq!(body["messages"][2]["content"][0]["cache_control"], mark);
    r.prompt_caching = false;
    let body = anthropic("claude-sonnet-4-5").request_body(&r);
    assert_eq!(body["system"], "Be brief.");
    assert!(!body.to_string().contains("cache_control"));
}

/// Gemini: `responseJsonSchema` from 2.5, the OpenAPI `responseSchema`
/// before.
#[test]
fn gemini_response_schema_by_version() {
    let body = gemini("gemini-2.5-flash").request_body(&no_tools_format());
    let generation = &body["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(generation["responseJsonSchema"], adaptable());
    let mut no_tools = with_format(adaptable());
    no_tools.tools = Arc::new(Vec::new());
    let body = gemini("gemini-2.0-flash").request_body(&no_tools);
    let generation = &body["generationConfig"];
    assert!(generation.get("responseJsonSchema").is_none());
    assert_eq!(generation["responseSchema"]["type"], "object");
    // Before Gemini 3, a JSON response beside tools is refused: left out.
    let body = gemini("gemini-2.5-flash").request_body(&with_format(adaptable()));
    assert!(
        body.get("generationConfig")
            .is_none_or(|g| g.get("responseMimeType").is_none())
    );
    let body = gemini("gemini-3-pro-preview").request_body(&with_format(adaptable()));
    assert_eq!(body["generationConfig"]["responseJsonSchema"], adaptable());
}

/// Gemini thinking: budgets on 2.5 (0 for None, 128 on Pro), levels on 3,
/// nothing on 2.0.
#[test]
fn gemini_thinking_config_per_model_and_effort() {
    let thinking = |model: &str, effort| {
        gemini(model).request_body(&with_effort(effort))["generationConfig"]
            .get("thinkingConfig")
            .cloned()
    };
    use ReasoningEffort::*;
    assert_eq!(
        thinking("gemini-2.5-flash", None),
        Some(json!({"thinkingBudget": 0}))
    );
    for (effort, budget) in [(Minimal, 1024), (Low, 4096), (Medium, 10_000), (High, 24_576)] {
        assert_eq!(
            thinking("gemini-2.5-flash", effort),
            Some(json!({"thinkingBudget": budget, "includeThoughts": true}))
        );
    }
    assert_eq!(
        thinking("gemini-2.5-pro", None),
        Some(json!({"thinkingBudget": 128, "includeThoughts": true}))
    );
    for (effort, level) in [
        (None, "low"),
        (Minimal, "low"),
        (Low, "low"),
        (Medium, "high"),
        (High, "high"),
    ] {
        assert_eq!(
            thinking("gemini-3-pro-preview", effort),
            Some(json!({"thinkingLevel": level, "includeThoughts": true}))
        );
    }
    assert_eq!(thinking("gemini-2.0-flash", High), Option::None);
}

/// Ollama: `format` only on a request without tools; `think` on thinking
/// models (levels for gpt-oss), nothing on others.
#[test]
fn ollama_format_and_think() {
    let body = ollama("qwen3").request_body(&with_format(adaptable()));
    assert!(body.get("format").is_none(), "the grammar would block tool calls");
    let mut r = with_format(adaptable());
    r.tools = Arc::new(Vec::new());
    assert_eq!(ollama("qwen3").request_body(&r)["format"], adaptable());
    use ReasoningEffort::*;
    for (effort, think) in [(None, json!(false)), (Low, json!(true)), (High, json!(true))] {
        assert_eq!(
            ollama("qwen3:8b").request_body(&with_effort(effort))["think"],
            think
        );
    }
    for (effort, think) in [
        (None, json!(false)),
        (Minimal, json!("low")),
        (Medium, json!("medium")),
        (High, json!("high")),
    ] {
        assert_eq!(
            ollama("gpt-oss:20b").request_body(&with_effort(effort))["think"],
            think
        );
    }
    assert!(
        ollama("llama3.2")
            .request_body(&with_effort(High))
            .get("think")
            .is_none()
    );
}

/// A provider's body options and the request's provider options are merged
/// in that order (the request wins).
#[test]
fn body_options_then_request_options() {
    let mut r = request();
    r.provider_options.insert(
        "anthropic".into(),
        json!({"metadata": {"user_id": "u2"}, "top_k": 5}),
    );
    let model = AnthropicModel::builder("claude-sonnet-4-5")
        .api_key("k")
        .body_options(json!({"metadata": {"user_id": "u1"}, "service_tier": "auto"}))
        .build()
        .unwrap();
    let body = model.request_body(&r);
    assert_eq!(body["metadata"], json!({"user_id": "u2"}));
    assert_eq!(
        (&body["service_tier"], &body["top_k"]),
        (&json!("auto"), &json!(5))
    );
    let probe = || json!({"probe": true});
    for body in [
        OpenAiChatModel::openai("gpt-4.1")
            .api_key("k")
            .body_options(probe())
            .build()
            .unwrap()
            .request_body(&r),
        OpenAiResponsesModel::builder("gpt-4.1")
            .api_key("k")
            .body_options(probe())
            .build()
            .unwrap()
            .request_body(&r),
        GeminiModel::builder("gemini-2.5-flash")
            .api_key("k")
            .body_options(probe())
            .build()
            .unwrap()
            .request_body(&r),
        OllamaModel::builder("llama3.2")
            .body_options(probe())
            .build()
            .unwrap()
            .request_body(&r),
    ] {
        assert_eq!(body["probe"], true);
    }
}
