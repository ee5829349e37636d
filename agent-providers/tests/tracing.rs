//! Requests and responses are traced with secrets redacted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use loopwright_core::{LanguageModel, model::ModelRequest};
use loopwright_providers::{AnthropicModel, GeminiModel, OpenAiChatModel};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_never_reach_the_logs() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // With one dispatcher registered, tracing-core asks the registering
    // thread's default, so a callsite another test's thread hits first is
    // cached "never" for this subscriber. A second live dispatcher makes it
    // ask every registered one.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());

    let server = serve(vec![
        Reply::status(400, r#"{"error":{"message":"bad"}}"#),
        Reply::status(400, r#"{"error":{"message":"bad"}}"#),
        Reply::status(400, r#"{"error":{"message":"bad"}}"#),
    ])
    .await;
    let models: Vec<Arc<dyn LanguageModel>> = vec![
        Arc::new(
            OpenAiChatModel::openai("m")
                .base_url(server.url())
                .api_key("sk-SECRET-1")
                .header("api-key", "SECRET-2")
                .header("X-Title", "visible-title")
                .build()
                .unwrap(),
        ),
        Arc::new(
            AnthropicModel::builder("m")
                .base_url(server.url())
                .api_key("SECRET-3")
                .build()
                .unwrap(),
        ),
        Arc::new(
            GeminiModel::builder("m")
                .base_url(server.url())
                .api_key("SECRET-4")
                .build()
                .unwrap(),
        ),
    ];
    for model in models {
        assert!(model.stream(ModelRequest::new(vec![])).await.is_err());
    }
    let logs = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("visible-title"), "headers are traced: {logs}");
    assert!(logs.contains("[redacted]"));
    for secret in ["SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4"] {
        assert!(!logs.contains(secret), "{secret} leaked: {logs}");
    }
    // The server did receive the keys.
    let received = server.received();
    assert_eq!(received[0].headers["authorization"], "Bearer sk-SECRET-1");
    assert_eq!(received[1].headers["x-api-key"], "SECRET-3");
    assert_eq!(received[2].headers["x-goog-api-key"], "SECRET-4");
}
