//! `loopwright mcp login|logout|status`: OAuth sign-in to the configured
//! remote MCP servers (loopwright-mcp's `oauth` module does the work).
//!
//! Invariants: a token is never printed, only where it is kept, who issued
//! it and when it expires; `login` replaces the server's stored sign-in only
//! once the new one succeeded; exit status 0 on success, 1 when the sign-in
//! or the server failed, 2 for a name that is not configured.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loopwright::mcp::oauth::{Browser, FileTokenStore, MemoryTokenStore, TokenStore};
use loopwright::mcp::{McpClientOptions, McpServerConfig, McpToolSource, McpTransport};

use crate::args::{McpAction, McpArgs};
use crate::exit;

/// Shows the sign-in page: prints its URL on stderr and, unless told not
/// to, asks the desktop to open it.
struct Terminal {
    open: bool,
}

#[async_trait::async_trait]
impl Browser for Terminal {
    async fn open(&self, server: &str, url: &str) -> Result<(), String> {
        eprintln!("Sign in to {server}: open this URL in a browser:\n\n  {url}\n");
        if self.open {
            for opener in ["xdg-open", "open"] {
                let spawned = std::process::Command::new(opener)
                    .arg(url)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn();
                if let Ok(mut child) = spawned {
                    // Reaped off the runtime; the opener exits at once.
                    std::thread::spawn(move || child.wait());
                    break;
                }
            }
        }
        eprintln!("Waiting for the browser to come back...");
        Ok(())
    }
}

pub async fn run(args: McpArgs) -> u8 {
    let config = match &args.config {
        Some(path) => loopwright::config::AgentConfig::load(path),
        None => loopwright::config::AgentConfig::from_default_location(),
    };
    let config = match config {
        Ok(config) => config,
        Err(e) => {
            eprintln!("loopwright: config {e}");
            return exit::USAGE;
        }
    };
    // Errors, and the token store's warnings (a token file others could
    // read is tightened), on stderr.
    crate::trace::init(crate::trace::TraceOptions::default(), config.secret_values());
    let store = match FileTokenStore::default_location() {
        Ok(store) => store,
        Err(e) => {
            eprintln!("loopwright: {e}");
            return exit::USAGE;
        }
    };
    let find = |name: &str| {
        let found = config.mcp_servers.iter().find(|s| s.name == name).cloned();
        if found.is_none() {
            let names: Vec<_> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "loopwright: no MCP server {name} in the configuration (configured: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            );
        }
        found
    };
    match args.action {
        McpAction::Login { name, no_browser } => match find(&name) {
            Some(server) => login(server, store, !no_browser).await,
            None => exit::USAGE,
        },
        McpAction::Logout { name } => match find(&name) {
            Some(server) => logout(&server, &store).await,
            None => exit::USAGE,
        },
        McpAction::Status => status(&config.mcp_servers, &store).await,
    }
}

/// The URL of a streamable HTTP server (the only kind OAuth applies to).
fn http_url(server: &McpServerConfig) -> Option<&str> {
    match &server.transport {
        McpTransport::Http(remote) => Some(&remote.url),
        _ => None,
    }
}

async fn login(server: McpServerConfig, store: FileTokenStore, open: bool) -> u8 {
    let Some(url) = http_url(&server).map(str::to_owned) else {
        eprintln!(
            "loopwright: {} is a {} server; OAuth sign-in is for streamable HTTP servers",
            server.name,
            server.transport.kind()
        );
        return exit::USAGE;
    };
    // Sign in afresh into a scratch store, so a failed attempt leaves the
    // stored sign-in as it was; the new one replaces it once it worked.
    let scratch = MemoryTokenStore::default();
    let options = McpClientOptions::default()
        .with_token_store(scratch.clone())
        .with_browser(Terminal { open });
    let name = server.name.clone();
    let source = match McpToolSource::connect_with(server, options).await {
        Ok(source) => source,
        Err(e) => {
            eprintln!("loopwright: {e}");
            return 1;
        }
    };
    let tools = loopwright::ToolSource::tools(&source)
        .await
        .map(|t| t.len())
        .unwrap_or(0);
    source.close().await;
    match scratch.load(&url).await {
        Ok(Some(credentials)) => match store.save(&url, credentials).await {
            Ok(()) => {
                eprintln!(
                    "Signed in to {name} ({tools} tools); the sign-in is kept in {}",
                    store.path().display()
                );
                exit::OK
            }
            Err(e) => {
                eprintln!("loopwright: {e}");
                1
            }
        },
        _ => {
            eprintln!("{name} did not ask for a sign-in ({tools} tools): nothing to store");
            exit::OK
        }
    }
}

async fn logout(server: &McpServerConfig, store: &FileTokenStore) -> u8 {
    let Some(url) = http_url(server) else {
        eprintln!(
            "{} keeps no sign-in ({} server)",
            server.name,
            server.transport.kind()
        );
        return exit::OK;
    };
    match store.clear(url).await {
        Ok(true) => {
            eprintln!("Signed out of {}", server.name);
            exit::OK
        }
        Ok(false) => {
            eprintln!("{} had no stored sign-in", server.name);
            exit::OK
        }
        Err(e) => {
            eprintln!("loopwright: {e}");
            1
        }
    }
}

/// One line per server on stdout: `NAME<TAB>STATE<TAB>DETAIL`.
async fn status(servers: &[McpServerConfig], store: &FileTokenStore) -> u8 {
    let lines = futures::future::join_all(
        servers
            .iter()
            .map(|server| async move { (server.name.clone(), server_status(server, store).await) }),
    )
    .await;
    for (name, (state, detail)) in lines {
        println!("{name}\t{state}\t{detail}");
    }
    exit::OK
}

/// A server's state and what to know about it.
async fn server_status(server: &McpServerConfig, store: &FileTokenStore) -> (&'static str, String) {
    if !server.enabled {
        return ("disabled", String::new());
    }
    let Some(url) = http_url(server) else {
        return ("no-sign-in", format!("{} server", server.transport.kind()));
    };
    let stored = match store.load(url).await {
        Ok(stored) => stored,
        Err(e) => return ("error", e.to_string()),
    };
    // Connect without a browser: a server that needs a sign-in says so.
    let options = McpClientOptions::default().with_token_store(store.clone());
    match McpToolSource::connect_with(server.clone(), options).await {
        Ok(source) => {
            let version = source.protocol_version().unwrap_or_default();
            source.close().await;
            match stored {
                Some(credentials) => {
                    let issuer = credentials.issuer.unwrap_or_else(|| "unknown issuer".into());
                    (
                        "signed-in",
                        format!(
                            "by {issuer}{}; protocol {version}",
                            expiry(credentials.token_received_at, &credentials.token_response)
                        ),
                    )
                }
                None => ("ok", format!("no sign-in needed; protocol {version}")),
            }
        }
        Err(e) if e.needs_login() => (
            "needs-login",
            format!("run `loopwright mcp login {}`", server.name),
        ),
        Err(e) => ("error", e.to_string()),
    }
}

/// `, expires in 5m` from when the token was received and its lifetime.
fn expiry(
    received_at: Option<u64>,
    token: &Option<loopwright::mcp::rmcp::transport::auth::OAuthTokenResponse>,
) -> String {
    let lifetime = token
        .as_ref()
        .and_then(|t| serde_json::to_value(t).ok())
        .and_then(|v| v.get("expires_in").and_then(serde_json::Value::as_u64));
    let (Some(received), Some(lifetime)) = (received_at, lifetime) else {
        return String::new();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let left = (received + lifetime).saturating_sub(now);
    if left == 0 {
        ", access token expired (refreshed on next use when a refresh token is stored)".into()
    } else {
        format!(", access token expires in {}m", left.div_ceil(60))
    }
}
