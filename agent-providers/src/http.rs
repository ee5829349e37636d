//! The shared HTTP transport: headers, redacted tracing, retries before the
//! first byte, and the guarded body stream (inactivity timeout, cancellation).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use loopwright_types::{CancellationToken, ModelError};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::body::SizeHint;
use crate::error::{body_broke, network, status_error};

/// Retries after the first attempt (a transient 429/5xx or connection error
/// usually clears within two tries; more belongs to a fallback layer).
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// First backoff wait, doubled each retry (short enough to be unnoticed in
/// an interactive agent).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait honoured from a `retry-after` header (beyond a minute the
/// caller is better served by an error it can act on).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Longest silence between two chunks of a stream (reasoning models can
/// think for a long time before the first token).
pub const DEFAULT_INACTIVITY_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a TCP/TLS connect may take (a reachable server answers far sooner).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest error body read to build a message (error bodies are small; this
/// bounds a misbehaving server).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Header names whose values never reach a log.
pub const REDACTED_HEADERS: [&str; 5] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "proxy-authorization",
];

/// Retry and timeout settings shared by every provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// Retries after the first attempt, only before any byte of a response
    /// body was consumed.
    pub max_retries: u32,
    /// First backoff wait, doubled on each retry.
    pub initial_backoff: Duration,
    /// Longest silence between chunks before the stream fails with a timeout.
    pub inactivity_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            max_retries: DEFAULT_MAX_RETRIES,
            initial_backoff: DEFAULT_INITIAL_BACKOFF,
            inactivity_timeout: DEFAULT_INACTIVITY_TIMEOUT,
        }
    }
}

/// A reqwest client with the default settings used by every provider.
///
/// TLS is rustls with ring: [`install_tls_provider`] runs first, so this
/// works in a process that installed no crypto provider.
///
/// ```
/// let client = loopwright_providers::default_client();
/// # drop(client);
/// ```
pub fn default_client() -> reqwest::Client {
    client_builder()
        .connect_timeout(DEFAULT_CONNECT_TIMEOUT)
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// `reqwest::Client::builder()` after [`install_tls_provider`].
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}

/// Make ring the process's rustls crypto provider, unless one is installed
/// already.
///
/// reqwest is built without a bundled provider (so no C toolchain is needed,
/// as aws-lc-rs would), and panics when a client is built in a process
/// without one. Every client this crate builds calls this first; an
/// application that wants another provider installs it before building a
/// model. Building your own `reqwest::Client` to pass to a provider, call
/// this (or install a provider) first.
///
/// ```
/// loopwright_providers::install_tls_provider();
/// let client = reqwest::Client::new();
/// # drop(client);
/// ```
pub fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race: either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The header map rendered for logs, with secrets replaced.
pub fn redacted(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if REDACTED_HEADERS.contains(&name.as_str()) {
                "[redacted]".to_owned()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name.as_str().to_owned(), shown)
        })
        .collect()
}

/// Build a header map from name/value pairs, as an invalid-request error
/// without a status when one is malformed.
pub(crate) fn header_map(pairs: &[(String, String)]) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let bad = |what: &str| ModelError::invalid_request(None, format!("invalid header {what}: {name}"));
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        if REDACTED_HEADERS.contains(&name.as_str()) {
            value.set_sensitive(true);
        }
        map.insert(name, value);
    }
    Ok(map)
}

/// One provider's connection: client, headers and options.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub client: reqwest::Client,
    pub headers: HeaderMap,
    pub options: HttpOptions,
    /// The size of this provider's last request body (see [`SizeHint`]).
    pub body_size: SizeHint,
}

impl Transport {
    /// POST the request body (serialised JSON) and return the response's
    /// bytes, guarded by the inactivity timeout and the request's
    /// cancellation token.
    pub async fn open(
        &self,
        url: &str,
        body: Bytes,
        request: &loopwright_types::ModelRequest,
    ) -> Result<BoxStream<'static, Result<Bytes, ModelError>>, ModelError> {
        self.open_with(url, body, request, &[]).await
    }

    /// [`Self::open`] with `extra` headers for this request (a beta the
    /// request needs); a value for a header the transport already sends is
    /// joined to it with a comma.
    pub async fn open_with(
        &self,
        url: &str,
        body: Bytes,
        request: &loopwright_types::ModelRequest,
        extra: &[(&str, &str)],
    ) -> Result<BoxStream<'static, Result<Bytes, ModelError>>, ModelError> {
        let response = self.post(url, body, &request.cancellation, extra).await?;
        Ok(guarded_bytes(
            response,
            self.options.inactivity_timeout,
            request.cancellation.clone(),
        ))
    }

    /// POST `payload` (serialised JSON) to `url`, retrying transient
    /// failures before any byte of the response body is consumed (each
    /// attempt shares the same bytes). Returns a response with a 2xx status.
    /// `extra` headers are added as [`Self::open_with`] says.
    /// Waiting for the response head counts against the inactivity timeout.
    pub async fn post(
        &self,
        url: &str,
        payload: Bytes,
        cancel: &CancellationToken,
        extra: &[(&str, &str)],
    ) -> Result<reqwest::Response, ModelError> {
        let mut headers = self.headers.clone();
        for (name, value) in extra {
            let joined = match headers.get(*name).and_then(|v| v.to_str().ok()) {
                Some(existing) if !existing.split(',').any(|v| v.trim() == *value) => {
                    format!("{existing},{value}")
                }
                Some(existing) => existing.to_owned(),
                None => (*value).to_owned(),
            };
            let pair = [((*name).to_owned(), joined)];
            headers.extend(header_map(&pair)?);
        }
        tracing::debug!(target: "loopwright_providers::http", url, headers = ?redacted(&headers), "request");
        tracing::trace!(target: "loopwright_providers::http", body = %String::from_utf8_lossy(&payload), "request body");
        let mut attempt = 0u32;
        loop {
            let send = self
                .client
                .post(url)
                .headers(headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(payload.clone())
                .send();
            let inactivity = self.options.inactivity_timeout;
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                r = tokio::time::timeout(inactivity, send) => r.map_err(|_| ModelError::timeout(inactivity))?,
            };
            let error = match result {
                Ok(response) if response.status().is_success() => {
                    tracing::debug!(target: "loopwright_providers::http", status = response.status().as_u16(), headers = ?redacted(response.headers()), "response");
                    return Ok(response);
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let headers = response.headers().clone();
                    let body = read_limited(response, cancel).await?;
                    tracing::debug!(target: "loopwright_providers::http", status, body = %crate::error::snippet(&body), "error response");
                    status_error(status, &headers, &body)
                }
                Err(e) => network(e),
            };
            if attempt >= self.options.max_retries || !should_retry(&error) {
                return Err(error);
            }
            let wait = backoff(&error, attempt, self.options.initial_backoff);
            attempt += 1;
            tracing::debug!(target: "loopwright_providers::http", attempt, wait_ms = wait.as_millis() as u64, error = %error, "retrying");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

/// The wait before retry number `attempt + 1`: the provider's
/// `retry-after` (capped at [`MAX_RETRY_AFTER`]), else `initial * 2^attempt`.
fn backoff(error: &ModelError, attempt: u32, initial: Duration) -> Duration {
    match error {
        ModelError::RateLimited {
            retry_after: Some(d), ..
        } => (*d).min(MAX_RETRY_AFTER),
        _ => initial
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(MAX_RETRY_AFTER),
    }
}

/// Errors worth another attempt before any byte was consumed.
fn should_retry(error: &ModelError) -> bool {
    match error {
        ModelError::RateLimited { .. } | ModelError::Network { .. } => true,
        ModelError::Server {
            status: Some(status), ..
        } => *status >= 500 || *status == 408,
        _ => false,
    }
}

/// Read at most [`MAX_ERROR_BODY`] bytes of an error response as text.
async fn read_limited(response: reqwest::Response, cancel: &CancellationToken) -> Result<String, ModelError> {
    let mut stream = response.bytes_stream();
    let mut buf = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
            n = stream.next() => n,
        };
        match next {
            Some(Ok(chunk)) => {
                buf.extend_from_slice(&chunk);
                if buf.len() >= MAX_ERROR_BODY {
                    buf.truncate(MAX_ERROR_BODY);
                    break;
                }
            }
            Some(Err(e)) => return Err(body_broke(e)),
            None => break,
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The response body as a stream of chunks that fails with
/// [`ModelError::Timeout`] after `inactivity` without a chunk and with
/// [`ModelError::Cancelled`] when `cancel` fires; dropping it aborts the
/// request.
pub(crate) fn guarded_bytes(
    response: reqwest::Response,
    inactivity: Duration,
    cancel: CancellationToken,
) -> BoxStream<'static, Result<Bytes, ModelError>> {
    let inner = response.bytes_stream().boxed();
    futures::stream::unfold(Some((inner, cancel)), move |state| async move {
        let (mut inner, cancel) = state?;
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Some((Err(ModelError::Cancelled), None)),
            r = tokio::time::timeout(inactivity, inner.next()) => r,
        };
        match next {
            Err(_) => Some((Err(ModelError::timeout(inactivity)), None)),
            Ok(None) => None,
            Ok(Some(Ok(bytes))) => {
                tracing::trace!(target: "loopwright_providers::http", chunk = %String::from_utf8_lossy(&bytes), "chunk");
                Some((Ok(bytes), Some((inner, cancel))))
            }
            Ok(Some(Err(e))) => Some((Err(body_broke(e)), None)),
        }
    })
    .boxed()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        let map = header_map(&[
            ("Authorization".into(), "Bearer sk-secret".into()),
            ("x-api-key".into(), "k".into()),
            ("x-goog-api-key".into(), "g".into()),
            ("api-key".into(), "a".into()),
            ("X-Title".into(), "app".into()),
        ])
        .unwrap();
        let shown = format!("{:?}", redacted(&map));
        assert!(!shown.contains("sk-secret") && !shown.contains("\"k\"") && !shown.contains("\"g\""));
        assert!(shown.contains("app"));
        assert!(format!("{map:?}").contains("Sensitive"));
    }

    #[test]
    fn backoff_doubles_and_honours_retry_after_up_to_a_minute() {
        let net = ModelError::network("");
        let ms = Duration::from_millis;
        assert_eq!(backoff(&net, 0, ms(500)), ms(500));
        assert_eq!(backoff(&net, 1, ms(500)), ms(1000));
        assert_eq!(backoff(&net, 2, ms(500)), ms(2000));
        let limited = |d| ModelError::rate_limited("", Some(d));
        assert_eq!(backoff(&limited(ms(250)), 1, ms(500)), ms(250));
        assert_eq!(
            backoff(&limited(Duration::from_secs(3600)), 0, ms(500)),
            MAX_RETRY_AFTER
        );
        assert_eq!(backoff(&ModelError::rate_limited("", None), 1, ms(500)), ms(1000));
    }

    #[test]
    fn retry_only_transient() {
        assert!(should_retry(&ModelError::server(Some(503), "")));
        assert!(should_retry(&ModelError::server(Some(408), "")));
        assert!(!should_retry(&ModelError::invalid_request(Some(400), "")));
        assert!(!should_retry(&ModelError::context_length_exceeded("")));
        assert!(!should_retry(&ModelError::authentication(Some(401), "")));
        assert!(should_retry(&ModelError::rate_limited("", None)));
    }
}
