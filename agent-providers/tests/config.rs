//! Construction from configuration and environment, and model selectors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;

use bytes::Bytes;
use common::*;
use loopwright_core::{Message, model::ModelRequest};
use loopwright_providers::{ConfigError, ProviderKind, Providers, ProvidersConfig};
use serde_json::json;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn config(value: serde_json::Value) -> ProvidersConfig {
    serde_json::from_value(value).unwrap()
}

#[test]
fn builtins_from_environment() {
    let p = Providers::with_env(
        ProvidersConfig::default(),
        env(&[
            ("OPENAI_API_KEY", "a"),
            ("ANTHROPIC_API_KEY", "b"),
            ("GOOGLE_API_KEY", "c"),
            ("OPENROUTER_API_KEY", "d"),
        ]),
    )
    .unwrap();
    let m = p.model("openai/gpt-4.1").unwrap();
    assert_eq!((m.provider(), m.model_id()), ("openai", "gpt-4.1"));
    assert_eq!(
        p.model("anthropic/claude-sonnet-4-5").unwrap().provider(),
        "anthropic"
    );
    assert_eq!(p.model("google/gemini-2.5-flash").unwrap().provider(), "google");
    assert_eq!(p.model("gemini/gemini-2.5-flash").unwrap().provider(), "google");
    let or = p.model("openrouter/anthropic/claude-sonnet-4").unwrap();
    assert_eq!(
        (or.provider(), or.model_id()),
        ("openrouter", "anthropic/claude-sonnet-4")
    );
    assert_eq!(p.model("ollama/llama3.2").unwrap().provider(), "ollama");
}

#[test]
fn missing_key_unknown_provider_and_bad_selector() {
    let p = Providers::with_env(ProvidersConfig::default(), env(&[])).unwrap();
    assert!(matches!(
        p.model("openai/gpt-4.1").err().unwrap(),
        ConfigError::MissingApiKey { .. }
    ));
    assert!(matches!(
        p.model("nope/x").err().unwrap(),
        ConfigError::UnknownProvider(_)
    ));
    assert!(matches!(
        p.model("gpt-4.1").err().unwrap(),
        ConfigError::InvalidSelector(_)
    ));
    // Ollama needs no key.
    assert!(p.model("ollama/qwen3").is_ok());
}

#[test]
fn types_inferred_or_required() {
    let cfg = config(json!({"providers": {"groq": {"apiKey": "k"}}}));
    let p = Providers::with_env(cfg, env(&[])).unwrap();
    assert_eq!(p.model("groq/llama-3.3-70b").unwrap().provider(), "groq");
    let cfg = config(json!({"providers": {"mystery": {"baseUrl": "http://x/v1"}}}));
    assert!(matches!(
        Providers::with_env(cfg, env(&[])).err().unwrap(),
        ConfigError::UnknownType(_)
    ));
    let cfg = config(json!({"providers": {"bad": {"type": "openai-compatible"}}}));
    let p = Providers::with_env(cfg, env(&[])).unwrap();
    assert!(matches!(
        p.model("bad/m").err().unwrap(),
        ConfigError::MissingBaseUrl(_)
    ));
    let kind: ProviderKind = serde_json::from_value(json!("openai-responses")).unwrap();
    assert_eq!(kind, ProviderKind::OpenaiResponses);
}

#[test]
fn missing_variable_is_an_error() {
    let cfg = config(json!({"providers": {"openai": {"apiKey": "${NOPE}"}}}));
    let err = Providers::with_env(cfg, env(&[])).err().unwrap();
    assert!(
        matches!(err, ConfigError::MissingVar { ref var, .. } if var == "NOPE"),
        "{err}"
    );
}

#[test]
fn model_settings_are_kept() {
    let cfg = config(json!({"providers": {"local": {"type": "ollama",
        "models": {"qwen3:8b": {"contextWindow": 40960, "tokenizer": "qwen"}}}}}));
    let p = Providers::with_env(cfg, env(&[])).unwrap();
    let m = p.model_config("local/qwen3:8b").unwrap();
    assert_eq!(
        (m.context_window, m.tokenizer.as_deref()),
        (Some(40960), Some("qwen"))
    );
    assert!(p.model_config("local/other").is_none());
}

#[tokio::test]
async fn configured_compatible_provider_sends_expanded_key_and_headers() {
    let lines = vec![
        json!({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}).to_string(),
    ];
    let mut chunks = frames(&lines, false, "\n");
    chunks.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![Reply::ok(chunks)]).await;
    let cfg = config(json!({"providers": {"vllm": {
        "type": "openai-compatible",
        "baseUrl": "${HOST}/v1",
        "apiKey": "${VLLM_KEY}",
        "headers": {"X-Team": "t-${TEAM}"},
        "supportsRequiredToolChoice": false
    }}}));
    let p = Providers::with_env(
        cfg,
        env(&[("HOST", &server.url()), ("VLLM_KEY", "secret"), ("TEAM", "42")]),
    )
    .unwrap();
    let model = p.model("vllm/meta/llama").unwrap();
    let (events, err) = collect(
        model
            .stream(ModelRequest::new(vec![Message::user("x")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none());
    assert_eq!(text(&events), "hi");
    let r = &server.received()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], "Bearer secret");
    assert_eq!(r.headers["x-team"], "t-42");
    assert_eq!(r.body["model"], "meta/llama");
}

/// `${VAR:-default}` (and a default naming another variable) in a
/// provider's key, URL and headers: the rules of the configuration file
/// and of MCP servers, which `Providers` did not follow before (it looked
/// up a variable named `VLLM_KEY:-${FALLBACK_KEY}`).
#[tokio::test]
async fn provider_settings_take_defaults_as_the_configuration_file_does() {
    let lines = vec![
        json!({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}).to_string(),
    ];
    let mut chunks = frames(&lines, false, "\n");
    chunks.push(Bytes::from("data: [DONE]\n\n"));
    let server = serve(vec![Reply::ok(chunks)]).await;
    let cfg = config(json!({"providers": {"vllm": {
        "type": "openai-compatible",
        "baseUrl": "${VLLM_URL:-${HOST}/v1}",
        "apiKey": "${VLLM_KEY:-${FALLBACK_KEY}}",
        "headers": {"X-Team": "${TEAM:-t-none}", "X-Empty": "${EMPTY:-was-empty}"},
    }}}));
    let p = Providers::with_env(
        cfg,
        env(&[
            ("HOST", &server.url()),
            ("FALLBACK_KEY", "fallback"),
            ("EMPTY", ""),
        ]),
    )
    .unwrap();
    let model = p.model("vllm/m").unwrap();
    let (events, err) = collect(
        model
            .stream(ModelRequest::new(vec![Message::user("x")]))
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none());
    assert_eq!(text(&events), "hi");
    let r = &server.received()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], "Bearer fallback");
    assert_eq!(r.headers["x-team"], "t-none");
    assert_eq!(r.headers["x-empty"], "was-empty");
}

#[tokio::test]
async fn ollama_host_from_environment() {
    let line =
        json!({"message": {"role": "assistant", "content": "ok"}, "done": true, "done_reason": "stop"});
    let server = serve(vec![Reply::ok(vec![Bytes::from(format!("{line}\n"))])]).await;
    let host = server.url().trim_start_matches("http://").to_owned();
    let p = Providers::with_env(ProvidersConfig::default(), env(&[("OLLAMA_HOST", &host)])).unwrap();
    let model = p.model("ollama/qwen3").unwrap();
    let (events, err) = collect(model.stream(ModelRequest::new(vec![])).await.unwrap()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&events), "ok");
    assert_eq!(server.received()[0].path, "/api/chat");
}
