//! The built `loopwright` binary against a local OpenAI-compatible model server
//! (scripted steps in the shape of recorded streams) and the in-repo stdio
//! MCP server: events, output modes, tool listing, configuration errors,
//! approval, accounting and exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::json;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_show_a_tool_call_through_a_real_mcp_server_then_the_answer() {
    let server = ModelServer::start(vec![
        tool_call("test__echo", json!({"text": "ping from the model"})).into(),
        answer("The server said ping.").into(),
    ])
    .await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(&config, &["--events", "Echo ping"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&stdout);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds[0], "run_started");
    assert_eq!(kinds[1], "mcp_connected");
    assert_eq!(events[1]["servers"], json!(["test"]));
    for kind in ["tool_call", "tool_result", "text_delta", "step_finished"] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(
        (call["tool"].as_str(), call["original_name"].as_str()),
        (Some("test__echo"), Some("echo"))
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], false);
    assert_eq!(result["output"][0]["text"], "ping from the model");
    let last = events.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["exit"].as_str()),
        (Some("finished"), Some("completed"))
    );
    assert_eq!(last["text"], "The server said ping.");
    // The model got the tool's definition and, next, its result.
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0]["tools"].to_string().contains("test__echo"));
    assert!(bodies[1]["messages"].to_string().contains("ping from the model"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_mode_streams_only_the_answer_to_stdout_and_quiet_prints_it_once() {
    for mode in [None, Some("--quiet")] {
        let server = ModelServer::start(vec![
            tool_call("test__add", json!({"a": 2, "b": 3})).into(),
            answer("It is 5.").into(),
        ])
        .await;
        let dir = tmp();
        let config = write_config(dir.path(), &server, json!({}));
        let args: Vec<&str> = mode.into_iter().chain(["Add 2 and 3"]).collect();
        let out = run_local(&config, &args, &[], dir.path()).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(stdout, "It is 5.\n", "{mode:?}");
        // Not a terminal: no tool activity lines.
        assert!(!stderr.contains("test__add"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_can_come_from_stdin_with_a_dash_or_without_an_argument() {
    for dash in [Some("-"), None] {
        let server = ModelServer::start(vec![answer("Read it.").into()]).await;
        let dir = tmp();
        let config = write_config(dir.path(), &server, json!({"mcpServers": {}}));
        let mut args = vec!["--config", config.to_str().unwrap(), "--model", "local/test"];
        args.extend(dash);
        let out = run_agent_with_stdin(&args, b"a prompt from a pipe", dir.path()).await;
        assert_eq!(out.status.code(), Some(0), "{dash:?}: {}", texts(&out).1);
        assert_eq!(texts(&out).0, "Read it.\n");
        assert!(
            server.bodies()[0]["messages"]
                .to_string()
                .contains("a prompt from a pipe")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_prints_namespaced_tools_and_reports_failed_servers_and_clashes() {
    let server = ModelServer::start(vec![]).await;
    let dir = tmp();
    // `my.srv` and `my_srv` sanitise to the same prefix: their tools clash.
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {
            "my.srv": {"command": mcp_test_server()},
            "my_srv": {"command": mcp_test_server()},
            "broken": {"command": dir.path().join("no-such-server")},
            // Refused; its error quotes the URL, never the key in it.
            "keyed": {"url": "http://127.0.0.1:1/mcp?api_key=cli-url-secret-8841"}
        }}),
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--list-tools",
        "--coding-tools",
    ];
    let out = run_agent(&args, &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let tools = json_lines(&stdout);
    let find = |name: &str| tools.iter().find(|t| t["name"] == name);
    let read = find("Read").expect("coding tools listed bare");
    assert_eq!(
        (read["source"].as_str(), read["original_name"].as_str()),
        (Some("coding"), Some("Read"))
    );
    let echoes: Vec<_> = tools.iter().filter(|t| t["original_name"] == "echo").collect();
    assert_eq!(echoes.len(), 2, "{stdout}");
    assert_ne!(
        echoes[0]["name"], echoes[1]["name"],
        "clashing names must be told apart"
    );
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
        assert!(tool["description"].is_string());
    }
    assert!(stderr.contains("mcp server broken not connected"), "{stderr}");
    assert!(stderr.contains("mcp server keyed not connected"), "{stderr}");
    assert!(!stderr.contains("cli-url-secret-8841"), "{stderr}");
    let renamed = echoes
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .find(|n| *n != "my_srv__echo")
        .unwrap();
    assert!(
        stderr.contains(&format!("is exposed as {renamed}")),
        "clash not reported: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_errors_exit_2_naming_what_is_wrong() {
    let dir = tmp();
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "{\"providers\": {,}}").unwrap();
    let wrong_type = dir.path().join("type.json");
    std::fs::write(&wrong_type, r#"{"defaults": {"maxSteps": "ten"}}"#).unwrap();
    let missing_var = dir.path().join("var.json");
    std::fs::write(
        &missing_var,
        r#"{"accounting": {"file": "${AGENT_CLI_TEST_UNSET_DIR}/a.jsonl"}}"#,
    )
    .unwrap();
    let cases = [
        (
            bad_json,
            "invalid JSON at line 1, column 16: key must be a string",
        ),
        (
            wrong_type,
            "defaults.maxSteps: expected an unsigned integer, got \"ten\"",
        ),
        (
            missing_var,
            "accounting.file: environment variable AGENT_CLI_TEST_UNSET_DIR is not set",
        ),
    ];
    for (file, expected) in cases {
        let out = run_agent(&["--config", file.to_str().unwrap(), "hello"], &[], dir.path()).await;
        assert_exit(&out, 2, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_warn_and_a_missing_variable_only_drops_that_server() {
    let server = ModelServer::start(vec![answer("Fine.").into()]).await;
    let dir = tmp();
    let config = write_config(
        dir.path(),
        &server,
        json!({
            "colour": "blue",
            "defaults": {"maxStep": 3},
            "mcpServers": {
                "test": {"command": mcp_test_server()},
                "locked": {"command": mcp_test_server(), "args": ["${AGENT_CLI_TEST_UNSET_ARG}"]}
            }
        }),
    );
    let out = run_local(&config, &["--events", "hi"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("unknown key `colour`") && stderr.contains("unknown key `defaults.maxStep`"),
        "{stderr}"
    );
    let events = json_lines(&stdout);
    let connected = events.iter().find(|e| e["type"] == "mcp_connected").unwrap();
    assert_eq!(connected["servers"], json!(["test"]));
    assert_eq!(connected["failed"][0]["server"], "locked");
    assert!(
        connected["failed"][0]["error"]
            .as_str()
            .unwrap()
            .contains("AGENT_CLI_TEST_UNSET_ARG")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_ask_without_a_terminal_is_a_usage_error() {
    let dir = tmp();
    // `setsid`: a new session has no controlling terminal, even when the
    // tests themselves run in one.
    let cmd = agent_command(&["--approve", "ask", "hello"], &[], dir.path());
    let std = cmd.as_std();
    let mut detached = tokio::process::Command::new("setsid");
    detached
        .arg(std.get_program())
        .args(std.get_args())
        .current_dir(dir.path())
        .env_clear()
        .envs(std.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(HANG_GUARD, detached.output())
        .await
        .expect("agent hung")
        .unwrap();
    assert_exit(&out, 2, "--approve ask needs a terminal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounting_writes_one_line_per_model_attempt_and_tool_call() {
    let server = ModelServer::start(vec![
        tool_call("test__echo", json!({"text": "x"})).into(),
        answer("Done.").into(),
    ])
    .await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    let ledger = dir.path().join("ledger.jsonl");
    let out = run_local(
        &config,
        &["--accounting", ledger.to_str().unwrap(), "go"],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let entries = json_lines(&std::fs::read_to_string(&ledger).unwrap());
    assert_eq!(entries.len(), 3, "{entries:?}");
    let kinds: Vec<_> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| k.as_str() == "llm").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| k.as_str() == "tool").count(),
        1,
        "{kinds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_tell_how_the_run_ended() {
    let dir = tmp();
    // 3: the model fails (a 401 is not retried and there is no fallback).
    let failing = ModelServer::start(vec![Reply::status(401, r#"{"error": {"message": "bad key"}}"#)]).await;
    let config = write_config(dir.path(), &failing, json!({"mcpServers": {}}));
    let out = run_local(&config, &["hi"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(3), "{}", texts(&out).1);
    assert!(texts(&out).1.contains("error:"), "{}", texts(&out).1);

    // 5: the step limit is reached while the model keeps calling tools.
    let looping = ModelServer::start(vec![tool_call("test__echo", json!({"text": "again"})).into()]).await;
    let config = write_config(dir.path(), &looping, json!({}));
    let out = run_local(&config, &["--max-steps", "2", "loop"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(5), "{}", texts(&out).1);

    // 4: the context window cannot hold the request.
    let tiny = ModelServer::start(vec![answer("unused").into()]).await;
    let config = write_config(
        dir.path(),
        &tiny,
        json!({"mcpServers": {}, "providers": {"local": {"type": "openai-compatible", "baseUrl": tiny.base_url(),
            "models": {"test": {"contextWindow": 50}}}}, "defaults": {"contextWindowBufferTokens": 0}}),
    );
    let out = run_local(&config, &[&"words ".repeat(200)], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(4), "{}", texts(&out).1);
    assert!(tiny.bodies().is_empty(), "a request over the window was sent");

    // 2: usage errors.
    for args in [vec!["--mcp", "nope", "hi"], vec![]] {
        let out = run_agent(&args, &[], dir.path()).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", texts(&out).1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_it_says_what_it_downloads_and_what_to_do_when_it_cannot() {
    let dir = tmp();
    let config = dir.path().join(".ai-agent.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"test": {"command": mcp_test_server()}}}).to_string(),
    )
    .unwrap();
    // Found in the current directory; nothing answers at OLLAMA_HOST, and
    // the Hub is a closed port (no test reaches the internet).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hub = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let env = [
        ("OLLAMA_HOST", "http://127.0.0.1:9"),
        ("HF_ENDPOINT", hub.as_str()),
    ];
    let out = run_agent(&["hello"], &env, dir.path()).await;
    let (_, stderr) = texts(&out);
    let cache = dir.path().join(".cache/huggingface/hub");
    let said = format!(
        "note: no API key, configured model or local model server was found: using the embedded model \
         local/qwen3-0.6b, run on this machine's CPU. First it downloads {hub}/unsloth/Qwen3-0.6B-GGUF/resolve/\
         50968a4468ef4233ed78cd7c3de230dd1d61a56b/Qwen3-0.6B-Q4_K_M.gguf (397 MB, once) into {}",
        cache.display()
    );
    assert!(stderr.contains(&said), "{said}\nmissing from {stderr}");
    // The model's error says what to do instead; the run never began.
    assert_exit(&out, 3, "could not be downloaded into");
    for hint in ["LOOPWRIGHT_LOCAL_MODEL", "HF_HOME", "HF_ENDPOINT"] {
        assert!(stderr.contains(hint), "{hint} missing from {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_ollama_server_is_found_when_nothing_is_configured() {
    let ollama = ModelServer::builder()
        .listing(["qwen3:latest"])
        .replies(vec![Reply::ndjson(sse::ollama_answer(
            "qwen3:latest",
            "Local hello.",
        ))])
        .start()
        .await;
    let host = ollama.url();
    let dir = tmp();
    let out = run_agent(
        &["--no-mcp", "--events", "hi"],
        &[("OLLAMA_HOST", &host)],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let events = json_lines(&stdout);
    assert_eq!(
        (events[0]["provider"].as_str(), events[0]["model"].as_str()),
        (Some("ollama"), Some("qwen3:latest"))
    );
    assert_eq!(events.last().unwrap()["text"], "Local hello.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_never_show_the_api_key() {
    let server = ModelServer::start(vec![answer("Traced.").into()]).await;
    let dir = tmp();
    let secret = "sk-test-do-not-print-4242";
    // The provider redacts its own headers; a password in its base URL is
    // traced with the URL, and only the CLI's redaction hides it.
    let in_url = "url-pw-do-not-print-7171";
    let base_url = server
        .base_url()
        .replacen("http://", &format!("http://me:{in_url}@"), 1);
    let config = write_config(
        dir.path(),
        &server,
        json!({"mcpServers": {}, "providers": {"local": {"type": "openai-compatible", "baseUrl": base_url, "apiKey": "${LOCAL_LLM_KEY}"}}}),
    );
    let out = run_local(
        &config,
        &["--trace-llm", "hi"],
        &[("LOCAL_LLM_KEY", secret)],
        dir.path(),
    )
    .await;
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("loopwright_providers"),
        "no trace output: {stderr}"
    );
    assert!(
        stderr.contains("me:[REDACTED]@"),
        "the URL was not traced: {stderr}"
    );
    assert!(!stderr.contains(secret), "the key leaked: {stderr}");
    assert!(!stderr.contains(in_url), "the URL's password leaked: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_tools_with_nothing_configured_says_so() {
    let dir = tmp();
    // A clean HOME (run_agent's environment) and no ./.ai-agent.json.
    let out = run_agent(&["--list-tools"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("no tools: no MCP server is configured"),
        "{stderr}"
    );
}
