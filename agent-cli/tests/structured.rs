//! `--output-schema`, `defaults.outputSchema`, `--reasoning` and
//! `providers.<name>.options`, through the built `loopwright` against a local
//! OpenAI-compatible model server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
  "required": ["city", "celsius"]
}"#;

fn schema_file(dir: &Path) -> String {
    let path = dir.join("forecast.json");
    std::fs::write(&path, SCHEMA).unwrap();
    path.to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_schema_prints_the_validated_value_alone_after_a_tool_call() {
    // A compatible server is not assumed to do structured output: the
    // final_answer tool carries the answer.
    let server = ModelServer::start(vec![
        tool_call("test__echo", json!({"text": "Lisbon"})).into(),
        tool_call("final_answer", json!({"city": "Lisbon", "celsius": 21.5})).into(),
    ])
    .await;
    let dir = tmp_dir();
    let config = write_config(dir.path(), &server, json!({}));
    let schema = schema_file(dir.path());
    let out = run_local(
        &config,
        &["--output-schema", &schema, "Weather in Lisbon?"],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "{\"celsius\":21.5,\"city\":\"Lisbon\"}\n");
    let bodies = server.bodies();
    let tools = bodies[0]["tools"].to_string();
    assert!(
        tools.contains("final_answer") && tools.contains("test__echo"),
        "{tools}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_mode_sends_the_response_format_and_reads_the_text_answer() {
    let server = ModelServer::start(vec![answer(r#"{"city": "Oslo", "celsius": -3}"#).into()]).await;
    let dir = tmp_dir();
    let config = write_config(dir.path(), &server, json!({}));
    let schema = schema_file(dir.path());
    let out = ask_natively(&config, &schema, dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "{\"celsius\":-3,\"city\":\"Oslo\"}\n");
    let format = &server.bodies()[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "forecast");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(format["json_schema"]["schema"]["additionalProperties"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_never_validates_exits_6_saying_why() {
    let bad = || answer(r#"{"city": "Oslo"}"#).into();
    let server = ModelServer::start(vec![bad(), bad(), bad()]).await;
    let dir = tmp_dir();
    let config = write_config(dir.path(), &server, json!({}));
    let schema = schema_file(dir.path());
    let out = ask_natively(&config, &schema, dir.path()).await;
    assert_exit(&out, 6, "\"celsius\" is a required property");
    let (stdout, _) = texts(&out);
    assert!(stdout.is_empty(), "{stdout}");
    // The first answer and two retries.
    assert_eq!(server.bodies().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_file_gives_the_schema_reasoning_and_provider_options() {
    let server = ModelServer::start(vec![answer(r#"{"ok": true}"#).into()]).await;
    let dir = tmp_dir();
    std::fs::create_dir(dir.path().join("schemas")).unwrap();
    std::fs::write(
        dir.path().join("schemas/verdict.json"),
        r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}"#,
    )
    .unwrap();
    // An OpenAI provider (so reasoning applies) at the local server; the
    // schema's path is relative to the config file.
    let config = write_config(
        dir.path(),
        &server,
        json!({
            "providers": {"oai": {"type": "openai", "apiKey": "sk-test", "baseUrl": server.base_url(),
                "options": {"service_tier": "flex", "store": false}}},
            "defaults": {"outputSchema": "schemas/verdict.json", "reasoning": "low"}
        }),
    );
    let cwd = tmp_dir();
    let out = run_agent(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            "oai/o4-mini",
            "--no-mcp",
            "--output-mode",
            "native",
            "Ok?",
        ],
        &[],
        cwd.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "{\"ok\":true}\n");
    let body = &server.bodies()[0];
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["service_tier"], "flex");
    assert_eq!(body["response_format"]["json_schema"]["name"], "verdict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_on_the_command_line_wins_and_skips_models_that_cannot_reason() {
    let server = ModelServer::start(vec![answer("fine").into(), answer("fine").into()]).await;
    let dir = tmp_dir();
    let providers = json!({"providers": {"oai": {"type": "openai", "apiKey": "sk-test", "baseUrl": server.base_url()}},
        "defaults": {"reasoning": {"effort": "low", "budgetTokens": 2048}}});
    let config = write_config(dir.path(), &server, providers);
    let config = config.to_str().unwrap();
    for model in ["oai/gpt-5-mini", "oai/gpt-4.1"] {
        let out = run_agent(
            &[
                "--config",
                config,
                "--model",
                model,
                "--no-mcp",
                "--reasoning",
                "high",
                "hi",
            ],
            &[],
            dir.path(),
        )
        .await;
        assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    }
    let bodies = server.bodies();
    assert_eq!(bodies[0]["reasoning_effort"], "high");
    assert_eq!(
        bodies[1].get("reasoning_effort"),
        None::<&Value>,
        "gpt-4.1 does not reason"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_schema_or_effort_is_a_usage_error() {
    let server = ModelServer::start(vec![]).await;
    let dir = tmp_dir();
    let config = write_config(dir.path(), &server, json!({}));
    let missing = dir.path().join("nope.json");
    let out = run_local(
        &config,
        &["--output-schema", missing.to_str().unwrap(), "hi"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "nope.json");
    let out = run_local(&config, &["--reasoning", "extreme", "hi"], &[], dir.path()).await;
    assert_exit(&out, 2, "unknown reasoning effort `extreme`");
    // A schema whose unions multiply (2^20 branches to validate an answer)
    // is refused before any model call, naming why.
    let mut defs = serde_json::Map::new();
    for i in 0..20 {
        let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
        defs.insert(format!("l{i}"), json!({"oneOf": [next.clone(), next]}));
    }
    defs.insert("l20".into(), json!(false));
    let hostile = dir.path().join("hostile.json");
    std::fs::write(&hostile, json!({"$ref": "#/$defs/l0", "$defs": defs}).to_string()).unwrap();
    let out = run_local(
        &config,
        &["--no-mcp", "--output-schema", hostile.to_str().unwrap(), "hi"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "too complex");
    assert!(server.bodies().is_empty(), "no model call was made");
}

/// `loopwright --output-schema SCHEMA --output-mode native --no-mcp "Oslo?"`.
async fn ask_natively(config: &Path, schema: &str, cwd: &Path) -> std::process::Output {
    let args = [
        "--output-schema",
        schema,
        "--output-mode",
        "native",
        "--no-mcp",
        "Oslo?",
    ];
    run_local(config, &args, &[], cwd).await
}

fn tmp_dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}
