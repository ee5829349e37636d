//! Streamable HTTP: rmcp's reqwest client transport with the configured
//! headers (session re-initialisation and SSE handling are rmcp's).

use std::collections::HashMap;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::config::RemoteConfig;
use crate::error::McpError;

/// Build the transport for a resolved remote config.
pub(crate) fn transport(
    server: &str,
    remote: &RemoteConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(header_map(server, remote)?)
        .reinit_on_expired_session(true);
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// The configured headers, checked.
pub(crate) fn header_map(
    server: &str,
    remote: &RemoteConfig,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    let mut headers = HashMap::new();
    for (key, value) in &remote.headers {
        let bad = |what: &str| McpError::Config {
            server: server.to_string(),
            message: format!("header `{key}`: invalid {what}"),
        };
        let name = http::HeaderName::from_bytes(key.as_bytes()).map_err(|_| bad("name"))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}
