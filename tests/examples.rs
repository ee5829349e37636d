//! Runs the built examples as real processes against a local Ollama-protocol
//! HTTP server that plays the model: `coding_agent` reads a file and answers;
//! `approval` asks on stdin, remembers a session approval and obeys a denial.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

fn example_binary() -> PathBuf {
    example("coding_agent")
}

/// A built example: target/debug/deps/<this test> -> target/debug/examples/<name>.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples").join(name)
}

fn line(message: Value, done: bool) -> String {
    let mut l =
        json!({"model": "test", "created_at": "2026-01-01T00:00:00Z", "message": message, "done": done});
    if done {
        l["done_reason"] = json!("stop");
        l["prompt_eval_count"] = json!(20);
        l["eval_count"] = json!(5);
    }
    format!("{l}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coding_agent_example_reads_a_file_and_answers() {
    let calls = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let (c, b) = (calls.clone(), bodies.clone());
    let app = axum::Router::new().route(
        "/api/chat",
        axum::routing::post(move |body: axum::Json<Value>| {
            let (c, b) = (c.clone(), b.clone());
            async move {
                b.lock().unwrap().push(body.0);
                let text = if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    let call = json!({"role": "assistant", "content": "", "tool_calls": [
                        {"function": {"name": "Read", "arguments": {"file_path": "calc.py"}}}]});
                    line(call, false) + &line(json!({"role": "assistant", "content": ""}), true)
                } else {
                    line(
                        json!({"role": "assistant", "content": "sub() adds instead of subtracting."}),
                        false,
                    ) + &line(json!({"role": "assistant", "content": ""}), true)
                };
                ([("content-type", "application/x-ndjson")], text)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let child = tokio::process::Command::new(example_binary())
        .arg("Find the bug in calc.py")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OLLAMA_HOST", format!("http://{addr}"))
        .env("AGENT_MODEL", "ollama/test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example is built by `cargo test`");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("sub() adds instead of subtracting."), "{stdout}");
    assert!(stderr.contains("-> Read"), "{stderr}");
    assert!(stderr.contains("<- Read ok"), "{stderr}");
    // The second request carried the file's content back as the tool result.
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 2);
    let sent = bodies[1]["messages"].to_string();
    assert!(sent.contains("def sub(a, b):"), "{sent}");
    // The six coding tools were offered under their bare names.
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]);
}

#[test]
fn without_a_model_the_example_says_what_to_set() {
    let out = std::process::Command::new(example_binary())
        .arg("anything")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ANTHROPIC_API_KEY") && stderr.contains("AGENT_MODEL"),
        "{stderr}"
    );
}

/// A tool call line followed by the end of the step.
fn call(name: &str, arguments: Value) -> String {
    let message = json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]});
    line(message, false) + &line(json!({"role": "assistant", "content": ""}), true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_example_approves_for_the_session_and_denies() {
    let steps = vec![
        call("Write", json!({"file_path": "notes.txt", "content": "one"})),
        call("Write", json!({"file_path": "notes.txt", "content": "two"})),
        call("Bash", json!({"command": "touch bash_ran"})),
        call("Glob", json!({"pattern": "*"})),
        call("Read", json!({"file_path": "notes.txt"})),
        line(json!({"role": "assistant", "content": "All done."}), false)
            + &line(json!({"role": "assistant", "content": ""}), true),
    ];
    let steps = Arc::new(steps);
    let calls = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let (c, b, s) = (calls.clone(), bodies.clone(), steps.clone());
    let app = axum::Router::new().route(
        "/api/chat",
        axum::routing::post(move |body: axum::Json<Value>| {
            let (c, b, s) = (c.clone(), b.clone(), s.clone());
            async move {
                b.lock().unwrap().push(body.0);
                let i = c.fetch_add(1, Ordering::SeqCst).min(s.len() - 1);
                ([("content-type", "application/x-ndjson")], s[i].clone())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let mut child = tokio::process::Command::new(example("approval"))
        .arg("Take notes")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OLLAMA_HOST", format!("http://{addr}"))
        .env("AGENT_MODEL", "ollama/test")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // "a": the first Write for the session (the second is not asked); "n": no Bash.
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"a\nn\n").await.unwrap();
    }
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("All done."), "{stdout}");
    assert_eq!(stderr.matches("allow ").count(), 2, "{stderr}");
    assert!(
        stderr.contains("allow Write") && stderr.contains("allow Bash"),
        "{stderr}"
    );
    assert!(stderr.contains("denied: the user said no"), "{stderr}");
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 6);
    let last = bodies[5]["messages"].to_string();
    // Bash never ran (no bash_ran file in the Glob listing); the second Write did.
    assert!(last.contains("the user said no"), "{last}");
    assert_eq!(
        last.matches("bash_ran").count(),
        1,
        "only in the denied call itself: {last}"
    );
    assert!(last.contains("notes.txt"), "{last}");
    assert!(last.contains("two"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coding_agent_example_adds_configured_mcp_servers() {
    // The in-repo MCP test server, built with the workspace's tests.
    let server = example("..").join("mcp-test-server");
    assert!(
        server.exists(),
        "{} is built by `cargo test --workspace`",
        server.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let missing = dir.path().join("no-such-server");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "test": {"command": server},
            "broken": {"command": missing}
        }})
        .to_string(),
    )
    .unwrap();
    let steps = Arc::new(vec![
        call("test__echo", json!({"text": "ping from the model"})),
        line(
            json!({"role": "assistant", "content": "The server answered."}),
            false,
        ) + &line(json!({"role": "assistant", "content": ""}), true),
    ]);
    let calls = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let (c, b, s) = (calls.clone(), bodies.clone(), steps.clone());
    let app = axum::Router::new().route(
        "/api/chat",
        axum::routing::post(move |body: axum::Json<Value>| {
            let (c, b, s) = (c.clone(), b.clone(), s.clone());
            async move {
                b.lock().unwrap().push(body.0);
                let i = c.fetch_add(1, Ordering::SeqCst).min(s.len() - 1);
                ([("content-type", "application/x-ndjson")], s[i].clone())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let child = tokio::process::Command::new(example_binary())
        .args(["--mcp", config.to_str().unwrap(), "Check the server"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OLLAMA_HOST", format!("http://{addr}"))
        .env("AGENT_MODEL", "ollama/test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("The server answered."), "{stdout}");
    assert!(stderr.contains("MCP server broken not connected"), "{stderr}");
    let bodies = bodies.lock().unwrap();
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Read") && names.contains(&"test__echo"),
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
