//! The command against careless input and runaway models, as real
//! processes: files that are not regular files (devices, FIFOs: the
//! configuration, agent files, prompts, schemas, `--file` attachments,
//! `--replay` cassettes, eval datasets), skills
//! directories that do not exist, a run that ends with the context window
//! full (it says why), a model that calls tools without end under a
//! model-call budget, and a stream that never ends under a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use serde_json::json;

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// [`run_agent`] under a 4 GiB address-space limit (`ulimit -v`): a
/// regression that reads `/dev/zero` fails at once instead of taking the
/// machine's memory. A guard only: the assertions are on what it says.
async fn run_capped(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(agent_bin())
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .env("HF_ENDPOINT", "http://127.0.0.1:9") // never the real Hub
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("agent hung")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_cassettes_and_datasets_refuse_devices_fifos_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let fifo = at("pipe");
    mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    // Cassettes: model.jsonl a FIFO, a link to /dev/zero; a tool file a FIFO.
    std::fs::create_dir_all(at("fifo-cassette")).unwrap();
    mkfifo(&at("fifo-cassette/model.jsonl"));
    std::fs::create_dir_all(at("zero-cassette")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", at("zero-cassette/model.jsonl")).unwrap();
    std::fs::create_dir_all(at("tool-cassette/tools")).unwrap();
    mkfifo(&at("tool-cassette/tools/time.jsonl"));
    // Sparse files just over the limits (nothing is read from them).
    let big = |name: &str, len: u64| {
        std::fs::File::create(at(name)).unwrap().set_len(len).unwrap();
        at(name).to_str().unwrap().to_owned()
    };
    let big_file = big("big.pdf", 20 * 1024 * 1024 + 1);
    let big_dataset = big("big.yaml", 16 * 1024 * 1024 + 1);
    let server = ModelServer::start(vec![answer("never asked").into()]).await;
    let config = write_config(dir.path(), &server, json!({}));
    let config = config.to_str().unwrap();
    let cassette = |name: &str| at(name).to_str().unwrap().to_owned();
    let (fifo_cassette, zero_cassette, tool_cassette) = (
        cassette("fifo-cassette"),
        cassette("zero-cassette"),
        cassette("tool-cassette"),
    );
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--file", "/dev/zero", "hi"],
            "--file /dev/zero: not a regular file (a device)".into(),
        ),
        (
            vec!["--file", fifo, "hi"],
            format!("--file {fifo}: not a regular file (a FIFO)"),
        ),
        (
            vec!["--file", &big_file, "hi"],
            format!("--file {big_file}: larger than 20 MiB"),
        ),
        (
            vec!["--replay", &fifo_cassette, "hi"],
            format!("{fifo_cassette}/model.jsonl: not a regular file (a FIFO)"),
        ),
        (
            vec!["--replay", &zero_cassette, "hi"],
            format!("{zero_cassette}/model.jsonl: not a regular file (a device)"),
        ),
        (
            vec!["--replay", &tool_cassette, "hi"],
            format!("{tool_cassette}/tools/time.jsonl: not a regular file (a FIFO)"),
        ),
        (
            vec!["eval", "/dev/zero"],
            "dataset /dev/zero: not a regular file (a device)".into(),
        ),
        (
            vec!["eval", fifo],
            format!("dataset {fifo}: not a regular file (a FIFO)"),
        ),
        (
            vec!["eval", &big_dataset],
            format!("dataset {big_dataset}: larger than 16 MiB"),
        ),
    ];
    for (args, needle) in cases {
        let mut all = args.clone();
        all.extend(["--no-mcp", "--config", config, "--model", "local/test"]);
        if all[0] != "eval" {
            // The prompt last.
            let prompt = all.remove(args.len() - 1);
            all.push(prompt);
        }
        let out = run_capped(&all, dir.path()).await;
        assert_exit(&out, 2, &needle);
    }
    assert!(server.bodies().is_empty(), "a model was asked");
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
    let server = ModelServer::start(vec![Reply::sse(format!("data: {delta}\n\n")).stalled()]).await;
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

/// Permission bits of `path`.
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A home with `~/.config/loopwright/mcp-tokens.json` holding a sign-in for
/// the configured server `remote`, every directory 0755; the home, its
/// configuration file, the token file.
fn home_with_a_sign_in() -> (tempfile::TempDir, String, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let own = home.path().join(".config/loopwright");
    std::fs::create_dir_all(&own).unwrap();
    for dir in [home.path(), &home.path().join(".config"), &own] {
        set_mode(dir, 0o755);
    }
    let url = "http://127.0.0.1:9/mcp";
    let tokens = own.join("mcp-tokens.json");
    let entry = json!({"client_id": "c", "token_response": null, "granted_scopes": [], "token_received_at": null, "issuer": null});
    std::fs::write(&tokens, json!({ url: entry }).to_string()).unwrap();
    set_mode(&tokens, 0o600);
    let config = home.path().join("agent.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"remote": {"url": url}}}).to_string(),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_owned();
    (home, config, tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_files_own_directory_is_made_private_and_nothing_above_it() {
    let (home, config, tokens) = home_with_a_sign_in();
    let out = run_agent(
        &["mcp", "logout", "remote", "--config", &config],
        &[],
        home.path(),
    )
    .await;
    assert_exit(&out, 0, "Signed out of remote");
    assert_eq!(mode(tokens.parent().unwrap()), 0o700);
    assert_eq!(mode(&tokens), 0o600);
    assert_eq!(mode(&home.path().join(".config")), 0o755);
    assert_eq!(mode(home.path()), 0o755);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_others_can_read_is_tightened_with_a_warning() {
    let (home, config, tokens) = home_with_a_sign_in();
    set_mode(&tokens, 0o644);
    let out = run_agent(&["mcp", "status", "--config", &config], &[], home.path()).await;
    let stderr = texts(&out).1;
    assert!(
        stderr.contains(&format!(
            "the token file {} had mode 0644 (others could read or write it): tightened to 0600",
            tokens.display()
        )),
        "{stderr}"
    );
    assert_eq!(mode(&tokens), 0o600);
}
