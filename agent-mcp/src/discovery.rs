//! Discovery: every page of `tools/list` (tolerant of legacy servers) and
//! of `prompts/list`.
//!
//! rmcp parses a conforming page into `ListToolsResult`. A page it cannot
//! parse (a tool with `parameters` instead of `inputSchema`, or no schema at
//! all) reaches us as a raw JSON result; we read it leniently here instead
//! of losing the whole server. Tool names stay the server's original names.

use loopwright_types::{ToolAnnotations, ToolDefinition};
use rmcp::model::ErrorCode;
use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, Prompt, ServerResult};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde_json::{Map, Value};

/// Pages followed at most: a server whose cursors never end must not loop forever.
pub const MAX_TOOL_PAGES: usize = 100;

/// Prompt pages followed at most, for the same reason.
pub const MAX_PROMPT_PAGES: usize = 100;

/// How a listing refused for want of (valid) authorization begins.
pub(crate) const UNAUTHORIZED: &str = "the server refused the sign-in";

/// A discovered tool: its definition (original name) and the name on the wire.
pub(crate) type Discovered = (ToolDefinition, String);

/// List all tools of the server. A server without tools may answer
/// `tools/list` with "method not found" (it need not implement it): it has
/// none.
pub(crate) async fn list_all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Discovered>, String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_TOOL_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let request = ClientRequest::ListToolsRequest(match params {
            Some(p) => ListToolsRequest::with_param(p),
            None => ListToolsRequest::default(),
        });
        let answer = match peer.send_request(request).await {
            Err(ServiceError::McpError(e)) if e.code == ErrorCode::METHOD_NOT_FOUND && out.is_empty() => {
                return Ok(out);
            }
            Err(e) if e.is_authorization_required() => {
                return Err(format!("{UNAUTHORIZED}: {e}"));
            }
            answer => answer.map_err(|e| e.to_string())?,
        };
        let next = match answer {
            ServerResult::ListToolsResult(page) => {
                out.extend(page.tools.into_iter().map(from_rmcp));
                page.next_cursor.map(|c| c.to_string())
            }
            ServerResult::CustomResult(raw) => {
                let (tools, next) = lenient_page(&raw.0)?;
                out.extend(tools);
                next
            }
            other => return Err(format!("unexpected answer to tools/list: {other:?}")),
        };
        match next {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(out),
        }
    }
    Err(format!("tools/list still had more pages after {MAX_TOOL_PAGES}"))
}

/// List all prompts of the server (call only when it offers prompts).
pub(crate) async fn list_all_prompts(peer: &Peer<RoleClient>) -> Result<Vec<Prompt>, String> {
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PROMPT_PAGES {
        let page = peer
            .list_prompts(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| e.to_string())?;
        out.extend(page.prompts);
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => return Ok(out),
        }
    }
    Err(format!(
        "prompts/list still had more pages after {MAX_PROMPT_PAGES}"
    ))
}

/// An rmcp tool as an loopwright-core definition.
pub(crate) fn from_rmcp(tool: rmcp::model::Tool) -> Discovered {
    let name = tool.name.to_string();
    let schema = normalize_schema(Value::Object((*tool.input_schema).clone()));
    let description = tool
        .description
        .map(|d| d.to_string())
        .or(tool.title)
        .unwrap_or_default();
    let mut def = ToolDefinition::new(name.clone(), description, schema);
    if let Some(s) = tool.output_schema {
        def = def.with_output_schema(Value::Object((*s).clone()));
    }
    // No annotations reads as MCP's defaults, exactly as an empty object
    // does, so the two never get different approval tiers.
    let a = tool.annotations.unwrap_or_default();
    let def = def.with_annotations(annotations(
        a.read_only_hint,
        a.destructive_hint,
        a.idempotent_hint,
        a.open_world_hint,
    ));
    (def, name)
}

/// MCP hints with MCP's defaults (destructive and open-world unless told
/// otherwise; destructive only meaningful for tools that are not read-only),
/// for a tool with no annotations as for one with some of them. Whether they
/// count at all is the source's decision ([`McpServerConfig::trusted`](crate::McpServerConfig::trusted)).
fn annotations(
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
) -> ToolAnnotations {
    let read_only = read_only.unwrap_or(false);
    ToolAnnotations::default()
        .read_only(read_only)
        .destructive(!read_only && destructive.unwrap_or(true))
        .idempotent(idempotent.unwrap_or(false))
        .open_world(open_world.unwrap_or(true))
}

/// Read a raw `tools/list` result that rmcp could not parse.
fn lenient_page(raw: &Value) -> Result<(Vec<Discovered>, Option<String>), String> {
    let tools = raw
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| "tools/list answer has no `tools` array".to_string())?;
    let mut out = Vec::new();
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            tracing::warn!("tools/list entry without a name skipped");
            continue;
        };
        let schema = tool
            .get("inputSchema")
            .or_else(|| tool.get("parameters"))
            .or_else(|| tool.get("input_schema"))
            .cloned()
            .unwrap_or(Value::Null);
        let description = tool
            .get("description")
            .or_else(|| tool.get("title"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let hint = |k: &str| {
            tool.get("annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_bool)
        };
        let def =
            ToolDefinition::new(name, description, normalize_schema(schema)).with_annotations(annotations(
                hint("readOnlyHint"),
                hint("destructiveHint"),
                hint("idempotentHint"),
                hint("openWorldHint"),
            ));
        out.push((def, name.to_string()));
    }
    let next = raw.get("nextCursor").and_then(Value::as_str).map(str::to_string);
    Ok((out, next))
}

/// An empty or type-less schema (zero-argument tools) becomes an empty
/// object schema, which every provider accepts.
pub(crate) fn normalize_schema(schema: Value) -> Value {
    let mut obj = match schema {
        Value::Object(obj) => obj,
        _ => Map::new(),
    };
    obj.entry("type")
        .or_insert_with(|| Value::String("object".into()));
    if obj.get("type").and_then(Value::as_str) == Some("object") {
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    #[test]
    fn empty_schemas_become_object_schemas() {
        assert_eq!(
            normalize_schema(json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            normalize_schema(Value::Null),
            json!({"type": "object", "properties": {}})
        );
        let full = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert_eq!(normalize_schema(full.clone()), full);
    }

    #[test]
    fn annotations_are_mapped() {
        let tool: rmcp::model::Tool = serde_json::from_value(json!({
            "name": "rm", "description": "remove", "inputSchema": {},
            "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false}
        }))
        .unwrap();
        let (def, original) = from_rmcp(tool);
        assert_eq!(original, "rm");
        assert_eq!(
            def.annotations,
            ToolAnnotations::default().destructive(true).idempotent(true)
        );
        let ro: rmcp::model::Tool = serde_json::from_value(
            json!({"name": "ls", "inputSchema": {}, "annotations": {"readOnlyHint": true}}),
        )
        .unwrap();
        assert!(from_rmcp(ro).0.annotations.read_only);
    }

    /// No annotations, an empty object and a partial one all read as MCP's
    /// defaults: the same approval tier, never opposite ones.
    #[test]
    fn absent_and_partial_annotations_agree() {
        let tier = |annotations: Option<Value>| {
            let mut tool = json!({"name": "t", "inputSchema": {}});
            if let Some(a) = annotations {
                tool["annotations"] = a;
            }
            let parsed: rmcp::model::Tool = serde_json::from_value(tool.clone()).unwrap();
            let strict =
                loopwright_core::approval::ApprovalTier::from_annotations(&from_rmcp(parsed).0.annotations);
            let (lenient, _) = lenient_page(&json!({"tools": [tool]})).unwrap();
            assert_eq!(
                strict,
                loopwright_core::approval::ApprovalTier::from_annotations(&lenient[0].0.annotations)
            );
            strict
        };
        let absent = tier(None);
        assert_eq!(absent, loopwright_core::approval::ApprovalTier::Always);
        assert_eq!(tier(Some(json!({}))), absent);
        assert_eq!(tier(Some(json!({"idempotentHint": true}))), absent);
        assert_eq!(tier(Some(json!({"title": "T"}))), absent);
        assert_eq!(
            tier(Some(json!({"readOnlyHint": true}))),
            loopwright_core::approval::ApprovalTier::Auto
        );
    }

    #[test]
    fn legacy_pages_are_read_leniently() {
        let raw = json!({"tools": [
            {"name": "old", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
            {"name": "bare"},
            {"description": "no name"}
        ], "nextCursor": "2"});
        let (tools, next) = lenient_page(&raw).unwrap();
        assert_eq!(next.as_deref(), Some("2"));
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].0.input_schema["properties"]["x"]["type"], "string");
        assert_eq!(
            tools[1].0.input_schema,
            json!({"type": "object", "properties": {}})
        );
        assert!(lenient_page(&json!({})).is_err());
    }
}
