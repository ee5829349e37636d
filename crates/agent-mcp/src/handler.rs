//! The client side of a connection: what this SDK answers and does when a
//! server sends it something (rmcp's [`ClientHandler`]).
//!
//! - `notifications/progress` are routed by progress token to the running
//!   call's [`ProgressReporter`]; reports for unknown tokens (a call that
//!   already ended, or one not yet registered) are dropped.
//! - `notifications/tools/list_changed` marks the tool list stale and bumps
//!   the source's change generation.
//! - `ping`, `roots/list` (empty), `sampling/createMessage` and
//!   `elicitation/create` (declined) keep rmcp's defaults.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::ProgressReporter;
use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::watch;

/// State shared between a source, its tools and its connection's handler.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) server: String,
    progress: Mutex<HashMap<ProgressToken, ProgressReporter>>,
    /// Set when the server said its tool list changed; cleared on re-listing.
    pub(crate) tools_stale: AtomicBool,
    pub(crate) generation: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn new(server: &str) -> Self {
        Self {
            server: server.to_string(),
            progress: Mutex::new(HashMap::new()),
            tools_stale: AtomicBool::new(false),
            generation: watch::Sender::new(0),
        }
    }

    /// Route progress for `token` to `reporter` until the guard drops.
    pub(crate) fn watch_progress(
        self: &Arc<Self>,
        token: ProgressToken,
        reporter: ProgressReporter,
    ) -> ProgressGuard {
        if let Ok(mut map) = self.progress.lock() {
            map.insert(token.clone(), reporter);
        }
        ProgressGuard {
            shared: self.clone(),
            token,
        }
    }

    /// The tool list changed on the server.
    pub(crate) fn mark_tools_changed(&self) {
        self.tools_stale.store(true, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
    }
}

/// Unregisters a call's progress route when dropped.
pub(crate) struct ProgressGuard {
    shared: Arc<Shared>,
    token: ProgressToken,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        if let Ok(mut map) = self.shared.progress.lock() {
            map.remove(&self.token);
        }
    }
}

/// rmcp client handler of one connection.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let reporter = self
            .shared
            .progress
            .lock()
            .ok()
            .and_then(|map| map.get(&params.progress_token).cloned());
        match reporter {
            Some(r) => r.report(params.progress, params.total, params.message),
            // Late progress after a cancel or timeout is tolerated and dropped.
            None => tracing::trace!(server = %self.shared.server, "progress for an unknown token dropped"),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.shared.server, "tools/list_changed");
        self.shared.mark_tools_changed();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agent-mcp", env!("CARGO_PKG_VERSION")),
        )
    }
}
