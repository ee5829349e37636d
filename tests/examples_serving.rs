//! Runs the serving examples as real processes against a local
//! Ollama-protocol model server: `serve` answers an OpenAI client and stops
//! on signals; `pause_resume` survives a SIGKILL; `background_approval`
//! decides a call over HTTP; `durable_run` survives a replica restart on a
//! real Restate server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;

use common::examples::*;
use serde_json::{Value, json};

/// Start the serve example against `server`; the child and the OpenAI
/// surface's base URL.
async fn start_serve_example(server: &ModelServer) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(built("examples/serve"))
        .arg("0")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OLLAMA_HOST", format!("http://{}", server.addr))
        .env("LOOPWRIGHT_MODEL", "ollama/test")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the examples are built by `cargo test`");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let base = tokio::time::timeout(HANG_GUARD, async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the example ended");
            if let Some(url) = line.strip_prefix("openai on ") {
                return url.to_owned();
            }
        }
    })
    .await
    .unwrap();
    // Keep reading, so the example never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

/// Send `signal` to `child`: it stops cleanly (exit 0, not killed by it).
async fn stops_cleanly_on(mut child: tokio::process::Child, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{signal}: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_example_answers_an_openai_client_and_stops_on_ctrl_c_and_sigterm() {
    let server = ModelServer::start(vec![
        call("word_count", json!({"text": "to be or not to be"})),
        answer("Six words."),
    ])
    .await;
    let (child, base) = start_serve_example(&server).await;
    let answer: Value = loopwright::providers::default_client()
        .post(format!("{base}/chat/completions"))
        .json(&json!({"model": "counter", "messages": [{"role": "user", "content": "Count: to be or not to be"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], "Six words.",
        "{answer}"
    );
    // The agent's tool ran: its result went back to the model.
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies[1]["messages"].to_string().contains("\"6\""),
        "{}",
        bodies[1]["messages"]
    );
    stops_cleanly_on(child, nix::sys::signal::Signal::SIGINT).await;
    // As a service manager stops it.
    let (child, _) = start_serve_example(&server).await;
    stops_cleanly_on(child, nix::sys::signal::Signal::SIGTERM).await;
}

/// agent-serve/README.md's Python client (the official `openai` package,
/// pinned in tests-deps/python/clients), pointed at the serve example's
/// agent, prints its streamed answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_openai_client_talks_to_the_serve_example() {
    let readme = include_str!("../agent-serve/README.md");
    let after = &readme[readme.find("## Serving agents").unwrap()..];
    let code = after
        .split("```python")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let (base, agent) = ("http://127.0.0.1:4000/v1", "model=\"coordinator\"");
    assert!(code.contains(base) && code.contains(agent), "{code}");
    let server = ModelServer::start(vec![answer("Issue 42 is fixed.")]).await;
    let (child, url) = start_serve_example(&server).await;
    let code = code.replace(base, &url).replace(agent, "model=\"counter\"");
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests-deps/python/clients/.venv/bin/python");
    let out = tokio::time::timeout(
        HANG_GUARD,
        tokio::process::Command::new(&python)
            .args(["-c", &code])
            .env("SERVE_KEY", "any key: the example asks for none")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the README client hung")
    .unwrap_or_else(|e| panic!("{}: {e} (scripts/test.sh installs it)", python.display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "Issue 42 is fixed.");
    stops_cleanly_on(child, nix::sys::signal::Signal::SIGTERM).await;
}

/// The pause_resume example: a run paused and stored by one process, which
/// is then SIGKILLed; another process resumes it from the store, and the
/// approved call runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_survives_a_sigkill_and_another_process_resumes_it_once() {
    use tokio::io::AsyncBufReadExt;
    let server = ModelServer::start(vec![
        call("append_note", json!({"text": "the build is green"})),
        answer("Noted."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("runs.db").display());
    let mut pausing = server
        .example("pause_resume", &["pause", "Note that the build is green"])
        .env("LOOPWRIGHT_STORE", &store)
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(pausing.stdout.take().unwrap()).lines();
    let paused = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .expect("the pausing process printed its run");
    let words: Vec<&str> = paused.split_whitespace().collect();
    assert_eq!(
        (words[0], words[2], words[4]),
        ("paused", "call", "append_note"),
        "{paused}"
    );
    let (run_id, call_id) = (words[1].to_owned(), words[3].to_owned());
    // Killed while the run waits for approval.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pausing.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = pausing.wait().await;
    let notes = dir.path().join("notes.txt");
    assert!(!notes.exists(), "nothing ran before the decision");
    let resume = |dir: &std::path::Path| {
        server
            .example("pause_resume", &["resume", &run_id, "--approve", &call_id])
            .env("LOOPWRIGHT_STORE", &store)
            .current_dir(dir)
            .output()
    };
    let out = tokio::time::timeout(HANG_GUARD, resume(dir.path()))
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "Noted.");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "the build is green\n");
    // A second resume finds it done: nothing runs twice.
    let out = tokio::time::timeout(HANG_GUARD, resume(dir.path()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not awaiting approval"));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "the build is green\n");
}

/// The first_hour example: a typed tool, an MCP server's tool (trusted),
/// the events streamed, a pause parked in a SQLite store and resumed from
/// it, and the typed answer; the tool that asked ran once, after the
/// approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_hour_example_pauses_parks_resumes_and_answers_typed() {
    let server = ModelServer::start(vec![
        call("demo__word_count", json!({"text": "the quick brown fox"})),
        call("save_note", json!({"text": "4 words"})),
        // Ollama is not asked for a schema alongside tools: the final-answer tool carries it.
        call("final_answer", json!({"words": 4, "note": "4 words"})),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("runs.db").display());
    let out = tokio::time::timeout(
        HANG_GUARD,
        server
            .example("first_hour", &[])
            .env("LOOPWRIGHT_STORE", &store)
            .current_dir(dir.path())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (report["words"].clone(), report["note"].clone()),
        (json!(4), json!("4 words"))
    );
    // The MCP tool ran without asking; the note asked, was parked, approved.
    assert!(stderr.contains("-> demo__word_count"), "{stderr}");
    assert!(
        stderr.contains("<- 4"),
        "the tool result's text is shown: {stderr}"
    );
    assert!(stderr.contains("asks to run save_note"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "4 words\n"
    );
    // The word count went back to the model; the run's end is in the store.
    let bodies = server.bodies();
    assert!(bodies[1]["messages"].to_string().contains('4'));
    let store = loopwright::store::open(&store).await.unwrap();
    let runs = store
        .list_runs(Some(loopwright::store::RunStatus::Completed), 10)
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
}

/// The background_approval example: a run started over REST pauses for
/// approval, the decision posted over HTTP continues it, and its whole
/// event stream is read back; denied, the tool never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_approval_example_decides_a_call_over_http() {
    for approve in [true, false] {
        let server = ModelServer::start(vec![
            call("append_note", json!({"text": "the build is green"})),
            answer("Done."),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["Note that the build is green"];
        if !approve {
            args.insert(0, "--deny");
        }
        let out = tokio::time::timeout(
            HANG_GUARD,
            server
                .example("background_approval", &args)
                .current_dir(dir.path())
                .output(),
        )
        .await
        .unwrap()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert_eq!(stdout.trim(), "Done.", "{stderr}");
        for said in [
            "/v1/agents/notes/runs",
            "status \"awaiting_approval\"",
            "\"append_note\" {\"text\":\"the build is green\"}",
            "/approvals -H 'content-type: application/json'",
            "status \"completed\"",
            "event 0: ",
            ": finished",
        ] {
            assert!(stderr.contains(said), "{said} missing: {stderr}");
        }
        let notes = dir.path().join("notes.txt");
        if approve {
            assert_eq!(std::fs::read_to_string(&notes).unwrap(), "the build is green\n");
        } else {
            assert!(!notes.exists(), "a denied call ran");
            assert!(stderr.contains("\"approve\":false"), "{stderr}");
        }
    }
}

/// The durable_run example, against a real Restate server: the replica
/// running the run stops while the tool works; the next replica, on the
/// same endpoint address, finishes the run without sending the completed
/// model call again, and the events show the second attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_durable_run_example_survives_a_replica_restart() {
    let restate = loopwright_test_support::RestateServer::start().unwrap();
    let server = ModelServer::start(vec![
        call("count_sheep", json!({"sheep": 3})),
        answer("I counted 3 sheep."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let store = format!("sqlite:{}", dir.path().join("runs.db").display());
    let (admin, ingress, listen) = (restate.admin_url(), restate.ingress_url(), listen.to_string());
    let out = server
        .start_example(
            "durable_run",
            &["Count three sheep"],
            b"",
            &[
                ("RESTATE_ADMIN_URL", &admin),
                ("RESTATE_INGRESS_URL", &ingress),
                ("RESTATE_LISTEN", &listen),
                ("LOOPWRIGHT_STORE", &store),
            ],
        )
        .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}\n{}", restate.log());
    assert_eq!(stdout.trim(), "I counted 3 sheep.", "{stderr}");
    for said in [
        "replica first: registered with Restate",
        "stopping replica first",
        "replica second is up",
        "status \"completed\" after 2 attempts",
        "resumed (attempt 2)",
        ": finished",
    ] {
        assert!(stderr.contains(said), "{said} missing: {stderr}");
    }
    // The model call that completed before the stop was not sent again.
    assert_eq!(server.bodies().len(), 2, "{stderr}");
}
