//! Errors: what starting a server can fail with ([`ServeError`]), and the
//! error a request gets ([`ApiError`]), written in each surface's own shape
//! so that every official client raises its own error class.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::limit::{RETRY_AFTER_SECS, Refused};
use loopwright_runs::{Refused as RunsRefused, RunsError};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Nothing to serve.
    #[error("no agent to serve")]
    NoAgent,
    /// Two agents under one name.
    #[error("two agents are named {name:?}: served agents need unique names")]
    DuplicateAgent {
        /// The name.
        name: String,
    },
    /// An address could not be bound.
    #[error("cannot listen on {addr} for the {surface} surface: {source}")]
    Bind {
        /// The surface.
        surface: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Keys were given and every one was empty: serving would need none.
    #[error("every API key given is empty: refusing to serve without authentication")]
    EmptyKeys,
    /// A surface was asked for that this build leaves out.
    #[error("the {surface} surface is not built in (cargo feature `{surface}` of loopwright-serve)")]
    NotBuilt {
        /// The surface.
        surface: &'static str,
    },
    /// Durable runs were asked for without a store every replica shares.
    #[error(
        "durable runs (Restate) need a store every replica shares: give one (--store postgres://... or sqlite:FILE)"
    )]
    DurableWithoutStore,
    /// Restate did not take this replica's endpoint.
    #[error("{message}")]
    Restate {
        /// What Restate said, and what was asked.
        message: String,
    },
}

/// Whether reading a body failed on the body limit (http-body-util's
/// `LengthLimitError`, somewhere in the error's chain).
pub(crate) fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.to_string().contains("length limit exceeded") {
            return true;
        }
        next = e.source();
    }
    false
}

/// The body of a request, or the error answer for one that could not be
/// read: 413 over the body limit, 400 otherwise, in `shape`.
pub(crate) fn body_or_error(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
    shape: Shape,
) -> Result<axum::body::Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                shape,
                Kind::TooLarge,
                "the request body is larger than this server reads; send a smaller one",
            )
        } else {
            ApiError::new(
                shape,
                Kind::BadRequest,
                format!("the request body could not be read: {rejection}"),
            )
        }
    })
}

/// The wire format errors are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    OpenAi,
    Anthropic,
    Plain,
}

/// What kind of error, independent of the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    BadRequest,
    TooLarge,
    Unauthorized,
    Forbidden,
    NotFound,
    /// An object (run, session, response) that does not exist.
    Missing,
    /// The object is not in a state that allows this (a decided call, an
    /// ended run).
    Conflict,
    Overloaded,
    Unavailable,
    Upstream,
    /// Something this server should have handled (a damaged record).
    Internal,
}

/// An error answer.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) kind: Kind,
    pub(crate) message: String,
    pub(crate) shape: Shape,
}

impl ApiError {
    pub(crate) fn new(shape: Shape, kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            shape,
        }
    }

    pub(crate) fn refused(shape: Shape, refused: Refused) -> Self {
        match refused {
            Refused::QueueFull => Self::new(
                shape,
                Kind::Overloaded,
                "too many requests are waiting for this agent; retry later",
            ),
            Refused::Stopping => Self::new(shape, Kind::Unavailable, "the server is shutting down"),
        }
    }

    pub(crate) fn unknown_agent(shape: Shape, name: &str, known: &[String]) -> Self {
        Self::new(
            shape,
            Kind::NotFound,
            format!(
                "no agent named {name:?} is served here (served: {})",
                known.join(", ")
            ),
        )
    }

    /// A store operation's failure: 503 (with `Retry-After`) while the
    /// store is unreachable, 409 on a conflict, 500 for damaged data.
    pub(crate) fn store(shape: Shape, what: &str, error: &loopwright_store::StoreError) -> Self {
        let kind = if error.is_unavailable() {
            Kind::Unavailable
        } else if error.is_conflict() {
            Kind::Conflict
        } else {
            Kind::Internal
        };
        Self::new(shape, kind, format!("{what}: {error}"))
    }

    /// A background run's error, in `shape`: the statuses and messages the
    /// run requests answer with on every surface.
    pub(crate) fn runs(shape: Shape, error: RunsError) -> Self {
        let kind = match error {
            RunsError::UnknownAgent { name, served } => return Self::unknown_agent(shape, &name, &served),
            RunsError::Refused(RunsRefused::QueueFull) => return Self::refused(shape, Refused::QueueFull),
            RunsError::Refused(RunsRefused::Stopping) => return Self::refused(shape, Refused::Stopping),
            RunsError::Store { what, source } => return Self::store(shape, &what, &source),
            RunsError::NoSuchRun { .. } => Kind::Missing,
            RunsError::Invalid { .. } => Kind::BadRequest,
            RunsError::Conflict { .. } => Kind::Conflict,
            RunsError::EngineUnavailable { .. } => Kind::Unavailable,
            RunsError::Damaged { .. } => Kind::Internal,
            // A kind this version does not know yet: a server error.
            _ => Kind::Internal,
        };
        Self::new(shape, kind, error.to_string())
    }

    pub(crate) fn status(&self) -> StatusCode {
        match self.kind {
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::Unauthorized => StatusCode::UNAUTHORIZED,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::NotFound | Kind::Missing => StatusCode::NOT_FOUND,
            Kind::Conflict => StatusCode::CONFLICT,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Kind::Overloaded | Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Upstream => StatusCode::BAD_GATEWAY,
        }
    }

    /// The `type` of the error in this shape.
    pub(crate) fn type_name(&self) -> &'static str {
        match (self.shape, self.kind) {
            (Shape::Anthropic, Kind::BadRequest) => "invalid_request_error",
            (Shape::Anthropic, Kind::TooLarge) => "request_too_large",
            (Shape::Anthropic, Kind::Unauthorized) => "authentication_error",
            (Shape::Anthropic, Kind::Forbidden) => "permission_error",
            (Shape::Anthropic, Kind::NotFound | Kind::Missing) => "not_found_error",
            (Shape::Anthropic, Kind::Overloaded | Kind::Unavailable) => "overloaded_error",
            (Shape::Anthropic, Kind::Upstream | Kind::Internal) => "api_error",
            (Shape::Anthropic, Kind::Conflict) => "invalid_request_error",
            (Shape::Plain, Kind::Missing) => "not_found",
            (Shape::Plain, Kind::Conflict) => "conflict",
            (_, Kind::BadRequest | Kind::NotFound | Kind::Missing | Kind::TooLarge | Kind::Conflict) => {
                "invalid_request_error"
            }
            (_, Kind::Unauthorized) => "authentication_error",
            (_, Kind::Forbidden) => "permission_error",
            (_, Kind::Overloaded | Kind::Unavailable | Kind::Upstream | Kind::Internal) => "server_error",
        }
    }

    /// The error body in this shape.
    pub(crate) fn body(&self) -> serde_json::Value {
        match self.shape {
            Shape::OpenAi => {
                let code = match self.kind {
                    Kind::NotFound => json!("model_not_found"),
                    Kind::Unauthorized => json!("invalid_api_key"),
                    _ => serde_json::Value::Null,
                };
                json!({"error": {"message": self.message, "type": self.type_name(), "param": null, "code": code}})
            }
            Shape::Anthropic => {
                json!({"type": "error", "error": {"type": self.type_name(), "message": self.message}})
            }
            Shape::Plain => json!({"error": {"type": self.type_name(), "message": self.message}}),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        if matches!(self.kind, Kind::Overloaded | Kind::Unavailable) {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        if self.kind == Kind::Unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
