//! Who may call an instance: bearer keys and, for loopback binds, the
//! `Host` / `Origin` check against DNS rebinding.
//!
//! Invariants: the check runs before any handler; a refusal is written in
//! the surface's own error shape (401 for a missing or wrong key, 403 for
//! a foreign host or origin); the host is the `Host` header, or on HTTP/2
//! the request's `:authority`; keys are compared as SHA-256 digests, in a
//! time that depends on neither key's content nor its length, and never
//! logged; the only requests that need no key are reads of public files:
//! `loopwright dev`'s pages on REST, agent cards on A2A.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, Kind, Shape};
use crate::run::Instance;

/// Host names a loopback bind accepts by default: what a local client
/// writes, never a name an attacker's DNS can point at 127.0.0.1.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The middleware's state: the instance and how to write a refusal.
#[derive(Clone)]
pub(crate) struct Guard {
    pub(crate) instance: Arc<Instance>,
    pub(crate) shape: Shape,
    /// The instance serves `loopwright dev`'s pages, whose files need no
    /// key (they hold no data).
    pub(crate) pages: bool,
    /// The instance serves A2A agent cards, which a client reads before it
    /// knows how to authenticate (the card says how): they need no key.
    pub(crate) cards: bool,
}

/// Refuse requests without a valid key or from a foreign host.
pub(crate) async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Some(hosts) = &guard.instance.allowed_hosts
        && let Err(message) = host_allowed(request.headers(), request.uri().authority(), hosts)
    {
        return ApiError::new(guard.shape, Kind::Forbidden, message).into_response();
    }
    if !guard.instance.keys.is_empty()
        && !is_page(&guard, &request)
        && !key_valid(request.headers(), &guard.instance.keys)
    {
        return ApiError::new(
            guard.shape,
            Kind::Unauthorized,
            "missing or invalid API key: send `Authorization: Bearer <key>` (or `x-api-key: <key>`)",
        )
        .into_response();
    }
    next.run(request).await
}

/// Whether `request` asks for one of the pages' files or an agent card.
fn is_page(guard: &Guard, request: &Request) -> bool {
    let read = request.method() == axum::http::Method::GET || request.method() == axum::http::Method::HEAD;
    if guard.cards && read && request.uri().path().ends_with("/.well-known/agent-card.json") {
        return true;
    }
    #[cfg(feature = "ui")]
    return guard.pages && crate::ui::is_page(request.method(), request.uri().path());
    #[cfg(not(feature = "ui"))]
    {
        let _ = (guard.pages, request);
        false
    }
}

/// The key the request carries: `Authorization: Bearer` (OpenAI, MCP,
/// REST) or `x-api-key` (Anthropic's clients).
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let (scheme, key) = value.split_once(' ')?;
        return scheme.eq_ignore_ascii_case("bearer").then_some(key.trim());
    }
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn key_valid(headers: &HeaderMap, keys: &[String]) -> bool {
    let Some(presented) = presented_key(headers) else {
        return false;
    };
    // Digests have one length whatever the keys', so the comparison's time
    // says nothing of a key's length; every key is compared.
    let presented = digest(presented);
    keys.iter().fold(false, |found, key| {
        found | constant_time_eq(&presented, &digest(key))
    })
}

fn digest(key: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, key.as_bytes()).as_ref());
    out
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The host part of `Host` or of an origin's authority, without the port.
fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        // [::1]:8080 -> [::1]
        return match rest.find(']') {
            Some(end) => &authority[..end + 2],
            None => authority,
        };
    }
    authority.split(':').next().unwrap_or(authority)
}

fn host_allowed(
    headers: &HeaderMap,
    authority: Option<&axum::http::uri::Authority>,
    hosts: &[String],
) -> Result<(), String> {
    let allowed = |name: &str| hosts.iter().any(|h| h.eq_ignore_ascii_case(name));
    // HTTP/1.1 sends `Host`; HTTP/2 the `:authority` pseudo-header, which
    // hyper puts in the request's URI.
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or(authority.map(axum::http::uri::Authority::as_str))
        .ok_or("the request names no host (no Host header, no :authority)")?;
    if !allowed(host_name(host)) {
        return Err(format!(
            "Host {host:?} is not accepted here (this server listens on a loopback address and accepts {})",
            hosts.join(", ")
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
        if origin != "null" && !allowed(host_name(authority)) {
            return Err(format!("Origin {origin:?} is not accepted here"));
        }
        if origin == "null" {
            return Err("Origin \"null\" is not accepted here".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn loopback() -> Vec<String> {
        LOOPBACK_HOSTS.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        for ok in ["localhost:8080", "127.0.0.1:1", "[::1]:9", "localhost"] {
            assert!(
                host_allowed(&headers(&[("host", ok)]), None, &loopback()).is_ok(),
                "{ok}"
            );
        }
        for bad in ["evil.example:8080", "127.0.0.1.evil.example", "[::2]:80"] {
            assert!(
                host_allowed(&headers(&[("host", bad)]), None, &loopback()).is_err(),
                "{bad}"
            );
        }
        let foreign = headers(&[("host", "localhost:1"), ("origin", "http://evil.example")]);
        assert!(host_allowed(&foreign, None, &loopback()).is_err());
        let local = headers(&[("host", "localhost:1"), ("origin", "http://localhost:3000")]);
        assert!(host_allowed(&local, None, &loopback()).is_ok());
        // HTTP/2: no Host header, the authority of the request's URI.
        let h2: axum::http::Uri = "http://localhost:8080/v1/models".parse().unwrap();
        assert!(host_allowed(&headers(&[]), h2.authority(), &loopback()).is_ok());
        let h2: axum::http::Uri = "http://evil.example/v1/models".parse().unwrap();
        assert!(host_allowed(&headers(&[]), h2.authority(), &loopback()).is_err());
        assert!(host_allowed(&headers(&[]), None, &loopback()).is_err());
    }

    #[test]
    fn keys_are_compared_as_digests_of_one_length() {
        // Whatever the presented key's length, the comparison is of two
        // 32-byte digests: its time says nothing of the key's length.
        let short = digest("k");
        let long = digest(&"k".repeat(4096));
        assert_eq!((short.len(), long.len()), (32, 32));
        let keys = vec!["secret-2".to_string()];
        for wrong in ["secret-", "secret-22", "", "secret-3"] {
            let presented = format!("Bearer {wrong}");
            let headers = headers(&[("authorization", Box::leak(presented.into_boxed_str()))]);
            assert!(!key_valid(&headers, &keys), "{wrong}");
        }
        assert!(constant_time_eq(&digest("secret-2"), &digest("secret-2")));
    }

    #[test]
    fn keys_come_as_bearer_or_x_api_key() {
        let keys = vec!["k1".to_string(), "secret-2".to_string()];
        assert!(key_valid(
            &headers(&[("authorization", "Bearer secret-2")]),
            &keys
        ));
        assert!(key_valid(&headers(&[("x-api-key", "k1")]), &keys));
        assert!(!key_valid(&headers(&[("authorization", "Bearer k2")]), &keys));
        assert!(!key_valid(&headers(&[("authorization", "Basic k1")]), &keys));
        assert!(!key_valid(&headers(&[]), &keys));
    }
}
