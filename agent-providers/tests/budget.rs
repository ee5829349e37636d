//! Token counters, the known context windows and `Providers::budget`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use loopwright_core::budget::{CharEstimate, DEFAULT_BUFFER_TOKENS, DEFAULT_CONTEXT_WINDOW, TokenCounter};
use loopwright_providers::{
    ConfigError, Providers, ProvidersConfig, TiktokenCounter, TiktokenEncoding, context_window_for,
    known_context_window, token_counter_for,
};
use serde_json::json;

/// Counts differ between the encodings for this text.
const SAMPLE: &str = "Tokenization differs: こんにちは世界! ünïcödé\n\tfn main() { println!(\"hi\"); }";

#[test]
fn o200k_and_cl100k_counts_are_exact_and_differ() {
    let o200k = TiktokenCounter::new(TiktokenEncoding::O200kBase).unwrap();
    let cl100k = TiktokenCounter::new(TiktokenEncoding::Cl100kBase).unwrap();
    assert_eq!(o200k.count("hello world"), 2);
    assert_eq!(cl100k.count("hello world"), 2);
    assert_eq!(o200k.count(SAMPLE), 22);
    assert_eq!(cl100k.count(SAMPLE), 27);
    assert_eq!(o200k.count(""), 0);
}

#[test]
fn special_token_text_counts_as_ordinary_text() {
    let cl100k = TiktokenCounter::new(TiktokenEncoding::Cl100kBase).unwrap();
    assert!(cl100k.count("<|endoftext|>") > 1);
}

#[test]
fn counters_by_model_id() {
    let sample = |model: &str| token_counter_for(model, None).unwrap().count(SAMPLE);
    let o200k = TiktokenCounter::new(TiktokenEncoding::O200kBase)
        .unwrap()
        .count(SAMPLE);
    let cl100k = TiktokenCounter::new(TiktokenEncoding::Cl100kBase)
        .unwrap()
        .count(SAMPLE);
    for model in [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1-nano",
        "gpt-5",
        "o1",
        "o3-mini",
        "o4-mini",
        "chatgpt-4o-latest",
        "openai/gpt-4o",
    ] {
        assert_eq!(sample(model), o200k, "{model}");
    }
    for model in ["gpt-4", "gpt-4-turbo", "gpt-3.5-turbo", "text-embedding-3-small"] {
        assert_eq!(sample(model), cl100k, "{model}");
    }
    for model in ["claude-sonnet-4-5", "gemini-2.5-pro", "llama3.2", "qwen3:8b"] {
        assert_eq!(sample(model), CharEstimate.count(SAMPLE), "{model}");
    }
}

#[test]
fn configured_tokenizer_wins_over_the_model_id() {
    let cl100k = TiktokenCounter::new(TiktokenEncoding::Cl100kBase)
        .unwrap()
        .count(SAMPLE);
    let counter = token_counter_for("gpt-4o", Some("tiktoken:cl100k_base")).unwrap();
    assert_eq!(counter.count(SAMPLE), cl100k);
    for name in ["o200k_base", "cl100k_base", "p50k_base", "r50k_base"] {
        let counter = token_counter_for("claude-x", Some(&format!("tiktoken:{name}"))).unwrap();
        assert!(format!("{counter:?}").contains(name));
        assert_eq!(counter.count("hello world"), 2);
    }
}

#[test]
fn unknown_tokenizers_are_typed_errors_naming_the_value() {
    for bad in ["tiktoken:bogus", "sentencepiece:llama", "o200k_base"] {
        let err = token_counter_for("gpt-4o", Some(bad)).unwrap_err();
        assert!(
            matches!(&err, ConfigError::UnknownTokenizer(v) if v == bad),
            "{err:?}"
        );
        assert!(err.to_string().contains(bad), "{err}");
    }
}

#[test]
fn known_windows_by_longest_prefix() {
    assert_eq!(known_context_window("gpt-4.1-mini"), Some(1_047_576));
    assert_eq!(known_context_window("gpt-4o-2024-08-06"), Some(128_000));
    assert_eq!(known_context_window("gpt-4-turbo"), Some(128_000));
    assert_eq!(known_context_window("gpt-4"), Some(8_192));
    assert_eq!(known_context_window("gpt-5-mini"), Some(400_000));
    assert_eq!(known_context_window("o3"), Some(200_000));
    assert_eq!(known_context_window("o4-mini"), Some(200_000));
    assert_eq!(known_context_window("claude-opus-4-1"), Some(200_000));
    assert_eq!(known_context_window("gemini-2.5-flash"), Some(1_048_576));
    assert_eq!(known_context_window("gemini-2.0-flash"), Some(1_048_576));
    assert_eq!(known_context_window("openai/gpt-4o"), Some(128_000));
    assert_eq!(known_context_window("llama3.2"), None);
}

#[test]
fn window_lookup_order_is_config_then_table_then_default() {
    assert_eq!(context_window_for("gpt-4o", Some(50_000)), 50_000);
    assert_eq!(context_window_for("gpt-4o", None), 128_000);
    assert_eq!(context_window_for("llama3.2", None), DEFAULT_CONTEXT_WINDOW);
    assert_eq!(context_window_for("llama3.2", Some(8_192)), 8_192);
}

fn providers() -> Providers {
    let config: ProvidersConfig = serde_json::from_value(json!({
        "providers": {
            "openai": {
                "apiKey": "k",
                "models": {
                    "gpt-4o": {"contextWindow": 64000},
                    "gpt-4.1": {"tokenizer": "tiktoken:cl100k_base"},
                    "odd": {"tokenizer": "tiktoken:bogus"}
                }
            },
            "local": {
                "type": "openai-compatible",
                "baseUrl": "http://127.0.0.1:1/v1",
                "models": {"qwen": {"contextWindow": 32768}}
            }
        }
    }))
    .unwrap();
    Providers::from_config(config).unwrap()
}

#[test]
fn providers_budget_combines_config_table_and_tokenizer() {
    let p = providers();
    // Configured window.
    let b = p.budget("openai/gpt-4o", Some(1_000), Some(100)).unwrap();
    assert_eq!(b.limit(), 64_000 - 1_000 - 100);
    // Table window, configured tokenizer.
    let b = p.budget("openai/gpt-4.1", None, None).unwrap();
    assert_eq!(b.limit(), 1_047_576 - DEFAULT_BUFFER_TOKENS);
    assert!(format!("{b:?}").contains("cl100k_base"), "{b:?}");
    // Unconfigured model: table window, tokenizer from the id.
    let b = p.budget("openai/gpt-5-mini", Some(8_000), None).unwrap();
    assert_eq!(b.limit(), 400_000 - DEFAULT_BUFFER_TOKENS - 8_000);
    assert!(format!("{b:?}").contains("o200k_base"), "{b:?}");
    // Configured window of a local model, estimate counter.
    let b = p.budget("local/qwen", None, Some(0)).unwrap();
    assert_eq!(b.limit(), 32_768);
    assert!(format!("{b:?}").contains("CharEstimate"), "{b:?}");
    // Unknown everything: the default window.
    let b = p.budget("local/other", None, None).unwrap();
    assert_eq!(b.limit(), DEFAULT_CONTEXT_WINDOW - DEFAULT_BUFFER_TOKENS);
}

#[test]
fn providers_budget_errors() {
    let p = providers();
    let err = p.budget("openai/odd", None, None).unwrap_err();
    assert!(
        matches!(&err, ConfigError::UnknownTokenizer(v) if v == "tiktoken:bogus"),
        "{err:?}"
    );
    assert!(matches!(
        p.budget("no-slash", None, None),
        Err(ConfigError::InvalidSelector(_))
    ));
}
