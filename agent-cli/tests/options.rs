//! The command line's options where only the process shows them: standard
//! input, stdout and stderr, the working directory, HOME and the
//! environment, and one run that carries a representative set of options
//! the whole way, binary to request body. Where each flag lands in the
//! agent's settings is unit-tested in src/ (`settings::tests`,
//! `tools::tests`, `args::tests`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Stdio;

use common::*;
use serde_json::{Value, json};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn close_to(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-6)
}

/// The whole path once: flags read by the binary reach the request body
/// (each flag's own setting is a unit test, `settings::tests`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_output_and_system_options_reach_the_request() {
    let server = ModelServer::start(vec![answer("Fine.").into()]).await;
    let dir = tmp();
    let system = dir.path().join("system.txt");
    std::fs::write(&system, "Be terse.").unwrap();
    let config = write_config(dir.path(), &server, json!({}));
    let args = [
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
    ];
    let out = run_local(&config, &args, &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let body = &server.bodies()[0];
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("Be terse.")
    );
    assert!(close_to(&body["temperature"], 0.3), "{body}");
    assert!(close_to(&body["top_p"], 0.8), "{body}");
    assert_eq!(body["max_tokens"], 321);
    assert_eq!(body["parallel_tool_calls"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_never_waits_for_standard_input() {
    let server = ModelServer::start(vec![]).await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    let args = ["--config", config.to_str().unwrap(), "--list-tools"];
    let mut child = agent_command(&args, &[], dir.path())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take(); // a pipe that never closes
    let out = tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("--list-tools waited for standard input")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert!(texts(&out).0.contains("\"test__echo\""), "{}", texts(&out).0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_model_without_its_key_is_skipped_with_a_warning() {
    let server = ModelServer::start(vec![answer("From local.").into()]).await;
    let dir = tmp();
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {}, "providers": {
            "local": {"type": "openai-compatible", "baseUrl": server.base_url()},
            "work": {"type": "openai", "apiKey": "${AGENT_TEST_UNSET_WORK_KEY}"}}}),
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--model",
        "work/gpt-4.1,local/test",
        "hi",
    ];
    let out = run_agent(&args, &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "From local.\n");
    assert!(
        stderr.contains("warning: model work/gpt-4.1 left out")
            && stderr.contains("AGENT_TEST_UNSET_WORK_KEY"),
        "{stderr}"
    );
    // Nothing usable at all: exit 2, every selector named with its reason.
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--model",
        "work/gpt-4.1",
        "hi",
    ];
    let out = run_agent(&args, &[], dir.path()).await;
    assert_exit(&out, 2, "no usable model: work/gpt-4.1 (");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_access_reaches_outside_the_default_workspace_and_long_results_are_cut() {
    let server = ModelServer::start(vec![
        tool_call("Read", json!({"file_path": "notes.txt"})).into(),
        tool_call("Read", json!({"file_path": "../secret.txt"})).into(),
        answer("Read both.").into(),
    ])
    .await;
    let dir = tmp();
    // No --workspace: the working directory is the workspace.
    let cwd = dir.path().join("ws");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::write(cwd.join("notes.txt"), "inside ".repeat(200)).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {}, "defaults": {"toolResponseMaxBytes": 300}}),
    );
    let args = ["--coding-tools", "--full-access", "--events", "read"];
    let out = run_local(&config, &args, &[], &cwd).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Vec<Value> = json_lines(&stdout)
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{stdout}");
    // toolResponseMaxBytes cut the 1,400-byte file down.
    let long = results[0]["output"].to_string();
    assert!(
        long.contains("inside") && long.contains("output truncated"),
        "{long}"
    );
    assert!(long.len() < 700, "{long}");
    assert_eq!(results[1]["is_error"], false, "{}", results[1]);
    assert!(
        results[1]["output"].to_string().contains("outside"),
        "{}",
        results[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_prints_only_the_final_answer_where_text_mode_streams_every_step() {
    for (mode, expected) in [(None, "Let me add.\nIt is 5.\n"), (Some("--quiet"), "It is 5.\n")] {
        let server = ModelServer::start(vec![
            text_then_tool_call("Let me add.", "test__add", json!({"a": 2, "b": 3})).into(),
            answer("It is 5.").into(),
        ])
        .await;
        let dir = tmp();
        let config = write_config(dir.path(), &server, json!({}));
        let args: Vec<&str> = mode.into_iter().chain(["Add 2 and 3"]).collect();
        let out = run_local(&config, &args, &[], dir.path()).await;
        assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
        assert_eq!(texts(&out).0, expected, "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_redact_mcp_server_credentials() {
    let server = ModelServer::start(vec![answer("Traced.").into()]).await;
    let dir = tmp();
    let literal = "literal-mcp-secret-7781";
    let from_env = "env-mcp-secret-9912";
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {
            "lit": {"command": mcp_test_server(), "args": ["--stderr-env", "SERVICE_TOKEN"],
                    "env": {"SERVICE_TOKEN": literal}},
            "ref": {"command": mcp_test_server(), "args": ["--stderr-env", "DB_PASSWORD"],
                    "env": {"DB_PASSWORD": "${MY_DB_PW}"}}}}),
    );
    let out = run_local(
        &config,
        &["--trace-mcp", "-v", "hi"],
        &[("MY_DB_PW", from_env)],
        dir.path(),
    )
    .await;
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The servers did print them, through tracing.
    assert!(stderr.contains("SERVICE_TOKEN=[REDACTED]"), "{stderr}");
    assert!(stderr.contains("DB_PASSWORD=[REDACTED]"), "{stderr}");
    assert!(
        !stderr.contains(literal) && !stderr.contains(from_env),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_redact_oauth_secrets_and_stored_tokens() {
    let server = ModelServer::start(vec![answer("Traced.").into()]).await;
    let dir = tmp();
    let stored = "stored-oauth-access-6613";
    let client_secret = "oauth-client-secret-4420";
    // A token stored by `loopwright mcp login` (HOME is the directory).
    let store = dir.path().join(".config/loopwright");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(
        store.join("mcp-tokens.json"),
        json!({"http://127.0.0.1:9/mcp": {"client_id": "c", "token_response":
            {"access_token": stored, "token_type": "bearer"}}})
        .to_string(),
    )
    .unwrap();
    // Servers that print both, under names that do not look secret.
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {
            "tok": {"command": mcp_test_server(), "args": ["--stderr-env", "PLAIN"], "env": {"PLAIN": stored}},
            "sec": {"command": mcp_test_server(), "args": ["--stderr-env", "OTHER"], "env": {"OTHER": "${APP_SECRET}"}},
            "remote": {"url": "http://127.0.0.1:9/mcp", "oauth": {"clientId": "c", "clientSecret": "${APP_SECRET}"}}}}),
    );
    let out = run_local(
        &config,
        &["--trace-mcp", "-v", "hi"],
        &[("APP_SECRET", client_secret)],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("PLAIN=[REDACTED]"), "{stderr}");
    assert!(stderr.contains("OTHER=[REDACTED]"), "{stderr}");
    for secret in [stored, client_secret] {
        assert!(
            !stderr.contains(secret) && !stdout.contains(secret),
            "{secret} printed: {stderr}"
        );
    }
}

/// A `.ai-agent.json` in `dir` whose default model is `server`'s.
fn dot_config(dir: &std::path::Path, server: &ModelServer) {
    let written = write_config(
        dir,
        server,
        json!({"mcpServers": {}, "defaults": {"model": "local/test"}}),
    );
    std::fs::rename(written, dir.join(".ai-agent.json")).unwrap();
}

/// `agent hi` run in `cwd` with `HOME` set to `home`.
async fn run_with_home(cwd: &std::path::Path, home: &std::path::Path) -> std::process::Output {
    let mut cmd = agent_command(&["hi"], &[], cwd);
    cmd.env("HOME", home);
    tokio::time::timeout(HANG_GUARD, cmd.output())
        .await
        .expect("agent hung")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_config_and_its_default_model_are_used_without_options() {
    let server = ModelServer::start(vec![answer("From home.").into()]).await;
    let dir = tmp();
    let home = dir.path().join("home");
    let cwd = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    // No ./.ai-agent.json in the working directory: ~/.ai-agent.json is read.
    dot_config(&home, &server);
    let out = run_with_home(&cwd, &home).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(texts(&out).0, "From home.\n");
    assert_eq!(server.bodies()[0]["model"], "test");
    // A ./.ai-agent.json in the working directory comes first.
    let here = ModelServer::start(vec![answer("From here.").into()]).await;
    dot_config(&cwd, &here);
    let out = run_with_home(&cwd, &home).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(texts(&out).0, "From here.\n");
    assert_eq!(server.bodies().len(), 1, "the home config was used again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_stream_that_goes_silent_ends_at_the_llm_timeout() {
    // A first chunk, then an open response with nothing more.
    let first = answer("Hel");
    let first = first.split("\n\n").next().unwrap().to_owned() + "\n\n";
    let server = ModelServer::start(vec![Reply::sse(first).stalled()]).await;
    let dir = tmp();
    // From the command line, then from the configuration's defaults.
    let from_flag = write_config(dir.path(), &server, json!({"mcpServers": {}}));
    let out = run_local(&from_flag, &["--llm-timeout", "300ms", "hi"], &[], dir.path()).await;
    assert_exit(&out, 3, "timed out after 300 ms");
    let from_config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {}, "defaults": {"llmTimeout": "400ms"}}),
    );
    let out = run_local(&from_config, &["hi"], &[], dir.path()).await;
    assert_exit(&out, 3, "timed out after 400 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_in_the_environment_picks_that_provider_and_its_default_model() {
    let server = ModelServer::start(vec![answer("Keyed.").into()]).await;
    let dir = tmp();
    // The built-in `openai` provider, pointed at the local server.
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {}, "providers": {"openai": {"baseUrl": server.base_url()}}}),
    );
    let args = ["--config", config.to_str().unwrap(), "hi"];
    let out = run_agent(&args, &[("OPENAI_API_KEY", "sk-test-key-123456")], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(texts(&out).0, "Keyed.\n");
    assert_eq!(server.bodies()[0]["model"], "gpt-4.1-mini");
}
