//! Request bodies written straight from the history.
//!
//! A body is a JSON object whose only large field is the conversation (the
//! history under `messages`, `input` or `contents`). Building that field as
//! a `serde_json::Value` tree every step copied every message's text into
//! new strings and maps, and the tree was then serialised and dropped: work
//! and allocations that grew with the history (BENCHMARKS.md section 8).
//! Here the history is a provider's borrowed view of the messages,
//! serialised as it is written, and only the small fields (model, tools,
//! settings, merged options) live in a [`Map`].
//!
//! Invariants:
//! - keys come out in the order a `serde_json::Map` keeps them (sorted),
//!   with the history in its sorted place, and each view declares its
//!   fields in that order too, so the bytes on the wire are those the same
//!   body built as a `Value` would give;
//! - options merged into the body win over the history as over any field:
//!   an option named like the history key replaces it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use loopwright_types::{
    ContentPart, FileSource, ImageSource, Message, ModelError, ModelRequest, Role, ToolCall, ToolOutputPart,
    ToolResult,
};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

/// Smallest capacity of a serialised body (a first request with tool
/// definitions is a few KiB; the buffer grows as needed).
const BODY_CAPACITY: usize = 8 * 1024;

/// The size a model's last body came to, so the next one is written into a
/// buffer that already fits it (plus an eighth for the step's growth)
/// instead of doubling its way there, copying each time. Only a hint:
/// concurrent runs of one model overwrite each other's, which costs a
/// regrowth or a larger buffer, never a wrong body.
#[derive(Debug, Clone, Default)]
pub(crate) struct SizeHint(Arc<AtomicUsize>);

impl SizeHint {
    fn capacity(&self) -> usize {
        let last = self.0.load(Ordering::Relaxed);
        (last + last / 8).max(BODY_CAPACITY)
    }

    fn record(&self, len: usize) {
        self.0.store(len, Ordering::Relaxed);
    }
}

/// A request body: the history `H` under `history_key`, the rest in `fields`.
#[derive(Debug)]
pub(crate) struct Body<H> {
    fields: Map<String, Value>,
    history_key: &'static str,
    history: H,
}

impl<H: Serialize> Body<H> {
    /// A body of `fields` (a JSON object; anything else counts as empty)
    /// with `history` under `history_key`.
    pub fn new(fields: Value, history_key: &'static str, history: H) -> Self {
        let fields = match fields {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            fields,
            history_key,
            history,
        }
    }

    /// The body as bytes, ready to post, in a buffer sized by `hint`
    /// (which then learns this body's size).
    pub fn to_bytes(&self, hint: &SizeHint) -> Result<Bytes, ModelError> {
        let mut out = Vec::with_capacity(hint.capacity());
        serde_json::to_writer(&mut out, self).map_err(|e| {
            ModelError::invalid_request(None, format!("the request body: {e}")).with_source(e)
        })?;
        hint.record(out.len());
        Ok(Bytes::from(out))
    }

    /// The body as a `Value` (for inspection and tests; never on the hot path).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl<H: Serialize> Serialize for Body<H> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // An option named like the history key replaced it.
        let replaced = self.fields.contains_key(self.history_key);
        let len = self.fields.len() + usize::from(!replaced);
        let mut map = serializer.serialize_map(Some(len))?;
        let mut written = replaced;
        for (key, value) in &self.fields {
            if !written && key.as_str() > self.history_key {
                map.serialize_entry(self.history_key, &self.history)?;
                written = true;
            }
            map.serialize_entry(key, value)?;
        }
        if !written {
            map.serialize_entry(self.history_key, &self.history)?;
        }
        map.end()
    }
}

/// The text parts of `message`, concatenated (as [`Message::text`]),
/// borrowed when there is at most one.
pub(crate) fn message_text(message: &Message) -> Cow<'_, str> {
    let mut texts = message.content.iter().filter_map(|p| match p {
        ContentPart::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        _ => Cow::Owned(message.text()),
    }
}

/// The system texts of a request, for providers that take the system
/// prompt apart from the turns: the request's system prompt, then the text
/// of each system message in the history, in order (all borrowed when each
/// is one text part).
pub(crate) fn system_texts(request: &ModelRequest) -> Vec<Cow<'_, str>> {
    request
        .system
        .iter()
        .map(|s| Cow::Borrowed(s.as_str()))
        .chain(
            request
                .messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(message_text),
        )
        .collect()
}

/// [`ToolResult::text_with_image_placeholders`], borrowed when the result
/// is one text part.
pub(crate) fn result_text_with_placeholders(result: &ToolResult) -> Cow<'_, str> {
    match result.parts.as_slice() {
        [ToolOutputPart::Text { text }] => Cow::Borrowed(text),
        [] => Cow::Borrowed(""),
        _ => Cow::Owned(result.text_with_image_placeholders()),
    }
}

/// [`ToolResult::text`], borrowed when the result is one text part.
pub(crate) fn result_text(result: &ToolResult) -> Cow<'_, str> {
    match result.parts.as_slice() {
        [ToolOutputPart::Text { text }] => Cow::Borrowed(text),
        [] => Cow::Borrowed(""),
        _ => Cow::Owned(result.text()),
    }
}

/// The call a result in `messages[at]` answers: the nearest one before
/// that message with its id (ids are unique per response; a later one
/// only if none is before it). Usually the message just before: no map of
/// every call in the history is built for each request.
pub(crate) fn call_of<'a>(messages: &'a [Message], at: usize, call_id: &str) -> Option<&'a ToolCall> {
    let find = |m: &'a Message| m.tool_calls().find(|c| c.id == call_id);
    messages[..at]
        .iter()
        .rev()
        .find_map(find)
        .or_else(|| messages[at..].iter().find_map(find))
}

/// A value written as the JSON text of itself (a JSON string holding JSON),
/// as OpenAI wants tool-call arguments.
pub(crate) struct JsonText<'a>(pub &'a Value);

thread_local! {
    /// The buffer a [`JsonText`] is written into before it is written as a
    /// string: one per thread, reused, so a body with N tool calls in its
    /// history costs no allocation per call.
    static JSON_TEXT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Largest [`JSON_TEXT`] buffer kept between uses (a huge argument's
/// buffer is given back rather than held by the thread).
const JSON_TEXT_KEEP: usize = 64 * 1024;

impl Serialize for JsonText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Straight to bytes (`Value`'s `Display` goes through `fmt` piece by
        // piece), then written as one string. Nothing inside a `Value`
        // writes a `JsonText`, so the buffer is never borrowed twice; the
        // fallback allocates rather than panic if that ever changes.
        JSON_TEXT.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => {
                buf.clear();
                serde_json::to_writer(&mut *buf, self.0).map_err(serde::ser::Error::custom)?;
                let text = std::str::from_utf8(&buf).map_err(serde::ser::Error::custom)?;
                let written = serializer.serialize_str(text);
                if buf.capacity() > JSON_TEXT_KEEP {
                    *buf = Vec::new();
                }
                written
            }
            Err(_) => {
                let text = serde_json::to_string(self.0).map_err(serde::ser::Error::custom)?;
                serializer.serialize_str(&text)
            }
        })
    }
}

/// An image as OpenAI's APIs take it: a data URL (written without building
/// it as a string first) or the image's own URL.
pub(crate) struct ImageUrl<'a>(pub &'a ImageSource);

impl Serialize for ImageUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ImageSource::Base64 { media_type, data } => {
                serializer.collect_str(&format_args!("data:{media_type};base64,{data}"))
            }
            ImageSource::Url { url } => serializer.serialize_str(url),
            _ => serializer.serialize_str(""),
        }
    }
}

/// A file as OpenAI's APIs take it inline: a data URL (written without
/// building it as a string first), or its own URL.
pub(crate) struct DataUrl<'a>(pub &'a FileSource);

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            FileSource::Base64 { media_type, data } => {
                serializer.collect_str(&format_args!("data:{media_type};base64,{data}"))
            }
            FileSource::Url { url, .. } => serializer.serialize_str(url),
            _ => serializer.serialize_str(""),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bytes_of<H: Serialize>(body: &Body<H>) -> String {
        String::from_utf8(body.to_bytes(&SizeHint::default()).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn the_history_takes_its_sorted_place_as_in_a_value() {
        for key in ["a", "messages", "zz"] {
            let fields = json!({"model": "m", "stream": true, "b": 1});
            let body = Body::new(fields.clone(), key, vec![1, 2]);
            let mut whole = fields;
            whole[key] = json!([1, 2]);
            assert_eq!(bytes_of(&body), whole.to_string(), "history under {key}");
            assert_eq!(body.to_value(), whole);
        }
    }

    #[test]
    fn the_next_body_is_written_into_a_buffer_that_fits_the_last() {
        let hint = SizeHint::default();
        assert_eq!(hint.capacity(), BODY_CAPACITY);
        let history = vec!["x".repeat(100_000)];
        let bytes = Body::new(json!({"model": "m"}), "messages", &history)
            .to_bytes(&hint)
            .unwrap();
        assert!(
            hint.capacity() > bytes.len(),
            "{} <= {}",
            hint.capacity(),
            bytes.len()
        );
    }

    #[test]
    fn json_text_is_the_same_whatever_the_buffer_held_before() {
        let long = json!({"text": "y".repeat(JSON_TEXT_KEEP * 2)});
        for value in [json!({"a": [1, "é\"q\""]}), long, json!(null), json!({"b": 2})] {
            let written = JsonText(&value).serialize(serde_json::value::Serializer).unwrap();
            assert_eq!(written, Value::String(value.to_string()));
        }
    }

    #[test]
    fn an_option_named_like_the_history_replaces_it() {
        let body = Body::new(json!({"messages": "replaced", "model": "m"}), "messages", vec![1]);
        assert_eq!(bytes_of(&body), r#"{"messages":"replaced","model":"m"}"#);
    }

    #[test]
    fn texts_are_borrowed_when_single_and_joined_otherwise() {
        let one = Message::user("hi");
        assert!(matches!(message_text(&one), Cow::Borrowed("hi")));
        let two = Message::new(
            loopwright_types::Role::User,
            vec![ContentPart::text("a"), ContentPart::text("b")],
        );
        assert_eq!(message_text(&two), "ab");
        let result = ToolResult {
            call_id: "c".into(),
            parts: vec![
                ToolOutputPart::text(""),
                ToolOutputPart::Json {
                    value: json!({"a": 1}),
                },
            ],
            is_error: false,
        };
        assert_eq!(result_text(&result), result.text());
        assert_eq!(
            result_text_with_placeholders(&result),
            result.text_with_image_placeholders()
        );
        assert_eq!(
            JsonText(&json!({"a": [1]}))
                .serialize(serde_json::value::Serializer)
                .unwrap(),
            json!("{\"a\":[1]}")
        );
    }

    /// A history with every kind of part, in the orders that matter
    /// (merged turns, system messages inside, results of several parts).
    fn rich_history() -> Vec<Message> {
        use loopwright_types::{Reasoning, Role};
        let png = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        };
        let url = ImageSource::Url {
            url: "https://example.com/a.png".into(),
        };
        let mut call = ToolCall::new("c1", "echo", json!({"text": "a \"quoted\" é\n", "n": [1, null]}));
        call.provider_data = Some(json!({"id": "fc_1", "thoughtSignature": "sigA"}));
        let reasoning = |text: &str, signature: Option<&str>, data: Option<Value>| {
            ContentPart::Reasoning(Reasoning {
                text: text.into(),
                signature: signature.map(str::to_owned),
                provider_data: data,
            })
        };
        let result = |id: &str, parts: Vec<ToolOutputPart>, is_error: bool| {
            ContentPart::ToolResult(ToolResult {
                call_id: id.into(),
                parts,
                is_error,
            })
        };
        vec![
            Message::system("extra system"),
            Message::new(
                Role::User,
                vec![
                    ContentPart::text("look "),
                    ContentPart::Image { image: png.clone() },
                    ContentPart::Image { image: url.clone() },
                ],
            ),
            Message::new(
                Role::Assistant,
                vec![
                    reasoning(
                        "thinking",
                        Some("sig1"),
                        Some(
                            json!({"encrypted_content": "E", "id": "rs_1", "reasoning_details": [{"type": "t", "index": 0}]}),
                        ),
                    ),
                    ContentPart::text("Let me call."),
                    reasoning("", Some("sig2"), None),
                    ContentPart::ToolCall(call),
                    ContentPart::ToolCall(ToolCall::new("c2", "add", json!({"a": 1}))),
                ],
            ),
            Message::new(
                Role::Tool,
                vec![
                    result("c1", vec![ToolOutputPart::text("one")], false),
                    result(
                        "c2",
                        vec![ToolOutputPart::Json {
                            value: json!({"sum": 3}),
                        }],
                        true,
                    ),
                ],
            ),
            Message::user("a follow-up, merged into the tool turn where turns alternate"),
            Message::new(
                Role::Assistant,
                vec![
                    reasoning("hidden", None, Some(json!({"redacted_thinking": "R"}))),
                    ContentPart::ToolCall(ToolCall::new("c3", "bad", json!("{not json"))),
                ],
            ),
            Message::system("mid system"),
            Message::new(
                Role::Tool,
                vec![result(
                    "c3",
                    vec![
                        ToolOutputPart::text("b"),
                        ToolOutputPart::Image { image: png },
                        ToolOutputPart::Json { value: json!([1]) },
                    ],
                    false,
                )],
            ),
            Message::new(
                Role::Assistant,
                vec![
                    ContentPart::text("final "),
                    ContentPart::text("answer"),
                    reasoning("t", None, None),
                ],
            ),
        ]
    }

    /// The bytes posted are those of the body as a `Value` (what
    /// `request_body` shows and the request-body tests compare), for every
    /// provider: the views write their keys in the same order.
    #[test]
    fn every_provider_writes_the_bytes_its_value_has() {
        use crate::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};
        fn same<H: Serialize>(name: &str, body: &Body<H>) {
            let value = serde_json::to_string(&body.to_value()).unwrap();
            assert_eq!(bytes_of(body), value, "{name}");
        }
        for caching in [false, true] {
            let mut request = loopwright_types::ModelRequest::new(rich_history());
            request.system = Some("Be brief.".into());
            request.prompt_caching = caching;
            let chat = OpenAiChatModel::openai("gpt-4.1").build().unwrap();
            same("chat", &chat.body(&request));
            let router = OpenAiChatModel::openrouter("a/b").build().unwrap();
            same("openrouter", &router.body(&request));
            let responses = OpenAiResponsesModel::builder("gpt-5").build().unwrap();
            same("responses", &responses.body(&request));
            let anthropic = AnthropicModel::builder("claude-sonnet-4-5").build().unwrap();
            same("anthropic", &anthropic.body(&request));
            let gemini = GeminiModel::builder("gemini-2.5-flash").build().unwrap();
            same("gemini", &gemini.body(&request));
            let ollama = OllamaModel::builder("qwen3").build().unwrap();
            same("ollama", &ollama.body(&request));
        }
    }
}
