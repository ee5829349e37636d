//! The world of the OAuth tests, in this process on real sockets: an
//! authorization server whose answers each test scripts (hostile ones
//! included), an MCP server protected by it (the resource: 401 without a
//! token it issued for this resource, 403 `insufficient_scope` on a call
//! when the token lacks the scope the test requires), and a browser that
//! signs the person in (after probing the loopback listener, when asked).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// What the token endpoint answers.
#[derive(Clone, Debug, Default)]
pub enum Answer {
    /// A token for the scope and resource asked for (or as scripted).
    #[default]
    Token,
    /// This JSON, 200.
    Json(Value),
    /// This status, content type and body.
    Raw(u16, &'static str, Vec<u8>),
    /// A token response after this many bytes of JSON whitespace.
    Padded(usize),
    /// A redirect (307, which keeps the method and body) to this URL.
    Redirect(String),
    /// Nothing, ever.
    Stall,
}

/// What the authorization server does; tests change it through
/// [`World::script`].
#[derive(Clone, Debug)]
pub struct Script {
    /// The token endpoint's answer to a client-credentials or
    /// authorization-code request.
    pub token: Answer,
    /// Its answer to a refresh.
    pub refresh: Answer,
    /// The metadata document, replacing the default one.
    pub metadata: Option<Value>,
    /// Answer the metadata request with a redirect (307) here instead.
    pub metadata_redirect: Option<String>,
    /// The scope every token gets, whatever was asked for.
    pub granted_scope: Option<String>,
    /// The resource every token is minted for, whatever was asked for.
    pub minted_for: Option<String>,
    /// The tokens' `expires_in`.
    pub expires_in: Value,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            token: Answer::Token,
            refresh: Answer::Token,
            metadata: None,
            metadata_redirect: None,
            granted_scope: None,
            minted_for: None,
            expires_in: json!(3600),
        }
    }
}

/// A token or code the server issued: its scopes and resource.
#[derive(Clone, Debug)]
struct Grant {
    scopes: Vec<String>,
    resource: String,
}

/// The state both servers share.
pub struct Shared {
    pub script: Mutex<Script>,
    /// Every request the authorization server and the stray endpoint got:
    /// `METHOD /path form-or-query` (secrets included: tests look for them).
    pub log: Mutex<Vec<String>>,
    /// The scope a tool call needs (else 403 `insufficient_scope`).
    pub required_scope: Mutex<Option<String>>,
    issued: Mutex<HashMap<String, Grant>>,
    codes: Mutex<HashMap<String, Grant>>,
    counter: AtomicU64,
    pub resource: String,
    pub issuer: String,
    /// Another origin (its `/stray` records what reaches it).
    pub stray: String,
}

impl Shared {
    fn next(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.counter.fetch_add(1, Ordering::SeqCst))
    }

    fn record(&self, line: String) {
        self.log.lock().unwrap().push(line);
    }

    /// The log lines that start with `prefix`.
    pub fn logged(&self, prefix: &str) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .cloned()
            .collect()
    }

    fn metadata(&self) -> Value {
        self.script.lock().unwrap().metadata.clone().unwrap_or_else(|| {
            json!({
                "issuer": self.issuer,
                "authorization_endpoint": format!("{}/authorize", self.issuer),
                "token_endpoint": format!("{}/token", self.issuer),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "private_key_jwt", "none"],
                "scopes_supported": ["read", "write"]
            })
        })
    }
}

/// Both servers, running until dropped.
pub struct World {
    pub shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for World {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl World {
    pub async fn start() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let resource_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let as_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stray_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let shared = Arc::new(Shared {
            script: Mutex::new(Script::default()),
            log: Mutex::new(Vec::new()),
            required_scope: Mutex::new(None),
            issued: Mutex::new(HashMap::new()),
            codes: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(1),
            resource: format!("http://{}/mcp", resource_listener.local_addr().unwrap()),
            issuer: format!("http://{}", as_listener.local_addr().unwrap()),
            stray: format!("http://{}", stray_listener.local_addr().unwrap()),
        });
        let serve = |listener: TcpListener, app: Router| {
            tokio::spawn(async move {
                axum::serve(listener, app).await.unwrap();
            })
        };
        let tasks = vec![
            serve(resource_listener, resource_app(shared.clone())),
            serve(as_listener, as_app(shared.clone())),
            serve(stray_listener, stray_app(shared.clone())),
        ];
        Self { shared, tasks }
    }

    /// Change what the authorization server does.
    pub fn script(&self, change: impl FnOnce(&mut Script)) {
        change(&mut self.shared.script.lock().unwrap());
    }

    /// The MCP server's config with this `oauth` object (and connect
    /// timeout), as a configuration file gives it.
    pub fn server(&self, oauth: Value, connect_timeout: &str) -> loopwright_mcp::McpServerConfig {
        let config = json!({"mcpServers": {"guarded": {
            "url": self.shared.resource, "oauth": oauth, "connectTimeout": connect_timeout
        }}});
        loopwright_mcp::parse_mcp_servers(&config).unwrap().remove(0)
    }
}

// ---- the authorization server ----

fn as_app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route("/.well-known/openid-configuration", get(as_metadata))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(shared)
}

/// The default metadata, or the scripted one.
async fn as_metadata(State(shared): State<Arc<Shared>>) -> Response {
    shared.record("GET /.well-known/oauth-authorization-server".into());
    let redirect = shared.script.lock().unwrap().metadata_redirect.clone();
    if let Some(to) = redirect {
        return (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response();
    }
    axum::Json(shared.metadata()).into_response()
}

/// Sign the person in at once: back to the redirect URI with a code.
async fn authorize(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    shared.record(format!(
        "GET /authorize scope={}",
        query.get("scope").cloned().unwrap_or_default()
    ));
    let code = shared.next("code");
    let scopes = query
        .get("scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let resource = query.get("resource").cloned().unwrap_or_default();
    shared
        .codes
        .lock()
        .unwrap()
        .insert(code.clone(), Grant { scopes, resource });
    let mut location = url::Url::parse(&query["redirect_uri"]).unwrap();
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &query["state"])
        .append_pair("iss", &shared.issuer);
    (StatusCode::FOUND, [(header::LOCATION, location.to_string())]).into_response()
}

async fn token(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let grant_type = form.get("grant_type").cloned().unwrap_or_default();
    shared.record(format!("POST /token {}", String::from_utf8_lossy(&body)));
    let script = shared.script.lock().unwrap().clone();
    let answer = if grant_type == "refresh_token" {
        script.refresh.clone()
    } else {
        script.token.clone()
    };
    let asked = match grant_type.as_str() {
        "authorization_code" => {
            let code = form.get("code").cloned().unwrap_or_default();
            match shared.codes.lock().unwrap().remove(&code) {
                Some(grant) => grant,
                None => return oauth_error("invalid_grant"),
            }
        }
        "refresh_token" => {
            let old = form.get("refresh_token").cloned().unwrap_or_default();
            match shared.issued.lock().unwrap().get(&old).cloned() {
                Some(grant) => grant,
                None => return oauth_error("invalid_grant"),
            }
        }
        _ => Grant {
            scopes: form
                .get("scope")
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            resource: form.get("resource").cloned().unwrap_or_default(),
        },
    };
    match answer {
        Answer::Token => axum::Json(mint(&shared, &script, asked)).into_response(),
        Answer::Json(value) => axum::Json(value).into_response(),
        Answer::Raw(status, content_type, body) => (
            StatusCode::from_u16(status).unwrap(),
            [(header::CONTENT_TYPE, content_type)],
            body,
        )
            .into_response(),
        Answer::Padded(spaces) => {
            let token = mint(&shared, &script, asked).to_string();
            let chunks = (0..spaces / 65_536)
                .map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 65_536])))
                .chain(std::iter::once(Ok(Bytes::from(token))));
            (
                [(header::CONTENT_TYPE, "application/json")],
                Body::from_stream(futures::stream::iter(chunks)),
            )
                .into_response()
        }
        Answer::Redirect(to) => (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response(),
        Answer::Stall => std::future::pending().await,
    }
}

/// A new access token (and refresh token) for `asked`, as scripted.
fn mint(shared: &Shared, script: &Script, asked: Grant) -> Value {
    let grant = Grant {
        scopes: script
            .granted_scope
            .as_ref()
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or(asked.scopes),
        resource: script.minted_for.clone().unwrap_or(asked.resource),
    };
    let access = shared.next("access");
    let refresh = shared.next("refresh");
    let scope = grant.scopes.join(" ");
    let mut issued = shared.issued.lock().unwrap();
    issued.insert(access.clone(), grant.clone());
    issued.insert(refresh.clone(), grant);
    json!({
        "access_token": access, "token_type": "Bearer", "expires_in": script.expires_in,
        "refresh_token": refresh, "scope": scope
    })
}

fn oauth_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response()
}

// ---- another origin, recording what reaches it ----

fn stray_app(shared: Arc<Shared>) -> Router {
    Router::new().route("/{*path}", any(stray)).with_state(shared)
}

async fn stray(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let line = format!("STRAY {} {}", request.method(), request.uri());
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    shared.record(format!("{line} {}", String::from_utf8_lossy(&body)));
    axum::Json(json!({"access_token": "stray-token", "token_type": "Bearer"})).into_response()
}

// ---- the protected MCP server ----

fn resource_app(shared: Arc<Shared>) -> Router {
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .route("/.well-known/oauth-protected-resource", get(resource_metadata))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .with_state(shared)
}

async fn resource_metadata(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(json!({
        "resource": shared.resource,
        "authorization_servers": [shared.issuer],
        "scopes_supported": ["read", "write"]
    }))
    .into_response()
}

/// 401 without a token issued for this resource; 403 on a call that
/// needs a scope the token lacks.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let metadata = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        shared.resource.trim_end_matches("/mcp")
    );
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let grant = token.and_then(|t| shared.issued.lock().unwrap().get(&t).cloned());
    let Some(grant) = grant.filter(|g| g.resource == shared.resource) else {
        let challenge = format!("Bearer resource_metadata=\"{metadata}\", scope=\"read\"");
        return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]).into_response();
    };
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let is_call = serde_json::from_slice::<Value>(&body).is_ok_and(|v| v["method"] == "tools/call");
    let required = shared.required_scope.lock().unwrap().clone();
    if let Some(scope) = required.filter(|s| is_call && !grant.scopes.contains(s)) {
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
        );
        return (StatusCode::FORBIDDEN, [(header::WWW_AUTHENTICATE, challenge)]).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// The MCP server: one tool, `echo`.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Echo the text back.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

// ---- the person's browser ----

/// What the browser does with the loopback listener before it delivers
/// the real redirect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Probes {
    /// Deliver it at once.
    #[default]
    None,
    /// First a request to another path, one without state, one with a
    /// wrong state, a POST with the right one, and a connection that
    /// says nothing (kept open until the sign-in is over).
    Hostile,
}

/// A browser that follows the authorization page to its redirect and
/// delivers that to the loopback listener; what each probe got back is
/// kept in `answers` (`status body`).
#[derive(Clone, Default)]
pub struct TestBrowser {
    pub probes: Probes,
    /// From this sign-in on (1 is the first), the person never comes back.
    pub stall_from: Option<u64>,
    /// How long the person takes to sign in.
    pub takes: Option<std::time::Duration>,
    pub answers: Arc<Mutex<Vec<String>>>,
    pub opened: Arc<AtomicU64>,
    /// The number of pages opened, for tests to wait on.
    pub pages: Arc<tokio::sync::watch::Sender<u64>>,
    silent: Arc<Mutex<Vec<tokio::net::TcpStream>>>,
    /// The deliveries of the real redirects: the sign-in may end (and drop
    /// `open`) as soon as the listener has it, before its answer is read.
    deliveries: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl TestBrowser {
    pub fn with_probes(probes: Probes) -> Self {
        Self {
            probes,
            ..Self::default()
        }
    }

    /// A browser whose person takes `time` to sign in.
    pub fn taking(time: std::time::Duration) -> Self {
        Self {
            takes: Some(time),
            ..Self::default()
        }
    }

    /// A browser whose person never comes back from sign-in `from` on.
    pub fn stalling_from(from: u64) -> Self {
        Self {
            stall_from: Some(from),
            ..Self::default()
        }
    }

    async fn send(&self, client: &reqwest::Client, method: reqwest::Method, url: &str) {
        let answer = answer(client, method, url).await;
        self.answers.lock().unwrap().push(answer);
    }

    /// Wait for the real redirects to have been answered.
    pub async fn delivered(&self) {
        let deliveries: Vec<_> = self.deliveries.lock().unwrap().drain(..).collect();
        for delivery in deliveries {
            delivery.await.unwrap();
        }
    }
}

#[async_trait::async_trait]
impl loopwright_mcp::oauth::Browser for TestBrowser {
    async fn open(&self, _server: &str, url: &str) -> Result<(), String> {
        let opened = self.opened.fetch_add(1, Ordering::SeqCst) + 1;
        self.pages.send_replace(opened);
        if self.stall_from.is_some_and(|from| opened >= from) {
            return std::future::pending().await;
        }
        if let Some(time) = self.takes {
            tokio::time::sleep(time).await;
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let page = client.get(url).send().await.map_err(|e| e.to_string())?;
        let redirect = page
            .headers()
            .get(header::LOCATION)
            .ok_or_else(|| {
                format!(
                    "the authorization page answered {} with no redirect",
                    page.status()
                )
            })?
            .to_str()
            .unwrap()
            .to_owned();
        if self.probes == Probes::Hostile {
            let parsed = url::Url::parse(&redirect).unwrap();
            let origin = parsed.origin().ascii_serialization();
            let address = parsed.socket_addrs(|| None).unwrap()[0];
            // Connected first, silent for as long as the sign-in lasts.
            let silent = tokio::net::TcpStream::connect(address).await.unwrap();
            self.silent.lock().unwrap().push(silent);
            let right = parsed.query().unwrap_or_default().to_owned();
            let code = parsed
                .query_pairs()
                .find(|(k, _)| k == "code")
                .map(|(_, v)| v.into_owned())
                .unwrap();
            self.send(&client, reqwest::Method::GET, &format!("{origin}/elsewhere"))
                .await;
            self.send(
                &client,
                reqwest::Method::GET,
                &format!("{origin}/callback?code={code}"),
            )
            .await;
            self.send(
                &client,
                reqwest::Method::GET,
                &format!("{origin}/callback?code={code}&state=forged"),
            )
            .await;
            self.send(
                &client,
                reqwest::Method::POST,
                &format!("{origin}/callback?{right}"),
            )
            .await;
        }
        let answers = self.answers.clone();
        let delivery = tokio::spawn(async move {
            let answer = answer(&client, reqwest::Method::GET, &redirect).await;
            answers.lock().unwrap().push(answer);
        });
        self.deliveries.lock().unwrap().push(delivery);
        std::future::pending().await
    }
}

/// `status body` of a request.
async fn answer(client: &reqwest::Client, method: reqwest::Method, url: &str) -> String {
    let response = client.request(method, url).send().await.unwrap();
    let status = response.status().as_u16();
    format!("{status} {}", response.text().await.unwrap())
}
