//! `loopwright eval DATASET --agent FILE`: an agent file with the in-repo MCP
//! server, run over a dataset with each kind of expectation against a local
//! model server that answers by prompt (the judge's rubric requests
//! included); the table, the JSON report, --min-pass, a recording replayed
//! offline, a bad dataset, and the progress bar on a terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

/// A Chat Completions server whose answer depends on the request's first
/// user message: the first route whose needle it contains, step N getting
/// the route's Nth reply (N = assistant messages so far; the last repeats).
struct PromptServer(ModelServer);

impl PromptServer {
    async fn start(routes: Vec<(&'static str, Vec<String>)>) -> Self {
        let server = ModelServer::builder()
            .respond(move |request| {
                let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
                let first_user = messages
                    .iter()
                    .find(|m| m["role"] == "user")
                    .map(|m| m["content"].to_string())
                    .unwrap_or_default();
                let step = messages.iter().filter(|m| m["role"] == "assistant").count();
                routes
                    .iter()
                    .find(|(needle, _)| first_user.contains(needle))
                    .map(|(_, replies)| replies[step.min(replies.len() - 1)].clone().into())
                    .unwrap_or_else(|| Reply::status(404, &format!("no route for {first_user}")))
            })
            .start()
            .await;
        Self(server)
    }

    fn requests(&self) -> usize {
        self.0.bodies().len()
    }
}

const AGENT: &str = "---
description: Echoes with the test server.
model: local/test
mcp: [test]
maxSteps: 4
---
You echo ${WORD} when asked, and answer briefly.
";

const DATASET: &str = r#"
judge: local/judge
cases:
  - name: echo
    prompt: "Echo ${WORD}"
    vars: {WORD: hello}
    expect:
      - tool_called: echo
        with: {text: hello}
      - tool_not_called: test__crash
      - contains: hello
      - regex: "^Echoed \\w+\\.$"
      - max_steps: 2
      - rubric: Says it echoed the word hello.
  - name: city
    prompt: Which city, as JSON?
    expect:
      - exact: '{"city": "Paris"}'
      - schema: {type: object, required: [city], properties: {city: {type: string}}}
  - name: refuse
    prompt: Say no.
    expect:
      - contains: "no"
      - rubric: Refuses politely.
"#;

/// The model's answers: the judge's first (its prompt quotes the agent's).
async fn server() -> PromptServer {
    let verdict =
        |pass: bool, reason: &str| tool_call("final_answer", json!({"pass": pass, "reason": reason}));
    PromptServer::start(vec![
        (
            "echoed the word hello",
            vec![verdict(true, "It says it echoed hello.")],
        ),
        (
            "Refuses politely",
            vec![verdict(false, "It says yes instead of refusing.")],
        ),
        (
            "Echo hello",
            vec![
                tool_call("test__echo", json!({"text": "hello"})),
                answer("Echoed hello."),
            ],
        ),
        ("Which city", vec![answer(r#"{"city": "Paris"}"#)]),
        ("Say no", vec![answer("Yes!")]),
    ])
    .await
}

/// The configuration (the `local` provider at `base_url`, the MCP test
/// server or a command that does not exist), the agent file and the
/// dataset, in `dir`.
fn files(dir: &Path, base_url: &str, mcp_command: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let config = json!({
        "providers": {"local": {"type": "openai-compatible", "baseUrl": base_url}},
        "mcpServers": {"test": {"command": mcp_command}}
    });
    let paths = (
        dir.join("agent.json"),
        dir.join("echo.md"),
        dir.join("cases.yaml"),
    );
    std::fs::write(&paths.0, config.to_string()).unwrap();
    std::fs::write(&paths.1, AGENT).unwrap();
    std::fs::write(&paths.2, DATASET).unwrap();
    paths
}

/// The model server, and a directory with the files using it and the
/// MCP test server.
async fn live() -> (PromptServer, tempfile::TempDir, PathBuf) {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.0.base_url();
    let (config, _, _) = files(dir.path(), &base_url, &mcp_test_server());
    (server, dir, config)
}

async fn eval(dir: &Path, config: &Path, extra: &[&str]) -> std::process::Output {
    run_agent(&eval_args(config, extra), &[], dir).await
}

/// `eval cases.yaml --agent echo.md --config CONFIG EXTRA...`.
fn eval_args<'a>(config: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "eval",
        "cases.yaml",
        "--agent",
        "echo.md",
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eval_scores_each_kind_of_expectation_with_a_judge_through_the_model_server() {
    let (server, dir, config) = live().await;
    let out = eval(
        dir.path(),
        &config,
        &["--json", "report.json", "--min-pass", "60%"],
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .take(4)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["case", "result", "passed", "steps"], "{stdout}");
    assert_eq!(rows[1], ["echo", "pass", "1/1", "2"], "{stdout}");
    assert_eq!(rows[2], ["city", "pass", "1/1", "1"], "{stdout}");
    assert_eq!(rows[3], ["refuse", "FAIL", "0/1", "1"], "{stdout}");
    assert!(
        stdout.contains(
            "refuse:\n  - contains \"no\": the answer does not contain \"no\": \"Yes!\"\n  - rubric \"Refuses politely.\": It says yes instead of refusing.\n"
        ),
        "{stdout}"
    );
    assert!(stdout.ends_with("2/3 runs passed (67%)\n"), "{stdout}");

    // The JSON report: per run the events and every verdict with its reason.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    let echo = &report["cases"][0]["runs"][0];
    let kinds: Vec<&str> = echo["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"tool_call") && kinds.last() == Some(&"finished"),
        "{kinds:?}"
    );
    assert_eq!(echo["expectations"].as_array().unwrap().len(), 6);
    assert_eq!(echo["expectations"][5]["reason"], "It says it echoed hello.");
    assert_eq!(report["cases"][2]["runs"][0]["expectations"][1]["passed"], false);
    assert_eq!(report["runs"], 3);
    // Six agent calls and two judge calls.
    assert_eq!(server.requests(), 6);

    // Below --min-pass: exit status 1, and stderr says so.
    let out = eval(dir.path(), &config, &["--min-pass", "0.9"]).await;
    assert_exit(&out, 1, "pass rate 67% is below --min-pass 90%");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eval_recorded_once_replays_offline_with_repeats() {
    let (server, dir, config) = live().await;
    let recorded = eval(
        dir.path(),
        &config,
        &["--record", "cassette", "--repeat", "2", "--min-pass", "0"],
    )
    .await;
    assert_eq!(recorded.status.code(), Some(0), "{}", texts(&recorded).1);
    let calls = server.requests();
    assert_eq!(calls, 12);

    let offline = tempfile::tempdir().unwrap();
    let (config, _, _) = files(
        offline.path(),
        "http://127.0.0.1:9/v1",
        Path::new("/nonexistent/server"),
    );
    let cassette = dir.path().join("cassette");
    let replayed = eval(
        offline.path(),
        &config,
        &[
            "--replay",
            cassette.to_str().unwrap(),
            "--repeat",
            "2",
            "--min-pass",
            "0",
        ],
    )
    .await;
    let (stdout, stderr) = texts(&replayed);
    assert_eq!(replayed.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, texts(&recorded).0);
    assert!(stdout.contains("refuse  FAIL"), "{stdout}");
    assert!(
        stdout.contains("0.00 ± 0.00"),
        "mean score and spread with --repeat: {stdout}"
    );
    assert_eq!(server.requests(), calls, "nothing went to the model server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_dataset_or_a_missing_judge_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _, dataset) = files(dir.path(), "http://127.0.0.1:9/v1", Path::new("/nonexistent"));
    std::fs::write(
        &dataset,
        "cases:\n  - prompt: hi\n    expect:\n      - contain: x\n",
    )
    .unwrap();
    let out = eval(dir.path(), &config, &[]).await;
    assert_exit(
        &out,
        2,
        "cases.yaml:4: cases[0].expect[0]: an expectation is one of: exact, contains",
    );

    std::fs::write(
        &dataset,
        "cases:\n  - prompt: hi\n    expect:\n      - rubric: Polite.\n",
    )
    .unwrap();
    let out = eval(dir.path(), &config, &[]).await;
    assert_exit(
        &out,
        2,
        "rubric expectations need a judge model: --judge-model provider/model",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_bar_shows_on_a_terminal_and_the_table_on_stdout() {
    // The server lives to the end of the test.
    let (_server, dir, config) = live().await;
    let args = eval_args(&config, &["--min-pass", "0"]);
    let (status, stdout, terminal) = common::pty::on_a_terminal(&args, dir.path(), vec![]).await;
    assert_eq!(status, Some(0), "{terminal}");
    assert!(terminal.contains("0/3 runs, 0 passed, 0 failed"), "{terminal}");
    assert!(
        terminal.contains("██████████████████████████████ 3/3 runs, 2 passed, 1 failed"),
        "{terminal}"
    );
    assert!(
        !terminal.contains("runs passed ("),
        "the table is not on the terminal: {terminal}"
    );
    assert!(stdout.ends_with("2/3 runs passed (67%)\n"), "{stdout}");
}
