//! The client span of each MCP request a tool makes, after the OpenTelemetry
//! MCP conventions: `tools/call {tool}` for a server's tool,
//! `resources/list`, `resources/templates/list` and `resources/read` (with
//! `mcp.resource.uri`) for the resource tools; kind client, under the
//! agent's `execute_tool` span (see `loopwright_types::trace`).
//!
//! Invariants: the span is created before the request is sent (its name and
//! kind are fixed then) and covers a resend; `jsonrpc.request.id` is the id
//! of the request that was answered; a failed request gets `error.type`
//! (the JSON-RPC error code, `tool_error` for a result with `isError`,
//! `timeout`, `cancelled`, or `transport`) and `otel.status_code = "error"`.

use tracing::Span;
use tracing::field::Empty;

use crate::config::McpTransport;

/// What a request is about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What<'a> {
    /// `tools/call` of this tool (its own name).
    ToolCall(&'a str),
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    TemplatesList,
    /// `resources/read` of this URI.
    ResourceRead(&'a str),
    /// A request of the Tasks extension (`tasks/get`, `tasks/update`).
    Task(&'static str),
}

impl What<'_> {
    fn method(self) -> &'static str {
        match self {
            Self::ToolCall(_) => "tools/call",
            Self::ResourcesList => "resources/list",
            Self::TemplatesList => "resources/templates/list",
            Self::ResourceRead(_) => "resources/read",
            Self::Task(method) => method,
        }
    }
}

/// `network.transport` of a server: `pipe` for stdio, `tcp` otherwise.
fn network_transport(transport: &McpTransport) -> &'static str {
    match transport {
        McpTransport::Stdio(_) => "pipe",
        _ => "tcp",
    }
}

/// The span of one request to `server`.
pub(crate) fn request(what: What<'_>, server: &str, transport: &McpTransport) -> Span {
    let method = what.method();
    let name = match what {
        What::ToolCall(tool) => format!("{method} {tool}"),
        _ => method.to_owned(),
    };
    let span = tracing::info_span!(
        target: loopwright_types::trace::TARGET,
        "mcp_request",
        otel.name = %name,
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = method,
        gen_ai.operation.name = Empty,
        gen_ai.tool.name = Empty,
        mcp.resource.uri = Empty,
        mcp.server.name = %server,
        network.transport = network_transport(transport),
        jsonrpc.request.id = Empty,
        error.type = Empty,
    );
    match what {
        What::ToolCall(tool) => {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", tool);
        }
        What::ResourceRead(uri) => {
            span.record("mcp.resource.uri", uri);
        }
        What::ResourcesList | What::TemplatesList | What::Task(_) => {}
    }
    span
}

/// Mark a request's span failed with `kind`.
pub(crate) fn failed(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}
