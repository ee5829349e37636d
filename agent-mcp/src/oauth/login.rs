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
//! Invariants: the authorization server's endpoints pass
//! `endpoint`'s check before the page is shown; the
//! listener is bound to 127.0.0.1 before the page is shown and closed when
//! the flow ends; only `GET /callback` carrying the `state`
//! of the authorization request in progress ends the wait: any other
//! request (another path or method, a missing or wrong `state`) gets a 400
//! page saying why, and the wait goes on; connections are answered
//! concurrently (at most [`MAX_CALLBACK_CONNECTIONS`] at once), each read
//! bounded in size ([`MAX_CALLBACK_REQUEST_BYTES`]) and time
//! ([`CALLBACK_READ_TIMEOUT`]), so a local client that connects and says
//! nothing cannot hold the real redirect back; the flow ends within
//! [`LOGIN_TIMEOUT`]; tokens go to the token store and never to a log.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthorizationCallback, AuthorizationManager, AuthorizationRequest, AuthorizationSession, OAuthState,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::OAuthConfig;
use super::endpoint::checked_metadata;
use super::store::{ServerEntry, TokenStore};

/// How long a person has to sign in.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// The path of the loopback redirect.
pub const CALLBACK_PATH: &str = "/callback";
/// The client name given in dynamic registration when the config names none.
pub const DEFAULT_CLIENT_NAME: &str = "loopwright";
/// The longest request head the loopback listener reads.
pub const MAX_CALLBACK_REQUEST_BYTES: usize = 16 * 1024;
/// How long the loopback listener waits for one connection's request.
pub const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections the loopback listener answers at once; more are closed.
pub const MAX_CALLBACK_CONNECTIONS: usize = 16;

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
    // Discovery as rmcp's start_authorization does it, with the endpoints
    // checked before the browser is sent anywhere or a code exchanged.
    let metadata = checked_metadata(&manager, login.url, login.challenge.as_deref(), true).await?;
    manager.set_metadata(metadata);
    let session = AuthorizationSession::new(manager, request(&login, &redirect_uri))
        .await
        .map_err(|(_, e)| e.to_string())?;
    let mut state = OAuthState::Session(session);
    let page = state.get_authorization_url().await.map_err(|e| e.to_string())?;
    let expected = state_of(&page).ok_or("the authorization URL carries no `state`")?;
    // The browser may only return once the redirect was answered: listen
    // while it opens the page.
    let flow = async {
        let wait = wait_for_callback(&listener, port, &expected);
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

/// The `state` parameter of a URL.
fn state_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// Answer connections until one is the redirect of this sign-in (see the
/// module docs); its parameters, or the authorization server's refusal.
async fn wait_for_callback(
    listener: &TcpListener,
    port: u16,
    expected: &str,
) -> Result<AuthorizationCallback, String> {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _) = accepted.map_err(|e| e.to_string())?;
                // Beyond the limit the stream is dropped, closing it.
                if connections.len() < MAX_CALLBACK_CONNECTIONS {
                    connections.spawn(answer(stream, port, expected.to_owned()));
                }
            }
            Some(answered) = connections.join_next() => {
                if let Ok(Some(outcome)) = answered {
                    return outcome;
                }
            }
        }
    }
}

/// Read one request and answer it; `Some` when it ends the wait.
async fn answer(
    mut stream: TcpStream,
    port: u16,
    expected: String,
) -> Option<Result<AuthorizationCallback, String>> {
    let head = tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream))
        .await
        .ok()??;
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let on_path = target == CALLBACK_PATH || target.starts_with(&format!("{CALLBACK_PATH}?"));
    if method != "GET" || !on_path {
        reply(&mut stream, "400 Bad Request", &format!(
            "Not the sign-in redirect: this address only answers GET {CALLBACK_PATH}. The sign-in is still waiting."
        ))
        .await;
        return None;
    }
    let url = format!("http://127.0.0.1:{port}{target}");
    match state_of(&url) {
        Some(state) if state == expected => {}
        found => {
            let why = if found.is_some() {
                "its state does not match"
            } else {
                "it carries no state"
            };
            reply(
                &mut stream,
                "400 Bad Request",
                &format!(
                    "Not the redirect of the sign-in in progress ({why}). The sign-in is still waiting."
                ),
            )
            .await;
            return None;
        }
    }
    if let Some(e) = refusal(&url) {
        let page = format!("Sign-in failed: {}. You can close this window.", html_escape(&e));
        reply(&mut stream, "400 Bad Request", &page).await;
        return Some(Err(format!("the authorization server refused: {e}")));
    }
    let callback = AuthorizationCallback::from_redirect_url(&url).map_err(|e| e.to_string());
    match &callback {
        Ok(_) => reply(&mut stream, "200 OK", "Signed in. You can close this window.").await,
        Err(e) => {
            let page = format!("Sign-in failed: {}. You can close this window.", html_escape(e));
            reply(&mut stream, "400 Bad Request", &page).await;
        }
    }
    Some(callback)
}

/// The request line and headers (up to the blank line), at most
/// [`MAX_CALLBACK_REQUEST_BYTES`]; `None` when the client closed early, sent
/// more, or not text.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || head.len() + n > MAX_CALLBACK_REQUEST_BYTES {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(head).ok()
}

/// Send a short HTML page and close.
async fn reply(stream: &mut TcpStream, status: &str, body: &str) {
    let page = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    // The client may be gone; the wait is decided either way.
    if let Err(e) = stream.write_all(page.as_bytes()).await {
        tracing::debug!(error = %e, "the sign-in redirect's client left before its answer");
    }
    if let Err(e) = stream.shutdown().await {
        tracing::debug!(error = %e, "closing a sign-in redirect connection failed");
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
