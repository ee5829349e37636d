//! Background runs over REST on one server: started at once, read,
//! streamed from the event log (and resumed with `Last-Event-ID`), paused
//! for approval and continued by decisions posted over HTTP, cancelled;
//! sessions continued by id; bad input answered with the right status.
//! Responses API responses as background runs: one approved over REST, a
//! synchronous one denied, one whose client left cancelled.
//! (Replicas on one PostgreSQL are tested with real `serve` processes in
//! agent-cli/tests/serve_replicas.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::post;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use loopwright_core::{
    Agent, Approvals, ContentPart, Role, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolSet,
    tool::ToolAnnotations, toolset::StaticToolSource,
};
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// A tool that counts its calls; with a gate, each call waits for a permit
/// (or its cancellation, which it counts).
struct Counted {
    def: ToolDefinition,
    calls: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    gate: Option<Arc<Semaphore>>,
}

#[async_trait::async_trait]
impl Tool for Counted {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }
    async fn call(&self, _input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            tokio::select! {
                permit = gate.acquire() => permit.unwrap().forget(),
                () = ctx.cancellation().cancelled() => {
                    self.cancelled.fetch_add(1, Ordering::SeqCst);
                    return Err(ToolError::Cancelled);
                }
            }
        }
        Ok(ToolOutput::text("written"))
    }
}

struct Fixture {
    running: Running,
    base: String,
    model: ScriptedModel,
    calls: Arc<AtomicUsize>,
    cancelled: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

/// A server with agent `writer`: its tool `write` needs approval (not read
/// only) and its approvals are deferred; `gated`: the tool waits for the
/// test's permits.
async fn serve(steps: Vec<ScriptedStep>, gated: bool, concurrency: usize) -> Fixture {
    let model = ScriptedModel::new(steps);
    let calls = Arc::new(AtomicUsize::new(0));
    let cancelled = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let tool = Counted {
        def: ToolDefinition::new("write", "Writes.", json!({"type": "object"}))
            .with_annotations(ToolAnnotations::default()),
        calls: calls.clone(),
        cancelled: cancelled.clone(),
        gate: gated.then(|| gate.clone()),
    };
    let tools = ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(tool))
        .build();
    let agent = Agent::builder(Arc::new(model.clone()))
        .name("writer")
        .tools(tools)
        .approvals(Approvals::defer())
        .build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .openai("127.0.0.1:0".parse().unwrap())
        .concurrency(concurrency)
        .start()
        .await
        .unwrap();
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    Fixture {
        running,
        base,
        model,
        calls,
        cancelled,
        gate,
    }
}

fn write_call(id: &str) -> ScriptedStep {
    ScriptedStep::tool_calls(&[(id, "write", "{}")])
}

async fn get(url: &str) -> (u16, Value) {
    let response = common::http().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Poll the run until `check` holds on its view.
async fn run_until(base: &str, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    tokio::time::timeout(common::HANG_GUARD, async {
        loop {
            let (status, view) = get(&format!("{base}/v1/runs/{id}")).await;
            assert_eq!(status, 200, "{view}");
            if check(&view) {
                return view;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("run {id} never: {what}"))
}

/// An open event stream, read event by event: (id, data).
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn open(base: &str, id: &str, last_event_id: Option<u64>) -> Self {
        let mut request = common::http().get(format!("{base}/v1/runs/{id}/events"));
        if let Some(last) = last_event_id {
            request = request.header("Last-Event-ID", last.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event, or `None` when the stream ended.
    async fn next(&mut self) -> Option<(u64, Value)> {
        tokio::time::timeout(common::HANG_GUARD, async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let mut id = None;
                    let mut data = None;
                    for line in block.lines() {
                        if let Some(v) = line.strip_prefix("id: ") {
                            id = Some(v.parse().unwrap());
                        } else if let Some(v) = line.strip_prefix("data: ") {
                            data = Some(serde_json::from_str(v).unwrap());
                        }
                    }
                    if let (Some(id), Some(data)) = (id, data) {
                        return Some((id, data));
                    }
                    continue;
                }
                match self.response.chunk().await.unwrap() {
                    Some(chunk) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                    None => return None,
                }
            }
        })
        .await
        .expect("the event stream hung")
    }

    /// Every event up to the end of the stream.
    async fn rest(&mut self) -> Vec<(u64, Value)> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

fn kinds(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_answers_202_and_its_events_and_result_are_read_back() {
    let f = serve(vec![ScriptedStep::text("All done.")], false, 2).await;
    let (status, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "go"}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("run_"), "{id}");
    assert!(started["session"].as_str().unwrap().starts_with("sess_"));
    assert_eq!(started["status"], "running");
    let events = Events::open(&f.base, &id, None).await.rest().await;
    let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (0..events.len() as u64).collect::<Vec<_>>(),
        "numbered without gaps"
    );
    let kinds = kinds(&events);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("run_started"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("finished"), "{kinds:?}");
    let view = run_until(&f.base, &id, "completed", |v| v["status"] == "completed").await;
    assert_eq!(view["result"]["text"], "All done.");
    assert_eq!(view["result"]["exit"], "completed");
    assert_eq!(view["agent"], "writer");
    // A client that reconnects after event 1 gets exactly the ones after it.
    let again = Events::open(&f.base, &id, Some(1)).await.rest().await;
    assert_eq!(again, events[2..].to_vec());
    let (status, after) = get(&format!("{}/v1/runs/{id}/events?after=0", f.base)).await;
    assert_eq!(status, 200, "{after}");
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_waits_with_no_permit_and_continues_once_every_call_is_decided() {
    let f = serve(
        vec![
            ScriptedStep::tool_calls(&[("c1", "write", "{}"), ("c2", "write", "{}")]),
            ScriptedStep::text("Wrote one."),
            ScriptedStep::text("Second run."),
        ],
        false,
        1,
    )
    .await;
    let (_, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "write"}),
    )
    .await;
    let id = started["id"].as_str().unwrap().to_owned();
    let mut stream = Events::open(&f.base, &id, None).await;
    // The stream shows the pending calls and stays open.
    let mut seen = Vec::new();
    loop {
        let (seq, event) = stream.next().await.expect("the stream ended while paused");
        seen.push((seq, event.clone()));
        if event["type"] == "awaiting_approval" {
            let ids: Vec<&str> = event["pending"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["call_id"].as_str().unwrap())
                .collect();
            assert_eq!(ids, ["c1", "c2"]);
            break;
        }
    }
    let view = run_until(&f.base, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    let pending = view["pending_approvals"].as_array().unwrap();
    assert_eq!(pending.len(), 2, "{view}");
    assert_eq!(pending[0]["tool"], "write");
    assert_eq!(pending[0]["agent_path"], "writer");
    assert_eq!(f.calls.load(Ordering::SeqCst), 0);
    // Paused, it holds no permit: with a concurrency of 1 another run completes.
    assert_eq!(f.running.in_flight(), 0);
    let (_, other) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "other"}),
    )
    .await;
    let other_id = other["id"].as_str().unwrap().to_owned();
    // (The scripted model answers in order: the other run takes step 2's
    // text only after this one's; so first decide, then read both.)
    let url = format!("{}/v1/runs/{id}/approvals", f.base);
    // Malformed, unknown call: refused, nothing recorded.
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "c1"}]})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "nope", "approve": true}]})).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("nope"),
        "{body}"
    );
    // One decision: still waiting for the other.
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "c1", "approve": true}]})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "awaiting_approval");
    assert_eq!(body["pending_approvals"].as_array().unwrap().len(), 1);
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "c1", "approve": false}]})).await;
    assert_eq!(status, 409, "already decided: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already decided"),
        "{body}"
    );
    let (status, body) = post(
        &url,
        json!({"decisions": [{"call_id": "c2", "approve": false, "reason": "only one file"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The same stream goes on to the end.
    let rest = stream.rest().await;
    seen.extend(rest);
    let all_kinds = kinds(&seen);
    assert_eq!(
        all_kinds.last().map(String::as_str),
        Some("finished"),
        "{all_kinds:?}"
    );
    let seqs: Vec<u64> = seen.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        seqs,
        (0..seen.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate across the pause"
    );
    let view = run_until(&f.base, &id, "completed", |v| v["status"] == "completed").await;
    assert_eq!(
        f.calls.load(Ordering::SeqCst),
        1,
        "the approved call ran once, the denied one never"
    );
    assert!(view["result"]["text"].is_string());
    // The denial's reason reached the model as the call's result.
    let requests = f.model.requests();
    let answered = requests
        .iter()
        .flat_map(|r| r.messages.iter())
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter())
        .any(|p| matches!(p, ContentPart::ToolResult(r) if r.call_id == "c2" && r.is_error && r.text().contains("only one file")));
    assert!(answered, "{requests:?}");
    // Approving a finished run is a conflict.
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "c2", "approve": true}]})).await;
    assert_eq!(status, 409, "{body}");
    run_until(&f.base, &other_id, "the other run ended", |v| {
        v["status"] != "running"
    })
    .await;
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_call_waits_for_its_output_beside_an_approval() {
    let f = serve(
        vec![
            ScriptedStep::tool_calls(&[
                ("c1", "write", "{}"),
                ("c2", "get_location", r#"{"precise": true}"#),
            ]),
            ScriptedStep::text("Written, in Paris."),
        ],
        false,
        1,
    )
    .await;
    let tools = json!([{"name": "get_location", "description": "Where the user is.",
        "input_schema": {"type": "object", "properties": {"precise": {"type": "boolean"}}}}]);
    // A tool that cannot be: refused before anything is stored.
    let (status, body) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "Write it down.", "tools": [{"name": "get location"}]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("tools[0]"),
        "{body}"
    );
    let (status, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "Write it down where I am.", "tools": tools}),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let view = run_until(&f.base, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    let pending = view["pending_approvals"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = pending
        .iter()
        .map(|p| (p["call_id"].as_str().unwrap(), p["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("c1", "tool_call"), ("c2", "client_tool")], "{view}");
    assert_eq!(pending[1]["arguments"], json!({"precise": true}));
    let url = format!("{}/v1/runs/{id}/approvals", f.base);
    // Nothing here runs the client's tool: approving it is refused.
    let (status, body) = post(&url, json!({"decisions": [{"call_id": "c2", "approve": true}]})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("client tool get_location"),
        "{body}"
    );
    let (status, body) = post(
        &url,
        json!({"decisions": [
            {"call_id": "c1", "approve": true},
            {"call_id": "c2", "output": {"city": "Paris"}},
        ]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    run_until(&f.base, &id, "completed", |v| v["status"] == "completed").await;
    assert_eq!(f.calls.load(Ordering::SeqCst), 1);
    let requests = f.model.requests();
    let last = requests[1].messages.last().unwrap();
    let results: Vec<(String, String)> = last
        .content
        .iter()
        .map(|p| match p {
            ContentPart::ToolResult(r) => (r.call_id.clone(), r.text()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c1".to_owned(), "written".to_owned()),
            ("c2".to_owned(), r#"{"city":"Paris"}"#.to_owned())
        ]
    );
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_running_run_fires_the_tools_cancellation_and_a_paused_one_ends_its_stream() {
    let f = serve(vec![write_call("c1"), write_call("c9")], true, 2).await;
    // Auto-approve would be needed for the gated tool to run: decide it.
    let (_, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "go"}),
    )
    .await;
    let id = started["id"].as_str().unwrap().to_owned();
    run_until(&f.base, &id, "paused", |v| v["status"] == "awaiting_approval").await;
    post(
        &format!("{}/v1/runs/{id}/approvals", f.base),
        json!({"decisions": [{"call_id": "c1", "approve": true}]}),
    )
    .await;
    common::until("the tool runs", || f.calls.load(Ordering::SeqCst) == 1).await;
    let (status, view) = post(&format!("{}/v1/runs/{id}/cancel", f.base), json!({})).await;
    assert_eq!(status, 200, "{view}");
    let view = run_until(&f.base, &id, "cancelled", |v| v["status"] == "cancelled").await;
    assert_eq!(f.cancelled.load(Ordering::SeqCst), 1, "{view}");
    let (status, body) = post(&format!("{}/v1/runs/{id}/cancel", f.base), json!({})).await;
    assert_eq!(status, 409, "{body}");
    // A paused run is cancelled by its record alone; its stream ends.
    let (_, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "again"}),
    )
    .await;
    let paused = started["id"].as_str().unwrap().to_owned();
    run_until(&f.base, &paused, "paused", |v| v["status"] == "awaiting_approval").await;
    let mut stream = Events::open(&f.base, &paused, None).await;
    let (status, _) = post(&format!("{}/v1/runs/{paused}/cancel", f.base), json!({})).await;
    assert_eq!(status, 200);
    let events = stream.rest().await;
    let last = &events.last().unwrap().1;
    assert_eq!(
        (last["type"].as_str(), last["exit"].as_str()),
        (Some("finished"), Some("cancelled")),
        "{events:?}"
    );
    drop(f.gate);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_continue_a_stored_conversation_synchronously_and_in_the_background() {
    let f = serve(
        vec![
            ScriptedStep::text("Hello, Ana."),
            ScriptedStep::text("You are Ana."),
            ScriptedStep::text("Still Ana."),
        ],
        false,
        2,
    )
    .await;
    let sync = format!("{}/v1/agents/writer", f.base);
    let (status, first) = post(&sync, json!({"prompt": "I am Ana.", "session": "chat-1"})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["session"], "chat-1");
    let (_, second) = post(&sync, json!({"prompt": "Who am I?", "session": "chat-1"})).await;
    assert_eq!(second["text"], "You are Ana.");
    // The second model call saw the first turn.
    let requests = f.model.requests();
    let seen: Vec<String> = requests[1].messages.iter().map(|m| m.text()).collect();
    assert!(
        seen.iter().any(|t| t.contains("I am Ana.")) && seen.iter().any(|t| t.contains("Hello, Ana.")),
        "{seen:?}"
    );
    // A background run continues the same session.
    let (_, started) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "And now?", "session": "chat-1"}),
    )
    .await;
    assert_eq!(started["session"], "chat-1");
    let id = started["id"].as_str().unwrap();
    run_until(&f.base, id, "completed", |v| v["status"] == "completed").await;
    let (status, session) = get(&format!("{}/v1/sessions/chat-1", f.base)).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["version"], 3);
    let texts: Vec<String> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            serde_json::from_value::<loopwright_core::Message>(m.clone())
                .unwrap()
                .text()
        })
        .collect();
    assert_eq!(
        texts,
        [
            "I am Ana.",
            "Hello, Ana.",
            "Who am I?",
            "You are Ana.",
            "And now?",
            "Still Ana."
        ]
    );
    let delete = common::http()
        .delete(format!("{}/v1/sessions/chat-1", f.base))
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 204);
    let (status, _) = get(&format!("{}/v1/sessions/chat-1", f.base)).await;
    assert_eq!(status, 404);
    f.running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_bad_bodies_and_synchronous_surfaces_are_answered_plainly() {
    let f = serve(
        vec![write_call("c1"), ScriptedStep::text("Could not write.")],
        false,
        2,
    )
    .await;
    let (status, body) = get(&format!("{}/v1/runs/run_nope", f.base)).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["type"], "not_found");
    let (status, _) = get(&format!("{}/v1/runs/run_nope/events", f.base)).await;
    assert_eq!(status, 404);
    let (status, _) = post(
        &format!("{}/v1/runs/run_nope/approvals", f.base),
        json!({"decisions": [{"call_id": "c", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = post(&format!("{}/v1/runs/run_nope/cancel", f.base), json!({})).await;
    assert_eq!(status, 404);
    let (status, _) = get(&format!("{}/v1/sessions/nope", f.base)).await;
    assert_eq!(status, 404);
    let (status, body) = post(
        &format!("{}/v1/agents/nobody/runs", f.base),
        json!({"prompt": "x"}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": "x", "session": "a/b"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"nothing": true}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let huge = "x".repeat(loopwright_serve::DEFAULT_BODY_LIMIT + 1);
    let (status, _) = post(
        &format!("{}/v1/agents/writer/runs", f.base),
        json!({"prompt": huge}),
    )
    .await;
    assert_eq!(status, 413);
    // A synchronous surface cannot wait for a person: the call is denied
    // with a reason the model reads, and the answer comes back.
    let openai = format!(
        "http://{}/v1/chat/completions",
        f.running.address(Surface::OpenAi).unwrap()
    );
    let (status, body) = post(
        &openai,
        json!({"model": "writer", "messages": [{"role": "user", "content": "write"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Could not write.");
    assert_eq!(f.calls.load(Ordering::SeqCst), 0);
    let denied = f.model.requests()[1]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .any(
            |p| matches!(p, ContentPart::ToolResult(r) if r.is_error && r.text().contains("background run")),
        );
    assert!(denied);
    f.running.shutdown().await;
}

/// A background Responses API response pauses like any background run, is
/// approved through the REST surface under the same id and completes; a
/// synchronous one cannot wait for a person: its call is denied with a
/// reason the model reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_response_is_approved_over_rest_and_a_synchronous_one_is_denied() {
    let steps = vec![
        write_call("c1"),
        ScriptedStep::text("Written."),
        write_call("c2"),
        ScriptedStep::text("Not written."),
    ];
    let f = serve(steps, false, 2).await;
    let openai = format!("http://{}/v1", f.running.address(Surface::OpenAi).unwrap());
    let (status, created) = post(
        &format!("{openai}/responses"),
        json!({"model": "writer", "input": "Write it.", "background": true}),
    )
    .await;
    assert_eq!(
        (status, created["status"].as_str()),
        (200, Some("queued")),
        "{created}"
    );
    let id = created["id"].as_str().unwrap().to_owned();
    let view = run_until(&f.base, &id, "awaiting approval", |v| {
        v["status"] == "awaiting_approval"
    })
    .await;
    assert_eq!(view["pending_approvals"][0]["call_id"], "c1", "{view}");
    let (_, paused) = get(&format!("{openai}/responses/{id}")).await;
    assert_eq!(paused["status"], "in_progress", "{paused}");
    let (status, decided) = post(
        &format!("{}/v1/runs/{id}/approvals", f.base),
        json!({"decisions": [{"call_id": "c1", "approve": true}]}),
    )
    .await;
    assert_eq!(status, 200, "{decided}");
    run_until(&f.base, &id, "completed", |v| v["status"] == "completed").await;
    let (_, done) = get(&format!("{openai}/responses/{id}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let last = done["output"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["text"], "Written.", "{done}");
    assert_eq!(f.calls.load(Ordering::SeqCst), 1);

    let (status, sync) = post(
        &format!("{openai}/responses"),
        json!({"model": "writer", "input": "Write again."}),
    )
    .await;
    assert_eq!(
        (status, sync["status"].as_str()),
        (200, Some("completed")),
        "{sync}"
    );
    assert_eq!(
        f.calls.load(Ordering::SeqCst),
        1,
        "a call that needed a person ran"
    );
    let told = serde_json::to_string(&*f.model.requests().last().unwrap().messages).unwrap();
    assert!(told.contains("cannot wait for one"), "{told}");
    f.running.shutdown().await;
}

/// A synchronous stored response whose client leaves is cancelled: its
/// model call is dropped and its record ends `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_response_whose_client_leaves_is_cancelled() {
    let model = Arc::new(common::GatedModel::new());
    let agent = Agent::builder(model.clone()).name("slow").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .openai("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let openai = format!("http://{}/v1", running.address(Surface::OpenAi).unwrap());
    let mut response = common::http()
        .post(format!("{openai}/responses"))
        .json(&json!({"model": "slow", "input": "Hi", "stream": true}))
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    while !buffer.contains("\n\n") {
        let chunk = response.chunk().await.unwrap().unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
    }
    let created: Value =
        serde_json::from_str(buffer.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap();
    assert_eq!(created["type"], "response.created", "{created}");
    let id = created["response"]["id"].as_str().unwrap().to_owned();
    common::until("the model call started", || {
        model.started.load(Ordering::SeqCst) == 1
    })
    .await;
    drop(response);
    common::until("the model call was dropped", || {
        model.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::timeout(common::HANG_GUARD, async {
        loop {
            let (_, now) = get(&format!("{openai}/responses/{id}")).await;
            if now["status"] == "cancelled" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the left response never ended cancelled");
    running.shutdown().await;
}
