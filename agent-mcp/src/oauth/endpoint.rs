//! Which authorization server endpoints may receive credentials (a client
//! secret or assertion, an authorization code and its PKCE verifier, a
//! refresh token), checked on the metadata before any of them is sent.
//!
//! Invariant: the token endpoint (and, for a sign-in, the authorization
//! endpoint the browser is sent to) is `https`, or `http` only when both it
//! and the protected resource (the MCP server) are on loopback (`localhost`,
//! 127.0.0.0/8, `::1`: a local development setup), as OAuth 2.1 requires
//! TLS everywhere else. An endpoint on another origin than the issuer is
//! allowed: RFC 8414 allows it and providers do it (Google's issuer is
//! `accounts.google.com`, its token endpoint `oauth2.googleapis.com`); the
//! metadata itself is the issuer's own (rmcp checks that its `issuer` is the
//! one it was fetched for, and follows no redirect to another origin).

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata};
use url::{Host, Url};

/// Whether `url` names a loopback host.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Refuse `endpoint` (the metadata's `what`) for `resource` unless it is
/// secure (see the module docs).
pub(crate) fn check(resource: &str, what: &str, endpoint: &str) -> Result<(), String> {
    let parsed = Url::parse(endpoint)
        .map_err(|e| format!("the authorization server's {what} {endpoint} is not a URL: {e}"))?;
    let resource_on_loopback = Url::parse(resource).is_ok_and(|r| is_loopback(&r));
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if resource_on_loopback && is_loopback(&parsed) => Ok(()),
        _ => Err(format!(
            "the authorization server's {what} {endpoint} is not https: credentials are sent only over \
             https (http only when the server and the endpoint are both on loopback)"
        )),
    }
}

/// The authorization server metadata of `resource` (discovered from its
/// `challenge`, if any), once its endpoints passed [`check`]; `sign_in`
/// checks the authorization endpoint too.
pub(crate) async fn checked_metadata(
    manager: &AuthorizationManager,
    resource: &str,
    challenge: Option<&str>,
    sign_in: bool,
) -> Result<AuthorizationMetadata, String> {
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| e.to_string())?
        .metadata;
    check(resource, "token endpoint", &metadata.token_endpoint)?;
    if sign_in {
        check(
            resource,
            "authorization endpoint",
            &metadata.authorization_endpoint,
        )?;
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_on_loopback_for_a_loopback_server() {
        let remote = "https://mcp.example.com/mcp";
        let local = "http://127.0.0.1:8080/mcp";
        for (resource, endpoint, allowed) in [
            (remote, "https://as.example.com/token", true),
            (remote, "https://oauth2.elsewhere.example/token", true),
            (remote, "http://as.example.com/token", false),
            (remote, "http://127.0.0.1:9000/token", false),
            (local, "http://127.0.0.1:9000/token", true),
            (local, "http://localhost:9000/token", true),
            (local, "http://[::1]:9000/token", true),
            (local, "https://as.example.com/token", true),
            (local, "http://as.example.com/token", false),
            (local, "http://10.0.0.7/token", false),
            (remote, "ftp://as.example.com/token", false),
            (remote, "not a url", false),
        ] {
            let result = check(resource, "token endpoint", endpoint);
            assert_eq!(result.is_ok(), allowed, "{resource} {endpoint}: {result:?}");
            if let Err(e) = result {
                assert!(e.contains(endpoint), "{e}");
            }
        }
    }
}
