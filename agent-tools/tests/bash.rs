//! The Bash tool with real processes: exit codes, cwd, caps, timeouts,
//! cancellation and dropping all leave no process behind.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Tools, call, err, ok};
use loopwright_core::{CancellationToken, Tool, ToolContext, ToolError};
use loopwright_tools::{BASH_HEAD_BYTES, BASH_TAIL_BYTES};
use serde_json::json;

/// Generous bound used only to detect a hang, never to measure speed.
const HANG: Duration = Duration::from_secs(60);

/// Whether a process is gone (no /proc entry, or a zombie: it has exited
/// and only waits to be reaped by init).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Wait (bounded) until the process is gone; false if it never went.
async fn wait_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if is_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Wait (bounded) for a pid file written by the command.
async fn read_pid(path: &Path) -> u32 {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no pid in {}", path.display());
}

#[tokio::test]
async fn reports_exit_code_stdout_and_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let text = ok(&t.bash, json!({"command": "echo out; echo err >&2"})).await;
    assert_eq!(text, "exit code: 0\nstdout:\nout\n\nstderr:\nerr\n");
    let text = err(&t.bash, json!({"command": "echo failing; exit 3"})).await;
    assert!(text.starts_with("exit code: 3\n"), "{text}");
    assert!(text.contains("failing"));
    let text = err(&t.bash, json!({"command": "kill -9 $$"})).await;
    assert!(text.starts_with("terminated by signal: 9"), "{text}");
}

#[tokio::test]
async fn runs_in_the_root_or_the_given_cwd() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("sub/dir")).unwrap();
    let t = Tools::limited(tmp.path());
    let root = t.ws.root().display().to_string();
    let text = ok(&t.bash, json!({"command": "pwd -P"})).await;
    assert!(text.contains(&format!("stdout:\n{root}\n")), "{text}");
    let text = ok(&t.bash, json!({"command": "pwd -P", "cwd": "sub/dir"})).await;
    assert!(text.contains(&format!("stdout:\n{root}/sub/dir\n")), "{text}");
    let msg = err(&t.bash, json!({"command": "pwd", "cwd": ".."})).await;
    assert!(msg.contains("outside the workspace root"), "{msg}");
    let msg = err(&t.bash, json!({"command": "pwd", "cwd": "missing"})).await;
    assert!(msg.contains("not a directory"), "{msg}");
}

#[tokio::test]
async fn long_output_keeps_head_and_tail_with_the_cut_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let text = ok(&t.bash, json!({"command": "seq 1 200000; seq 1 50000 >&2"})).await;
    let (stdout, stderr) = text.split_once("\nstderr:\n").unwrap();
    assert!(
        stdout.starts_with("exit code: 0\nstdout:\n1\n2\n3\n"),
        "{}",
        &stdout[..50]
    );
    assert!(stdout.ends_with("199999\n200000\n"));
    assert!(stdout.contains("bytes omitted ...]"));
    assert!(stderr.ends_with("49999\n50000\n"));
    assert!(stderr.contains("bytes omitted ...]"));
    let cap = BASH_HEAD_BYTES + BASH_TAIL_BYTES + 100;
    assert!(
        stdout.len() < cap && stderr.len() < cap,
        "{} {}",
        stdout.len(),
        stderr.len()
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let command = "echo $$ > shell.pid; sleep 100 & echo $! > bg.pid; sleep 100";
    let out = tokio::time::timeout(
        HANG,
        call(&t.bash, json!({"command": command, "timeout_ms": 500})),
    )
    .await
    .expect("the call hung")
    .unwrap();
    assert!(out.is_error);
    assert!(
        out.as_text().starts_with("timed out after 500 ms"),
        "{}",
        out.as_text()
    );
    let shell = read_pid(&tmp.path().join("shell.pid")).await;
    let background = read_pid(&tmp.path().join("bg.pid")).await;
    assert!(wait_gone(shell).await, "shell {shell} still running");
    assert!(
        wait_gone(background).await,
        "background sleep {background} still running"
    );
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let command = "sleep 100 & echo $! > bg.pid; echo started";
    let out = tokio::time::timeout(HANG, call(&t.bash, json!({"command": command})))
        .await
        .expect("the call waited for the background process")
        .unwrap();
    assert!(
        out.as_text().starts_with("exit code: 0\nstdout:\nstarted\n"),
        "{}",
        out.as_text()
    );
    let background = read_pid(&tmp.path().join("bg.pid")).await;
    assert!(
        wait_gone(background).await,
        "background sleep {background} still running"
    );
}

#[tokio::test]
async fn cancellation_kills_the_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let token = CancellationToken::new();
    let ctx = ToolContext::new("c").with_cancellation(token.clone());
    let input = json!({"command": "sleep 100 & echo $! > bg.pid; sleep 100"});
    let pid_file = tmp.path().join("bg.pid");
    let canceller = async {
        let pid = read_pid(&pid_file).await;
        token.cancel();
        pid
    };
    let (result, background) =
        tokio::time::timeout(HANG, async { tokio::join!(t.bash.call(input, ctx), canceller) })
            .await
            .expect("cancellation was not honoured");
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(
        wait_gone(background).await,
        "background sleep {background} still running"
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let pid_file = tmp.path().join("bg.pid");
    let input = json!({"command": "sleep 100 & echo $! > bg.pid; sleep 100"});
    let mut call = Box::pin(t.bash.call(input, ToolContext::new("c")));
    // Drive the call until the background process exists, then drop it.
    let background = tokio::select! {
        _ = &mut call => panic!("the command ended on its own"),
        pid = read_pid(&pid_file) => pid,
    };
    drop(call);
    assert!(
        wait_gone(background).await,
        "background sleep {background} still running"
    );
}

#[tokio::test]
async fn timeout_is_capped_and_has_a_default() {
    assert_eq!(loopwright_tools::DEFAULT_BASH_TIMEOUT, Duration::from_secs(120));
    assert_eq!(loopwright_tools::MAX_BASH_TIMEOUT, Duration::from_secs(600));
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    // An over-large timeout is clamped, not rejected.
    let text = ok(&t.bash, json!({"command": "echo fine", "timeout_ms": 10_000_000})).await;
    assert!(text.contains("fine"));
}

#[tokio::test]
async fn stdin_is_empty_so_reading_programs_do_not_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let t = Tools::limited(tmp.path());
    let out = tokio::time::timeout(
        HANG,
        call(&t.bash, json!({"command": "cat; read x; echo \"got:[$x]\""})),
    )
    .await
    .expect("a program reading stdin hung")
    .unwrap();
    assert_eq!(out.as_text(), "exit code: 0\nstdout:\ngot:[]\n\nstderr:\n");
}
