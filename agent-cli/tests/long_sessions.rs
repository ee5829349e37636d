//! Long sessions and big catalogs from the command line: a session that
//! used to stop at the window (exit 4) compacts and completes, and
//! `--no-compaction` stops it as before; a catalog of MCP servers above
//! the threshold is searched, `--no-tool-search` sends it whole;
//! `toolOverrides` rename and rewrite tools while the raw name goes to the
//! server; `--file` attaches documents, refused before sending where the
//! model cannot take them; `--events` carries `compacted` and
//! `tool_input_delta`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use loopwright_test_support::model_server::Received;
use serde_json::{Value, json};

/// The first words of the summarising call's instructions.
const SUMMARY_MARK: &str = "You compact the history";

/// A Chat Completions server playing `steps` in order, except that a
/// summarising call (told by its system prompt) gets a summary; every
/// request body is kept.
struct SessionServer(ModelServer);

impl SessionServer {
    async fn start(steps: Vec<String>) -> Self {
        let summarising = |r: &Received| {
            r.body["messages"][0]["content"]
                .as_str()
                .is_some_and(|s| s.starts_with(SUMMARY_MARK))
        };
        let server = ModelServer::builder()
            .when(summarising, answer("Pages were read; the work goes on.").into())
            .replies(steps.into_iter().map(Reply::from).collect())
            .start()
            .await;
        Self(server)
    }

    fn bodies(&self) -> Vec<Value> {
        self.0.bodies()
    }

    /// A config with the `local` provider (a window of `window` tokens)
    /// and `mcp` servers, plus `extra` keys.
    fn config(&self, dir: &std::path::Path, window: u64, mcp: Value, extra: Value) -> std::path::PathBuf {
        let mut config = json!({
            "providers": {"local": {"type": "openai-compatible", "baseUrl": self.0.base_url(),
                "models": {"test": {"contextWindow": window}}}},
            "mcpServers": mcp,
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let path = dir.join("agent.json");
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }
}

fn test_server() -> Value {
    json!({"command": mcp_test_server()})
}

/// Twelve steps reading a kilobyte each, then the answer.
fn reading_session() -> Vec<String> {
    let mut steps: Vec<String> = (0..12)
        .map(|_| tool_call("test__huge", json!({"kb": 1})))
        .collect();
    steps.push(answer("All read."));
    steps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_the_window_compacts_and_completes_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let server = SessionServer::start(reading_session()).await;
    let config = server.config(dir.path(), 3_000, json!({"test": test_server()}), json!({}));
    let stopped = run_local(
        &config,
        &["--no-compaction", "--max-steps", "20", "read"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&stopped, 4, "context window");

    let server = SessionServer::start(reading_session()).await;
    let config = server.config(dir.path(), 3_000, json!({"test": test_server()}), json!({}));
    let events = local_events(&config, &["--max-steps", "20", "read"], dir.path()).await;
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "finished");
    assert_eq!(finished["exit"], "completed", "{finished}");
    assert_eq!(finished["text"], "All read.");
    let compacted: Vec<&Value> = events.iter().filter(|e| e["type"] == "compacted").collect();
    assert!(!compacted.is_empty());
    assert!(
        compacted
            .iter()
            .all(|e| e["tokens_after"].as_u64() < e["tokens_before"].as_u64())
    );
    assert!(compacted.iter().any(|e| e["strategy"] == "clear_tool_results"));
    // The arguments streamed as tool_input_delta, before each call.
    let first_delta = events
        .iter()
        .position(|e| e["type"] == "tool_input_delta")
        .unwrap();
    let first_call = events.iter().position(|e| e["type"] == "tool_call").unwrap();
    assert!(first_delta < first_call);
    assert_eq!(events[first_delta]["delta"], "{\"kb\":1}");
    // The last request carried a summary of the older steps (their results
    // were cleared first), every call still answered.
    let bodies = server.bodies();
    let last = bodies
        .iter()
        .rev()
        .find(|b| !b.to_string().contains(SUMMARY_MARK))
        .unwrap();
    assert!(
        last.to_string().contains("[Summary of the earlier part"),
        "{last}"
    );
    assert!(compacted.iter().any(|e| e["strategy"] == "summarize"));
    let messages = last["messages"].as_array().unwrap();
    let calls = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .count();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(calls, results);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_catalog_is_searched_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    // The in-repo server under four names: 76 tools, above the threshold.
    let servers = json!({"a": test_server(), "b": test_server(), "c": test_server(), "d": test_server()});
    let server = SessionServer::start(vec![
        tool_call("search_tools", json!({"query": "add numbers"})),
        tool_call("a__add", json!({"a": 2, "b": 3})),
        answer("5"),
    ])
    .await;
    let config = server.config(dir.path(), 128_000, servers.clone(), json!({}));
    let out = run_local(&config, &["add 2 and 3"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let bodies = server.bodies();
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&bodies[0]), ["search_tools"]);
    let second = names(&bodies[1]);
    assert!(
        second.contains(&"a__add".to_owned()) && second.len() < 20,
        "{second:?}"
    );
    assert!(bodies[2].to_string().contains("5"));

    let server = SessionServer::start(vec![answer("fine")]).await;
    let config = server.config(dir.path(), 128_000, servers, json!({}));
    let out = run_local(&config, &["--no-tool-search", "hi"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(names(&server.bodies()[0]).len(), 4 * 19);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_overrides_rename_and_rewrite_while_the_raw_name_goes_to_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let overrides = json!({"echo": {"name": "say", "description": "[Test] {description}",
        "providerOptions": {"local": {"strict": true}}}, "crash": {"name": "boom"}});
    let server_config = json!({"command": mcp_test_server(), "env": {"TEST_SERVER_LOG": log},
        "toolOverrides": overrides});
    let server = SessionServer::start(vec![
        tool_call("test__say", json!({"text": "hello"})),
        answer("said"),
    ])
    .await;
    let config = server.config(dir.path(), 128_000, json!({"test": server_config}), json!({}));
    let listed = run_local(&config, &["--list-tools"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&listed);
    assert_eq!(listed.status.code(), Some(0), "{stderr}");
    let say = json_lines(&stdout)
        .into_iter()
        .find(|t| t["name"] == "test__say")
        .expect("renamed");
    assert_eq!(say["original_name"], "echo");
    assert_eq!(say["description"], "[Test] Echo the text back.");
    let out = run_local(&config, &["say hello"], &[], dir.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let body = &server.bodies()[0];
    let sent = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "test__say")
        .unwrap();
    assert_eq!(sent["function"]["strict"], true);
    assert!(std::fs::read_to_string(&log).unwrap().contains("called echo"));
    assert!(server.bodies()[1].to_string().contains("hello"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_attached_and_refused_before_sending_where_the_model_cannot_take_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.pdf"), b"%PDF-1.4\n%%EOF\n").unwrap();
    std::fs::write(dir.path().join("clip.ogg"), b"OggS").unwrap();
    let server = SessionServer::start(vec![answer("A report.")]).await;
    let config = server.config(dir.path(), 128_000, json!({}), json!({}));
    let out = run_local(
        &config,
        &["--file", "report.pdf", "What is this?"],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let content = &server.bodies()[0]["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "What is this?"}));
    assert_eq!(content[1]["type"], "file");
    assert_eq!(content[1]["file"]["filename"], "report.pdf");
    assert_eq!(
        content[1]["file"]["file_data"],
        "data:application/pdf;base64,JVBERi0xLjQKJSVFT0YK"
    );

    let server = SessionServer::start(vec![answer("never")]).await;
    let config = server.config(dir.path(), 128_000, json!({}), json!({}));
    let out = run_local(&config, &["--file", "clip.ogg", "Listen"], &[], dir.path()).await;
    assert_exit(
        &out,
        3,
        "an audio clip [audio: audio/ogg, 4 B] cannot be sent to local",
    );
    assert!(server.bodies().is_empty(), "nothing was sent");
    let out = run_local(&config, &["--file", "nowhere.pdf", "Read"], &[], dir.path()).await;
    assert_exit(&out, 2, "--file nowhere.pdf:");
}
