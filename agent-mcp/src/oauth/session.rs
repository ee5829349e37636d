//! OAuth on a streamable HTTP session: what the session's HTTP client sends,
//! and what happens when the server answers 401 or 403.
//!
//! Invariants:
//! - a session's requests carry the stored access token of its server
//!   (refreshed by rmcp before it expires and once after a 401), or the
//!   machine token of a client-credentials server, or nothing (a server
//!   that needs no sign-in); a configured `Authorization` header is left
//!   alone;
//! - credentials go only to endpoints that pass
//!   `endpoint`'s check (stored ones too, before a
//!   refresh);
//! - a 401 at connect is answered once: with new client credentials, or,
//!   when the application can show a person the sign-in page (a
//!   [`Browser`](super::Browser)), with a sign-in; otherwise the server is
//!   reported as needing login ([`McpError::NeedsLogin`]), and the run goes
//!   on without it;
//! - a 403 `insufficient_scope` on a call is answered by a sign-in for the
//!   scopes the challenge names, at most [`MAX_STEP_UPS`] times per call,
//!   each within the call (ended by its cancellation, bounded by its
//!   timeout or deadline).

use std::sync::Arc;

use rmcp::transport::auth::{AuthClient, AuthorizationManager};

use super::login::{Login, login};
use super::store::ServerEntry;
use super::{OAuthConfig, OAuthGrant};
use crate::config::RemoteConfig;
use crate::error::McpError;
use crate::handler::Shared;
use crate::http::LenientClient;

/// Sign-ins for more scope one call may trigger before it fails (with the
/// first sign-in, three authorization requests at most).
pub const MAX_STEP_UPS: u32 = 2;

/// The HTTP client of a new session and the bearer token to send as it is
/// (client credentials), if any.
pub(crate) async fn client(
    server: &str,
    remote: &RemoteConfig,
    oauth: Option<&OAuthConfig>,
    shared: &Shared,
) -> Result<(AuthClient<LenientClient>, Option<String>), McpError> {
    let failed = |message: String| McpError::Connect {
        server: server.to_owned(),
        message,
    };
    crate::http::ensure_crypto_provider();
    let mut manager = AuthorizationManager::new(remote.url.as_str())
        .await
        .map_err(|e| failed(format!("invalid server URL for OAuth: {e}")))?;
    let client = |manager| AuthClient::new(LenientClient(crate::http::client()), manager);
    let has_authorization = remote
        .headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"));
    if has_authorization {
        return Ok((client(manager), None));
    }
    if oauth.is_some_and(|o| o.grant == OAuthGrant::ClientCredentials) {
        let cached = shared.machine_token.lock().ok().and_then(|t| t.clone());
        let bearer = cached.filter(|t| t.fresh()).map(|t| t.access_token);
        return Ok((client(manager), bearer));
    }
    let store = shared.options.token_store();
    let stored = store.load(&remote.url).await.map_err(|e| failed(e.to_string()))?;
    manager.set_credential_store(ServerEntry {
        store,
        url: remote.url.clone(),
    });
    if stored.is_some_and(|s| s.token_response.is_some()) {
        // The metadata rmcp would discover here, its token endpoint checked
        // before a refresh token can go to it.
        let metadata = super::endpoint::checked_metadata(&manager, &remote.url, None, false)
            .await
            .map_err(|e| failed(format!("cannot use the stored sign-in: {e}")))?;
        manager.set_metadata(metadata);
        manager
            .initialize_from_store()
            .await
            .map_err(|e| failed(format!("cannot use the stored sign-in: {e}")))?;
    }
    Ok((client(manager), None))
}

/// Whether answering a 401 signs a person in (the authorization-code grant
/// with a [`Browser`](super::Browser) to show the page), which may take as
/// long as the person does, up to `LOGIN_TIMEOUT`.
pub(crate) fn signs_in_a_person(oauth: Option<&OAuthConfig>, shared: &Shared) -> bool {
    oauth.is_none_or(|o| o.grant != OAuthGrant::ClientCredentials) && shared.options.browser().is_some()
}

/// Answer the server's 401 challenge (see the module docs); afterwards a
/// new session carries the new credentials.
pub(crate) async fn authorize(
    server: &str,
    url: &str,
    oauth: Option<&OAuthConfig>,
    challenge: &str,
    shared: &Shared,
) -> Result<(), McpError> {
    let default = OAuthConfig::default();
    let config = oauth.unwrap_or(&default);
    if config.grant == OAuthGrant::ClientCredentials {
        let token = super::machine::obtain(url, config, Some(challenge))
            .await
            .map_err(|message| McpError::Connect {
                server: server.to_owned(),
                message: format!("client credentials: {message}"),
            })?;
        if let Ok(mut slot) = shared.machine_token.lock() {
            *slot = Some(token);
        }
        return Ok(());
    }
    let Some(browser) = shared.options.browser() else {
        return Err(McpError::NeedsLogin {
            server: server.to_owned(),
            reason: "the server asks for OAuth sign-in and no sign-in is stored".into(),
        });
    };
    let request = Login {
        server,
        url,
        config,
        challenge: Some(challenge.to_owned()),
        scopes: Vec::new(),
        store: shared.options.token_store(),
    };
    login(request, browser.as_ref())
        .await
        .map_err(|message| McpError::Connect {
            server: server.to_owned(),
            message: format!("OAuth sign-in failed: {message}"),
        })
}

/// Sign in again for the scopes a 403 `insufficient_scope` challenge
/// names (added to those already granted).
pub(crate) async fn step_up(
    server: &str,
    url: &str,
    oauth: Option<&OAuthConfig>,
    challenge: &str,
    shared: &Shared,
) -> Result<(), String> {
    let browser = shared
        .options
        .browser()
        .ok_or("the server needs more scope and nobody can sign in now")?;
    let store: Arc<dyn super::TokenStore> = shared.options.token_store();
    let granted = store
        .load(url)
        .await
        .ok()
        .flatten()
        .map(|s| s.granted_scopes)
        .unwrap_or_default();
    let default = OAuthConfig::default();
    let mut scopes = granted;
    for scope in challenge_scopes(challenge) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let request = Login {
        server,
        url,
        config: oauth.unwrap_or(&default),
        challenge: Some(challenge.to_owned()),
        scopes,
        store,
    };
    login(request, browser.as_ref()).await
}

/// The `scope` parameter of a `WWW-Authenticate` challenge, split.
fn challenge_scopes(challenge: &str) -> Vec<String> {
    let Some(at) = challenge.find("scope=") else {
        return Vec::new();
    };
    let rest = &challenge[at + "scope=".len()..];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => rest.split([',', ' ']).next().unwrap_or_default(),
    };
    value.split_whitespace().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_out_of_a_challenge() {
        let c = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://h/.well-known/x""#;
        assert_eq!(challenge_scopes(c), ["mcp:basic", "mcp:write"]);
        assert_eq!(challenge_scopes("Bearer scope=read, error=x"), ["read"]);
        assert!(challenge_scopes("Bearer").is_empty());
    }
}
