//! What a hostile or careless client must not break, against real sockets:
//! connections that send nothing or half their headers, more connections
//! than the cap, bodies over the limit, invalid JSON and MCP sessions past
//! their cap, MCP arguments that do not match the schema, tool histories
//! that do not pair up, HTTP/2 clients, a full default queue, an MCP
//! call cut off by a shutdown, and a cancel overtaken by the run's end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{GatedModel, HANG_GUARD, Mcp, http, post, until};
use loopwright_core::Agent;
use loopwright_serve::{DEFAULT_QUEUE, Running, Serve, ServedAgent, Surface};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn gated() -> (Arc<GatedModel>, ServedAgent) {
    let model = Arc::new(GatedModel::new());
    let agent = Agent::builder(model.clone()).name("gated").build();
    (model, ServedAgent::new(agent))
}

fn local() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Everything the server sends until it closes the connection.
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(HANG_GUARD, stream.read_to_end(&mut out))
        .await
        .expect("the server never closed the connection")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_or_half_their_headers_are_closed() {
    let (_model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .rest(local())
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    let addr = running.address(Surface::Rest).unwrap();
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    // A kept-alive connection idle after its first answer is closed too.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_to_close(&mut silent).await, "");
    let answered = read_to_close(&mut slow).await;
    assert!(!answered.contains("200 OK"), "{answered}");
    let answered = read_to_close(&mut idle).await;
    assert!(answered.starts_with("HTTP/1.1 200 OK"), "{answered}");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_over_the_cap_gets_a_503_and_the_others_still_work() {
    let (_model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .openai(local())
        .max_connections(2)
        .start()
        .await
        .unwrap();
    let addr = running.address(Surface::OpenAi).unwrap();
    let _hog1 = TcpStream::connect(addr).await.unwrap();
    let _hog2 = TcpStream::connect(addr).await.unwrap();
    let mut third = TcpStream::connect(addr).await.unwrap();
    let answer = read_to_close(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 5"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["type"], "server_error", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many open connections")
    );
    // A hog that leaves frees its slot.
    drop(_hog1);
    let models = tokio::time::timeout(HANG_GUARD, async {
        loop {
            if let Ok(response) = http().get(format!("http://{addr}/v1/models")).send().await {
                return response;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(models.status(), 200);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_client_with_prior_knowledge_passes_the_host_check() {
    let (_model, agent) = gated();
    let running = Serve::new().agent(agent).rest(local()).start().await.unwrap();
    let addr = running.address(Surface::Rest).unwrap();
    common::install_tls();
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let response = client
        .get(format!("http://localhost:{}/health", addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.version(), reqwest::Version::HTTP_2);
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    // A foreign :authority is still refused.
    let response = client
        .get(format!("http://{addr}/health"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_the_limit_are_413_in_each_surfaces_shape() {
    let (_model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .openai(local())
        .anthropic(local())
        .rest(local())
        .mcp_http(local())
        .body_limit(1024)
        .start()
        .await
        .unwrap();
    let big = json!({"model": "gated", "prompt": "x".repeat(4096), "messages": [{"role": "user", "content": "x".repeat(4096)}]});
    let cases = [
        (
            Surface::OpenAi,
            "/v1/chat/completions",
            "/error/type",
            "invalid_request_error",
        ),
        (
            Surface::Anthropic,
            "/v1/messages",
            "/error/type",
            "request_too_large",
        ),
        (
            Surface::Rest,
            "/v1/agents/gated",
            "/error/type",
            "invalid_request_error",
        ),
        (Surface::McpHttp, "/mcp", "/error/code", "-32600"),
    ];
    for (surface, path, pointer, expected) in cases {
        let addr = running.address(surface).unwrap();
        let response = http()
            .post(format!("http://{addr}{path}"))
            .header("accept", "application/json, text/event-stream")
            .json(&big)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 413, "{surface}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body.pointer(pointer).unwrap().to_string().trim_matches('"'),
            expected,
            "{surface}: {body}"
        );
    }
    // Invalid JSON on /mcp is a parse error, not an unsupported media type.
    let addr = running.address(Surface::McpHttp).unwrap();
    let response = http()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_over_the_item_limit_are_400_in_each_surfaces_shape() {
    let (model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .openai(local())
        .anthropic(local())
        .rest(local())
        .item_limit(3)
        .start()
        .await
        .unwrap();
    let at = |surface: Surface, path: &str| format!("http://{}{path}", running.address(surface).unwrap());
    let user = json!({"role": "user", "content": "hi"});
    let rest_user = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let text = json!({"type": "text", "text": "a"});
    let cases = [
        (
            at(Surface::OpenAi, "/v1/chat/completions"),
            json!({"model": "gated", "messages": [user, user, user, user]}),
            "4 messages",
        ),
        (
            at(Surface::OpenAi, "/v1/chat/completions"),
            json!({"model": "gated", "messages": [{"role": "user", "content": [text, text, text, text]}]}),
            "4 content parts",
        ),
        (
            at(Surface::OpenAi, "/v1/responses"),
            json!({"model": "gated", "input": [user, user, user, user]}),
            "4 input items",
        ),
        (
            at(Surface::Anthropic, "/v1/messages"),
            json!({"model": "gated", "max_tokens": 10, "messages": [user, user, user, user]}),
            "4 messages",
        ),
        (
            at(Surface::Rest, "/v1/agents/gated"),
            json!({"messages": [rest_user, rest_user, rest_user, rest_user]}),
            "4 messages",
        ),
        (
            at(Surface::Rest, "/v1/agents/gated/runs"),
            json!({"messages": [rest_user, rest_user, rest_user, rest_user]}),
            "4 messages",
        ),
    ];
    for (url, body, count) in cases {
        let (status, answer) = post(&url, body).await;
        assert_eq!(status, 400, "{url}: {answer}");
        assert_eq!(
            answer["error"]["type"], "invalid_request_error",
            "{url}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(count) && message.contains("at most 3"),
            "{url}: {message}"
        );
        if url.contains("/v1/messages") {
            assert_eq!(answer["type"], "error", "Anthropic's shape: {answer}");
        }
    }
    // Few items, but more JSON values than 32 an item (96 here).
    let junk: Vec<Value> = (0..100).map(|_| json!(0)).collect();
    let (status, answer) = post(
        &at(Surface::OpenAi, "/v1/chat/completions"),
        json!({"model": "gated", "messages": [user], "junk": junk}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("JSON values") && message.contains("at most 96"),
        "{message}"
    );
    assert_eq!(model.started.load(Ordering::SeqCst), 0, "no run started");
    // A continued conversation is held to the limit with the request's input.
    model.release.add_permits(2);
    let (status, answer) = post(
        &at(Surface::Rest, "/v1/agents/gated"),
        json!({"prompt": "one", "session": "s1"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    for path in ["/v1/agents/gated", "/v1/agents/gated/runs"] {
        let (status, answer) = post(
            &at(Surface::Rest, path),
            json!({"messages": [rest_user, rest_user], "session": "s1"}),
        )
        .await;
        assert_eq!(status, 400, "{path}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("session s1 holds 2 messages") && message.contains("4 in all"),
            "{message}"
        );
    }
    let (status, first) = post(
        &at(Surface::OpenAi, "/v1/responses"),
        json!({"model": "gated", "input": [user, user]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let (status, answer) = post(
        &at(Surface::OpenAi, "/v1/responses"),
        json!({"model": "gated", "input": "more", "previous_response_id": first["id"]}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().contains("4 in all"),
        "{answer}"
    );
    assert_eq!(model.started.load(Ordering::SeqCst), 2);
    running.shutdown().await;
}

/// A server with only the MCP surface: at most `sessions`, each closed
/// after `idle` without a request.
async fn mcp_server(sessions: usize, idle: Duration) -> (loopwright_serve::Running, std::net::SocketAddr) {
    let (_model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .mcp_http(local())
        .mcp_sessions(sessions)
        .mcp_session_idle(idle)
        .start()
        .await
        .unwrap();
    let addr = running.address(Surface::McpHttp).unwrap();
    (running, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_sessions_stop_at_the_cap_and_expire_when_idle() {
    // The cap, on a server whose sessions never go idle during the test (a
    // busy machine may take longer than a short expiry between requests).
    let (running, addr) = mcp_server(2, Duration::from_secs(600)).await;
    let mut first = Mcp::new(addr);
    assert_eq!(first.initialize().await, 200);
    let mut second = Mcp::new(addr);
    assert_eq!(second.initialize().await, 200);
    let third = Mcp::new(addr);
    let (status, messages, _) = third
        .post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .await;
    assert_eq!(status, 503);
    assert_eq!(messages[0]["error"]["code"], -32000, "{messages:?}");
    running.shutdown().await;

    // Idle sessions close, and free their place: with a cap of one, a new
    // session fits once the old one is gone.
    let (running, addr) = mcp_server(1, Duration::from_millis(500)).await;
    let mut first = Mcp::new(addr);
    assert_eq!(first.initialize().await, 200);
    tokio::time::timeout(HANG_GUARD, async {
        // Quiet for longer than the idle expiry, then look.
        tokio::time::sleep(Duration::from_millis(700)).await;
        while first
            .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await
            .0
            != 404
        {
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    })
    .await
    .expect("the idle session never closed");
    let mut again = Mcp::new(addr);
    assert_eq!(again.initialize().await, 200);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_arguments_are_checked_against_the_schema_before_any_run() {
    let (model, agent) = gated();
    let running = Serve::new().agent(agent).mcp_http(local()).start().await.unwrap();
    let mut mcp = Mcp::new(running.address(Surface::McpHttp).unwrap());
    assert_eq!(mcp.initialize().await, 200);
    let (_, messages, _) = mcp
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gated", "arguments": {"x": 1}}}))
        .await;
    let error = &Mcp::response(&messages, 1)["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert!(error["message"].as_str().unwrap().contains("prompt"), "{error}");
    let (_, messages, _) = mcp
        .post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gated", "arguments": "hello"}}))
        .await;
    let error = &Mcp::response(&messages, 2)["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(model.started.load(Ordering::SeqCst), 0, "no run started");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_cut_off_by_shutdown_gets_an_error_result() {
    let (model, agent) = gated();
    let running = Serve::new()
        .agent(agent)
        .mcp_http(local())
        .shutdown_grace(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let mut mcp = Mcp::new(running.address(Surface::McpHttp).unwrap());
    assert_eq!(mcp.initialize().await, 200);
    let call = tokio::spawn(async move {
        mcp.post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gated", "arguments": {"prompt": "go"}}}))
            .await
    });
    until("the run is at the model", || {
        model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    let stopped = tokio::spawn(running.shutdown());
    let (status, messages, _) = tokio::time::timeout(HANG_GUARD, call).await.unwrap().unwrap();
    assert_eq!(status, 200);
    let result = &Mcp::response(&messages, 1)["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("shutting down"), "{text}");
    tokio::time::timeout(HANG_GUARD, stopped).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_refuses_tool_histories_that_do_not_pair_up() {
    let (model, agent) = gated();
    let running = Serve::new().agent(agent).rest(local()).start().await.unwrap();
    let url = format!(
        "http://{}/v1/agents/gated",
        running.address(Surface::Rest).unwrap()
    );
    let call = |id: &str| json!({"type": "tool_call", "id": id, "name": "echo", "input": {}});
    let result = |id: &str| json!({"type": "tool_result", "call_id": id, "parts": []});
    let user = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
    let cases = [
        (
            json!([user, {"role": "tool", "content": [result("x")]}]),
            "messages[1]: tool result for \"x\" answers no call",
        ),
        (
            json!([user, {"role": "assistant", "content": [call("a")]}]),
            "tool call(s) [\"a\"]",
        ),
        (
            json!([user, {"role": "assistant", "content": [call("a")]}, {"role": "tool", "content": [result("a")]},
                   {"role": "assistant", "content": [call("a")]}, {"role": "tool", "content": [result("a")]}]),
            "messages[3]: tool call id \"a\" is used twice",
        ),
        (
            json!([user, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]),
            "ends with an assistant message",
        ),
    ];
    for (messages, expected) in cases {
        let response = http()
            .post(&url)
            .json(&json!({"messages": messages}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        let body: Value = response.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{message}");
    }
    assert_eq!(model.started.load(Ordering::SeqCst), 0);
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_bounded_by_default() {
    let (model, agent) = gated();
    let running: Running = Serve::new()
        .agent(agent)
        .rest(local())
        .concurrency(1)
        .shutdown_grace(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let url = format!(
        "http://{}/v1/agents/gated",
        running.address(Surface::Rest).unwrap()
    );
    let post = |url: String| async move { http().post(url).json(&json!({"prompt": "go"})).send().await };
    let mut waiting = vec![tokio::spawn(post(url.clone()))];
    until("one run at the model", || {
        model.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    for _ in 0..DEFAULT_QUEUE {
        waiting.push(tokio::spawn(post(url.clone())));
    }
    until("the queue is full", || running.queued() == DEFAULT_QUEUE).await;
    let refused = post(url.clone()).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    running.shutdown().await;
    for w in waiting {
        let _ = w.await;
    }
}

/// A store whose first write of a cancellation waits until the run has
/// ended: the run's own end (its cancellation token fired first) lands
/// between the cancel's read and its write, as it may on a loaded machine.
#[derive(Debug)]
struct CancelLands {
    inner: Arc<dyn loopwright_store::Store>,
    held: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl loopwright_store::ConversationStore for CancelLands {
    async fn load_conversation(
        &self,
        id: &str,
    ) -> Result<Option<loopwright_store::StoredConversation>, loopwright_store::StoreError> {
        self.inner.load_conversation(id).await
    }
    async fn append_turn(
        &self,
        id: &str,
        expected_version: u64,
        messages: &[loopwright_core::Message],
    ) -> Result<u64, loopwright_store::StoreError> {
        self.inner.append_turn(id, expected_version, messages).await
    }
    async fn delete_conversation(&self, id: &str) -> Result<bool, loopwright_store::StoreError> {
        self.inner.delete_conversation(id).await
    }
    async fn list_conversations(
        &self,
        limit: usize,
    ) -> Result<Vec<loopwright_store::ConversationSummary>, loopwright_store::StoreError> {
        self.inner.list_conversations(limit).await
    }
}

#[async_trait::async_trait]
impl loopwright_store::RunStore for CancelLands {
    async fn create_run(
        &self,
        run: &loopwright_store::RunRecord,
    ) -> Result<(), loopwright_store::StoreError> {
        self.inner.create_run(run).await
    }
    async fn load_run(
        &self,
        id: &str,
    ) -> Result<Option<loopwright_store::RunRecord>, loopwright_store::StoreError> {
        self.inner.load_run(id).await
    }
    async fn update_run(
        &self,
        run: &loopwright_store::RunRecord,
        expected_version: u64,
    ) -> Result<u64, loopwright_store::StoreError> {
        let cancelling = run
            .state
            .as_ref()
            .is_some_and(|state| state["cancel_requested"] == json!(true));
        if cancelling && !self.held.swap(true, Ordering::SeqCst) {
            tokio::time::timeout(HANG_GUARD, async {
                while !self
                    .inner
                    .load_run(&run.id)
                    .await
                    .unwrap()
                    .is_some_and(|record| record.status.is_finished())
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .expect("the run never ended before its cancellation was written");
        }
        self.inner.update_run(run, expected_version).await
    }
    async fn list_runs(
        &self,
        status: Option<loopwright_store::RunStatus>,
        limit: usize,
    ) -> Result<Vec<loopwright_store::RunRecord>, loopwright_store::StoreError> {
        self.inner.list_runs(status, limit).await
    }
    async fn session_runs(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<loopwright_store::RunRecord>, loopwright_store::StoreError> {
        self.inner.session_runs(session, limit).await
    }
    async fn delete_run(&self, id: &str) -> Result<bool, loopwright_store::StoreError> {
        self.inner.delete_run(id).await
    }
    async fn expire_runs(&self, cutoff: i64, limit: usize) -> Result<u64, loopwright_store::StoreError> {
        self.inner.expire_runs(cutoff, limit).await
    }
}

#[async_trait::async_trait]
impl loopwright_store::ChainStore for CancelLands {
    async fn put_turn(
        &self,
        id: &str,
        previous: Option<&str>,
        messages: &[loopwright_core::Message],
    ) -> Result<u64, loopwright_store::StoreError> {
        self.inner.put_turn(id, previous, messages).await
    }
    async fn load_chain(
        &self,
        id: &str,
        max_turns: u64,
    ) -> Result<Option<loopwright_store::StoredChain>, loopwright_store::StoreError> {
        self.inner.load_chain(id, max_turns).await
    }
    async fn release_turn(&self, id: &str) -> Result<bool, loopwright_store::StoreError> {
        self.inner.release_turn(id).await
    }
    async fn expire_turns(&self, cutoff: i64) -> Result<u64, loopwright_store::StoreError> {
        self.inner.expire_turns(cutoff).await
    }
}

#[async_trait::async_trait]
impl loopwright_store::EventLog for CancelLands {
    async fn append_events(
        &self,
        run_id: &str,
        events: &[(u64, Value)],
    ) -> Result<(), loopwright_store::StoreError> {
        self.inner.append_events(run_id, events).await
    }
    async fn read_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, Value)>, loopwright_store::StoreError> {
        self.inner.read_events(run_id, after, limit).await
    }
    async fn subscribe_events(
        &self,
        run_id: &str,
    ) -> Result<loopwright_store::EventSubscription, loopwright_store::StoreError> {
        self.inner.subscribe_events(run_id).await
    }
}

/// A cancel whose run ends (cancelled) before the cancel's own write is
/// answered with the cancelled run, not refused as already ended: the
/// official openai client's `responses.cancel` got that 409 on a loaded CI
/// machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_overtaken_by_the_runs_end_answers_the_cancelled_run() {
    let (model, agent) = gated();
    let store = Arc::new(CancelLands {
        inner: loopwright_store::open("memory:").await.unwrap(),
        held: Default::default(),
    });
    let running = Serve::new()
        .agent(agent)
        .rest(local())
        .store(store.clone())
        .start()
        .await
        .unwrap();
    let base = format!("http://{}", running.address(Surface::Rest).unwrap());
    let (_, started) = post(&format!("{base}/v1/agents/gated/runs"), json!({"prompt": "go"})).await;
    let id = started["id"].as_str().unwrap().to_owned();
    until("the model is called", || {
        model.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let cancel = format!("{base}/v1/runs/{id}/cancel");
    let (status, view) = post(&cancel, json!({})).await;
    assert!(
        store.held.load(Ordering::SeqCst),
        "the cancel's write was not held"
    );
    assert_eq!(
        (status, view["status"].as_str()),
        (200, Some("cancelled")),
        "{view}"
    );
    // Cancelled again, it has ended: 409.
    assert_eq!(post(&cancel, json!({})).await.0, 409);
    running.shutdown().await;
}
