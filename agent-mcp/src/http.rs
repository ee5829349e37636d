//! Streamable HTTP: rmcp's reqwest client transport with the configured
//! headers (session re-initialisation, `retry:` and `Last-Event-ID`
//! resumption are rmcp's), over a [`LenientClient`].
//!
//! rmcp skips undecodable events on established streams but fails the
//! handshake on one; the wrapper makes every stream behave alike: an event
//! whose `data:` is not JSON loses its data (keeping its `id:` and `retry:`,
//! which resumption needs) and is skipped like an empty one.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use crate::config::RemoteConfig;
use crate::error::McpError;

/// Attempts to resume an interrupted event stream (with `Last-Event-ID`)
/// before the requests waiting on it fail: rmcp retries forever by default,
/// which turns a dead server into a hung call.
pub const SSE_RESUME_ATTEMPTS: usize = 3;
/// First wait before resuming (doubling after each attempt); a server's
/// own `retry:` takes precedence.
pub const SSE_RESUME_BACKOFF: Duration = Duration::from_millis(250);
/// Longest single wait before resuming.
pub const SSE_RESUME_MAX_DELAY: Duration = Duration::from_secs(5);

/// The HTTP client of a session: rmcp's OAuth client (see
/// [`oauth::session`](crate::oauth::session)) around the lenient client.
#[cfg(feature = "oauth")]
pub(crate) type SessionClient = rmcp::transport::auth::AuthClient<LenientClient>;
/// The HTTP client of a session.
#[cfg(not(feature = "oauth"))]
pub(crate) type SessionClient = LenientClient;

/// Build the transport for a resolved remote config over `client`, with
/// `bearer` sent as the `Authorization` of every request when given.
pub(crate) fn transport(
    server: &str,
    remote: &RemoteConfig,
    client: SessionClient,
    bearer: Option<String>,
) -> Result<StreamableHttpClientTransport<SessionClient>, McpError> {
    let mut resume = ExponentialBackoff::default();
    resume.max_times = Some(SSE_RESUME_ATTEMPTS);
    resume.base_duration = SSE_RESUME_BACKOFF;
    resume.max_delay = Some(SSE_RESUME_MAX_DELAY);
    let mut config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(header_map(server, remote)?)
        .reinit_on_expired_session(true);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    config.retry_config = Arc::new(resume);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// A reqwest client, once ring is the process's rustls crypto provider.
///
/// reqwest is built without a bundled provider (aws-lc-rs would need a C
/// toolchain) and panics when a client is built in a process without one;
/// a provider the application installed first is kept.
pub(crate) fn client() -> reqwest::Client {
    ensure_crypto_provider();
    reqwest::Client::new()
}

/// Install ring as the process's rustls crypto provider unless one is
/// (before any reqwest client is built, rmcp's OAuth clients included).
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race: either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The configured headers, checked.
pub(crate) fn header_map(
    server: &str,
    remote: &RemoteConfig,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    let mut headers = HashMap::new();
    for (key, value) in &remote.headers {
        let bad = |what: &str| McpError::Config {
            server: server.to_string(),
            message: format!("header `{key}`: invalid {what}"),
        };
        let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|_| bad("name"))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

type SseEvents = BoxStream<'static, Result<Sse, SseError>>;

/// rmcp's reqwest client with undecodable SSE events blanked (see the
/// module docs).
#[derive(Clone)]
pub(crate) struct LenientClient(pub(crate) reqwest::Client);

/// Blank the data of a message event that is not JSON.
fn blank_undecodable(mut sse: Sse) -> Sse {
    let is_message = matches!(sse.event.as_deref(), None | Some("") | Some("message"));
    let undecodable = sse.data.as_deref().is_some_and(|data| {
        !data.trim().is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(data).is_err()
    });
    if is_message && undecodable {
        tracing::warn!(data = ?sse.data, "non-JSON event on an MCP stream skipped");
        sse.data = None;
    }
    sse
}

fn lenient(events: SseEvents) -> SseEvents {
    events.map(|event| event.map(blank_undecodable)).boxed()
}

/// A POST's answer with its event stream (if any) made lenient.
fn lenient_response(response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(lenient(events), session)
        }
        other => other,
    }
}

impl StreamableHttpClient for LenientClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
            .map(lenient_response)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(lenient_response)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.0
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
            .map(lenient_response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseEvents, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map(lenient)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseEvents, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(lenient)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: Option<&str>, event: Option<&str>) -> Sse {
        Sse {
            event: event.map(str::to_string),
            data: data.map(str::to_string),
            id: Some("7".into()),
            retry: Some(500),
        }
    }

    #[test]
    fn undecodable_message_data_is_blanked_and_the_rest_kept() {
        let blanked = blank_undecodable(event(Some("not json"), None));
        assert_eq!(
            (blanked.data, blanked.id.as_deref(), blanked.retry),
            (None, Some("7"), Some(500))
        );
        let json = blank_undecodable(event(Some(r#"{"jsonrpc":"2.0"}"#), Some("message")));
        assert!(json.data.is_some());
        let control = blank_undecodable(event(Some("/endpoint"), Some("endpoint")));
        assert_eq!(control.data.as_deref(), Some("/endpoint"));
    }
}
