//! Mapping HTTP statuses and provider error bodies to [`ModelError`] kinds.

use std::time::Duration;

use agent_core::ModelError;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// Longest piece of a received payload quoted in an error (enough to
/// recognise it, short enough for a log line).
pub const SNIPPET_CHARS: usize = 200;

/// A short, char-boundary-safe prefix of `text` for error messages.
pub fn snippet(text: &str) -> String {
    text.chars().take(SNIPPET_CHARS).collect()
}

/// An invalid-response error quoting what was received.
pub(crate) fn invalid(message: impl Into<String>, received: &str) -> ModelError {
    ModelError::InvalidResponse {
        message: message.into(),
        snippet: snippet(received),
    }
}

/// The wait a `retry-after-ms` or `retry-after` header asks for (seconds or
/// milliseconds; HTTP dates are not honoured and give `None`).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// The human message inside a provider's error body (`{"error":{"message"}}`,
/// `{"error":"..."}`, `{"message":"..."}` or `[{"error":...}]`), else the
/// body's start.
pub fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        let v = v.as_array().and_then(|a| a.first()).unwrap_or(v);
        let err = v.get("error").unwrap_or(v);
        err.get("message")
            .and_then(Value::as_str)
            .or_else(|| err.as_str())
            .map(str::to_owned)
    });
    found.unwrap_or_else(|| snippet(body.trim()))
}

/// Whether an error body says the account is out of quota or credit (a 429
/// that retrying will not fix).
fn is_quota(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    lower.contains("insufficient_quota") || lower.contains("credit balance") || lower.contains("billing")
}

/// The [`ModelError`] for an HTTP error status with its headers and body.
pub fn status_error(status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let message = error_message(body);
    match status {
        401 | 403 => ModelError::Auth { message },
        402 => ModelError::Quota { message },
        429 if is_quota(body) => ModelError::Quota { message },
        429 => ModelError::RateLimited {
            retry_after: retry_after(headers),
            message,
        },
        _ => ModelError::Provider { status, message },
    }
}

/// The [`ModelError`] for an error event inside a stream (`type` such as
/// `overloaded_error`, `rate_limit_error`, `authentication_error`).
pub fn stream_error(kind: &str, message: String) -> ModelError {
    let kind = kind.to_ascii_lowercase();
    if kind.contains("rate_limit") {
        ModelError::RateLimited {
            retry_after: None,
            message,
        }
    } else if kind.contains("authentication") || kind.contains("permission") {
        ModelError::Auth { message }
    } else if kind.contains("quota") || kind.contains("billing") {
        ModelError::Quota { message }
    } else {
        ModelError::Provider { status: 0, message }
    }
}

/// The [`ModelError`] for a transport failure.
pub(crate) fn network(err: &reqwest::Error) -> ModelError {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    ModelError::Network(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_prefers_milliseconds() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn statuses_map_to_kinds() {
        let h = HeaderMap::new();
        assert_eq!(status_error(401, &h, "{}").kind(), "auth");
        assert_eq!(status_error(403, &h, "").kind(), "auth");
        assert_eq!(status_error(429, &h, "{}").kind(), "rate_limited");
        assert_eq!(
            status_error(429, &h, r#"{"error":{"code":"insufficient_quota"}}"#).kind(),
            "quota"
        );
        assert_eq!(status_error(402, &h, "").kind(), "quota");
        let e = status_error(500, &h, r#"{"error":{"message":"boom"}}"#);
        assert!(matches!(e, ModelError::Provider { status: 500, ref message } if message == "boom"));
        assert_eq!(error_message(r#"[{"error":{"message":"g"}}]"#), "g");
        assert_eq!(error_message(r#"{"error":"plain"}"#), "plain");
    }

    #[test]
    fn snippet_is_char_safe() {
        let s = "é".repeat(500);
        assert_eq!(snippet(&s).chars().count(), SNIPPET_CHARS);
    }
}
