//! Mapping an MCP `CallToolResult` to an agent-core [`ToolOutput`].
//!
//! Text blocks become text parts; images become image parts (the provider
//! decides whether the model sees them); audio, blobs and resource links
//! become short placeholders naming type and URI; embedded text resources
//! become text; `structuredContent` becomes JSON text when there is no text
//! content; `isError: true` stays an error result.

use agent_core::util::human_size;
use agent_core::{ImageSource, ToolOutput, ToolOutputPart};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Convert a tool result.
pub(crate) fn map_call_result(result: CallToolResult) -> ToolOutput {
    let mut parts = Vec::new();
    for block in result.content {
        parts.push(map_block(block));
    }
    let has_text = parts.iter().any(|p| matches!(p, ToolOutputPart::Text { .. }));
    if !has_text && let Some(structured) = result.structured_content {
        parts.push(ToolOutputPart::text(structured.to_string()));
    }
    ToolOutput::new(parts).with_error(result.is_error.unwrap_or(false))
}

fn map_block(block: ContentBlock) -> ToolOutputPart {
    match block {
        ContentBlock::Text(t) => ToolOutputPart::text(t.text),
        ContentBlock::Image(img) => ToolOutputPart::Image {
            image: ImageSource::Base64 {
                media_type: img.mime_type,
                data: img.data,
            },
        },
        ContentBlock::Audio(a) => {
            ToolOutputPart::text(format!("[audio: {}, {}]", a.mime_type, size_of_base64(&a.data)))
        }
        ContentBlock::Resource(r) => match r.resource {
            ResourceContents::TextResourceContents { text, .. } => ToolOutputPart::text(text),
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => ToolOutputPart::text(format!(
                "[blob: {}, {}, {uri}]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                size_of_base64(&blob)
            )),
            other => ToolOutputPart::text(format!("[resource: {}]", resource_uri(&other))),
        },
        ContentBlock::ResourceLink(link) => ToolOutputPart::text(format!(
            "[resource link: {}, {}{}]",
            link.name,
            link.uri,
            link.mime_type.map(|m| format!(", {m}")).unwrap_or_default()
        )),
        other => ToolOutputPart::text(format!("[unsupported content: {}]", content_type(&other))),
    }
}

fn resource_uri(r: &ResourceContents) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.get("uri").and_then(|u| u.as_str()).map(str::to_string))
        .unwrap_or_default()
}

fn content_type(block: &ContentBlock) -> String {
    serde_json::to_value(block)
        .ok()
        .and_then(|v| v.get("type").and_then(|u| u.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// The decoded size of base64 data, human-readable.
fn size_of_base64(data: &str) -> String {
    let bytes = data.trim_end_matches('=').len() * 3 / 4;
    human_size(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_blocks_are_joined_and_is_error_kept() {
        let out = map_call_result(result(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "isError": true
        })));
        assert!(out.is_error);
        assert_eq!(out.as_text(), "a\nb");
    }

    #[test]
    fn images_pass_and_others_become_placeholders() {
        let out = map_call_result(result(json!({"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "x/y"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "mimeType": "text/plain"}
        ]})));
        assert!(!out.is_error);
        assert!(
            matches!(&out.parts[0], ToolOutputPart::Image { image: ImageSource::Base64 { media_type, .. } } if media_type == "image/png")
        );
        assert_eq!(
            out.as_text(),
            "[audio: audio/wav, 3 B]\ninside\n[blob: x/y, 3 B, file:///b.bin]\n[resource link: c, file:///c, text/plain]"
        );
    }

    #[test]
    fn structured_content_only_when_no_text() {
        let out = map_call_result(result(json!({"content": [], "structuredContent": {"n": 1}})));
        assert_eq!(out.as_text(), r#"{"n":1}"#);
        let out = map_call_result(result(json!({
            "content": [{"type": "text", "text": "t"}], "structuredContent": {"n": 1}
        })));
        assert_eq!(out.as_text(), "t");
    }

    #[test]
    fn sizes_are_readable() {
        assert_eq!(human_size(10), "10 B");
        assert_eq!(human_size(1229), "1.2 KB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MB");
    }
}
