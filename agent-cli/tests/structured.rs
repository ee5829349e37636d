//! `--output-schema`, `defaults.outputSchema`, `defaults.reasoning` and
//! `providers.<name>.options`, through the built `loopwright` against a local
//! OpenAI-compatible model server: the value printed alone, exit status 6,
//! and the configuration's settings in the request body. Where
//! `--output-mode`, `--reasoning` and a bad schema land is unit-tested in
//! src/ (`settings::tests`, `args::tests`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::json;

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
