//! JSON-RPC to a remote agent (v1.0: `A2A-Version: 1.0` on every request,
//! the configured headers beside it): one call, or a streaming call's
//! results as they come.
//!
//! Invariant: every answer is checked: a JSON-RPC error is
//! [`A2aError::Remote`] with its code, anything that is not a response to
//! this request is [`A2aError::Protocol`].

use std::pin::Pin;

use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use sse_stream::SseStream;

use crate::A2aError;

/// A remote agent as configured, and the client that reaches it.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    /// The configured name.
    pub(crate) name: String,
    /// The configured URL.
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) client: reqwest::Client,
}

/// The results of a streaming call.
pub(crate) type Results = Pin<Box<dyn Stream<Item = Result<Value, A2aError>> + Send>>;

impl Remote {
    pub(crate) fn http(&self, what: &str, source: reqwest::Error) -> A2aError {
        A2aError::Http {
            agent: self.name.clone(),
            what: what.to_owned(),
            source,
        }
    }

    pub(crate) fn protocol(&self, what: &str, message: impl Into<String>) -> A2aError {
        A2aError::Protocol {
            agent: self.name.clone(),
            what: what.to_owned(),
            message: message.into(),
        }
    }

    /// A request with the configured headers and the protocol version.
    pub(crate) fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.client
            .request(method, url)
            .headers(self.headers.clone())
            .header("A2A-Version", a2a::VERSION)
    }

    fn post(&self, endpoint: &Url, method: &str, params: Value) -> reqwest::RequestBuilder {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        self.request(reqwest::Method::POST, endpoint.clone()).json(&body)
    }

    /// `method`'s result.
    pub(crate) async fn call(&self, endpoint: &Url, method: &str, params: Value) -> Result<Value, A2aError> {
        let response = self
            .post(endpoint, method, params)
            .send()
            .await
            .map_err(|e| self.http(method, e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| self.http(method, e))?;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|e| self.protocol(method, format!("HTTP {status}, not a JSON-RPC response: {e}")))?;
        self.result(method, answer)
    }

    /// A JSON-RPC response's result, or its error.
    fn result(&self, method: &str, mut answer: Value) -> Result<Value, A2aError> {
        if let Some(error) = answer.get("error").filter(|e| !e.is_null()) {
            return Err(A2aError::Remote {
                agent: self.name.clone(),
                what: method.to_owned(),
                code: error["code"]
                    .as_i64()
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(0),
                message: error["message"].as_str().unwrap_or("(no message)").to_owned(),
            });
        }
        match answer.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(self.protocol(
                method,
                format!("a response with neither result nor error: {answer}"),
            )),
        }
    }

    /// A streaming `method`'s results, each event's; a plain JSON answer
    /// (an error before the stream began) is its one item.
    pub(crate) async fn stream(
        &self,
        endpoint: &Url,
        method: &str,
        params: Value,
    ) -> Result<Results, A2aError> {
        let response = self
            .post(endpoint, method, params)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| self.http(method, e))?;
        let events = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !events {
            let body = response.bytes().await.map_err(|e| self.http(method, e))?;
            let answer: Value = serde_json::from_slice(&body)
                .map_err(|e| self.protocol(method, format!("neither events nor a JSON-RPC response: {e}")))?;
            let one = self.result(method, answer);
            return Ok(Box::pin(futures::stream::iter([one])));
        }
        let this = self.clone();
        let method = method.to_owned();
        let results = SseStream::from_bytes_stream(response.bytes_stream()).filter_map(move |event| {
            let item = match event {
                Err(e) => Some(Err(this.protocol(&method, format!("the event stream broke: {e}")))),
                Ok(event) => event.data.filter(|d| !d.trim().is_empty()).map(|data| {
                    serde_json::from_str::<Value>(&data)
                        .map_err(|e| this.protocol(&method, format!("an event that is not JSON: {e}")))
                        .and_then(|answer| this.result(&method, answer))
                }),
            };
            futures::future::ready(item)
        });
        Ok(Box::pin(results))
    }
}
