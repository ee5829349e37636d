//! Settings shared by every provider builder: base URL, key, extra headers,
//! HTTP options and an optional caller-supplied client.

use crate::body::SizeHint;
use crate::http::{HttpOptions, Transport, default_client, header_map};
use loopwright_types::ModelError;

/// Connection settings common to all providers.
#[derive(Debug, Clone, Default)]
pub struct ProviderSettings {
    /// Base URL including the version segment (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The API key, if the provider needs one.
    pub api_key: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Retry and timeout options.
    pub http: HttpOptions,
    /// A client to use instead of the default one.
    pub client: Option<reqwest::Client>,
    /// A JSON object merged into every request body (before the request's
    /// own provider options), for what this library does not model.
    pub body_options: Option<serde_json::Value>,
}

impl ProviderSettings {
    /// Settings with this base URL and everything else default.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            ..Self::default()
        }
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// A transport with the auth headers `auth` derived from the key.
    pub(crate) fn transport(&self, auth: Vec<(String, String)>) -> Result<Transport, ModelError> {
        let mut pairs = auth;
        pairs.extend(self.headers.iter().cloned());
        Ok(Transport {
            client: self.client.clone().unwrap_or_else(default_client),
            headers: header_map(&pairs)?,
            options: self.http.clone(),
            body_size: SizeHint::default(),
        })
    }
}

/// Builder methods for [`ProviderSettings`], shared by every provider builder
/// (each has a `settings: ProviderSettings` field).
macro_rules! settings_methods {
    () => {
        /// The base URL, including the version segment.
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.settings.base_url = url.into();
            self
        }

        /// The API key.
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.settings.api_key = Some(key.into());
            self
        }

        /// An extra header sent with every request.
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.settings.headers.push((name.into(), value.into()));
            self
        }

        /// Retry and timeout options.
        pub fn http_options(mut self, options: $crate::http::HttpOptions) -> Self {
            self.settings.http = options;
            self
        }

        /// Retries after the first attempt (before any response byte).
        pub fn max_retries(mut self, retries: u32) -> Self {
            self.settings.http.max_retries = retries;
            self
        }

        /// Longest silence between two stream chunks.
        pub fn inactivity_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.settings.http.inactivity_timeout = timeout;
            self
        }

        /// Merge this JSON object into every request body (the request's own
        /// provider options are merged after it).
        pub fn body_options(mut self, options: serde_json::Value) -> Self {
            self.settings.body_options = Some(options);
            self
        }

        /// Use this reqwest client (proxies, TLS roots, ...).
        pub fn client(mut self, client: reqwest::Client) -> Self {
            self.settings.client = Some(client);
            self
        }

        /// Replace all connection settings at once.
        pub fn settings(mut self, settings: $crate::settings::ProviderSettings) -> Self {
            self.settings = settings;
            self
        }
    };
}
pub(crate) use settings_methods;
