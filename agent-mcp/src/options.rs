//! [`McpClientOptions`]: what this client offers servers, shared by every
//! connection made with it.
//!
//! Invariants:
//! - a capability is advertised only when it can be served: `roots` when
//!   roots are configured, `sampling` when the application installed a
//!   handler; `elicitation` (form and URL) always, since the run that makes
//!   a call can ask its person (see [`elicitation`](crate::elicitation));
//! - a server that sends `sampling/createMessage` anyway gets a JSON-RPC
//!   error (`-32601`) that says no handler is installed, never a hang and
//!   never a silent acceptance; an elicitation nobody answers is declined;
//! - `roots/list` answers the configured roots (none by default).

#![allow(deprecated)] // rmcp marks roots and sampling deprecated (SEP-2577); servers still use them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, Root};

/// Answers a server's `sampling/createMessage` (the server asks the client's
/// model for a completion).
///
/// ```
/// use loopwright_mcp::{SamplingHandler, rmcp};
/// use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
///
/// struct Refuse;
/// #[async_trait::async_trait]
/// impl SamplingHandler for Refuse {
///     async fn create_message(&self, server: &str, _: CreateMessageRequestParams)
///         -> Result<CreateMessageResult, rmcp::ErrorData> {
///         Err(rmcp::ErrorData::invalid_request(format!("{server} may not sample"), None))
///     }
/// }
/// let options = loopwright_mcp::McpClientOptions::default().sampling(Refuse);
/// # let _ = options;
/// ```
#[async_trait]
pub trait SamplingHandler: Send + Sync {
    /// Produce the completion `server` asked for.
    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData>;
}

/// Answers a server's `elicitation/create` (the server asks the user for
/// input in the middle of a call).
///
/// ```
/// use loopwright_mcp::{ElicitationHandler, rmcp};
/// use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
///
/// struct AlwaysDecline;
/// #[async_trait::async_trait]
/// impl ElicitationHandler for AlwaysDecline {
///     async fn elicit(&self, _server: &str, _: ElicitRequestParams) -> Result<ElicitResult, rmcp::ErrorData> {
///         Ok(ElicitResult::new(ElicitationAction::Decline))
///     }
/// }
/// let options = loopwright_mcp::McpClientOptions::default().elicitation(AlwaysDecline);
/// # let _ = options;
/// ```
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// Ask the user what `server` wants to know.
    async fn elicit(&self, server: &str, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData>;
}

/// What the client offers servers: roots, and handlers for the requests a
/// server may send mid-call. The default offers nothing and declines
/// sampling and elicitation.
///
/// ```
/// let options = loopwright_mcp::McpClientOptions::default()
///     .root_path("/srv/project")
///     .root("https://example.com/repo", Some("repo"));
/// assert_eq!(options.roots().len(), 2);
/// assert_eq!(options.roots()[0].uri, "file:///srv/project");
/// ```
#[derive(Clone, Default)]
pub struct McpClientOptions {
    roots: Vec<Root>,
    sampling: Option<Arc<dyn SamplingHandler>>,
    elicitation: Option<Arc<dyn ElicitationHandler>>,
    elicitation_timeout: Option<Duration>,
    #[cfg(feature = "oauth")]
    token_store: Option<Arc<dyn crate::oauth::TokenStore>>,
    #[cfg(feature = "oauth")]
    browser: Option<Arc<dyn crate::oauth::Browser>>,
}

impl std::fmt::Debug for McpClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientOptions")
            .field("roots", &self.roots)
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .finish_non_exhaustive()
    }
}

impl McpClientOptions {
    /// Add a root by URI, with an optional display name.
    pub fn root(mut self, uri: impl Into<String>, name: Option<&str>) -> Self {
        let mut root = Root::new(uri);
        root.name = name.map(str::to_string);
        self.roots.push(root);
        self
    }

    /// Add a local directory as a `file://` root (named after its last
    /// component).
    pub fn root_path(self, path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        self.root(file_uri(path), name.as_deref())
    }

    /// Answer `sampling/createMessage` with `handler`.
    pub fn sampling(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Answer `elicitation/create` with `handler`.
    pub fn elicitation(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// How long an elicitation waits for its answer before it is declined
    /// (never past the asking call's deadline); default
    /// [`DEFAULT_INPUT_TIMEOUT`](loopwright_types::user_input::DEFAULT_INPUT_TIMEOUT).
    ///
    /// ```
    /// let options = loopwright_mcp::McpClientOptions::default()
    ///     .with_elicitation_timeout(std::time::Duration::from_secs(30));
    /// assert_eq!(options.elicitation_timeout(), std::time::Duration::from_secs(30));
    /// ```
    pub fn with_elicitation_timeout(mut self, timeout: Duration) -> Self {
        self.elicitation_timeout = Some(timeout);
        self
    }

    /// The elicitation timeout in force.
    pub fn elicitation_timeout(&self) -> Duration {
        self.elicitation_timeout
            .unwrap_or(loopwright_types::user_input::DEFAULT_INPUT_TIMEOUT)
    }

    /// Keep OAuth credentials in `store` instead of the default
    /// [`FileTokenStore`](crate::oauth::FileTokenStore).
    ///
    /// ```
    /// let options = loopwright_mcp::McpClientOptions::default()
    ///     .with_token_store(loopwright_mcp::oauth::MemoryTokenStore::default());
    /// # let _ = options;
    /// ```
    #[cfg(feature = "oauth")]
    pub fn with_token_store(mut self, store: impl crate::oauth::TokenStore + 'static) -> Self {
        self.token_store = Some(Arc::new(store));
        self
    }

    /// Sign a person in through `browser` when a server asks for it (at
    /// connect, or for more scope on a call); without one, such a server
    /// is reported as needing login ([`McpError::NeedsLogin`](crate::McpError::NeedsLogin)).
    #[cfg(feature = "oauth")]
    pub fn with_browser(mut self, browser: impl crate::oauth::Browser + 'static) -> Self {
        self.browser = Some(Arc::new(browser));
        self
    }

    /// The token store in force: the one given, else the default file
    /// (in memory when no config directory is known).
    #[cfg(feature = "oauth")]
    pub fn token_store(&self) -> Arc<dyn crate::oauth::TokenStore> {
        match &self.token_store {
            Some(store) => store.clone(),
            None => match crate::oauth::FileTokenStore::default_location() {
                Ok(file) => Arc::new(file),
                Err(e) => {
                    tracing::warn!(error = %e, "OAuth credentials kept in memory only");
                    Arc::new(crate::oauth::MemoryTokenStore::default())
                }
            },
        }
    }

    #[cfg(feature = "oauth")]
    pub(crate) fn browser(&self) -> Option<&Arc<dyn crate::oauth::Browser>> {
        self.browser.as_ref()
    }

    /// The configured roots.
    pub fn roots(&self) -> &[Root] {
        &self.roots
    }

    pub(crate) fn sampling_handler(&self) -> Option<&Arc<dyn SamplingHandler>> {
        self.sampling.as_ref()
    }

    pub(crate) fn elicitation_handler(&self) -> Option<&Arc<dyn ElicitationHandler>> {
        self.elicitation.as_ref()
    }
}

/// `file://` URI of a path, with the characters URIs reserve percent-encoded.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(char::from(byte));
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_are_encoded() {
        assert_eq!(file_uri(Path::new("/a b/ç")), "file:///a%20b/%C3%A7");
    }
}
