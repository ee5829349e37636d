//! Signing a person in: the OAuth 2.1 authorization-code flow with PKCE,
//! through a loopback redirect (RFC 8252).
//!
//! Discovery (protected resource metadata, every well-known variant, then
//! authorization server metadata, RFC 8414 or OpenID), the choice of the
//! client identity (a pre-registered client, else a client ID metadata
//! document where the server supports one, else dynamic registration),
//! scope selection, PKCE (S256), the `resource` indicator (RFC 8707), the
//! token exchange and the issuer check of the callback (RFC 9207) are
//! rmcp's; this module listens for the redirect and shows the person the
//! page through a [`Browser`].
//!
//! Invariants: the listener is bound to 127.0.0.1 before the page is shown,
//! answers only `GET /callback` (anything else gets 404 and the wait goes
//! on), and is closed when the flow ends; the flow ends within
//! [`LOGIN_TIMEOUT`]; tokens go to the token store and never to a log.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{AuthorizationCallback, AuthorizationManager, AuthorizationRequest, OAuthState};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use super::OAuthConfig;
use super::store::{ServerEntry, TokenStore};

/// How long a person has to sign in.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// The path of the loopback redirect.
pub const CALLBACK_PATH: &str = "/callback";
/// The client name given in dynamic registration when the config names none.
pub const DEFAULT_CLIENT_NAME: &str = "loopwright";

/// Shows a person the authorization page: opens a browser, prints the URL,
/// or (in tests) plays the browser itself.
///
/// ```
/// struct PrintIt;
/// #[async_trait::async_trait]
/// impl loopwright_mcp::oauth::Browser for PrintIt {
///     async fn open(&self, server: &str, url: &str) -> Result<(), String> {
///         println!("Sign in to {server}: {url}");
///         Ok(())
///     }
/// }
/// ```
#[async_trait]
pub trait Browser: Send + Sync {
    /// Show `url` (the authorization page of `server`'s authorization
    /// server); the person's browser is then redirected to the loopback
    /// listener. An error ends the flow.
    async fn open(&self, server: &str, url: &str) -> Result<(), String>;
}

/// What one sign-in needs.
pub(crate) struct Login<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: &'a str,
    pub(crate) config: &'a OAuthConfig,
    /// The `WWW-Authenticate` challenge of the server's 401 or 403.
    pub(crate) challenge: Option<String>,
    /// Scopes to ask for beyond the config's (a step-up).
    pub(crate) scopes: Vec<String>,
    pub(crate) store: Arc<dyn TokenStore>,
}

/// Run the flow (see the module docs); the new credentials are in the
/// store afterwards.
pub(crate) async fn login(login: Login<'_>, browser: &dyn Browser) -> Result<(), String> {
    let port = login.config.redirect_port.unwrap_or(0);
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| format!("cannot listen for the sign-in redirect on 127.0.0.1:{port}: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    crate::http::ensure_crypto_provider();
    let mut manager = AuthorizationManager::new(login.url)
        .await
        .map_err(|e| e.to_string())?;
    manager.set_credential_store(ServerEntry {
        store: login.store.clone(),
        url: login.url.to_owned(),
    });
    let mut state = OAuthState::Unauthorized(manager);
    state
        .start_authorization(request(&login, &redirect_uri))
        .await
        .map_err(|e| e.to_string())?;
    let page = state.get_authorization_url().await.map_err(|e| e.to_string())?;
    // The browser may only return once the redirect was answered: listen
    // while it opens the page.
    let flow = async {
        let wait = wait_for_callback(&listener, port);
        tokio::pin!(wait);
        tokio::select! {
            callback = &mut wait => callback,
            opened = browser.open(login.server, &page) => match opened {
                Ok(()) => wait.await,
                Err(e) => Err(format!("cannot show the sign-in page: {e}")),
            },
        }
    };
    let callback = tokio::time::timeout(LOGIN_TIMEOUT, flow)
        .await
        .map_err(|_| format!("nobody signed in within {LOGIN_TIMEOUT:?}"))??;
    drop(listener);
    state
        .handle_callback_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
        .await
        .map_err(|e| e.to_string())
}

/// rmcp's authorization request for this sign-in.
fn request(login: &Login<'_>, redirect_uri: &str) -> AuthorizationRequest {
    let config = login.config;
    let mut request = AuthorizationRequest::new(redirect_uri)
        .with_client_name(config.client_name.as_deref().unwrap_or(DEFAULT_CLIENT_NAME));
    if let Some(url) = &config.client_metadata_url {
        request = request.with_client_metadata_url(url);
    }
    if let Some(id) = &config.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &config.client_secret {
            request = request.with_client_secret(secret);
        }
    }
    let mut scopes = config.scopes.clone();
    for scope in &login.scopes {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    if let Some(challenge) = &login.challenge {
        request = request.with_challenge(challenge);
    }
    request
}

/// Answer connections until one is `GET /callback?...`; its parameters.
async fn wait_for_callback(listener: &TcpListener, port: u16) -> Result<AuthorizationCallback, String> {
    loop {
        let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        if reader.read_line(&mut line).await.is_err() {
            continue;
        }
        // Drain the headers so the client sees a clean answer.
        let mut header = String::new();
        while reader.read_line(&mut header).await.is_ok_and(|n| n > 2) {
            header.clear();
        }
        let target = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut stream = reader.into_inner();
        let on_path = line.starts_with("GET ")
            && (target == CALLBACK_PATH || target.starts_with(&format!("{CALLBACK_PATH}?")));
        if !on_path {
            let _ = stream
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
            continue;
        }
        let url = format!("http://127.0.0.1:{port}{target}");
        let refused = refusal(&url);
        let (status, body) = match &refused {
            Some(e) => (
                "400 Bad Request",
                format!("Sign-in failed: {}. You can close this window.", html_escape(e)),
            ),
            None => ("200 OK", "Signed in. You can close this window.".to_owned()),
        };
        let page = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(page.as_bytes()).await;
        let _ = stream.shutdown().await;
        if let Some(e) = refused {
            return Err(format!("the authorization server refused: {e}"));
        }
        return AuthorizationCallback::from_redirect_url(&url).map_err(|e| e.to_string());
    }
}

/// The `error` (and its description) of a redirect that carries one.
fn refusal(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let mut error = None;
    let mut description = None;
    for (key, value) in parsed.query_pairs() {
        match key.as_ref() {
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    error.map(|e| match description {
        Some(d) => format!("{e} ({d})"),
        None => e,
    })
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_redirect_says_why() {
        assert_eq!(
            refusal("http://127.0.0.1:1/callback?error=access_denied&error_description=no+thanks&state=s"),
            Some("access_denied (no thanks)".into())
        );
        assert_eq!(refusal("http://127.0.0.1:1/callback?code=c&state=s"), None);
    }
}
