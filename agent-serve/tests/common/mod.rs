//! Helpers shared by the integration tests: an HTTP client, a model whose
//! answers wait until the test releases them, waiting for a condition.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use loopwright_core::{
    LanguageModel, ModelError, Usage, model::FinishReason, model::ModelEvent, model::ModelRequest,
    model::ModelStream,
};
use serde_json::Value;
use tokio::sync::Semaphore;

/// A plain HTTP client, as any client of a surface (reqwest is built with no
/// bundled TLS provider: ring is installed first).
pub fn http() -> reqwest::Client {
    install_tls();
    reqwest::Client::new()
}

/// Make ring the process's rustls provider (before building a client).
pub fn install_tls() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// POST `body` as JSON to `url`: the status and the answer (JSON, or its
/// text as a string).
pub async fn post(url: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let response = http().post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
    )
}

/// Upper bound used only to detect a hang.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// A model whose every answer waits for one permit of `release`.
pub struct GatedModel {
    pub release: Arc<Semaphore>,
    /// Model calls started.
    pub started: AtomicUsize,
    /// Model calls going now.
    pub in_flight: Arc<AtomicUsize>,
    /// The most ever going at once.
    pub peak: Arc<AtomicUsize>,
    /// Calls whose stream was dropped before it answered.
    pub dropped: Arc<AtomicUsize>,
}

impl GatedModel {
    pub fn new() -> Self {
        Self {
            release: Arc::new(Semaphore::new(0)),
            started: AtomicUsize::new(0),
            in_flight: Arc::default(),
            peak: Arc::default(),
            dropped: Arc::default(),
        }
    }
}

/// Counts a call out when its stream goes, answered or not.
struct Going {
    in_flight: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    answered: bool,
}

impl Drop for Going {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !self.answered {
            self.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl LanguageModel for GatedModel {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "gated"
    }
    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let mut going = Going {
            in_flight: self.in_flight.clone(),
            dropped: self.dropped.clone(),
            answered: false,
        };
        let release = self.release.clone();
        let answer = async move {
            release.acquire().await.unwrap().forget();
            going.answered = true;
            drop(going);
            futures::stream::iter(vec![
                Ok(ModelEvent::TextDelta { text: "done".into() }),
                Ok(ModelEvent::Finish {
                    reason: FinishReason::Stop,
                    usage: Usage::new(10, 1),
                }),
            ])
        };
        Ok(futures::stream::once(answer).flatten().boxed())
    }
}

/// Wait until `check` holds (a hang is a failure).
pub async fn until(what: &str, check: impl Fn() -> bool) {
    tokio::time::timeout(HANG_GUARD, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never: {what}"));
}

/// An MCP exchange over streamable HTTP, as a bare client writes it.
pub struct Mcp {
    url: String,
    session: Option<String>,
}

impl Mcp {
    pub fn new(addr: std::net::SocketAddr) -> Self {
        Self {
            url: format!("http://{addr}/mcp"),
            session: None,
        }
    }

    /// POST `message`; the status and the JSON-RPC messages answered (JSON
    /// or server-sent events).
    pub async fn post(&self, message: Value) -> (u16, Vec<Value>, Option<String>) {
        let mut request = http()
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        let messages = if text.trim_start().starts_with('{') {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d.trim()).unwrap())
                .collect()
        };
        (status, messages, session)
    }

    pub async fn initialize(&mut self) -> u16 {
        let (status, _, session) = self
            .post(serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
            .await;
        if status == 200 {
            self.session = session;
            let (status, _, _) = self
                .post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            assert_eq!(status, 202);
        }
        status
    }

    /// The response to request `id` among `messages`.
    pub fn response(messages: &[Value], id: i64) -> Value {
        messages
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no response to {id}: {messages:?}"))
    }
}

/// An OpenAI Chat Completions model `id` on the test model server `server`.
pub fn openai_on(
    server: &loopwright_test_support::model_server::ModelServer,
    id: &str,
) -> Arc<dyn LanguageModel> {
    install_tls();
    Arc::new(
        loopwright_providers::OpenAiChatModel::openai(id)
            .base_url(server.base_url())
            .api_key("sk-test")
            .build()
            .unwrap(),
    )
}

/// Run a third-party client (`program` on `script`, with `args`) under
/// the hang guard; what it printed on standard output, as JSON. It must
/// succeed (its standard error is the failure's message).
pub async fn client_json(
    program: &std::path::Path,
    script: &std::path::Path,
    args: &[&str],
    patience: Duration,
) -> Value {
    let run = tokio::process::Command::new(program)
        .arg(script)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(patience, run)
        .await
        .unwrap_or_else(|_| panic!("{} hung", script.display()))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{} failed: {stderr}", script.display());
    serde_json::from_slice(&out.stdout).unwrap()
}
