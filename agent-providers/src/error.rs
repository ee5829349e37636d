//! Mapping HTTP statuses and provider error bodies to [`ModelError`] kinds.

use std::time::Duration;

use loopwright_types::ModelError;
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
    ModelError::invalid_response(message, snippet(received))
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

/// Whether an error body says the key is invalid (Gemini answers a bad key
/// with 400 `API_KEY_INVALID`, not 401).
fn is_bad_key(body: &str) -> bool {
    body.contains("API_KEY_INVALID") || body.contains("API key not valid")
}

/// The [`ModelError`] for an HTTP error status with its headers and body.
pub fn status_error(status: u16, headers: &HeaderMap, body: &str) -> ModelError {
    let message = error_message(body);
    match status {
        401 | 403 => ModelError::authentication(Some(status), message),
        402 => ModelError::quota_exceeded(message),
        429 if is_quota(body) => ModelError::quota_exceeded(message),
        429 => ModelError::rate_limited(message, retry_after(headers)),
        408 => ModelError::server(Some(status), message),
        400 if is_bad_key(body) => ModelError::authentication(Some(status), message),
        // 413 Payload Too Large: the request does not fit.
        413 => ModelError::context_length_exceeded(message),
        // The body's own words tell a context-length error from others.
        400..=499 if loopwright_types::model_error::is_context_length_message(body) => {
            ModelError::context_length_exceeded(message)
        }
        400..=499 => ModelError::invalid_request(Some(status), message),
        _ => ModelError::server(Some(status), message),
    }
}

/// The [`ModelError`] for an error event inside a stream (`type` such as
/// `overloaded_error`, `rate_limit_error`, `authentication_error`,
/// `invalid_request_error`).
pub fn stream_error(kind: &str, message: String) -> ModelError {
    let kind = kind.to_ascii_lowercase();
    if kind.contains("rate_limit") {
        ModelError::rate_limited(message, None)
    } else if kind.contains("authentication") || kind.contains("permission") {
        ModelError::authentication(None, message)
    } else if kind.contains("quota") || kind.contains("billing") {
        ModelError::quota_exceeded(message)
    } else if kind.contains("context_length")
        || loopwright_types::model_error::is_context_length_message(&message)
    {
        ModelError::context_length_exceeded(message)
    } else if kind.contains("invalid_request") || kind.contains("invalid_argument") {
        ModelError::invalid_request(None, message)
    } else {
        ModelError::server(None, message)
    }
}

/// The [`ModelError`] for a transport failure before the response began: the
/// message names the causes, the source keeps the error.
pub(crate) fn network(err: reqwest::Error) -> ModelError {
    let text = loopwright_types::util::error_chain(&err);
    ModelError::network(text).with_source(err)
}

/// The [`ModelError`] for a response body that broke while streaming.
pub(crate) fn body_broke(err: reqwest::Error) -> ModelError {
    let text = loopwright_types::util::error_chain(&err);
    ModelError::stream_cut(format!("the response body broke: {text}")).with_source(err)
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
        assert_eq!(status_error(401, &h, "{}").kind(), "authentication");
        assert_eq!(status_error(403, &h, "").kind(), "authentication");
        assert_eq!(status_error(429, &h, "{}").kind(), "rate_limited");
        assert_eq!(
            status_error(429, &h, r#"{"error":{"code":"insufficient_quota"}}"#).kind(),
            "quota_exceeded"
        );
        assert_eq!(status_error(402, &h, "").kind(), "quota_exceeded");
        assert_eq!(
            status_error(400, &h, r#"{"error":{"message":"bad field"}}"#).kind(),
            "invalid_request"
        );
        assert_eq!(status_error(404, &h, "").kind(), "invalid_request");
        assert_eq!(status_error(408, &h, "").kind(), "server");
        let e = status_error(500, &h, r#"{"error":{"message":"boom"}}"#);
        assert!(matches!(e, ModelError::Server { status: Some(500), ref message, .. } if message == "boom"));
        assert_eq!(error_message(r#"[{"error":{"message":"g"}}]"#), "g");
        assert_eq!(error_message(r#"{"error":"plain"}"#), "plain");
    }

    /// Context-length errors as each provider words them (from their docs
    /// and error references).
    #[test]
    fn context_length_errors_are_recognised() {
        let h = HeaderMap::new();
        for body in [
            // OpenAI Chat Completions.
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            // Anthropic.
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            // Gemini.
            r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            // OpenRouter / vLLM.
            r#"{"error":{"message":"This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens.","code":400}}"#,
        ] {
            let e = status_error(400, &h, body);
            assert_eq!(e.kind(), "context_length_exceeded", "{body}");
            assert!(!e.message().is_empty());
        }
        assert_eq!(
            status_error(413, &h, "too large").kind(),
            "context_length_exceeded"
        );
        assert_eq!(
            stream_error(
                "invalid_request_error",
                "prompt is too long: 5 tokens > 4 maximum".into()
            )
            .kind(),
            "context_length_exceeded"
        );
        // Gemini's answer to a bad key.
        let bad_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}"#;
        assert_eq!(status_error(400, &h, bad_key).kind(), "authentication");
    }

    #[test]
    fn snippet_is_char_safe() {
        let s = "é".repeat(500);
        assert_eq!(snippet(&s).chars().count(), SNIPPET_CHARS);
    }
}
