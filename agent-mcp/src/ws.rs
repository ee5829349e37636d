//! WebSocket transport: tokio-tungstenite under rmcp's Sink/Stream adapter.
//!
//! Invariants:
//! - the handshake offers the subprotocol [`WS_SUBPROTOCOL`] (Python servers
//!   reject a handshake without it) plus the configured headers;
//! - one JSON-RPC message per text frame (binary frames holding UTF-8 JSON
//!   are accepted too); pings are answered by tungstenite, other control
//!   frames are skipped;
//! - a close frame, a read error or the end of the socket ends the message
//!   stream, which rmcp sees as the transport closing;
//! - `wss://` uses rustls with the webpki roots and an explicit crypto
//!   provider (no process-wide default is assumed or installed).

use std::future::{Future, Ready};
use std::pin::Pin;
use std::sync::Arc;

use futures::stream::SplitSink;
use futures::{SinkExt, Stream, StreamExt};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream, connect_async_tls_with_config};

use crate::config::RemoteConfig;
use crate::error::McpError;

/// The WebSocket subprotocol MCP servers expect.
pub const WS_SUBPROTOCOL: &str = "mcp";

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// An open WebSocket session, as an rmcp [`Transport`].
pub(crate) struct WsTransport {
    sink: Arc<tokio::sync::Mutex<SplitSink<Socket, Message>>>,
    messages: Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleClient>> + Send>>,
}

impl Transport<RoleClient> for WsTransport {
    type Error = tungstenite::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sink = self.sink.clone();
        async move {
            let frame = encode(&item)?;
            // Held only for this frame's write: frames must not interleave.
            sink.lock().await.send(frame).await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.messages.next()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let sink = self.sink.clone();
        async move { sink.lock().await.close().await }
    }
}

/// Open the socket (handshake with the `mcp` subprotocol).
pub(crate) async fn open(server: &str, remote: &RemoteConfig) -> Result<WsTransport, McpError> {
    let fail = |message: String| McpError::Connect {
        server: server.to_string(),
        message,
    };
    let mut request = remote
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| fail(format!("bad websocket url {}: {e}", remote.url)))?;
    let headers = request.headers_mut();
    for (key, value) in &remote.headers {
        let bad = |what: &str| McpError::Config {
            server: server.to_string(),
            message: format!("header `{key}`: invalid {what}"),
        };
        let name = HeaderName::from_bytes(key.as_bytes()).map_err(|_| bad("name"))?;
        let value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        headers.insert(name, value);
    }
    headers.insert("Sec-WebSocket-Protocol", HeaderValue::from_static(WS_SUBPROTOCOL));
    let connector = if remote.url.to_ascii_lowercase().starts_with("wss://") {
        Some(Connector::Rustls(
            tls_config().map_err(|e| fail(format!("tls setup: {e}")))?,
        ))
    } else {
        None
    };
    let (socket, _response) = connect_async_tls_with_config(request, None, true, connector)
        .await
        .map_err(|e| fail(format!("websocket handshake with {} failed: {e}", remote.url)))?;
    let (sink, stream) = socket.split();
    let server = server.to_string();
    let messages = stream
        .take_while(is_open)
        .filter_map(move |frame| std::future::ready(decode(&server, frame)));
    Ok(WsTransport {
        sink: Arc::new(tokio::sync::Mutex::new(sink)),
        messages: Box::pin(messages),
    })
}

/// One outgoing message as a text frame.
fn encode(message: &TxJsonRpcMessage<RoleClient>) -> Result<Message, tungstenite::Error> {
    serde_json::to_string(message)
        .map(Message::text)
        .map_err(|e| tungstenite::Error::Io(std::io::Error::other(e)))
}

/// Whether the socket is still open after this frame.
fn is_open(frame: &Result<Message, tungstenite::Error>) -> Ready<bool> {
    std::future::ready(!matches!(frame, Err(_) | Ok(Message::Close(_))))
}

/// The JSON-RPC message in a data frame; `None` for control frames and
/// frames that are not a message (logged).
fn decode(server: &str, frame: Result<Message, tungstenite::Error>) -> Option<RxJsonRpcMessage<RoleClient>> {
    let bytes = match frame.ok()? {
        Message::Text(text) => text.as_bytes().to_vec(),
        Message::Binary(data) => data.to_vec(),
        _ => return None,
    };
    match serde_json::from_slice(&bytes) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::warn!(server = %server, error = %e, "unreadable websocket frame skipped");
            None
        }
    }
}

/// rustls client config with the webpki roots and the ring provider.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn frames_decode_to_messages_or_nothing() {
        let ok = Ok(Message::text(
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        ));
        assert!(decode("s", ok).is_some());
        assert!(decode("s", Ok(Message::text("not json"))).is_none());
        assert!(decode("s", Ok(Message::Ping(Vec::new().into()))).is_none());
    }

    #[test]
    fn tls_config_builds_without_a_process_default() {
        assert!(tls_config().is_ok());
    }
}
