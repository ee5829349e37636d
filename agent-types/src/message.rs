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

pub use crate::media::FileSource;

/// Who speaks a [`Message`].
///
/// ```
/// use loopwright_types::Role;
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
/// use loopwright_types::{Message, Role};
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
    /// use loopwright_types::{ContentPart, Message, Role};
    /// let m = Message::new(Role::Assistant, vec![ContentPart::text("hi")]);
    /// assert_eq!(m.text(), "hi");
    /// ```
    pub fn new(role: Role, content: Vec<ContentPart>) -> Self {
        Self { role, content }
    }

    /// A system message holding one text part.
    ///
    /// ```
    /// let m = loopwright_types::Message::system("Be brief.");
    /// assert_eq!(m.role, loopwright_types::Role::System);
    /// ```
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentPart::text(text)])
    }

    /// A user message holding one text part.
    ///
    /// ```
    /// let m = loopwright_types::Message::user("hello");
    /// assert_eq!(m.role, loopwright_types::Role::User);
    /// ```
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentPart::text(text)])
    }

    /// An assistant message holding one text part.
    ///
    /// ```
    /// let m = loopwright_types::Message::assistant("hello");
    /// assert_eq!(m.role, loopwright_types::Role::Assistant);
    /// ```
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentPart::text(text)])
    }

    /// The text parts of this message, concatenated.
    ///
    /// ```
    /// use loopwright_types::{ContentPart, Message, Role};
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
    /// use loopwright_types::{ContentPart, Message, Role, ToolCall};
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
/// use loopwright_types::ContentPart;
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
    /// A document or other file (a PDF, a spreadsheet, a text file), inline
    /// or by URL. A provider that cannot take it fails the request before
    /// sending it (or shows a placeholder, when the run asks for that).
    File {
        /// Where the file is.
        file: FileSource,
        /// Its name, when known (some providers show it to the model).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// An audio clip, inline or by URL.
    Audio {
        /// Where the clip is.
        audio: FileSource,
    },
    /// A provider's compaction of the conversation before it (an OpenAI
    /// Responses `compaction` item), kept verbatim across turns; only that
    /// provider reads it, the others skip it.
    Compaction(CompactionItem),
}

impl ContentPart {
    /// A text part.
    ///
    /// ```
    /// let p = loopwright_types::ContentPart::text("hi");
    /// assert!(matches!(p, loopwright_types::ContentPart::Text { .. }));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A file part: the bytes inline, of this media type, with its name.
    ///
    /// ```
    /// let p = loopwright_types::ContentPart::file("application/pdf", b"%PDF-1.7", Some("a.pdf"));
    /// assert_eq!(serde_json::to_value(&p).unwrap()["file"]["media_type"], "application/pdf");
    /// ```
    pub fn file(media_type: impl Into<String>, bytes: &[u8], filename: Option<&str>) -> Self {
        Self::File {
            file: FileSource::from_bytes(media_type, bytes),
            filename: filename.map(str::to_owned),
        }
    }

    /// An audio part: the bytes inline, of this media type.
    ///
    /// ```
    /// let p = loopwright_types::ContentPart::audio("audio/wav", b"RIFF");
    /// assert!(matches!(p, loopwright_types::ContentPart::Audio { .. }));
    /// ```
    pub fn audio(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        Self::Audio {
            audio: FileSource::from_bytes(media_type, bytes),
        }
    }

    /// The part for a file's bytes by its media type: an image, an audio
    /// clip or a file (what `--file` attaches).
    ///
    /// ```
    /// use loopwright_types::ContentPart;
    /// assert!(matches!(ContentPart::attachment("image/png", b"x", None), ContentPart::Image { .. }));
    /// assert!(matches!(ContentPart::attachment("audio/mpeg", b"x", None), ContentPart::Audio { .. }));
    /// assert!(matches!(ContentPart::attachment("text/csv", b"x", Some("a.csv")), ContentPart::File { .. }));
    /// ```
    pub fn attachment(media_type: &str, bytes: &[u8], filename: Option<&str>) -> Self {
        match crate::media::kind_of(media_type) {
            "image" => match FileSource::from_bytes(media_type, bytes) {
                FileSource::Base64 { media_type, data } => Self::Image {
                    image: ImageSource::Base64 { media_type, data },
                },
                other => Self::File {
                    file: other,
                    filename: None,
                },
            },
            "audio" => Self::audio(media_type, bytes),
            _ => Self::file(media_type, bytes, filename),
        }
    }

    /// What a model that cannot take this part is shown instead (images,
    /// files, audio); `None` for the other parts.
    ///
    /// ```
    /// let p = loopwright_types::ContentPart::audio("audio/wav", &[0; 2048]);
    /// assert_eq!(p.placeholder().as_deref(), Some("[audio: audio/wav, 2.0 KB]"));
    /// ```
    pub fn placeholder(&self) -> Option<String> {
        match self {
            Self::Image { image } => Some(image.placeholder()),
            Self::File { file, filename } => Some(file_placeholder(file, filename.as_deref())),
            Self::Audio { audio } => Some(audio.placeholder("audio")),
            _ => None,
        }
    }
}

/// A file's placeholder, naming the file when its name is known.
fn file_placeholder(file: &FileSource, filename: Option<&str>) -> String {
    let text = file.placeholder("file");
    match filename {
        Some(name) => format!("{}, {name}]", text.trim_end_matches(']')),
        None => text,
    }
}

/// A provider's compaction item, carried verbatim (see
/// [`ContentPart::Compaction`]).
///
/// ```
/// let item = loopwright_types::CompactionItem {
///     provider: "openai".into(),
///     data: serde_json::json!({"type": "compaction", "encrypted_content": "..."}),
/// };
/// assert_eq!(item.provider, "openai");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionItem {
    /// The provider that wrote it and alone reads it (`openai`).
    pub provider: String,
    /// The item as the provider gave it.
    pub data: Value,
}

/// Where an image's bytes are.
///
/// Inline data is base64, as every provider and MCP carry it, so it passes
/// through without being decoded and encoded again.
///
/// ```
/// use loopwright_types::ImageSource;
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
    /// let img = loopwright_types::ImageSource::Url { url: "https://example.com/a.png".into() };
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
    /// use loopwright_types::ImageSource;
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
/// let r = loopwright_types::Reasoning { text: "think".into(), signature: Some("sig".into()), provider_data: None };
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
/// let c = loopwright_types::ToolCall::new("call_1", "get_time", serde_json::json!({"tz": "UTC"}));
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
    /// let c = loopwright_types::ToolCall::new("1", "t", serde_json::json!({}));
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
/// use loopwright_types::{ToolOutputPart, ToolResult};
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
    /// use loopwright_types::{ToolOutputPart, ToolResult};
    /// let r = ToolResult { call_id: "c".into(), parts: vec![ToolOutputPart::Json { value: serde_json::json!({"a":1}) }], is_error: false };
    /// assert_eq!(r.text(), r#"{"a":1}"#);
    /// ```
    pub fn text(&self) -> String {
        crate::tool::render_parts_text(&self.parts)
    }

    /// The whole result as text for a provider whose tool results cannot
    /// carry images, audio or files: text and JSON parts as in
    /// [`Self::text`], each image, clip and file as its placeholder
    /// ([`ImageSource::placeholder`], [`FileSource::placeholder`]), in
    /// order, so the model knows one was returned; tool references are
    /// left out.
    ///
    /// ```
    /// use loopwright_types::{ImageSource, ToolOutputPart, ToolResult};
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
                ToolOutputPart::Audio { audio } => std::borrow::Cow::Owned(audio.placeholder("audio")),
                ToolOutputPart::File { file, filename } => {
                    std::borrow::Cow::Owned(file_placeholder(file, filename.as_deref()))
                }
                ToolOutputPart::ToolReference { .. } => continue,
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
/// let p = loopwright_types::ToolOutputPart::text("done");
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
    /// An audio clip; providers whose tool results cannot carry audio
    /// show its placeholder.
    Audio {
        /// Where the clip is.
        audio: FileSource,
    },
    /// A file (an MCP embedded resource's blob, a document); providers
    /// whose tool results cannot carry it show its placeholder.
    File {
        /// Where the file is.
        file: FileSource,
        /// Its name (or URI), when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A tool this result makes available to the model (the result of
    /// `search_tools`): a provider that loads deferred tools natively
    /// (Anthropic's `tool_reference`) loads it; the others skip it (the
    /// loop offers the tool from the next step on).
    ToolReference {
        /// The exposed name of the tool.
        tool: String,
    },
}

impl ToolOutputPart {
    /// A text part.
    ///
    /// ```
    /// let p = loopwright_types::ToolOutputPart::text("x");
    /// assert!(matches!(p, loopwright_types::ToolOutputPart::Text { .. }));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// Whether this part carries media (an image, audio or a file) rather
    /// than text.
    ///
    /// ```
    /// assert!(!loopwright_types::ToolOutputPart::text("x").is_media());
    /// ```
    pub fn is_media(&self) -> bool {
        matches!(self, Self::Image { .. } | Self::Audio { .. } | Self::File { .. })
    }

    /// What a model that cannot take this part is shown instead (media
    /// parts); `None` for the other parts.
    ///
    /// ```
    /// use loopwright_types::{FileSource, ToolOutputPart};
    /// let part = ToolOutputPart::File { file: FileSource::from_bytes("application/pdf", &[0; 10]), filename: Some("a.pdf".into()) };
    /// assert_eq!(part.placeholder().as_deref(), Some("[file: application/pdf, 10 B, a.pdf]"));
    /// ```
    pub fn placeholder(&self) -> Option<String> {
        match self {
            Self::Image { image } => Some(image.placeholder()),
            Self::Audio { audio } => Some(audio.placeholder("audio")),
            Self::File { file, filename } => Some(file_placeholder(file, filename.as_deref())),
            _ => None,
        }
    }
}
