//! The network transports of the test server: streamable HTTP (rmcp's
//! tower service under axum) and WebSocket (tokio-tungstenite under rmcp's
//! Sink/Stream adapter).

use std::io::Write;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{
    ErrorResponse, Request as WsRequest, Response as WsResponse,
};

use crate::server::TestServer;

type Error = Box<dyn std::error::Error>;

/// The non-JSON event `--garbage` puts before every event stream.
const GARBAGE_EVENT: &str = "data: this is not json\n\n";

fn announce(url: &str) {
    println!("listening on {url}");
    let _ = std::io::stdout().flush();
}

/// Serve streamable HTTP at `/mcp` until killed.
pub async fn serve_http(server: TestServer, port: u16, garbage: bool) -> Result<(), Error> {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let mut app = axum::Router::new().route_service("/mcp", service);
    if garbage {
        app = app.layer(axum::middleware::from_fn(prepend_garbage));
    }
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    announce(&format!("http://{}/mcp", listener.local_addr()?));
    axum::serve(listener, app).await?;
    Ok(())
}

/// Put [`GARBAGE_EVENT`] before the body of every event-stream response.
async fn prepend_garbage(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        return response;
    }
    let (parts, body) = response.into_parts();
    let garbage =
        futures::stream::once(async { Ok::<_, axum::Error>(axum::body::Bytes::from(GARBAGE_EVENT)) });
    Response::from_parts(parts, Body::from_stream(garbage.chain(body.into_data_stream())))
}

/// Serve WebSocket connections (one MCP session each) until killed.
pub async fn serve_ws(server: TestServer, port: u16) -> Result<(), Error> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    announce(&format!("ws://{}/", listener.local_addr()?));
    loop {
        let (socket, _) = listener.accept().await?;
        let mut server = server.clone();
        tokio::spawn(async move {
            let seen = Arc::new(std::sync::Mutex::new(None));
            let keep = seen.clone();
            #[allow(clippy::result_large_err)] // tungstenite's callback signature
            let callback = move |request: &WsRequest, response: WsResponse| {
                if let Ok(mut slot) = keep.lock() {
                    *slot = Some(request.headers().clone());
                }
                require_mcp_subprotocol(request, response)
            };
            let Ok(ws) = tokio_tungstenite::accept_hdr_async(socket, callback).await else {
                eprintln!("websocket handshake refused");
                return;
            };
            server.handshake = seen.lock().ok().and_then(|mut h| h.take()).map(Arc::new);
            let (sink, stream) = ws.split();
            let sink = sink.with(
                |message: rmcp::service::TxJsonRpcMessage<rmcp::RoleServer>| async move {
                    serde_json::to_string(&message)
                        .map(Message::text)
                        .map_err(|e| tokio_tungstenite::tungstenite::Error::Io(std::io::Error::other(e)))
                },
            );
            let stream = stream.filter_map(|frame| async move {
                match frame {
                    Ok(Message::Text(text)) => serde_json::from_str(text.as_str()).ok(),
                    _ => None,
                }
            });
            match server.serve((Box::pin(sink), Box::pin(stream))).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => eprintln!("websocket session failed: {e}"),
            }
        });
    }
}

/// Accept only handshakes offering the `mcp` subprotocol, and select it.
#[allow(clippy::result_large_err)] // tungstenite's callback signature
fn require_mcp_subprotocol(
    request: &WsRequest,
    mut response: WsResponse,
) -> Result<WsResponse, ErrorResponse> {
    let offered = request
        .headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == "mcp");
    if !offered {
        let mut refusal = ErrorResponse::new(Some("subprotocol mcp required".into()));
        *refusal.status_mut() = axum::http::StatusCode::BAD_REQUEST;
        return Err(refusal);
    }
    response.headers_mut().insert(
        "sec-websocket-protocol",
        axum::http::HeaderValue::from_static("mcp"),
    );
    Ok(response)
}
