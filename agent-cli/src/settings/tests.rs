//! Each flag where it lands: the command line parsed as the binary parses
//! it, the configuration file loaded as the binary loads it, and the run's
//! options built from both as the binary builds them. No process and no
//! model server: the providers point at 127.0.0.1:9, never called.
//!
//! That a provider puts these options into its request body is tested in
//! loopwright-providers (request bodies) and loopwright-core (options to
//! requests); `options::sampling_output_and_system_options_reach_the_request`
//! in tests/ keeps the whole path, binary to request body, covered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use loopwright::ReasoningEffort;
use loopwright::output::OutputMode;
use loopwright::testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};

use super::*;
use crate::args::Args;
use crate::args::tests::parse;

/// A configuration file in `dir`: the `local` provider (an
/// OpenAI-compatible server nothing answers at), no MCP server, and
/// `extra`'s top-level keys.
pub(crate) fn write_config(dir: &Path, extra: Value) -> PathBuf {
    let mut config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}},
        "mcpServers": {}
    });
    if let (Some(base), Some(more)) = (config.as_object_mut(), extra.as_object()) {
        for (key, value) in more {
            base.insert(key.clone(), value.clone());
        }
    }
    let path = dir.join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// `loopwright --config CONFIG --model local/test ARGS...`, parsed.
pub(crate) fn local(config: &Path, args: &[&str]) -> Args {
    let mut all = vec!["--config", config.to_str().unwrap(), "--model", "local/test"];
    all.extend_from_slice(args);
    parse(&all)
}

/// The run's options as `loopwright` builds them for `args`: the
/// configuration, the system prompt, the model, then the options.
async fn built(args: &Args) -> Result<AgentOptions, Failure> {
    let config = load_config(args)?;
    let system = system_prompt(args)?;
    let chosen = crate::model::choose(&args.model, &config, args.llm_timeout).await?;
    options(args, args.plan, &config, system, &chosen)
}

fn close_to(value: Option<f32>, expected: f32) -> bool {
    value.is_some_and(|v| (v - expected).abs() < 1e-6)
}

#[tokio::test]
async fn sampling_output_and_system_options_land_in_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let system = dir.path().join("system.txt");
    std::fs::write(&system, "Be terse.").unwrap();
    let config = write_config(dir.path(), json!({}));
    let args = local(
        &config,
        &[
            "--system-file",
            system.to_str().unwrap(),
            "--temperature",
            "0.3",
            "--top-p",
            "0.8",
            "--max-output-tokens",
            "321",
            "--no-parallel-tool-calls",
            "hi",
        ],
    );
    let options = built(&args).await.unwrap();
    assert_eq!(options.system.as_deref(), Some("Be terse."));
    assert!(close_to(options.temperature, 0.3), "{options:?}");
    assert!(close_to(options.top_p, 0.8), "{options:?}");
    assert_eq!(options.max_output_tokens, Some(321));
    assert!(!options.parallel_tool_calls);
}

#[tokio::test]
async fn config_defaults_apply_and_the_command_line_overrides_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"defaults": {"temperature": 0.9, "maxOutputTokens": 100, "parallelToolCalls": false}}),
    );
    let defaults = built(&local(&config, &["hi"])).await.unwrap();
    assert!(close_to(defaults.temperature, 0.9), "{defaults:?}");
    assert_eq!(defaults.max_output_tokens, Some(100));
    assert!(!defaults.parallel_tool_calls);
    let args = local(&config, &["--temperature", "0.1", "--parallel-tool-calls", "hi"]);
    let options = built(&args).await.unwrap();
    assert!(close_to(options.temperature, 0.1), "{options:?}");
    assert_eq!(options.max_output_tokens, Some(100));
    assert!(options.parallel_tool_calls);
}

#[tokio::test]
async fn system_text_becomes_the_system_prompt_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({}));
    let args = local(&config, &["--system", "Answer in French.", "hi"]);
    let options = built(&args).await.unwrap();
    assert_eq!(options.system.as_deref(), Some("Answer in French."));
}

#[tokio::test]
async fn tool_timeout_bounds_each_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({}));
    let args = local(&config, &["--tool-timeout", "300ms", "--events", "wait"]);
    let options = built(&args).await.unwrap();
    assert_eq!(options.tool_timeout, Duration::from_millis(300));
}

#[tokio::test]
async fn repeated_model_options_are_a_fallback_order() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"providers": {
            "first": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"},
            "local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}}}),
    );
    let config = config.to_str().unwrap();
    let repeated = ["--model", "first/test", "--model", "local/test"];
    for models in [&repeated[..], &["--model", "first/test,local/test"]] {
        let mut line = vec!["--config", config];
        line.extend_from_slice(models);
        line.extend(["--events", "hi"]);
        let args = parse(&line);
        assert_eq!(args.model, ["first/test", "local/test"], "{models:?}");
        let loaded = load_config(&args).unwrap();
        let chosen = crate::model::choose(&args.model, &loaded, None).await.unwrap();
        assert_eq!(chosen.selectors, ["first/test", "local/test"], "{models:?}");
    }
}

#[tokio::test]
async fn reasoning_on_the_command_line_wins_over_the_configs() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        json!({"defaults": {"reasoning": {"effort": "low", "budgetTokens": 2048}}}),
    );
    let from_config = built(&local(&config, &["--no-mcp", "hi"])).await.unwrap();
    let reasoning = from_config.reasoning.unwrap();
    assert_eq!(
        (reasoning.effort, reasoning.budget_tokens),
        (ReasoningEffort::Low, Some(2048))
    );
    let args = local(&config, &["--no-mcp", "--reasoning", "high", "hi"]);
    let reasoning = built(&args).await.unwrap().reasoning.unwrap();
    assert_eq!(
        (reasoning.effort, reasoning.budget_tokens),
        (ReasoningEffort::High, None)
    );
}

const FORECAST: &str = r#"{
  "type": "object",
  "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
  "required": ["city", "celsius"]
}"#;

#[tokio::test]
async fn output_mode_native_asks_for_the_schema_named_after_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("forecast.json");
    std::fs::write(&schema, FORECAST).unwrap();
    let config = write_config(dir.path(), json!({}));
    let line = [
        "--output-schema",
        schema.to_str().unwrap(),
        "--output-mode",
        "native",
        "--no-mcp",
        "Oslo?",
    ];
    let output = built(&local(&config, &line)).await.unwrap().output.unwrap();
    assert_eq!(output.name(), "forecast");
    assert_eq!(output.output_mode(), OutputMode::Native);
    assert_eq!(output.schema()["required"], json!(["city", "celsius"]));
}

#[tokio::test]
async fn a_missing_or_too_complex_schema_is_a_usage_error_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({}));
    let missing = dir.path().join("nope.json");
    let args = local(&config, &["--output-schema", missing.to_str().unwrap(), "hi"]);
    let failure = built(&args).await.unwrap_err();
    assert_eq!(failure.status, crate::exit::USAGE);
    assert!(failure.message.contains("nope.json"), "{}", failure.message);
    // Unions that multiply (2^20 branches to validate an answer).
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
        defs.insert(format!("l{i}"), json!({"oneOf": [next.clone(), next]}));
    }
    defs.insert("l20".into(), json!(false));
    let hostile = dir.path().join("hostile.json");
    std::fs::write(&hostile, json!({"$ref": "#/$defs/l0", "$defs": defs}).to_string()).unwrap();
    let line = ["--no-mcp", "--output-schema", hostile.to_str().unwrap(), "hi"];
    // The options fail, so no agent is built: drive() builds it from them.
    let failure = built(&local(&config, &line)).await.unwrap_err();
    assert_eq!(failure.status, crate::exit::USAGE);
    assert!(failure.message.contains("too complex"), "{}", failure.message);
}

/// The events of `agent` answering `prompt`, and its result.
async fn events_of(agent: &loopwright::Agent, prompt: &str) -> (Vec<Value>, loopwright::AgentResult) {
    let mut run = agent.run(prompt);
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        events.push(serde_json::to_value(&event).unwrap());
    }
    (events, run.await.unwrap())
}

#[tokio::test]
async fn approve_deny_refuses_the_call_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({}));
    let options = built(&local(&config, &["--approve", "deny", "--events", "go"]))
        .await
        .unwrap();
    let ran = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = ran.clone();
    let echo = loopwright::tool_fn("echo", "Echo the text.", move |input: Value| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, loopwright::ToolError>(input) }
    });
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "echo", r#"{"text": "should not run"}"#)]),
        ScriptedStep::text("I was not allowed."),
    ]);
    let agent = loopwright::Agent::builder(std::sync::Arc::new(model))
        .tool(echo)
        .options(options)
        .build();
    let (events, result) = events_of(&agent, "go").await;
    let resolved = events.iter().find(|e| e["type"] == "approval_resolved").unwrap();
    assert_eq!(resolved["approved"], false);
    let outcome = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(outcome["is_error"], true);
    assert!(
        outcome["output"].to_string().contains("denied by --approve deny"),
        "{outcome}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the denied call ran");
    assert_eq!(crate::exit::for_result(&result), crate::exit::OK);
    assert_eq!(result.text, "I was not allowed.");
}
