//! Shared transport behaviour, checked for every provider against a local
//! server: 401, 429 then success, a stalled stream, a malformed chunk,
//! cancellation, and a server that never answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use futures::StreamExt;
use loopwright_core::{LanguageModel, ModelError, model::ModelEvent, model::ModelRequest};
use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};
use serde_json::json;

/// Short enough for a quick test, long enough never to fire on a live server.
const STALL: Duration = Duration::from_millis(300);

struct Case {
    name: &'static str,
    build: fn(&str) -> Arc<dyn LanguageModel>,
    /// A complete, valid stream.
    ok: fn() -> Vec<Bytes>,
    /// One valid chunk that does not end the stream.
    partial: fn() -> Vec<Bytes>,
    /// A chunk that cannot be parsed.
    malformed: &'static str,
}

fn sse_lines(values: &[serde_json::Value], named: bool) -> Vec<Bytes> {
    frames(
        &values.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        named,
        "\n",
    )
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "openai-chat",
            build: |url| {
                Arc::new(
                    OpenAiChatModel::openai("m")
                        .base_url(url)
                        .api_key("k")
                        .inactivity_timeout(STALL)
                        .build()
                        .unwrap(),
                )
            },
            ok: || {
                let mut c = sse_lines(
                    &[
                        json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
                    ],
                    false,
                );
                c.push(Bytes::from("data: [DONE]\n\n"));
                c
            },
            partial: || {
                sse_lines(
                    &[json!({"choices": [{"index": 0, "delta": {"content": "ok"}}]})],
                    false,
                )
            },
            malformed: "data: {oops\n\n",
        },
        Case {
            name: "openai-responses",
            build: |url| {
                Arc::new(
                    OpenAiResponsesModel::builder("m")
                        .base_url(url)
                        .api_key("k")
                        .inactivity_timeout(STALL)
                        .build()
                        .unwrap(),
                )
            },
            ok: || {
                sse_lines(
                    &[
                        json!({"type": "response.output_text.delta", "delta": "ok"}),
                        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
                    ],
                    true,
                )
            },
            partial: || {
                sse_lines(
                    &[json!({"type": "response.output_text.delta", "delta": "ok"})],
                    true,
                )
            },
            malformed: "event: response.output_text.delta\ndata: {oops\n\n",
        },
        Case {
            name: "anthropic",
            build: |url| {
                Arc::new(
                    AnthropicModel::builder("m")
                        .base_url(url)
                        .api_key("k")
                        .inactivity_timeout(STALL)
                        .build()
                        .unwrap(),
                )
            },
            ok: || {
                sse_lines(
                    &[
                        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
                        json!({"type": "content_block_stop", "index": 0}),
                        json!({"type": "message_stop"}),
                    ],
                    true,
                )
            },
            partial: || {
                sse_lines(
                    &[
                        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
                    ],
                    true,
                )
            },
            malformed: "event: message_start\ndata: {oops\n\n",
        },
        Case {
            name: "gemini",
            build: |url| {
                Arc::new(
                    GeminiModel::builder("m")
                        .base_url(url)
                        .api_key("k")
                        .inactivity_timeout(STALL)
                        .build()
                        .unwrap(),
                )
            },
            ok: || {
                sse_lines(
                    &[
                        json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}),
                    ],
                    false,
                )
            },
            partial: || {
                sse_lines(
                    &[json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}}]})],
                    false,
                )
            },
            malformed: "data: {oops\r\n\r\n",
        },
        Case {
            name: "ollama",
            build: |url| {
                Arc::new(
                    OllamaModel::builder("m")
                        .base_url(url)
                        .inactivity_timeout(STALL)
                        .build()
                        .unwrap(),
                )
            },
            ok: || {
                vec![Bytes::from(format!(
                    "{}\n",
                    json!({"message": {"content": "ok"}, "done": true})
                ))]
            },
            partial: || {
                vec![Bytes::from(format!(
                    "{}\n",
                    json!({"message": {"content": "ok"}, "done": false})
                ))]
            },
            malformed: "{oops\n",
        },
    ]
}

#[tokio::test]
async fn every_provider_maps_401_to_auth() {
    for case in cases() {
        let server = serve(vec![Reply::status(401, r#"{"error":{"message":"bad key"}}"#)]).await;
        let err = (case.build)(&server.url())
            .stream(ModelRequest::new(vec![]))
            .await
            .err();
        assert!(
            matches!(err, Some(ModelError::Authentication { ref message, .. }) if message == "bad key"),
            "{}: {err:?}",
            case.name
        );
        assert_eq!(server.received().len(), 1, "{}: 401 is not retried", case.name);
    }
}

#[tokio::test]
async fn every_provider_retries_429_then_streams() {
    for case in cases() {
        let server = serve(vec![
            Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after-ms", "5"),
            Reply::ok((case.ok)()),
        ])
        .await;
        let stream = (case.build)(&server.url())
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap();
        let (events, err) = collect(stream).await;
        assert!(err.is_none(), "{}: {err:?}", case.name);
        assert_eq!(text(&events), "ok", "{}", case.name);
        finish(&events);
        assert_eq!(server.received().len(), 2, "{}", case.name);
    }
}

#[tokio::test]
async fn every_provider_times_out_on_a_stalled_stream() {
    for case in cases() {
        let server = serve(vec![Reply::ok((case.partial)()).stalled()]).await;
        let stream = (case.build)(&server.url())
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap();
        let (events, err) = collect(stream).await;
        assert_eq!(text(&events), "ok", "{}", case.name);
        assert!(
            matches!(err, Some(ModelError::Timeout { after: d }) if d == STALL),
            "{}: {err:?}",
            case.name
        );
    }
}

#[tokio::test]
async fn every_provider_rejects_a_malformed_chunk_with_a_snippet() {
    for case in cases() {
        let server = serve(vec![Reply::ok(vec![Bytes::from(case.malformed)])]).await;
        let stream = (case.build)(&server.url())
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap();
        let (_, err) = collect(stream).await;
        assert!(
            matches!(err, Some(ModelError::InvalidResponse { ref snippet, .. }) if snippet.contains("{oops")),
            "{}: {err:?}",
            case.name
        );
    }
}

#[tokio::test]
async fn every_provider_ends_with_an_error_on_early_eof() {
    for case in cases() {
        let server = serve(vec![Reply::ok((case.partial)())]).await;
        let stream = (case.build)(&server.url())
            .stream(ModelRequest::new(vec![]))
            .await
            .unwrap();
        let (events, err) = collect(stream).await;
        assert!(
            !events.iter().any(|e| matches!(e, ModelEvent::Finish { .. })),
            "{}",
            case.name
        );
        assert!(
            matches!(err, Some(ModelError::StreamCut { .. })),
            "{}: {err:?}",
            case.name
        );
    }
}

#[tokio::test]
async fn every_provider_stops_on_cancellation() {
    for case in cases() {
        let server = serve(vec![Reply::ok((case.partial)()).stalled()]).await;
        let model = (case.build)(&server.url());
        let request = ModelRequest::new(vec![]);
        let token = request.cancellation.clone();
        let mut stream = model.stream(request).await.unwrap();
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(
            first,
            ModelEvent::TextDelta { text: "ok".into() },
            "{}",
            case.name
        );
        token.cancel();
        let (_, err) = collect(stream).await;
        assert!(
            matches!(err, Some(ModelError::Cancelled)),
            "{}: {err:?}",
            case.name
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accept connections and never write a byte.
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let model = OpenAiChatModel::openai("m")
        .base_url(&url)
        .inactivity_timeout(STALL)
        .build()
        .unwrap();
    let err = tokio::time::timeout(HANG_GUARD, model.stream(ModelRequest::new(vec![])))
        .await
        .unwrap()
        .err();
    assert!(matches!(err, Some(ModelError::Timeout { after: _ })), "{err:?}");
    hold.abort();
}
