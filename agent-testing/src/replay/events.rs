//! What a recorded model stream holds: its [`ModelEvent`]s and, where it
//! failed, the [`ModelError`] as its kind and message.
//!
//! Invariant: an error read back is the same kind with the same message,
//! status, retry-after, snippet or timeout (its underlying source, an HTTP
//! client error, is not kept).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use loopwright_types::ModelEvent;
use loopwright_types::model_error::ModelError;

/// One item of a recorded stream: an event, or the error that ended it.
///
/// In a cassette line an error is an object with `"type": "error"`; every
/// other item is a [`ModelEvent`] as it serialises.
///
/// ```
/// use loopwright_types::{ModelError, ModelEvent};
/// use loopwright_testing::replay::RecordedItem;
/// let item = RecordedItem::from(Err::<ModelEvent, _>(ModelError::server(Some(503), "busy")));
/// let json = serde_json::to_value(&item).unwrap();
/// assert_eq!(json, serde_json::json!({"type": "error", "kind": "server", "message": "busy", "status": 503}));
/// let back: RecordedItem = serde_json::from_value(json).unwrap();
/// assert_eq!(back.into_result().unwrap_err().to_string(), "provider error (status 503): busy");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordedItem {
    /// An event.
    Event(ModelEvent),
    /// The error that ended the stream.
    Error(RecordedError),
}

impl RecordedItem {
    /// The item as the stream yielded it.
    pub fn into_result(self) -> Result<ModelEvent, ModelError> {
        match self {
            Self::Event(e) => Ok(e),
            Self::Error(e) => Err(e.into_error()),
        }
    }

    /// Whether a stream ends with this item (a finish event or an error).
    pub fn ends_stream(&self) -> bool {
        matches!(self, Self::Error(_) | Self::Event(ModelEvent::Finish { .. }))
    }
}

impl From<Result<ModelEvent, ModelError>> for RecordedItem {
    fn from(item: Result<ModelEvent, ModelError>) -> Self {
        match item {
            Ok(e) => Self::Event(e),
            Err(e) => Self::Error(RecordedError::of(&e)),
        }
    }
}

impl Serialize for RecordedItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Event(e) => e.serialize(s),
            Self::Error(e) => e.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for RecordedItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        if value.get("type").and_then(Value::as_str) == Some("error") {
            RecordedError::deserialize(value)
                .map(Self::Error)
                .map_err(D::Error::custom)
        } else {
            ModelEvent::deserialize(value)
                .map(Self::Event)
                .map_err(D::Error::custom)
        }
    }
}

/// A [`ModelError`] as a cassette keeps it.
///
/// ```
/// use loopwright_types::ModelError;
/// use loopwright_testing::replay::RecordedError;
/// let e = RecordedError::of(&ModelError::rate_limited("slow down", Some(std::time::Duration::from_secs(2))));
/// assert_eq!(e.kind, "rate_limited");
/// assert_eq!(e.into_error().retry_after(), Some(std::time::Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "error")]
#[non_exhaustive]
pub struct RecordedError {
    /// [`ModelError::kind`].
    pub kind: String,
    /// [`ModelError::message`].
    pub message: String,
    /// The HTTP status, for the kinds that carry one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the provider asked to wait (rate limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// What was received (invalid responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// The limit reached (timeouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
}

impl RecordedError {
    /// The error's kind and details.
    pub fn of(error: &ModelError) -> Self {
        let mut out = Self {
            kind: error.kind().to_owned(),
            message: error.message().to_owned(),
            status: None,
            retry_after_ms: None,
            snippet: None,
            after_ms: None,
        };
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        match error {
            ModelError::Authentication { status, .. }
            | ModelError::InvalidRequest { status, .. }
            | ModelError::Server { status, .. } => out.status = *status,
            ModelError::RateLimited { retry_after, .. } => out.retry_after_ms = retry_after.map(millis),
            ModelError::InvalidResponse { snippet, .. } => out.snippet = Some(snippet.clone()),
            ModelError::Timeout { after } => out.after_ms = Some(millis(*after)),
            _ => {}
        }
        out
    }

    /// The error again (an unknown kind reads as a provider error).
    pub fn into_error(self) -> ModelError {
        let message = self.message;
        match self.kind.as_str() {
            "authentication" => ModelError::authentication(self.status, message),
            "rate_limited" => {
                ModelError::rate_limited(message, self.retry_after_ms.map(Duration::from_millis))
            }
            "quota_exceeded" => ModelError::quota_exceeded(message),
            "context_length_exceeded" => ModelError::context_length_exceeded(message),
            "invalid_request" => ModelError::InvalidRequest {
                status: self.status,
                message,
                source: None,
            },
            "network" => ModelError::network(message),
            "stream_cut" => ModelError::stream_cut(message),
            "timeout" => ModelError::timeout(Duration::from_millis(self.after_ms.unwrap_or(0))),
            "invalid_response" => ModelError::invalid_response(message, self.snippet.unwrap_or_default()),
            "cancelled" => ModelError::Cancelled,
            _ => ModelError::server(self.status, message),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_error_kind_reads_back_as_itself() {
        let errors = [
            ModelError::authentication(Some(401), "bad key"),
            ModelError::rate_limited("later", Some(Duration::from_millis(1500))),
            ModelError::quota_exceeded("no credit"),
            ModelError::context_length_exceeded("too long"),
            ModelError::InvalidRequest {
                status: Some(400),
                message: "bad".into(),
                source: None,
            },
            ModelError::server(Some(503), "busy"),
            ModelError::network("refused"),
            ModelError::stream_cut("cut"),
            ModelError::timeout(Duration::from_secs(3)),
            ModelError::invalid_response("not JSON", "<html>"),
            ModelError::Cancelled,
        ];
        for error in errors {
            let item = RecordedItem::from(Err(error.clone()));
            let line = serde_json::to_string(&item).unwrap();
            let back: RecordedItem = serde_json::from_str(&line).unwrap();
            let again = back.into_result().unwrap_err();
            assert_eq!(again.kind(), error.kind(), "{line}");
            assert_eq!(again.to_string(), error.to_string(), "{line}");
        }
    }

    #[test]
    fn events_read_back_as_themselves() {
        let e = ModelEvent::ToolCallComplete {
            id: "c1".into(),
            name: "echo".into(),
            input_json: "{\"text\":\"hi\"}".into(),
            provider_data: None,
        };
        let line = serde_json::to_string(&RecordedItem::Event(e.clone())).unwrap();
        let back: RecordedItem = serde_json::from_str(&line).unwrap();
        assert_eq!(back, RecordedItem::Event(e));
        let bad = serde_json::from_str::<RecordedItem>(r#"{"type": "text_delt", "text": "x"}"#).unwrap_err();
        assert!(bad.to_string().contains("text_delt"), "{bad}");
    }
}
