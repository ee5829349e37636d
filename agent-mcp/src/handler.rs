//! The client side of a connection: what this SDK answers and does when a
//! server sends it something (rmcp's [`ClientHandler`]).
//!
//! - `notifications/progress` are routed by progress token to the running
//!   call's [`ProgressReporter`]; reports for unknown tokens (a call that
//!   already ended, or one not yet registered) are dropped.
//! - `notifications/tools/list_changed` marks the tool list stale and bumps
//!   the source's change generation.
//! - `ping` is rmcp's; `roots/list` answers the configured roots;
//!   `sampling/createMessage` goes to the application's handler, or gets a
//!   `-32601` error naming what is missing (see [`McpClientOptions`]);
//!   `elicitation/create` is answered by [`elicitation`](crate::elicitation)
//!   for the call it arrived for (the POST stream it came on, else the only
//!   call in flight).

#![allow(deprecated)] // rmcp marks roots and sampling deprecated (SEP-2577); servers still use them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use loopwright_types::{ProgressReporter, ToolContext};
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, FormElicitationCapability, Implementation,
    ListRootsResult, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId, RootsCapabilities,
    SamplingCapability, UrlElicitationCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use tokio::sync::watch;

use crate::options::McpClientOptions;

/// State shared between a source, its tools and its connection's handler.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) server: String,
    pub(crate) options: McpClientOptions,
    progress: Mutex<HashMap<ProgressToken, ProgressReporter>>,
    /// The calls in flight, by the id of their request: who a server's
    /// elicitation is for.
    calls: Mutex<HashMap<RequestId, ToolContext>>,
    /// Set when the server said its tool list changed; cleared on re-listing.
    pub(crate) tools_stale: AtomicBool,
    /// Set when the server said its prompt list changed.
    pub(crate) prompts_stale: AtomicBool,
    pub(crate) generation: watch::Sender<u64>,
    /// The client-credentials token of this server, while it is usable.
    #[cfg(feature = "oauth")]
    pub(crate) machine_token: Mutex<Option<crate::oauth::machine::MachineToken>>,
}

impl Shared {
    pub(crate) fn new(server: &str, options: McpClientOptions) -> Self {
        Self {
            server: server.to_string(),
            options,
            progress: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            tools_stale: AtomicBool::new(false),
            prompts_stale: AtomicBool::new(false),
            generation: watch::Sender::new(0),
            #[cfg(feature = "oauth")]
            machine_token: Mutex::new(None),
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

    /// Remember the call `ctx` as the one request `id` is for, until the
    /// guard drops.
    pub(crate) fn watch_call(self: &Arc<Self>, id: RequestId, ctx: &ToolContext) -> CallGuard {
        if let Ok(mut map) = self.calls.lock() {
            map.insert(id.clone(), ctx.clone());
        }
        CallGuard {
            shared: self.clone(),
            id,
        }
    }

    /// The call a server request arrived for: the one whose POST stream
    /// carried it, else the only call in flight.
    fn call_for(&self, origin: Option<&InboundStreamOrigin>) -> Option<ToolContext> {
        let map = self.calls.lock().ok()?;
        match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => map.get(id).cloned(),
            _ if map.len() == 1 => map.values().next().cloned(),
            _ => None,
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

/// Forgets a call in flight when dropped.
pub(crate) struct CallGuard {
    shared: Arc<Shared>,
    id: RequestId,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Ok(mut map) = self.shared.calls.lock() {
            map.remove(&self.id);
        }
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        if let Ok(mut map) = self.shared.progress.lock() {
            map.remove(&self.token);
        }
    }
}

/// The protocol version offered in `initialize`: the newest one that still
/// has an `initialize` handshake (rmcp's default, 2026-07-28, has none, and
/// servers and the conformance suite of the 2025-11-25 era reject it).
const OFFERED_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

/// The error for a server request this client has no handler for.
fn declined(method: &str, capability: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} declined: this client did not advertise {capability} (no handler installed)"),
        None,
    )
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

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared.prompts_stale.store(true, Ordering::SeqCst);
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(self.shared.options.roots().to_vec()))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        match self.shared.options.sampling_handler() {
            Some(handler) => handler.create_message(&self.shared.server, params).await,
            None => Err(declined("sampling/createMessage", "sampling")),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let call = self
            .shared
            .call_for(context.extensions.get::<InboundStreamOrigin>());
        Ok(crate::elicitation::elicit(&self.shared, call.as_ref(), params).await)
    }

    fn get_info(&self) -> ClientConfig {
        let options = &self.shared.options;
        let mut capabilities = ClientCapabilities::default();
        if !options.roots().is_empty() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        if options.sampling_handler().is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        // Calls the server turns into tasks are followed (see `tasks`).
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::TASKS_EXTENSION_ID.to_string(), Default::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("loopwright-mcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(OFFERED_PROTOCOL_VERSION)
    }
}
