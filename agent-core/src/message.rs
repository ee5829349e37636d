//! Provider-neutral conversation types.
//!
//! A conversation is a list of [`Message`]s, each with a [`Role`] and a list of
//! [`ContentPart`]s. Providers translate these to and from their wire formats;
//! nothing here knows about any provider.
//!
//! Invariant kept by the agent loop: every [`ContentPart::ToolCall`] in an
//! assistant message is answered by exactly one [`ContentPart::ToolResult`]
//! with the same id in the tool message that follows it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who speaks a [`Message`].
///
/// ```
/// use loopwright_core::Role;
/// assert_eq!(serde_json::to_string(&Role::Tool).unwrap(), "\"tool\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The application's user.
    User,
    /// The model.
    Assistant,
    /// Results of tool calls, answering the assistant message before it.
    Tool,
}

/// One message of a conversation.
///
/// ```
/// use loopwright_core::{Message, Role};
/// let m = Message::user("What time is it?");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "What time is it?");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said, in order.
    pub content: Vec<ContentPart>,
}

impl Message {
    /// A message with the given role and parts.
    ///
    /// ```
    /// use loopwright_core::{ContentPart, Message, Role};
    /// let m = Message::new(Role::Assistant, vec![ContentPart::text("hi")]);
    /// assert_eq!(m.text(), "hi");
    /// ```
    pub fn new(role: Role, content: Vec<ContentPart>) -> Self {
        Self { role, content }
    }

    /// A system message holding one text part.
    ///
    /// ```
    /// let m = loopwright_core::Message::system("Be brief.");
    /// assert_eq!(m.role, loopwright_core::Role::System);
    /// ```
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentPart::text(text)])
    }

    /// A user message holding one text part.
    ///
    /// ```
    /// let m = loopwright_core::Message::user("hello");
    /// assert_eq!(m.role, loopwright_core::Role::User);
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentPart::text(text)])
    }

    /// An assistant message holding one text part.
    ///
    /// ```
    /// let m = loopwright_core::Message::assistant("hello");
    /// assert_eq!(m.role, loopwright_core::Role::Assistant);
    /// ```
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentPart::text(text)])
    }

    /// The text parts of this message, concatenated.
    ///
    /// ```
    /// use loopwright_core::{ContentPart, Message, Role};
    /// let m = Message::new(Role::User, vec![ContentPart::text("a"), ContentPart::text("b")]);
    /// assert_eq!(m.text(), "ab");
    /// ```
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls in this message, in order.
    ///
    /// ```
    /// use loopwright_core::{ContentPart, Message, Role, ToolCall};
    /// let call = ToolCall::new("c1", "echo", serde_json::json!({}));
    /// let m = Message::new(Role::Assistant, vec![ContentPart::ToolCall(call.clone())]);
    /// assert_eq!(m.tool_calls().next(), Some(&call));
    /// ```
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// A piece of a message.
///
/// ```
/// use loopwright_core::ContentPart;
/// let p = ContentPart::text("hi");
/// assert_eq!(serde_json::to_value(&p).unwrap(), serde_json::json!({"type": "text", "text": "hi"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, inline or by URL.
    Image {
        /// Where the image is.
        image: ImageSource,
    },
    /// The model's reasoning, kept so it can be replayed to the provider.
    Reasoning(Reasoning),
    /// A tool call made by the model.
    ToolCall(ToolCall),
    /// The result of a tool call.
    ToolResult(ToolResult),
}

impl ContentPart {
    /// A text part.
    ///
    /// ```
    /// let p = loopwright_core::ContentPart::text("hi");
    /// assert!(matches!(p, loopwright_core::ContentPart::Text { .. }));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// Where an image's bytes are.
///
/// Inline data is base64, as every provider and MCP carry it, so it passes
/// through without being decoded and encoded again.
///
/// ```
/// use loopwright_core::ImageSource;
/// let img = ImageSource::Base64 { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() };
/// assert_eq!(img.media_type(), Some("image/png"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    /// Inline bytes, base64-encoded.
    Base64 {
        /// MIME type such as `image/png`.
        media_type: String,
        /// Standard base64 (RFC 4648, with padding).
        data: String,
    },
    /// An image the provider fetches itself.
    Url {
        /// The image's URL.
        url: String,
    },
}

impl ImageSource {
    /// The MIME type, when known.
    ///
    /// ```
    /// let img = loopwright_core::ImageSource::Url { url: "https://example.com/a.png".into() };
    /// assert_eq!(img.media_type(), None);
    /// ```
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Base64 { media_type, .. } => Some(media_type),
            Self::Url { .. } => None,
        }
    }

    /// What a model that cannot see this image is shown instead: its type
    /// and decoded size, or its URL.
    ///
    /// ```
    /// use loopwright_core::ImageSource;
    /// let png = ImageSource::Base64 { media_type: "image/png".into(), data: "A".repeat(1640) };
    /// assert_eq!(png.placeholder(), "[image: image/png, 1.2 KB]");
    /// let url = ImageSource::Url { url: "https://example.com/a.png".into() };
    /// assert_eq!(url.placeholder(), "[image: https://example.com/a.png]");
    /// ```
    pub fn placeholder(&self) -> String {
        match self {
            Self::Base64 { media_type, data } => {
                let bytes = data.trim_end_matches('=').len() * 3 / 4;
                format!("[image: {media_type}, {}]", crate::util::human_size(bytes))
            }
            Self::Url { url } => format!("[image: {url}]"),
        }
    }
}

/// Reasoning the model showed, with the opaque data its provider needs to
/// accept it back in the next request (Anthropic's thinking signature,
/// Gemini's `thoughtSignature`, OpenAI's encrypted reasoning item).
///
/// ```
/// let r = loopwright_core::Reasoning { text: "think".into(), signature: Some("sig".into()), provider_data: None };
/// assert_eq!(r.signature.as_deref(), Some("sig"));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// The visible reasoning text (may be empty when the provider hides it).
    pub text: String,
    /// The provider's signature over the reasoning, replayed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Any other provider-specific data, replayed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Value>,
}

/// A tool call made by the model.
///
/// `name` is the name the model saw (the exposed name in the
/// [`ToolSet`](crate::ToolSet)); the tool set maps it back to the original.
///
/// ```
/// let c = loopwright_core::ToolCall::new("call_1", "get_time", serde_json::json!({"tz": "UTC"}));
/// assert_eq!(c.input["tz"], "UTC");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call (generated when the provider gives none).
    pub id: String,
    /// The exposed tool name.
    pub name: String,
    /// The arguments. When the model's arguments were not valid JSON this is
    /// the raw text as a JSON string, and the call gets an error result.
    pub input: Value,
    /// Provider-specific data attached to the call (such as a Gemini
    /// `thoughtSignature`), replayed verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<Value>,
}

impl ToolCall {
    /// A call with no provider data.
    ///
    /// ```
    /// let c = loopwright_core::ToolCall::new("1", "t", serde_json::json!({}));
    /// assert!(c.provider_data.is_none());
    /// ```
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            provider_data: None,
        }
    }
}

/// The result of one tool call.
///
/// ```
/// use loopwright_core::{ToolOutputPart, ToolResult};
/// let r = ToolResult { call_id: "c1".into(), parts: vec![ToolOutputPart::text("ok")], is_error: false };
/// assert_eq!(r.text(), "ok");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The output.
    pub parts: Vec<ToolOutputPart>,
    /// Whether the call failed (the model sees the output as an error).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// The text and JSON parts rendered as text, joined by newlines.
    ///
    /// ```
    /// use loopwright_core::{ToolOutputPart, ToolResult};
    /// let r = ToolResult { call_id: "c".into(), parts: vec![ToolOutputPart::Json { value: serde_json::json!({"a":1}) }], is_error: false };
    /// assert_eq!(r.text(), r#"{"a":1}"#);
    /// ```
    pub fn text(&self) -> String {
        crate::tool::render_parts_text(&self.parts)
    }

    /// The whole result as text for a provider whose tool results cannot
    /// carry images: text and JSON parts as in [`Self::text`], each image
    /// as its [`ImageSource::placeholder`], in order, so the model knows an
    /// image was returned.
    ///
    /// ```
    /// use loopwright_core::{ImageSource, ToolOutputPart, ToolResult};
    /// let image = ImageSource::Base64 { media_type: "image/png".into(), data: "iVBORw0KGgo=".into() };
    /// let r = ToolResult { call_id: "c".into(), parts: vec![ToolOutputPart::Image { image }, ToolOutputPart::text("a chart")], is_error: false };
    /// assert_eq!(r.text_with_image_placeholders(), "[image: image/png, 8 B]\na chart");
    /// ```
    pub fn text_with_image_placeholders(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            let piece = match part {
                ToolOutputPart::Text { text } => std::borrow::Cow::Borrowed(text.as_str()),
                ToolOutputPart::Json { value } => std::borrow::Cow::Owned(value.to_string()),
                ToolOutputPart::Image { image } => std::borrow::Cow::Owned(image.placeholder()),
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&piece);
        }
        out
    }
}

/// A piece of a tool's output.
///
/// ```
/// let p = loopwright_core::ToolOutputPart::text("done");
/// assert_eq!(serde_json::to_value(&p).unwrap()["type"], "text");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolOutputPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image; a provider whose model cannot see tool images replaces it
    /// with a short placeholder.
    Image {
        /// Where the image is.
        image: ImageSource,
    },
    /// Structured output.
    Json {
        /// The value.
        value: Value,
    },
}

impl ToolOutputPart {
    /// A text part.
    ///
    /// ```
    /// let p = loopwright_core::ToolOutputPart::text("x");
    /// assert!(matches!(p, loopwright_core::ToolOutputPart::Text { .. }));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}
