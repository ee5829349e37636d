//! The command against careless input and runaway models, as real
//! processes: files that are not regular files (devices, FIFOs), skills
//! directories that do not exist, a run that ends with the context window
//! full (it says why), a model that calls tools without end under a
//! model-call budget, and a stream that never ends under a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::json;

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_are_not_regular_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let agent_file = dir.path().join("agent.md");
    std::fs::write(&agent_file, "---\noutput: /dev/zero\n---\nAnswer.").unwrap();
    let agent_file = agent_file.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--config", "/dev/zero", "hi"],
            "/dev/zero: not a regular file (a device)",
        ),
        (&["--config", fifo, "hi"], "not a regular file (a FIFO)"),
        (&["--no-mcp", "--system-file", fifo, "hi"], "--system-file"),
        (
            &["--no-mcp", "--agent", fifo, "hi"],
            "not a regular file (a FIFO)",
        ),
        (
            &["--no-mcp", "--output-schema", "/dev/zero", "hi"],
            "not a regular file (a device)",
        ),
        (&["--no-mcp", "--agent", agent_file, "hi"], "output"),
    ];
    let server = ModelServer::start(vec![answer("never asked").into()]).await;
    let config = write_config(dir.path(), &server, json!({}));
    let config = config.to_str().unwrap();
    for (args, needle) in cases {
        // A working model and configuration unless the case replaces it;
        // run_agent's hang guard fails the test if a read blocks.
        let mut all = vec!["--model", "local/test"];
        if args[0] != "--config" {
            all.extend(["--config", config]);
        }
        all.extend_from_slice(args);
        let out = run_agent(&all, &[], dir.path()).await;
        assert_exit(&out, 2, needle);
        let stderr = texts(&out).1;
        assert!(stderr.contains("not a regular file"), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_skills_directory_and_a_fifo_skill_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    std::fs::create_dir_all(skills.join("piped")).unwrap();
    mkfifo(&skills.join("piped/SKILL.md"));
    let missing = dir.path().join("no-such-skills");
    let out = run_agent(
        &[
            "--no-mcp",
            "--list-tools",
            "--skills",
            skills.to_str().unwrap(),
            "--skills",
            missing.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    )
    .await;
    let stderr = texts(&out).1;
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("skills directory {} does not exist", missing.display())),
        "{stderr}"
    );
    assert!(stderr.contains("piped/SKILL.md"), "{stderr}");
    assert!(stderr.contains("not a regular file (a FIFO)"), "{stderr}");
    assert!(!stderr.contains("must be named SKILL.md"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_context_window_says_why_it_stopped() {
    let server = ModelServer::start(vec![answer("never sent").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &server,
        json!({"providers": {"local": {"type": "openai-compatible", "baseUrl": server.base_url(),
            "models": {"test": {"contextWindow": 200}}}}}),
    );
    let prompt = "word ".repeat(400);
    let out = run_local(&config, &["--no-mcp", &prompt], &[], dir.path()).await;
    assert_exit(&out, 4, "no longer fits the model's context window");
    assert!(server.bodies().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_calls_tools_without_end_stops_at_the_model_call_budget() {
    // The last reply repeats: the model would call the tool for ever.
    let server = ModelServer::start(vec![tool_call("test__echo", json!({"text": "again"})).into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(&config, &["--max-model-calls", "3", "go"], &[], dir.path()).await;
    assert_exit(&out, 8, "the run tree's budget of 3 model calls is used up");
    assert_eq!(server.bodies().len(), 3);
    // The same from the configuration.
    let config = write_config(dir.path(), &server, json!({"defaults": {"maxModelCalls": 2}}));
    let out = run_local(&config, &["go"], &[], dir.path()).await;
    assert_exit(&out, 8, "budget of 2 model calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_never_ends_is_cancelled_at_the_deadline() {
    // One text delta, then an open response that never finishes.
    let delta = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "test",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "still going"}, "finish_reason": null}]});
    let server = ModelServer::start(vec![Reply::stalled(&format!("data: {delta}\n\n"))]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(
        &config,
        &["--no-mcp", "--timeout", "500ms", "go"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 124, "the run's deadline of 500ms passed");
}
