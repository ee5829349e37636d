//! The command on a real terminal: a pseudo-terminal is the agent's
//! controlling terminal and its stderr, as in an interactive shell.
//! `--approve ask` asks there (`y` once, `a` for the session, `n` denies),
//! and tool activity shows there: a spinner line while a call runs, then
//! one line per call with its duration and status. The answer goes to
//! stdout (a pipe here), untouched by either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::pty::QUESTION_END;
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_ask_and_tool_activity_on_a_terminal() {
    let server = ModelServer::start(vec![
        tool_call("test__echo", json!({"text": "one"})).into(),
        tool_call("test__echo", json!({"text": "two"})).into(),
        tool_call("test__echo", json!({"text": "three"})).into(),
        tool_call("test__slow", json!({"ms": 600})).into(),
        tool_call("test__add", json!({"a": 1, "b": 2})).into(),
        answer("Done.").into(),
    ])
    .await;
    // echo one: yes; echo two: always; echo three: not asked; slow: yes; add: no.
    let (status, stdout, terminal) =
        on_a_terminal(&server, &["--approve", "ask", "go"], vec!["y", "a", "y", "n"]).await;
    assert_eq!(status, Some(0), "{terminal}");
    assert_eq!(stdout, "Done.\n", "{terminal}");
    // Four questions: `a` spared the third echo one.
    assert_eq!(terminal.matches(QUESTION_END).count(), 4, "{terminal}");
    assert!(
        terminal.contains("allow test__echo {\"text\":\"one\"}?"),
        "{terminal}"
    );
    // A line per call, with its duration and status.
    assert_eq!(terminal.matches("✓ test__echo ").count(), 3, "{terminal}");
    assert!(terminal.contains("✓ test__slow "), "{terminal}");
    assert!(terminal.contains("✗ test__add "), "{terminal}");
    // The spinner showed the slow call while it ran.
    assert!(terminal.contains("test__slow 0."), "no spinner line: {terminal}");
    let slow_line = terminal.lines().find(|l| l.contains("✓ test__slow ")).unwrap();
    let ms: u64 = slow_line
        .split("✓ test__slow ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {slow_line:?}"));
    assert!(ms >= 600, "{slow_line}");
}

/// Run `loopwright --config CONFIG --model local/test ARGS...` on a
/// pseudo-terminal, answering its questions with `answers`; the exit
/// status, stdout and what the terminal showed.
async fn on_a_terminal(
    server: &ModelServer,
    args: &[&str],
    answers: Vec<&'static str>,
) -> (Option<i32>, String, String) {
    on_a_terminal_with(server, args, answers, false).await
}

/// [`on_a_terminal`], with stdout on the terminal too when `stdout_too`
/// (then what the answer printed is in the terminal's text).
async fn on_a_terminal_with(
    server: &ModelServer,
    args: &[&str],
    answers: Vec<&'static str>,
    stdout_too: bool,
) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), server, json!({}));
    let mut all = vec!["--config", config.to_str().unwrap(), "--model", "local/test"];
    all.extend_from_slice(args);
    common::pty::on_a_terminal_with(&all, dir.path(), answers, stdout_too).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_with_approve_ask_shows_the_plan_on_the_terminal_and_takes_y_or_n() {
    let plan = answer(
        &json!({"steps": [
            {"description": "Add 1 and 2", "tool": "test__add", "risk": "low"},
            {"description": "Say the sum", "risk": "low"}
        ], "warnings": []})
        .to_string(),
    );
    // y to the plan, y to the call: it runs.
    let server = ModelServer::start(vec![
        plan.clone().into(),
        tool_call("test__add", json!({"a": 1, "b": 2})).into(),
        answer("3").into(),
    ])
    .await;
    let (status, stdout, terminal) =
        on_a_terminal(&server, &["--plan", "--approve", "ask", "go"], vec!["y", "y"]).await;
    assert_eq!(status, Some(0), "{terminal}");
    assert_eq!(stdout, "3\n", "{terminal}");
    assert!(
        terminal.contains("The agent proposes this plan:\r\n1. Add 1 and 2 (tool: test__add, risk: low)\r\n2. Say the sum (risk: low)"),
        "{terminal}"
    );
    assert!(terminal.contains("Go ahead? [y]es / [N]o: "), "{terminal}");
    assert_eq!(server.bodies().len(), 3);

    // n to the plan: one model call, no question about a tool, status 7.
    let server = ModelServer::start(vec![
        plan.into(),
        tool_call("test__add", json!({"a": 1, "b": 2})).into(),
    ])
    .await;
    let (status, stdout, terminal) =
        on_a_terminal(&server, &["--plan", "--approve", "ask", "go"], vec!["n"]).await;
    assert_eq!(status, Some(7), "{terminal}");
    assert_eq!(stdout, "");
    assert_eq!(terminal.matches(QUESTION_END).count(), 1, "{terminal}");
    assert!(
        terminal.contains("the plan was rejected: the user said no"),
        "{terminal}"
    );
    assert_eq!(server.bodies().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_model_writes_cannot_drive_the_terminal() {
    // A tool name that would clear the screen and forge a line, then an
    // answer that would retitle the window and reverse the text after it.
    let forged = "x\u{1b}[2J\u{1b}[H\n\u{2713} Read README.md";
    let server = ModelServer::start(vec![
        tool_call(forged, json!({})).into(),
        answer("Done \u{1b}]0;pwned\u{7} and \u{202e}evil\u{202c}.").into(),
    ])
    .await;
    let (status, _, terminal) = on_a_terminal_with(&server, &["--no-mcp", "go"], vec![], true).await;
    assert_eq!(status, Some(0), "{terminal}");
    for raw in [
        "\u{1b}[2J",
        "\u{1b}[H",
        "\u{1b}]0;",
        "\u{7}",
        "\u{202e}",
        "\n\u{2713} Read README.md",
    ] {
        assert!(
            !terminal.contains(raw),
            "{raw:?} reached the terminal: {terminal:?}"
        );
    }
    // Shown instead, escaped: the tool's line and the answer.
    assert!(
        terminal.contains("\\x1b[2J\\x1b[H\\x0a\u{2713} Read README.md"),
        "{terminal:?}"
    );
    assert!(
        terminal.contains("Done \\x1b]0;pwned\\x07 and \\u{202e}evil\\u{202c}."),
        "{terminal:?}"
    );
}
