//! [`ModelError`]: why a model call failed, as kinds that decide what a
//! caller does next.
//!
//! | kind | retry the same model | another model may work |
//! | --- | --- | --- |
//! | [`Authentication`](ModelError::Authentication), [`QuotaExceeded`](ModelError::QuotaExceeded) | no | yes |
//! | [`InvalidRequest`](ModelError::InvalidRequest), [`ContextLengthExceeded`](ModelError::ContextLengthExceeded) | no (the same request fails again) | yes |
//! | [`RateLimited`](ModelError::RateLimited) | after `retry_after` | yes |
//! | [`Server`](ModelError::Server), [`Network`](ModelError::Network), [`StreamCut`](ModelError::StreamCut), [`Timeout`](ModelError::Timeout), [`InvalidResponse`](ModelError::InvalidResponse) | yes | yes |
//! | [`Cancelled`](ModelError::Cancelled) | no | no |
//!
//! Every kind keeps the provider's message; the underlying error (an HTTP
//! client error, a decoding error) is its [`source`](std::error::Error::source).

use std::sync::Arc;
use std::time::Duration;

/// The underlying error of a [`ModelError`], shared so that the error stays
/// `Clone` (a fallback chain reports the same error in several places).
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Phrases of provider error messages that mean the request does not fit
/// the model's context window (OpenAI `context_length_exceeded`, Anthropic
/// "prompt is too long", Gemini "input token count ... exceeds", OpenRouter
/// and vLLM "maximum context length", Ollama "context length").
pub const CONTEXT_LENGTH_PHRASES: [&str; 8] = [
    "context_length_exceeded",
    "context length",
    "context window",
    "prompt is too long",
    "input token count",
    "maximum number of tokens",
    "too many tokens",
    "reduce the length of the messages",
];

/// Why a model call failed.
///
/// Built with the constructors below (`ModelError::authentication(..)`,
/// ...), with [`ModelError::with_source`] to attach the underlying error.
///
/// ```
/// use loopwright_types::ModelError;
/// use std::time::Duration;
/// let e = ModelError::rate_limited("slow down", Some(Duration::from_secs(2)));
/// assert!(e.is_retryable());
/// assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
/// let auth = ModelError::authentication(Some(401), "bad key");
/// assert!(!auth.is_retryable());
/// assert_eq!(auth.to_string(), "authentication failed (status 401): bad key");
/// assert_eq!(auth.message(), "bad key");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The credentials were refused (401/403, or an invalid-key error).
    #[error("authentication failed{}: {message}", status_note(*status))]
    Authentication {
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// Too many requests (429).
    #[error("rate limited{}: {message}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    RateLimited {
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The account has no quota or credit left.
    #[error("quota exhausted: {message}")]
    QuotaExceeded {
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The request does not fit the model's context window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The provider refused the request as malformed or unsupported (a 4xx
    /// other than the kinds above), or it could not be built.
    #[error("invalid request{}: {message}", status_note(*status))]
    InvalidRequest {
        /// The HTTP status; `None` when the request was refused before
        /// sending (a malformed header, an unserialisable body).
        status: Option<u16>,
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The provider failed (5xx, or an error event such as `overloaded`).
    #[error("provider error{}: {message}", status_note(*status))]
    Server {
        /// The HTTP status; `None` for an error event inside a stream.
        status: Option<u16>,
        /// The provider's message.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The connection could not be made or broke before the response began.
    #[error("network error: {message}")]
    Network {
        /// What failed.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The response stream ended or broke before its finish event: the step
    /// did not complete.
    #[error("stream cut: {message}")]
    StreamCut {
        /// What was missing or what broke.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// No answer (or no further chunk) in time.
    #[error("model call timed out after {} ms", after.as_millis())]
    Timeout {
        /// The limit that was reached.
        after: Duration,
    },
    /// The provider sent something that could not be understood.
    #[error("invalid response from provider: {message} (near: {snippet:?})")]
    InvalidResponse {
        /// What was wrong.
        message: String,
        /// A short piece of what was received.
        snippet: String,
        /// The underlying error.
        #[source]
        source: Option<ErrorSource>,
    },
    /// The call was cancelled.
    #[error("model call cancelled")]
    Cancelled,
}

/// `match` over the kinds that carry a message and a source, binding them
/// as `$message` and `$source`; `$other` for `Timeout` and `Cancelled`.
macro_rules! with_details {
    ($error:expr, |$message:pat_param, $source:pat_param| $then:expr, $other:pat => $otherwise:expr) => {
        match $error {
            ModelError::Authentication {
                message: $message,
                source: $source,
                ..
            }
            | ModelError::RateLimited {
                message: $message,
                source: $source,
                ..
            }
            | ModelError::QuotaExceeded {
                message: $message,
                source: $source,
            }
            | ModelError::ContextLengthExceeded {
                message: $message,
                source: $source,
            }
            | ModelError::InvalidRequest {
                message: $message,
                source: $source,
                ..
            }
            | ModelError::Server {
                message: $message,
                source: $source,
                ..
            }
            | ModelError::Network {
                message: $message,
                source: $source,
            }
            | ModelError::StreamCut {
                message: $message,
                source: $source,
            }
            | ModelError::InvalidResponse {
                message: $message,
                source: $source,
                ..
            } => $then,
            $other => $otherwise,
        }
    };
}

fn status_note(status: Option<u16>) -> String {
    status.map(|s| format!(" (status {s})")).unwrap_or_default()
}

impl ModelError {
    /// [`ModelError::Authentication`].
    pub fn authentication(status: Option<u16>, message: impl Into<String>) -> Self {
        Self::Authentication {
            status,
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::RateLimited`].
    pub fn rate_limited(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self::RateLimited {
            retry_after,
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::QuotaExceeded`].
    pub fn quota_exceeded(message: impl Into<String>) -> Self {
        Self::QuotaExceeded {
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::ContextLengthExceeded`].
    pub fn context_length_exceeded(message: impl Into<String>) -> Self {
        Self::ContextLengthExceeded {
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::InvalidRequest`], or [`ModelError::ContextLengthExceeded`]
    /// when the message says the request is too long for the model.
    ///
    /// ```
    /// use loopwright_types::ModelError;
    /// let e = ModelError::invalid_request(Some(400), "prompt is too long: 210000 tokens > 200000 maximum");
    /// assert_eq!(e.kind(), "context_length_exceeded");
    /// assert_eq!(ModelError::invalid_request(Some(400), "unknown field").kind(), "invalid_request");
    /// ```
    pub fn invalid_request(status: Option<u16>, message: impl Into<String>) -> Self {
        let message = message.into();
        if is_context_length_message(&message) {
            return Self::context_length_exceeded(message);
        }
        Self::InvalidRequest {
            status,
            message,
            source: None,
        }
    }

    /// [`ModelError::Server`].
    pub fn server(status: Option<u16>, message: impl Into<String>) -> Self {
        Self::Server {
            status,
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::Network`].
    pub fn network(message: impl Into<String>) -> Self {
        Self::Network {
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::StreamCut`].
    pub fn stream_cut(message: impl Into<String>) -> Self {
        Self::StreamCut {
            message: message.into(),
            source: None,
        }
    }

    /// [`ModelError::Timeout`].
    pub fn timeout(after: Duration) -> Self {
        Self::Timeout { after }
    }

    /// [`ModelError::InvalidResponse`].
    pub fn invalid_response(message: impl Into<String>, snippet: impl Into<String>) -> Self {
        Self::InvalidResponse {
            message: message.into(),
            snippet: snippet.into(),
            source: None,
        }
    }

    /// The same error with this underlying error as its source (ignored by
    /// the kinds without one: `Timeout`, `Cancelled`).
    ///
    /// ```
    /// use std::error::Error;
    /// let io = std::io::Error::other("connection reset by peer");
    /// let e = loopwright_types::ModelError::stream_cut("the body broke").with_source(io);
    /// assert_eq!(e.source().unwrap().to_string(), "connection reset by peer");
    /// ```
    pub fn with_source(mut self, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        let shared: ErrorSource = Arc::new(error);
        with_details!(&mut self, |_, source| *source = Some(shared), _ => {});
        self
    }

    /// The provider's message (or what failed), without the kind's prefix.
    pub fn message(&self) -> &str {
        with_details!(self, |message, _| message, other => match other {
            Self::Timeout { .. } => "timed out",
            _ => "cancelled",
        })
    }

    /// The HTTP status, when the error came with one.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ModelError::server(Some(503), "busy").status(), Some(503));
    /// ```
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Authentication { status, .. }
            | Self::InvalidRequest { status, .. }
            | Self::Server { status, .. } => *status,
            Self::RateLimited { .. } => Some(429),
            _ => None,
        }
    }

    /// How long the provider asked to wait, for [`ModelError::RateLimited`].
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether sending the same request to the same model again later may
    /// succeed (rate limits, server errors, network errors, cut streams,
    /// timeouts and invalid responses).
    ///
    /// ```
    /// use loopwright_types::ModelError;
    /// assert!(ModelError::server(Some(503), "").is_retryable());
    /// assert!(!ModelError::invalid_request(Some(400), "bad").is_retryable());
    /// assert!(!ModelError::context_length_exceeded("too long").is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Server { .. }
            | Self::Network { .. }
            | Self::StreamCut { .. }
            | Self::Timeout { .. }
            | Self::InvalidResponse { .. } => true,
            Self::Authentication { .. }
            | Self::QuotaExceeded { .. }
            | Self::ContextLengthExceeded { .. }
            | Self::InvalidRequest { .. }
            | Self::Cancelled => false,
        }
    }

    /// Whether this model will refuse the same request again whatever the
    /// wait (authentication, quota, invalid request, context length): a
    /// fallback chain moves on and does not resend it to this model.
    ///
    /// ```
    /// use loopwright_types::ModelError;
    /// assert!(ModelError::authentication(Some(401), "bad key").is_permanent_for_model());
    /// assert!(!ModelError::rate_limited("later", None).is_permanent_for_model());
    /// ```
    pub fn is_permanent_for_model(&self) -> bool {
        matches!(
            self,
            Self::Authentication { .. }
                | Self::QuotaExceeded { .. }
                | Self::InvalidRequest { .. }
                | Self::ContextLengthExceeded { .. }
        )
    }

    /// A stable snake_case name for the kind, for logs and accounting.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ModelError::Cancelled.kind(), "cancelled");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Authentication { .. } => "authentication",
            Self::RateLimited { .. } => "rate_limited",
            Self::QuotaExceeded { .. } => "quota_exceeded",
            Self::ContextLengthExceeded { .. } => "context_length_exceeded",
            Self::InvalidRequest { .. } => "invalid_request",
            Self::Server { .. } => "server",
            Self::Network { .. } => "network",
            Self::StreamCut { .. } => "stream_cut",
            Self::Timeout { .. } => "timeout",
            Self::InvalidResponse { .. } => "invalid_response",
            Self::Cancelled => "cancelled",
        }
    }
}

/// Whether a provider's error message says the request is too long for the
/// model's context window (see [`CONTEXT_LENGTH_PHRASES`]).
///
/// ```
/// assert!(loopwright_types::model_error::is_context_length_message(
///     "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens."
/// ));
/// assert!(!loopwright_types::model_error::is_context_length_message("invalid api key"));
/// ```
pub fn is_context_length_message(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    CONTEXT_LENGTH_PHRASES.iter().any(|p| lower.contains(p))
}
