//! Legacy HTTP+SSE transport (protocol 2024-11-05; rmcp removed it),
//! implemented on rmcp's `Transport` trait.
//!
//! `GET` the SSE URL, wait for the `endpoint` event, then `POST` each
//! message to the endpoint it names (resolved against the SSE URL: it is
//! `/message?sessionId=` in TypeScript servers, `/messages/?session_id=` in
//! Python ones) and read every response from the event stream. Events with
//! an empty `data:` are skipped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;

use crate::config::RemoteConfig;
use crate::error::McpError;

/// Why sending over the legacy SSE transport failed.
///
/// ```
/// # #[cfg(feature = "sse")] {
/// fn may_have_run(e: &loopwright_mcp::SseSendError) -> bool {
///     e.reached_server() // false only when the POST never connected
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[error("legacy SSE transport: {message}")]
pub struct SseSendError {
    message: String,
    reached_server: bool,
}

impl SseSendError {
    /// Whether the message may have reached the server: false only when it
    /// was never sent (it could not be encoded, or no connection was made),
    /// so sending it again cannot run anything twice.
    pub fn reached_server(&self) -> bool {
        self.reached_server
    }
}

type MessageStream = Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleClient>> + Send>>;

/// An open legacy SSE session, as an rmcp [`Transport`].
pub(crate) struct SseTransport {
    events: MessageStream,
    target: Arc<PostTarget>,
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseSendError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let target = self.target.clone();
        async move { post_message(&target, item).await }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.events.next()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        // Nothing to flush: the event stream closes when the transport drops.
        std::future::ready(Ok(()))
    }
}

/// Open the event stream and wait for the endpoint.
pub(crate) async fn open(server: &str, remote: &RemoteConfig) -> Result<SseTransport, McpError> {
    let fail = |message: String| McpError::Connect {
        server: server.to_string(),
        message,
    };
    let headers: HeaderMap = crate::http::header_map(server, remote)?.into_iter().collect();
    let base = reqwest::Url::parse(&remote.url).map_err(|e| fail(format!("bad url {}: {e}", remote.url)))?;
    let client = crate::http::client();
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| fail(format!("GET {base}: {}", loopwright_types::util::error_chain(&e))))?;
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let target = event.data.unwrap_or_default();
                break base
                    .join(target.trim())
                    .map_err(|e| fail(format!("bad endpoint `{target}`: {e}")))?;
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(fail(format!("event stream: {e}"))),
            None => return Err(fail("event stream ended before the endpoint event".into())),
        }
    };
    let stream = futures::stream::unfold(events, next_message);
    Ok(SseTransport {
        events: Box::pin(stream),
        target: Arc::new(PostTarget {
            client,
            endpoint,
            headers,
        }),
    })
}

/// Where messages are POSTed.
struct PostTarget {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
}

/// POST one message to the session's endpoint.
async fn post_message(
    target: &PostTarget,
    message: TxJsonRpcMessage<RoleClient>,
) -> Result<(), SseSendError> {
    let body = serde_json::to_vec(&message).map_err(|e| SseSendError {
        message: e.to_string(),
        reached_server: false,
    })?;
    target
        .client
        .post(target.endpoint.clone())
        .headers(target.headers.clone())
        .header(CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| SseSendError {
            message: format!("POST {}: {e}", target.endpoint),
            reached_server: !e.is_connect(),
        })?;
    Ok(())
}

/// The next JSON-RPC message on the event stream; `None` when it ends or fails.
async fn next_message<S>(mut events: S) -> Option<(RxJsonRpcMessage<RoleClient>, S)>
where
    S: Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Unpin,
{
    loop {
        let sse = events.next().await?.ok()?;
        if sse.event.as_deref().is_some_and(|e| e != "message") {
            continue;
        }
        let data = sse.data.unwrap_or_default();
        if data.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&data) {
            Ok(message) => return Some((message, events)),
            Err(e) => tracing::warn!(error = %e, "unreadable message on the SSE stream"),
        }
    }
}
