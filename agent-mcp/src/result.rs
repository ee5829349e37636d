//! Mapping an MCP `CallToolResult` (and `resources/read` contents) to an
//! loopwright-core [`ToolOutput`].
//!
//! Text blocks become text parts; images, audio and embedded binary
//! resources become image, audio and file parts (a blob by its media type:
//! `image/*` an image, `audio/*` audio, `text/*` its text, anything else a
//! file named by its URI), and each provider decides whether the model takes them natively
//! or sees their placeholder; embedded text resources become text;
//! resource links name their URI, with one note saying how to read them
//! when the server's `read_resource` tool is on; `isError: true` stays an
//! error result.
//!
//! `structuredContent` becomes a JSON part when there is no text; when the
//! tool declares an `outputSchema` it does so beside text too, unless a text
//! block already holds the same JSON value (so it is never sent twice).

use loopwright_types::media::{OCTET_STREAM, kind_of};
use loopwright_types::{FileSource, ImageSource, ToolOutput, ToolOutputPart};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// What mapping a tool's result needs to know about the tool and its server.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResultContext {
    /// The tool declares an `outputSchema`: its `structuredContent` is shown
    /// beside text too.
    pub(crate) declares_output: bool,
    /// The note added after resource links when the model can read them
    /// (the server's `read_resource` tool is on).
    pub(crate) link_note: Option<String>,
}

/// Convert a tool result.
pub(crate) fn map_call_result(result: CallToolResult, context: &ResultContext) -> ToolOutput {
    let mut parts = Vec::new();
    let mut links = false;
    for block in result.content {
        links |= matches!(block, ContentBlock::ResourceLink(_));
        parts.push(map_block(block));
    }
    if let Some(structured) = result.structured_content
        && shows_structured(&parts, &structured, context.declares_output)
    {
        parts.push(ToolOutputPart::Json { value: structured });
    }
    if links && let Some(note) = &context.link_note {
        parts.push(ToolOutputPart::text(note.clone()));
    }
    ToolOutput::new(parts).with_error(result.is_error.unwrap_or(false))
}

/// Whether `structured` adds something the text parts do not already say.
/// Already said: a text block holding the same JSON value, or (SDKs wrap a
/// plain return value as `{"result": value}` and send the value itself as
/// text) the value of a one-key object, held by one text block or, for an
/// array, item by item by the text blocks.
fn shows_structured(parts: &[ToolOutputPart], structured: &Value, declared: bool) -> bool {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            ToolOutputPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !declared {
        return texts.is_empty();
    }
    let mut candidates = vec![structured];
    if let Value::Object(map) = structured
        && map.len() == 1
    {
        candidates.extend(map.values());
    }
    let said = |value: &Value| {
        texts.iter().any(|text| holds(text, value))
            || (texts.len() > 1
                && value.as_array().is_some_and(|items| {
                    items.len() == texts.len()
                        && items.iter().zip(&texts).all(|(item, text)| holds(text, item))
                }))
    };
    !candidates.into_iter().any(said)
}

/// Whether `text` is `value`: the same string, or JSON for the same value.
fn holds(text: &str, value: &Value) -> bool {
    value.as_str() == Some(text) || serde_json::from_str::<Value>(text.trim()).is_ok_and(|v| &v == value)
}

fn map_block(block: ContentBlock) -> ToolOutputPart {
    match block {
        ContentBlock::Text(t) => ToolOutputPart::text(t.text),
        ContentBlock::Image(img) => image(img.mime_type, img.data),
        ContentBlock::Audio(a) => ToolOutputPart::Audio {
            audio: FileSource::Base64 {
                media_type: a.mime_type,
                data: a.data,
            },
        },
        ContentBlock::Resource(r) => map_contents(r.resource),
        ContentBlock::ResourceLink(link) => ToolOutputPart::text(format!(
            "[resource link: {}, {}{}]",
            link.name,
            link.uri,
            link.mime_type.map(|m| format!(", {m}")).unwrap_or_default()
        )),
        other => ToolOutputPart::text(format!("[unsupported content: {}]", content_type(&other))),
    }
}

/// One resource's contents (embedded in a result, or read with
/// `resources/read`): text as text, a `text/*` blob as its text, an
/// `image/*` blob as an image, an `audio/*` blob as audio, any other blob
/// as a file named by its URI.
pub(crate) fn map_contents(contents: ResourceContents) -> ToolOutputPart {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => ToolOutputPart::text(text),
        ResourceContents::BlobResourceContents {
            uri, mime_type, blob, ..
        } => {
            let media_type = mime_type.unwrap_or_else(|| OCTET_STREAM.to_owned());
            if media_type.starts_with("text/") {
                let file = FileSource::Base64 {
                    media_type,
                    data: blob,
                };
                return match file.decoded_text() {
                    Some(text) => ToolOutputPart::text(text),
                    None => ToolOutputPart::File {
                        file,
                        filename: Some(uri),
                    },
                };
            }
            match kind_of(&media_type) {
                "image" => image(media_type, blob),
                "audio" => ToolOutputPart::Audio {
                    audio: FileSource::Base64 {
                        media_type,
                        data: blob,
                    },
                },
                _ => ToolOutputPart::File {
                    file: FileSource::Base64 {
                        media_type,
                        data: blob,
                    },
                    filename: Some(uri),
                },
            }
        }
        other => ToolOutputPart::text(format!("[resource: {}]", resource_uri(&other))),
    }
}

fn image(media_type: String, data: String) -> ToolOutputPart {
    ToolOutputPart::Image {
        image: ImageSource::Base64 { media_type, data },
    }
}

/// The URI of any resource contents (also of kinds this rmcp does not name).
pub(crate) fn resource_uri(r: &ResourceContents) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use serde_json::json;

    use super::*;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    /// A result of a tool without an `outputSchema`, whose server's
    /// resources are off.
    fn map_call(result: CallToolResult) -> ToolOutput {
        map_call_result(result, &ResultContext::default())
    }

    fn declared() -> ResultContext {
        ResultContext {
            declares_output: true,
            link_note: None,
        }
    }

    #[test]
    fn text_blocks_are_joined_and_is_error_kept() {
        let out = map_call(result(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "isError": true
        })));
        assert!(out.is_error);
        assert_eq!(out.as_text(), "a\nb");
    }

    #[test]
    fn media_becomes_media_parts_and_text_stays_text() {
        let out = map_call(result(json!({"content": [
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
        assert!(
            matches!(&out.parts[1], ToolOutputPart::Audio { audio: FileSource::Base64 { media_type, data } } if media_type == "audio/wav" && data == "AAAA")
        );
        assert!(
            matches!(&out.parts[3], ToolOutputPart::File { file: FileSource::Base64 { media_type, .. }, filename: Some(uri) } if media_type == "x/y" && uri == "file:///b.bin")
        );
        assert_eq!(out.as_text(), "inside\n[resource link: c, file:///c, text/plain]");
        // Where a provider cannot take them, the model reads their placeholders.
        let shown = loopwright_types::ToolResult {
            call_id: "c".into(),
            parts: out.parts,
            is_error: false,
        }
        .text_with_image_placeholders();
        assert_eq!(
            shown,
            "[image: image/png, 8 B]\n[audio: audio/wav, 3 B]\ninside\n[file: x/y, 3 B, file:///b.bin]\n[resource link: c, file:///c, text/plain]"
        );
    }

    #[test]
    fn structured_content_only_when_no_text() {
        let out = map_call(result(json!({"content": [], "structuredContent": {"n": 1}})));
        assert_eq!(out.as_text(), r#"{"n":1}"#);
        let out = map_call(result(json!({
            "content": [{"type": "text", "text": "t"}], "structuredContent": {"n": 1}
        })));
        assert_eq!(out.as_text(), "t");
    }

    #[test]
    fn a_declared_output_is_shown_beside_text_unless_a_text_holds_it() {
        let beside = map_call_result(
            result(json!({
                "content": [{"type": "text", "text": "Sunny, 22 degrees"}],
                "structuredContent": {"temperature": 22, "conditions": "Sunny"}
            })),
            &declared(),
        );
        assert_eq!(
            beside.parts,
            [
                ToolOutputPart::text("Sunny, 22 degrees"),
                ToolOutputPart::Json {
                    value: json!({"temperature": 22, "conditions": "Sunny"})
                }
            ]
        );
        // The same value, written differently: parsed and compared, so once.
        let once = map_call_result(
            result(json!({
                "content": [{"type": "text", "text": "{\n  \"conditions\": \"Sunny\",\n  \"temperature\": 22\n}"}],
                "structuredContent": {"temperature": 22, "conditions": "Sunny"}
            })),
            &declared(),
        );
        assert_eq!(once.parts.len(), 1);
        assert_eq!(once.as_text().matches("temperature").count(), 1);
    }

    /// Python's SDK declares `{"result": ...}` for a plain return value and
    /// sends the value as text: nothing new to show.
    #[test]
    fn a_wrapped_plain_value_already_in_the_text_is_not_repeated() {
        for (content, structured) in [
            (
                json!([{"type": "text", "text": "from rust"}]),
                json!({"result": "from rust"}),
            ),
            (json!([{"type": "text", "text": "42"}]), json!({"result": 42})),
            (json!([{"type": "text", "text": "42"}]), json!({"result": "42"})),
            (
                json!([{"type": "text", "text": "a"}, {"type": "text", "text": "{\"n\": 1}"}]),
                json!({"result": ["a", {"n": 1}]}),
            ),
        ] {
            let out = map_call_result(
                result(json!({"content": content, "structuredContent": structured})),
                &declared(),
            );
            assert!(
                out.parts.iter().all(|p| matches!(p, ToolOutputPart::Text { .. })),
                "{out:?}"
            );
        }
        // Two keys: the wrapper is not a plain value, so it is shown.
        let both = map_call_result(
            result(
                json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42, "unit": "C"}}),
            ),
            &declared(),
        );
        assert_eq!(both.parts.len(), 2);
    }

    #[test]
    fn blobs_are_images_text_or_files_by_their_media_type() {
        let png: ResourceContents = serde_json::from_value(
            json!({"uri": "demo://logo", "mimeType": "image/png", "blob": "iVBORw0KGgo="}),
        )
        .unwrap();
        assert_eq!(
            map_contents(png),
            ToolOutputPart::Image {
                image: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into()
                }
            }
        );
        let bin: ResourceContents =
            serde_json::from_value(json!({"uri": "demo://data", "blob": "AAAAAA=="})).unwrap();
        assert_eq!(
            map_contents(bin).placeholder().as_deref(),
            Some("[file: application/octet-stream, 4 B, demo://data]")
        );
        let notes: ResourceContents =
            serde_json::from_value(json!({"uri": "demo://n", "mimeType": "text/plain", "blob": "aGk="}))
                .unwrap();
        assert_eq!(map_contents(notes), ToolOutputPart::text("hi"));
    }

    #[test]
    fn resource_links_get_the_note_only_when_it_is_given() {
        let links = json!({"content": [
            {"type": "resource_link", "uri": "demo://a", "name": "a"},
            {"type": "resource_link", "uri": "demo://b", "name": "b"}
        ]});
        assert_eq!(
            map_call(result(links.clone())).as_text(),
            "[resource link: a, demo://a]\n[resource link: b, demo://b]"
        );
        let context = ResultContext {
            declares_output: false,
            link_note: Some("read them".into()),
        };
        let noted = map_call_result(result(links), &context);
        assert_eq!(
            noted.as_text(),
            "[resource link: a, demo://a]\n[resource link: b, demo://b]\nread them"
        );
        let plain = map_call_result(
            result(json!({"content": [{"type": "text", "text": "t"}]})),
            &context,
        );
        assert_eq!(plain.as_text(), "t");
    }
}
