//! A run paused on a question by one process and resumed by another, as
//! real processes on a store (SQLite, and PostgreSQL): `--approve defer`
//! stores the run and exits 9 naming it and its calls; `loopwright resume
//! RUN_ID --approve/--deny` continues it, the approved call runs exactly
//! once, a second resume is refused; `--session NAME` continues a stored
//! conversation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::json;

/// The run id a paused run's notice names.
fn run_id(stderr: &str) -> String {
    let at = stderr
        .find("paused: run ")
        .unwrap_or_else(|| panic!("no pause notice: {stderr}"));
    stderr[at + "paused: run ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// `CALL@DIGEST` of `call` as the pause notice's hint gives it.
fn bound(stderr: &str, call: &str) -> String {
    let at = stderr
        .find(&format!("--approve {call}@"))
        .unwrap_or_else(|| panic!("no digest for {call}: {stderr}"));
    stderr[at + "--approve ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// Lines the approved Bash call appended.
fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs.txt")).map_or(0, |t| t.lines().count())
}

/// A run of the coding tools whose Bash call waits, paused into `store`;
/// its id and the call's `call_Bash@DIGEST`.
async fn pause(server: &ModelServer, dir: &Path, store: &str) -> (String, String) {
    let config = write_config(dir, server, json!({}));
    let out = run_local(
        &config,
        &[
            "--no-mcp",
            "--coding-tools",
            "--approve",
            "defer",
            "--store",
            store,
            "Count a run",
        ],
        &[],
        dir,
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(9), "{stdout}\n{stderr}");
    assert!(stderr.contains("call_Bash Bash"), "{stderr}");
    assert!(stderr.contains("loopwright resume run_"), "{stderr}");
    assert_eq!(runs(dir), 0, "nothing ran before a decision");
    (run_id(&stderr), bound(&stderr, "call_Bash"))
}

async fn approve_and_deny_across_processes(store: &str) {
    let server = ModelServer::start(vec![
        tool_call("Bash", json!({"command": "echo ran >> runs.txt"})).into(),
        answer("Counted.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (id, call) = pause(&server, dir.path(), store).await;
    // Another process, elsewhere: the run is built again from its record.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = run_agent(
        &["resume", &id, "--approve", &call, "--store", store],
        &[],
        elsewhere.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "Counted.\n");
    assert_eq!(runs(dir.path()), 1);
    // The model got the call's result.
    assert!(server.bodies()[1]["messages"].to_string().contains("call_Bash"));
    // Resumed once: again is refused, and nothing runs.
    let out = run_agent(
        &["resume", &id, "--approve", &call, "--store", store],
        &[],
        elsewhere.path(),
    )
    .await;
    assert_exit(&out, 2, "not awaiting approval");
    assert_eq!(runs(dir.path()), 1);

    // Denied: the model is told why, and the tool never runs.
    let server = ModelServer::start(vec![
        tool_call("Bash", json!({"command": "echo ran >> runs.txt"})).into(),
        answer("Understood.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (id, call) = pause(&server, dir.path(), store).await;
    let out = run_agent(
        &[
            "resume",
            &id,
            "--deny",
            &format!("{call}=not on a Friday"),
            "--store",
            store,
        ],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(runs(dir.path()), 0);
    assert!(
        server.bodies()[1]["messages"]
            .to_string()
            .contains("not on a Friday")
    );
    // A decision for a call that is not pending, or none for one that is.
    let server = ModelServer::start(vec![
        tool_call("Bash", json!({"command": "echo ran >> runs.txt"})).into(),
        answer("x").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (id, _) = pause(&server, dir.path(), store).await;
    let out = run_agent(
        &[
            "resume",
            &id,
            "--approve",
            "call_Nope@0000000000000000",
            "--store",
            store,
        ],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "call call_Nope is not pending");
    let out = run_agent(&["resume", &id, "--store", store], &[], dir.path()).await;
    assert_exit(&out, 2, "waits for a decision on");
    assert_eq!(runs(dir.path()), 0);
}

/// Rewrite the stored record of run `id` with `edit` on its state.
async fn tamper(store: &str, id: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let store = loopwright::store::open(store).await.unwrap();
    let mut record = store.load_run(id).await.unwrap().unwrap();
    let version = record.version;
    edit(record.state.as_mut().unwrap());
    store.update_run(&record, version).await.unwrap();
}

/// Whoever can write the store must not choose what `resume` runs: a
/// decision binds to the digest its notice showed, which covers the call
/// and the command line the agent is rebuilt from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_changed_in_the_store_is_refused_and_shown() {
    let stores = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", stores.path().join("store.db").display());
    let server = ModelServer::start(vec![
        tool_call("Bash", json!({"command": "echo ran >> runs.txt"})).into(),
        answer("Counted.").into(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (id, call) = pause(&server, dir.path(), &store).await;
    // Without its digest, a decision is refused.
    let out = run_agent(
        &["resume", &id, "--approve", "call_Bash", "--store", &store],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "with the digest its pause notice showed");
    // The pending call's command changed: refused, the new one shown.
    tamper(&store, &id, |state| {
        let text = state
            .to_string()
            .replace("echo ran >> runs.txt", "echo pwned >> pwned.txt");
        *state = serde_json::from_str(&text).unwrap();
    })
    .await;
    let out = run_agent(
        &["resume", &id, "--approve", &call, "--store", &store],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "is not what its pause notice showed");
    assert!(texts(&out).1.contains("pwned"), "the call as stored now is shown");
    // Put back, but another configuration in the command line: refused.
    tamper(&store, &id, |state| {
        let text = state
            .to_string()
            .replace("echo pwned >> pwned.txt", "echo ran >> runs.txt");
        *state = serde_json::from_str(&text).unwrap();
        let argv = state["argv"].as_array_mut().unwrap();
        let at = argv.iter().position(|a| a == "--config").unwrap();
        argv[at + 1] = json!("/tmp/attacker.json");
    })
    .await;
    let out = run_agent(
        &["resume", &id, "--approve", &call, "--store", &store],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "is not what its pause notice showed");
    assert!(texts(&out).1.contains("/tmp/attacker.json"), "{}", texts(&out).1);
    assert_eq!(runs(dir.path()), 0);
    assert!(!dir.path().join("pwned.txt").exists());
    assert_eq!(server.bodies().len(), 1, "the model was not called again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_run_resumes_in_another_process_on_sqlite() {
    let stores = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", stores.path().join("store.db").display());
    approve_and_deny_across_processes(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_run_resumes_in_another_process_on_postgres() {
    let database = loopwright_test_support::database();
    approve_and_deny_across_processes(database.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_continues_a_stored_conversation() {
    let server = ModelServer::start(vec![answer("Hello, Ada.").into(), answer("You are Ada.").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, json!({"store": "sqlite:sessions.db"}));
    let out = run_local(
        &config,
        &["--no-mcp", "--session", "ada", "I am Ada."],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let out = run_local(
        &config,
        &["--no-mcp", "--session", "ada", "Who am I?"],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(texts(&out).0, "You are Ada.\n");
    let second = server.bodies()[1]["messages"].to_string();
    assert!(
        second.contains("I am Ada.") && second.contains("Hello, Ada."),
        "{second}"
    );
    // The store sits next to the configuration file.
    assert!(dir.path().join("sessions.db").exists());
}
