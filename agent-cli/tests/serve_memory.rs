//! What a served instance holds in memory: `loopwright serve` as a real
//! process with the default limits, its peak resident size (`VmHWM` in
//! /proc/PID/status) read after ten clients sent at once the worst bodies
//! the limits allow, as stored responses and as REST background runs: the
//! most JSON values (the costliest kind: one-key objects, in function
//! calls' arguments) and the most bytes (10,000 messages of text). The
//! peak stays under the bound the serve README states: what the idle
//! server holds, plus, for each request, its conversation parsed at most
//! four times over (three while its run is in flight, one more kept by the
//! memory store).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::rest::get;
use common::{HANG_GUARD, ModelServer, agent_command, listening};
use serde_json::{Value, json};

const TALKER: &str = "---
description: Answers.
model: local/talk-model
---
You answer.
";

/// A Chat Completions server answering every request "ok" (bodies read
/// and dropped, so the test process stays small).
async fn model_server() -> String {
    model_replying(common::answer("ok")).await
}

/// A Chat Completions server answering every request with the stream
/// `sse` (bodies read and dropped).
async fn model_replying(sse: String) -> String {
    let server = ModelServer::builder()
        .replies(vec![sse.into()])
        .unrecorded()
        .start()
        .await;
    server.base_url()
}

/// `loopwright serve` of the talker on the OpenAI, Anthropic and REST
/// surfaces, with the default limits: the child and the surfaces' URLs.
async fn serve(dir: &Path, model: &str) -> (tokio::process::Child, HashMap<String, String>) {
    let config = dir.join("agent.json");
    let providers = json!({"providers": {"local": {"type": "openai-compatible", "baseUrl": model}}});
    std::fs::write(&config, providers.to_string()).unwrap();
    let talker = dir.join("talker.md");
    std::fs::write(&talker, TALKER).unwrap();
    let args = vec![
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--agent",
        talker.to_str().unwrap(),
        "--openai",
        "0",
        "--anthropic",
        "0",
        "--rest",
        "0",
    ];
    let mut child = agent_command(&args, &[], dir).spawn().unwrap();
    let (urls, _) = listening(&mut child, 3).await;
    (child, urls)
}

/// A status line of process `pid`, in KiB.
fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The default body limit (8 MiB) less room for the envelope.
const BODY: usize = 8 * 1024 * 1024 - 4096;

/// The default item limit.
const ITEMS: usize = 10_000;

/// `n` one-key objects, as a JSON array: the costliest values once parsed
/// (an object weighs 8 in the count, and costs about 675 bytes).
fn objects(n: usize) -> String {
    format!("[{}]", vec![r#"{"a":0}"#; n].join(","))
}

/// A body of `n` JSON items made by `item(i)`, then `last`.
fn body_of(prefix: &str, n: usize, item: impl Fn(usize) -> String, last: &str) -> String {
    let mut items: Vec<String> = (0..n).map(item).collect();
    items.push(last.to_owned());
    format!("{prefix}[{}]}}", items.join(","))
}

/// Stored responses of the most JSON values the default limits take: 100
/// function calls whose arguments are 310 one-key objects each, and their
/// outputs (about 313,000 counted values of the 320,000 allowed), then a
/// user message.
fn values_response() -> String {
    let arguments = serde_json::to_string(&objects(310)).unwrap();
    body_of(
        r#"{"model":"talker","input":"#,
        200,
        |i| {
            let c = i / 2;
            if i % 2 == 0 {
                format!(r#"{{"type":"function_call","call_id":"c{c}","name":"f","arguments":{arguments}}}"#)
            } else {
                format!(r#"{{"type":"function_call_output","call_id":"c{c}","output":"ok"}}"#)
            }
        },
        r#"{"role":"user","content":"go on"}"#,
    )
}

/// Stored responses of the most bytes: 10,000 user messages filling the
/// body with text.
fn bytes_response() -> String {
    let text = "x".repeat(BODY / ITEMS - 40);
    body_of(
        r#"{"model":"talker","input":"#,
        ITEMS - 1,
        |_| format!(r#"{{"role":"user","content":"{text}"}}"#),
        &format!(r#"{{"role":"user","content":"{text}"}}"#),
    )
}

/// REST background runs of the most JSON values: 100 tool calls whose
/// input is 310 one-key objects each, and their results (about 317,000
/// counted values), then a user message.
fn values_run() -> String {
    let input = objects(310);
    body_of(
        r#"{"messages":"#,
        200,
        |i| {
            let c = i / 2;
            if i % 2 == 0 {
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"tool_call","id":"c{c}","name":"f","input":{input}}}]}}"#
                )
            } else {
                format!(
                    r#"{{"role":"tool","content":[{{"type":"tool_result","call_id":"c{c}","parts":[{{"type":"text","text":"ok"}}]}}]}}"#
                )
            }
        },
        r#"{"role":"user","content":[{"type":"text","text":"go on"}]}"#,
    )
}

/// REST background runs of the most bytes: 10,000 user messages filling
/// the body with text.
fn bytes_run() -> String {
    let text = "x".repeat(BODY / ITEMS - 60);
    let message = format!(r#"{{"role":"user","content":[{{"type":"text","text":"{text}"}}]}}"#);
    body_of(r#"{"messages":"#, ITEMS - 1, |_| message.clone(), &message)
}

/// Ten clients at once, each sending `body` to `url` (released together
/// by a barrier); each answer's status.
async fn ten_at_once(url: String, body: String) -> Vec<(u16, Value)> {
    let body = bytes::Bytes::from(body);
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(10));
    let clients: Vec<_> = (0..10)
        .map(|_| {
            let (url, body, start) = (url.clone(), body.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                let response = common::rest::reqwest_client()
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            })
        })
        .collect();
    let mut answers = Vec::new();
    for client in clients {
        answers.push(client.await.unwrap());
    }
    answers
}

/// Wait until the background run `id` on `rest` is no longer running.
async fn until_ended(rest: &str, id: &str) {
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            let (_, view) = get(&format!("{rest}/v1/runs/{id}")).await;
            if view["status"] != "running" {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the run never ended");
}

/// One conversation at the default limits, parsed, at most (the serve
/// README's X): the body limit plus every counted value at its cost.
fn parsed_bound() -> u64 {
    use loopwright::serve::{BYTES_PER_VALUE, DEFAULT_BODY_LIMIT, DEFAULT_ITEM_LIMIT, VALUES_PER_ITEM};
    (DEFAULT_BODY_LIMIT + BYTES_PER_VALUE * VALUES_PER_ITEM * DEFAULT_ITEM_LIMIT) as u64
}

/// Serve with the defaults, send `body` ten times at once to `path` of
/// `surface`, wait for every run to end; the peak resident size over what
/// the idle server held, in bytes.
async fn peak_of_ten(model: &str, surface: &str, path: &str, body: String) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, urls) = serve(dir.path(), model).await;
    let pid = child.id().unwrap();
    let idle = status_kib(pid, "VmHWM");
    let base = urls[surface].clone();
    for (status, answer) in ten_at_once(format!("{base}{path}"), body).await {
        let shown = answer.to_string();
        assert!(
            status == 200 || status == 202,
            "{status}: {}",
            &shown[..shown.len().min(300)]
        );
        if status == 202 {
            until_ended(&base, answer["id"].as_str().unwrap()).await;
        }
    }
    let peak = status_kib(pid, "VmHWM");
    child.kill().await.unwrap();
    (peak - idle) * 1024
}

/// Ten requests of each worst body stay under ten times four parsed
/// conversations.
async fn ten_worst_bodies_stay_under_the_bound(surface: &str, path: &str, bodies: [(&str, String); 2]) {
    let model = model_server().await;
    let bound = 10 * 4 * parsed_bound();
    for (kind, body) in bodies {
        let size = body.len();
        let peak = peak_of_ten(&model, surface, path, body).await;
        eprintln!(
            "{surface} {kind}: ten bodies of {size} bytes at once: peak {} MB over the idle server's (bound {} MB)",
            peak / 1_000_000,
            bound / 1_000_000
        );
        assert!(
            peak <= bound,
            "{surface} {kind}: {peak} bytes over the idle server, bound {bound}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_stored_responses_of_the_worst_bodies_stay_under_the_bound() {
    ten_worst_bodies_stay_under_the_bound(
        "openai",
        "/responses",
        [("values", values_response()), ("bytes", bytes_response())],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_background_runs_of_the_worst_bodies_stay_under_the_bound() {
    ten_worst_bodies_stay_under_the_bound(
        "rest",
        "/v1/agents/talker/runs",
        [("values", values_run()), ("bytes", bytes_run())],
    )
    .await;
}

/// A Responses request whose output schema gives `answer` `depth` levels
/// that each say `anyOf` of two references to the next, ending in `false`
/// (every branch is visited), or else an integer.
fn schema_request(depth: usize) -> String {
    let mut defs = serde_json::Map::new();
    for i in 0..depth {
        let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
        defs.insert(format!("l{i}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert(format!("l{depth}"), json!(false));
    let answer = json!({"anyOf": [{"$ref": "#/$defs/l0"}, {"type": "integer"}]});
    let schema =
        json!({"type": "object", "properties": {"answer": answer}, "required": ["answer"], "$defs": defs});
    json!({"model": "talker", "input": "hi",
           "text": {"format": {"type": "json_schema", "name": "out", "schema": schema}}})
    .to_string()
}

/// Item 1 of the second hardening round, ten at once: the schema that
/// took 24 GB (depth 24) is refused by each client, naming the limit,
/// while the server answers others; the costliest schema the limits
/// still take (depth 10, some 4,000 subschemas at one place of an answer;
/// depth 11 is refused) is checked for each of ten answers at once, and
/// the peak stays under the bound of ten requests (15 MB over the idle
/// server, debug build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_costliest_output_schemas_at_once_are_refused_or_checked() {
    // The model has no native structured output: it answers through the
    // final-answer tool, whose input is checked against the schema.
    let model = model_replying(common::tool_call("final_answer", json!({"answer": 1}))).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut child, urls) = serve(dir.path(), &model).await;
    let pid = child.id().unwrap();
    let idle = status_kib(pid, "VmHWM");
    let openai = urls["openai"].clone();
    let refused = tokio::spawn(ten_at_once(format!("{openai}/responses"), schema_request(24)));
    let (status, _) = get(&format!("{}/health", urls["rest"])).await;
    assert_eq!(status, 200, "the server answers while the schemas come in");
    for (status, answer) in refused.await.unwrap() {
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{answer}");
        assert!(
            message.contains("too complex") && message.contains("4096"),
            "{message}"
        );
    }
    for (status, answer) in ten_at_once(format!("{openai}/responses"), schema_request(10)).await {
        assert_eq!(status, 200, "{answer}");
        let text = answer["output"][0]["content"][0]["text"].as_str();
        assert_eq!(text, Some(r#"{"answer":1}"#), "{answer}");
    }
    let peak = (status_kib(pid, "VmHWM") - idle) * 1024;
    child.kill().await.unwrap();
    let bound = 10 * 4 * parsed_bound();
    eprintln!(
        "output schemas: peak {} MB over the idle server's (bound {} MB)",
        peak / 1_000_000,
        bound / 1_000_000
    );
    assert!(peak <= bound, "{peak} bytes over the idle server, bound {bound}");
}
