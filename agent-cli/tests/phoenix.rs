//! A run's traces in a third-party viewer: Arize Phoenix (PyPI
//! `arize-phoenix`, pinned in tests-deps/python/phoenix) started here on
//! loopback, `loopwright --otel` exporting to it over OTLP/HTTP, the spans
//! read back with Phoenix's own client (tests/phoenix/read_spans.py): the
//! run, its model calls with their model and tokens, its MCP tool call,
//! and the conversation only with `--otel-content`.
//!
//! Its own test binary: Phoenix takes half a minute to start, which the
//! other executables' tests use meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// How long Phoenix may take to answer its health check (about 30 s on 2
/// busy cores; more on its first start).
const PHOENIX_START: Duration = Duration::from_secs(240);

const PROMPT: &str = "What does the echo say about the secret word heliotrope?";

fn venv() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/python/phoenix/.venv/bin")
}

/// Phoenix on a free loopback port, its data in `dir`, nothing fetched from
/// elsewhere; the child and its base URL once it answers.
async fn phoenix(dir: &Path) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(dir.join("phoenix.log")).unwrap();
    let child = tokio::process::Command::new(venv().join("phoenix"))
        .arg("serve")
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", "0")
        .env("PHOENIX_WORKING_DIR", dir)
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    loopwright::providers::install_tls_provider();
    let client = reqwest::Client::new();
    let ready = tokio::time::timeout(PHOENIX_START, async {
        loop {
            if let Ok(r) = client.get(format!("{base}/healthz")).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
    .await;
    if ready.is_err() {
        let said = std::fs::read_to_string(dir.join("phoenix.log")).unwrap_or_default();
        panic!("Phoenix did not start within {PHOENIX_START:?}: {said}");
    }
    (child, base)
}

/// `loopwright --otel` (and `extra` flags) asking `PROMPT`: the model calls
/// the test MCP server's echo, then answers; its spans go to `phoenix`, in
/// project `project`.
async fn run(dir: &Path, phoenix: &str, project: &str, extra: &[&str]) {
    let models = routed(vec![(
        "trace-model",
        vec![
            sse::chat_calls(&[("call_e", "test__echo", json!({"text": "heliotrope"}))]),
            sse::answer("The echo says heliotrope."),
        ],
    )])
    .await;
    let config = write_config(dir, &models, json!({}));
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--model",
        "local/trace-model",
        "--mcp",
        "test",
        "--otel",
    ];
    args.extend(extra);
    args.push(PROMPT);
    let resource = format!("openinference.project.name={project}");
    let out = run_agent(
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix),
            ("OTEL_RESOURCE_ATTRIBUTES", &resource),
        ],
        dir,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "The echo says heliotrope.\n");
}

/// The project's spans, read by Phoenix's client once it holds `wanted`.
async fn spans(phoenix: &str, project: &str, wanted: usize) -> Vec<Value> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/phoenix/read_spans.py");
    let read = tokio::process::Command::new(venv().join("python"))
        .arg(script)
        .args([phoenix, project, &wanted.to_string()])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), read)
        .await
        .expect("the client hung")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "Phoenix's client failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phoenix_shows_the_runs_spans_and_the_conversation_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, base) = phoenix(dir.path()).await;
    run(dir.path(), &base, "with-content", &["--otel-content"]).await;
    run(dir.path(), &base, "without-content", &[]).await;

    // The run, two model calls, the tool call and the MCP call under it.
    let with = spans(&base, "with-content", 5).await;
    let names: Vec<&str> = with.iter().filter_map(|s| s["name"].as_str()).collect();
    let root = named(&with, "invoke_agent agent");
    assert_eq!(root.len(), 1, "{names:?}");
    assert_eq!(root[0]["span_kind"], "AGENT", "{}", root[0]);
    let chats = named(&with, "chat trace-model");
    assert_eq!(chats.len(), 2, "{names:?}");
    // Phoenix read the GenAI conventions into its own (OpenInference)
    // attributes, the ones its pages show.
    assert_eq!(
        root[0]["attributes"]["llm.token_count.prompt"], 200,
        "{}",
        root[0]
    );
    for chat in &chats {
        let attributes = &chat["attributes"];
        assert_eq!(chat["span_kind"], "LLM", "{chat}");
        assert_eq!(attributes["llm.model_name"], "trace-model", "{chat}");
        assert_eq!(
            (
                &attributes["llm.token_count.prompt"],
                &attributes["llm.token_count.completion"]
            ),
            (&json!(100), &json!(10)),
            "{chat}"
        );
    }
    let tool = named(&with, "execute_tool test__echo");
    assert_eq!(tool.len(), 1, "{names:?}");
    assert_eq!(tool[0]["span_kind"], "TOOL", "{}", tool[0]);
    assert_eq!(tool[0]["attributes"]["tool.name"], "test__echo", "{}", tool[0]);
    assert_eq!(named(&with, "tools/call echo").len(), 1, "{names:?}");
    // The conversation, as Phoenix shows it: the prompt and the answer of
    // the model calls, the tool call's result.
    let asked = |c: &&&Value| c["attributes"]["llm.input_messages.1.message.content"] == PROMPT;
    assert_eq!(chats.iter().filter(asked).count(), 2, "{chats:?}");
    let answered =
        |c: &&&Value| c["attributes"]["llm.output_messages.0.message.content"] == "The echo says heliotrope.";
    assert_eq!(chats.iter().filter(answered).count(), 1, "{chats:?}");
    assert_eq!(tool[0]["attributes"]["output.value"], "heliotrope", "{}", tool[0]);

    // Without --otel-content: the same tree, no word of the conversation.
    let without = spans(&base, "without-content", 5).await;
    assert_eq!(named(&without, "chat trace-model").len(), 2);
    for span in &without {
        let attributes = span["attributes"].to_string();
        assert!(
            !attributes.contains("heliotrope"),
            "the conversation leaked into {}: {attributes}",
            span["name"]
        );
    }
    server.kill().await.unwrap();
}
