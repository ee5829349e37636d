//! [`McpServerPool`]: MCP servers connected once and shared by the agents
//! of several agent files (the files `loopwright serve` serves side by side).
//!
//! Invariants:
//! - a server is connected at most once per pool: a build connects only
//!   the servers the pool has neither connected nor seen fail; two builds
//!   that raced to connect the same server keep the first connection and
//!   close the other;
//! - a server that failed is remembered as failed (its error is every
//!   later agent's warning), never retried by the pool;
//! - the pool's lock is never held across an `.await`: connecting and
//!   closing happen outside it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use loopwright_core::toolset::SourceFailure;
use loopwright_mcp::{Connected, McpToolSource};

use crate::config::{AgentConfig, RunSetupError};

/// MCP servers shared by the builds of several agent files, each server
/// connected once by the first build that needs it. Give it to every
/// build with [`BuildOptions::server_pool`](super::BuildOptions::server_pool);
/// the pool (not each build's [`BuiltAgent::connected`](super::BuiltAgent))
/// then holds the servers: close them with [`close_all`](Self::close_all).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use loopwright_config::files::{AgentFile, BuildOptions, McpServerPool};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a.md"), "---\nmodel: local/x\n---\nA.").unwrap();
/// std::fs::write(dir.path().join("b.md"), "---\nmodel: local/x\n---\nB.").unwrap();
/// let config = loopwright_config::config::AgentConfig::parse(
///     r#"{"providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}}}"#,
///     "a.json", &|_| None).unwrap();
/// let pool = McpServerPool::new();
/// for file in ["a.md", "b.md"] {
///     let built = AgentFile::load(&dir.path().join(file)).unwrap()
///         .build_with(&config, BuildOptions::default().server_pool(pool.clone()))
///         .await
///         .unwrap();
///     assert!(built.connected.sources.is_empty()); // the pool holds them
/// }
/// assert!(pool.server_names().is_empty()); // these files use no MCP server
/// pool.close_all().await;
/// # });
/// ```
#[derive(Clone, Default)]
pub struct McpServerPool {
    inner: Arc<Mutex<Servers>>,
}

/// Connected servers and failed ones.
#[derive(Clone, Default)]
pub(super) struct Servers {
    pub(super) sources: Vec<McpToolSource>,
    pub(super) failed: Vec<SourceFailure>,
}

impl Servers {
    fn has(&self, name: &str) -> bool {
        self.sources.iter().any(|s| s.config().name == name) || self.failed.iter().any(|f| f.server == name)
    }

    /// The servers of `connected`.
    pub(super) fn of(connected: &Connected) -> Self {
        Self {
            sources: connected.sources.clone(),
            failed: connected
                .failed
                .iter()
                .map(|f| {
                    SourceFailure::new(f.server.clone(), f.error.to_string())
                        .signing_in(f.error.needs_login())
                })
                .collect(),
        }
    }

    /// The connected servers' names.
    pub(super) fn names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.config().name.clone()).collect()
    }
}

impl std::fmt::Debug for McpServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers = self.lock();
        f.debug_struct("McpServerPool")
            .field("connected", &servers.names())
            .field(
                "failed",
                &servers
                    .failed
                    .iter()
                    .map(|f| f.server.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpServerPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Servers> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The names of the servers connected so far.
    pub fn server_names(&self) -> Vec<String> {
        self.lock().names()
    }

    /// Close every connected server (idempotent).
    pub async fn close_all(&self) {
        let mut all = Connected::default();
        all.sources = self.lock().sources.clone();
        all.close_all().await;
    }

    /// `names`' servers, connecting those the pool does not have yet.
    pub(super) async fn servers(
        &self,
        config: &AgentConfig,
        names: &[String],
    ) -> Result<Servers, RunSetupError> {
        let missing: Vec<String> = {
            let servers = self.lock();
            names.iter().filter(|n| !servers.has(n)).cloned().collect()
        };
        if !missing.is_empty() {
            let connected = config.connect_mcp(&missing).await?;
            let mut raced = Connected::default();
            {
                let mut servers = self.lock();
                for source in connected.sources {
                    if servers.has(&source.config().name) {
                        raced.sources.push(source);
                    } else {
                        servers.sources.push(source);
                    }
                }
                for failure in connected.failed {
                    if !servers.has(&failure.server) {
                        servers.failed.push(
                            SourceFailure::new(failure.server, failure.error.to_string())
                                .signing_in(failure.error.needs_login()),
                        );
                    }
                }
            }
            raced.close_all().await;
        }
        let servers = self.lock();
        let wanted = |name: &str| names.iter().any(|n| n == name);
        Ok(Servers {
            sources: servers
                .sources
                .iter()
                .filter(|s| wanted(&s.config().name))
                .cloned()
                .collect(),
            failed: servers
                .failed
                .iter()
                .filter(|f| wanted(&f.server))
                .cloned()
                .collect(),
        })
    }
}
