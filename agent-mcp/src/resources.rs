//! The resource tools of a server whose config says `"resources": true`:
//! `list_resources` (`resources/list` and `resources/templates/list`, every
//! page) and `read_resource {uri}` (`resources/read`), so the model can read
//! what the server offers and what its tools link to.
//!
//! Invariants:
//! - they are offered only when the config asks for them AND the server
//!   advertises the `resources` capability; otherwise, or when the server
//!   has a tool of the same name (the server's own tool wins), the source
//!   reports a warning saying which of ours was left out and why;
//! - the offer is decided at every tool discovery (connect, reconnect,
//!   `tools/list_changed`), so it survives rediscovery;
//! - they are read-only by OUR annotations, which hold whether or not the
//!   server is trusted (the server's claims play no part);
//! - their requests take the same path as tool calls
//!   ([`request`](crate::request)): live connection, resend only when never
//!   delivered, timeout, cancellation, redacted errors;
//! - a listing is at most [`RESOURCE_LIST_MAX_BYTES`], cut at an entry,
//!   with a count of what was left out; templates come first, so a server
//!   with very many resources still shows how to name them.

use loopwright_types::toolset::sanitize_tool_name;
use loopwright_types::{Naming, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use loopwright_types::{ToolOutputPart, util::human_size};
use rmcp::model::{
    ClientRequest, ListResourceTemplatesRequest, ListResourcesRequest, PaginatedRequestParams,
    ReadResourceRequest, ReadResourceRequestParams, Resource, ResourceTemplate, ServerResult,
};
use serde_json::{Value, json};

use crate::config::McpServerConfig;
use crate::discovery::Discovered;
use crate::request::RequestError;
use crate::result::{map_contents, resource_uri};
use crate::source::SourceInner;
use crate::trace::What;

/// Original name of the tool that lists a server's resources.
pub const LIST_RESOURCES_TOOL: &str = "list_resources";

/// Original name of the tool that reads one resource.
pub const READ_RESOURCE_TOOL: &str = "read_resource";

/// Pages of `resources/list` (and of templates) followed at most: a server
/// whose cursors never end must not loop forever.
pub const MAX_RESOURCE_PAGES: usize = 100;

/// Most bytes of a `list_resources` answer: far below the loop's output cap
/// (50 KiB), so the cut is ours, at an entry, with a count of the rest.
pub const RESOURCE_LIST_MAX_BYTES: usize = 16 * 1024;

/// Longest description kept in a listing entry, in characters: a listing is
/// for choosing what to read, not for reading.
const DESCRIPTION_MAX_CHARS: usize = 200;

/// Which of the two resource tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `list_resources`.
    List,
    /// `read_resource`.
    Read,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::List => LIST_RESOURCES_TOOL,
            Self::Read => READ_RESOURCE_TOOL,
        }
    }
}

/// What a discovery decided: our tools on offer and the warnings about the
/// ones left out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Offer {
    pub(crate) kinds: Vec<Kind>,
    pub(crate) warnings: Vec<String>,
}

impl Offer {
    /// The offer for a server configured as `config`, which advertises
    /// resources (or not) and has `server_tools`.
    pub(crate) fn decide(config: &McpServerConfig, advertised: bool, server_tools: &[Discovered]) -> Self {
        let mut offer = Self::default();
        if !config.resources {
            return offer;
        }
        let server = &config.name;
        if !advertised {
            offer.warnings.push(format!(
                "mcp server {server}: \"resources\": true, but the server does not offer resources \
                 (no `resources` capability); {LIST_RESOURCES_TOOL} and {READ_RESOURCE_TOOL} are not added"
            ));
            return offer;
        }
        for kind in [Kind::List, Kind::Read] {
            if server_tools.iter().any(|(_, original)| original == kind.name()) {
                offer.warnings.push(format!(
                    "mcp server {server}: the server has its own tool {name}, which is kept; \
                     the resource tool {name} is left out",
                    name = kind.name()
                ));
            } else {
                offer.kinds.push(kind);
            }
        }
        offer
    }
}

impl SourceInner {
    /// The note a tool result with resource links gets when the model can
    /// read them (our `read_resource` is on offer), naming the tool as the
    /// default naming exposes it.
    pub(crate) fn resource_link_note(&self) -> Option<String> {
        let offered = self
            .resources
            .lock()
            .is_ok_and(|offer| offer.kinds.contains(&Kind::Read));
        offered.then(|| {
            let server = &self.config.name;
            let exposed = sanitize_tool_name(&Naming::Prefixed.apply(server, READ_RESOURCE_TOOL));
            format!(
                "To read a linked resource, call {exposed} (the {READ_RESOURCE_TOOL} tool of MCP server \
                 {server}) with its uri."
            )
        })
    }
}

/// The definition of one resource tool of `server`.
pub(crate) fn definition(kind: Kind, server: &str) -> ToolDefinition {
    let (description, schema) = match kind {
        Kind::List => (
            format!(
                "List the resources MCP server {server} offers (URI, name, MIME type, size, \
                 description) and its URI templates. Read one with its {READ_RESOURCE_TOOL} tool."
            ),
            json!({"type": "object", "properties": {}}),
        ),
        Kind::Read => (
            format!(
                "Read one resource of MCP server {server} by URI: one from its {LIST_RESOURCES_TOOL} \
                 tool, a resource link in a tool result, or a URI template filled in. Text comes \
                 back as text, images as images, other binary content as a placeholder."
            ),
            json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                "required": ["uri"]
            }),
        ),
    };
    // Ours, not the server's claim: they hold for untrusted servers too.
    let annotations = ToolAnnotations::default().read_only(true).idempotent(true);
    ToolDefinition::new(kind.name(), description, schema).with_annotations(annotations)
}

/// Run one resource tool of `source` (a failure the model can act on is an
/// error result, as for the server's own tools).
pub(crate) async fn call(
    kind: Kind,
    source: &SourceInner,
    input: Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let outcome = match kind {
        Kind::List => list(source, ctx).await,
        Kind::Read => {
            let Some(uri) = input.get("uri").and_then(Value::as_str) else {
                return Err(ToolError::invalid_input("`uri`: a string is required"));
            };
            read(source, uri, ctx).await
        }
    };
    match outcome {
        Ok(output) => Ok(output),
        Err(RequestError::Cancelled) => Err(ToolError::Cancelled),
        Err(
            RequestError::Server(message) | RequestError::TimedOut(message) | RequestError::Failed(message),
        ) => Ok(source.tool_error(kind.name(), message)),
    }
}

/// Every resource and template, as a capped listing.
async fn list(source: &SourceInner, ctx: &ToolContext) -> Result<ToolOutput, RequestError> {
    let resources = pages(
        source,
        ctx,
        What::ResourcesList,
        resources_request,
        resources_page,
    )
    .await?;
    let templates = match pages(
        source,
        ctx,
        What::TemplatesList,
        templates_request,
        templates_page,
    )
    .await
    {
        Ok(templates) => Ok(templates),
        // A server may serve resources without templates (-32601).
        Err(RequestError::Server(message)) => Err(message),
        Err(other) => return Err(other),
    };
    Ok(ToolOutput::text(listing(&resources, templates)))
}

/// One page of a listing: its items and the cursor of the next page.
type Page<T> = (Vec<T>, Option<String>);

/// Every page of one listing (at most [`MAX_RESOURCE_PAGES`]).
async fn pages<T>(
    source: &SourceInner,
    ctx: &ToolContext,
    what: What<'_>,
    request: fn(Option<String>) -> ClientRequest,
    page: fn(ServerResult) -> Option<Page<T>>,
) -> Result<Vec<T>, RequestError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_RESOURCE_PAGES {
        let next = cursor.take();
        let answer = source.request(what, &|| request(next.clone()), ctx).await?;
        let Some((items, next)) = page(answer) else {
            return Err(RequestError::Failed(
                "unexpected answer to a resource listing".into(),
            ));
        };
        out.extend(items);
        match next {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(out),
        }
    }
    Err(RequestError::Failed(format!(
        "the listing still had more pages after {MAX_RESOURCE_PAGES}"
    )))
}

/// One resource's contents as parts; the server's error (an unknown URI)
/// says what to do about it.
async fn read(source: &SourceInner, uri: &str, ctx: &ToolContext) -> Result<ToolOutput, RequestError> {
    let request = |round: &crate::mrtr::Round| {
        let mut params = ReadResourceRequestParams::new(uri);
        params.input_responses.clone_from(&round.input_responses);
        params.request_state.clone_from(&round.request_state);
        ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params))
    };
    let contents = match source
        .request_with_input(What::ResourceRead(uri), &request, ctx)
        .await
    {
        Ok(ServerResult::ReadResourceResult(result)) => result.contents,
        Ok(other) => {
            return Err(RequestError::Failed(format!(
                "unexpected answer to resources/read: {other:?}"
            )));
        }
        Err(RequestError::Server(message)) => {
            return Err(RequestError::Server(format!(
                "reading {uri} failed: {message}. Check the URI: the {LIST_RESOURCES_TOOL} tool of \
                 this server lists its resources and URI templates."
            )));
        }
        Err(other) => return Err(other),
    };
    if contents.is_empty() {
        return Ok(ToolOutput::text(format!("(the resource {uri} is empty)")));
    }
    let several = contents.len() > 1;
    let mut parts = Vec::new();
    for item in contents {
        if several {
            // Several contents: each is headed by its URI, so the model
            // can tell them apart.
            parts.push(ToolOutputPart::text(format!(
                "[contents of {}]",
                resource_uri(&item)
            )));
        }
        parts.push(map_contents(item));
    }
    Ok(ToolOutput::new(parts))
}

fn paginated(cursor: Option<String>) -> PaginatedRequestParams {
    PaginatedRequestParams::default().with_cursor(cursor)
}

fn resources_request(cursor: Option<String>) -> ClientRequest {
    ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(paginated(cursor)))
}

fn templates_request(cursor: Option<String>) -> ClientRequest {
    ClientRequest::ListResourceTemplatesRequest(ListResourceTemplatesRequest::with_param(paginated(cursor)))
}

fn resources_page(answer: ServerResult) -> Option<Page<Resource>> {
    match answer {
        ServerResult::ListResourcesResult(page) => Some((page.resources, page.next_cursor)),
        _ => None,
    }
}

fn templates_page(answer: ServerResult) -> Option<Page<ResourceTemplate>> {
    match answer {
        ServerResult::ListResourceTemplatesResult(page) => Some((page.resource_templates, page.next_cursor)),
        _ => None,
    }
}

/// The listing the model reads: a line per template, then per resource,
/// cut at [`RESOURCE_LIST_MAX_BYTES`] with a count of what was left out.
fn listing(resources: &[Resource], templates: Result<Vec<ResourceTemplate>, String>) -> String {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut notes = Vec::new();
    match templates {
        Ok(templates) if !templates.is_empty() => sections.push((
            format!(
                "Resource templates ({}; fill in the {{placeholders}}, then read the URI):",
                templates.len()
            ),
            templates
                .iter()
                .map(|t| {
                    entry(
                        &t.uri_template,
                        &t.name,
                        t.mime_type.as_deref(),
                        None,
                        t.description.as_deref(),
                    )
                })
                .collect(),
        )),
        Ok(_) => {}
        Err(message) => notes.push(format!("(resource templates could not be listed: {message})")),
    }
    if resources.is_empty() {
        notes.push("(the server lists no resources)".to_string());
    } else {
        sections.push((
            format!("Resources ({}):", resources.len()),
            resources
                .iter()
                .map(|r| {
                    entry(
                        &r.uri,
                        &r.name,
                        r.mime_type.as_deref(),
                        r.size,
                        r.description.as_deref(),
                    )
                })
                .collect(),
        ));
    }
    let mut out = String::new();
    let mut left_out = 0;
    for (heading, entries) in sections {
        if left_out > 0 {
            left_out += entries.len();
            continue;
        }
        push_line(&mut out, &heading);
        for (i, line) in entries.iter().enumerate() {
            if out.len() + line.len() + 1 > RESOURCE_LIST_MAX_BYTES {
                left_out = entries.len() - i;
                break;
            }
            push_line(&mut out, line);
        }
    }
    if left_out > 0 {
        push_line(
            &mut out,
            &format!(
                "[... {left_out} more entries not listed: the listing is cut at {}]",
                human_size(RESOURCE_LIST_MAX_BYTES)
            ),
        );
    }
    for note in notes {
        push_line(&mut out, &note);
    }
    out
}

fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(line);
}

/// `- URI (name, type, size): description`, on one line.
fn entry(uri: &str, name: &str, mime: Option<&str>, size: Option<u64>, description: Option<&str>) -> String {
    let mut facts = vec![name.to_string()];
    facts.extend(mime.map(str::to_string));
    facts.extend(size.map(|s| human_size(usize::try_from(s).unwrap_or(usize::MAX))));
    let mut line = format!("- {uri} ({})", facts.join(", "));
    if let Some(text) = description.map(one_line).filter(|t| !t.is_empty()) {
        line.push_str(": ");
        line.push_str(&text);
    }
    line
}

/// Whitespace folded to single spaces, at most [`DESCRIPTION_MAX_CHARS`]
/// characters (an ellipsis marks a cut).
fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= DESCRIPTION_MAX_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(DESCRIPTION_MAX_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn resource(i: usize) -> Resource {
        Resource::new(format!("demo://r/{i}"), format!("r{i}"))
            .with_mime_type("text/plain")
            .with_description("A\n  resource.")
    }

    #[test]
    fn a_listing_names_templates_then_resources() {
        let templates = vec![ResourceTemplate::new("demo://t/{id}", "t").with_description("By id.")];
        let text = listing(&[resource(1).with_size(1229)], Ok(templates));
        assert_eq!(
            text,
            "Resource templates (1; fill in the {placeholders}, then read the URI):\n\
             - demo://t/{id} (t): By id.\n\
             Resources (1):\n\
             - demo://r/1 (r1, text/plain, 1.2 KB): A resource."
        );
        let none = listing(&[], Err("Method not found".into()));
        assert_eq!(
            none,
            "(resource templates could not be listed: Method not found)\n(the server lists no resources)"
        );
    }

    #[test]
    fn a_long_listing_is_cut_at_an_entry_with_a_count() {
        let resources: Vec<_> = (0..1000).map(resource).collect();
        let text = listing(&resources, Ok(Vec::new()));
        assert!(text.len() <= RESOURCE_LIST_MAX_BYTES + 100, "{}", text.len());
        let shown = text.lines().filter(|l| l.starts_with("- ")).count();
        assert!(shown > 100 && shown < 1000, "{shown}");
        assert!(
            text.ends_with(&format!(
                "[... {} more entries not listed: the listing is cut at 16.0 KB]",
                1000 - shown
            )),
            "{}",
            &text[text.len() - 200..]
        );
    }

    #[test]
    fn long_descriptions_are_cut() {
        let line = entry("u", "n", None, None, Some(&"word ".repeat(100)));
        assert!(line.ends_with('…'));
        assert!(line.chars().count() < DESCRIPTION_MAX_CHARS + 20);
    }

    fn config(resources: bool) -> McpServerConfig {
        McpServerConfig::stdio("docs", "srv").resources(resources)
    }

    fn server_tool(name: &str) -> Discovered {
        (
            ToolDefinition::new(name, "", json!({"type": "object"})),
            name.to_string(),
        )
    }

    #[test]
    fn the_offer_needs_the_config_and_the_capability_and_yields_to_the_servers_tools() {
        let off = Offer::decide(&config(false), true, &[]);
        assert!(off.kinds.is_empty() && off.warnings.is_empty());
        let both = Offer::decide(&config(true), true, &[server_tool("echo")]);
        assert_eq!(both.kinds, [Kind::List, Kind::Read]);
        assert!(both.warnings.is_empty());
        let unadvertised = Offer::decide(&config(true), false, &[]);
        assert!(unadvertised.kinds.is_empty());
        assert!(
            unadvertised.warnings[0].contains("does not offer resources"),
            "{:?}",
            unadvertised.warnings
        );
        let shadowed = Offer::decide(&config(true), true, &[server_tool("read_resource")]);
        assert_eq!(shadowed.kinds, [Kind::List]);
        assert_eq!(
            shadowed.warnings,
            [
                "mcp server docs: the server has its own tool read_resource, which is kept; \
              the resource tool read_resource is left out"
            ]
        );
    }
}
