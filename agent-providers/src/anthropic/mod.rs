//! Anthropic Messages (`POST {base}/messages`, typed SSE events).

use std::borrow::Cow;
use std::collections::HashSet;

use async_trait::async_trait;
use bytes::Bytes;
use loopwright_types::{
    ContentPart, FileSource, ImageSource, LanguageModel, Message, ModelCapabilities, ModelError,
    ModelRequest, ModelStream, ReasoningConfig, Role, ToolChoice, ToolDefinition, ToolOutputPart,
};
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Value, json};

mod decode;

pub(crate) use decode::AnthropicDecoder;

use crate::body::{Body, system_texts};
use crate::capabilities;
use crate::driver::drive;
use crate::features::json_schema_format;
use crate::http::Transport;
use crate::media;
use crate::settings::{ProviderSettings, settings_methods};
use crate::sse::sse_frames;
use crate::tools::{merge_options, object_schema};

/// Anthropic's API root.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The API version header value this implementation speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` sent when the request has none (the API requires one; large
/// enough for a long answer on every current model).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Claude model.
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    model: String,
    base: String,
    transport: Transport,
    default_max_tokens: u32,
    /// Merged into every request body.
    options: Option<Value>,
}

/// Builder for [`AnthropicModel`].
#[derive(Debug, Clone)]
pub struct AnthropicBuilder {
    pub(crate) model: String,
    settings: ProviderSettings,
    default_max_tokens: u32,
}

impl AnthropicModel {
    /// A Claude model (`claude-sonnet-4-5`, ...).
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder {
            model: model.into(),
            settings: ProviderSettings::new(ANTHROPIC_BASE_URL),
            default_max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

impl AnthropicBuilder {
    settings_methods!();

    /// `max_tokens` used when a request sets no output limit.
    pub fn default_max_tokens(mut self, n: u32) -> Self {
        self.default_max_tokens = n;
        self
    }

    /// Build the model; fails on a malformed header.
    pub fn build(self) -> Result<AnthropicModel, ModelError> {
        let mut auth = vec![("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = &self.settings.api_key {
            auth.push(("x-api-key".to_owned(), key.clone()));
        }
        Ok(AnthropicModel {
            options: self.settings.body_options.clone(),
            transport: self.settings.transport(auth)?,
            base: self.settings.base().to_owned(),
            model: self.model,
            default_max_tokens: self.default_max_tokens,
        })
    }
}

/// The `messages` of a body: the history as alternating turns. System
/// messages go to the system prompt instead, a message with nothing to send
/// is left out, consecutive messages of one role are merged into one turn
/// (the API wants them alternating), and with prompt caching the last
/// block of the last user turn carries a cache breakpoint. Fields are
/// declared in sorted order (see [`crate::body`]).
pub(crate) struct Turns<'a> {
    messages: &'a [Message],
    /// The message whose last block is marked for the prompt cache.
    cache_at: Option<usize>,
    /// Tools load natively (deferred tools declared): tool references go
    /// as `tool_reference` blocks.
    references: bool,
}

impl<'a> Turns<'a> {
    fn new(messages: &'a [Message], prompt_caching: bool, references: bool) -> Self {
        // The last user-side message with blocks ends the last user turn
        // (only assistant messages, or none, come after it).
        let cache_at = prompt_caching
            .then(|| {
                messages.iter().rposition(|m| {
                    matches!(m.role, Role::User | Role::Tool) && blocks(m, false).next().is_some()
                })
            })
            .flatten();
        Self {
            messages,
            cache_at,
            references,
        }
    }
}

/// The role a message's turn has, `None` for a system message.
fn turn_role(message: &Message) -> Option<&'static str> {
    match message.role {
        Role::System => None,
        Role::User | Role::Tool => Some("user"),
        Role::Assistant => Some("assistant"),
    }
}

impl Serialize for Turns<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let messages = self.messages;
        let mut start = 0;
        while start < messages.len() {
            let Some(role) =
                turn_role(&messages[start]).filter(|_| blocks(&messages[start], false).next().is_some())
            else {
                start += 1;
                continue;
            };
            // The turn runs until a message of the other role with blocks.
            let mut end = start + 1;
            while end < messages.len() {
                let m = &messages[end];
                if turn_role(m).is_some_and(|r| r != role) && blocks(m, false).next().is_some() {
                    break;
                }
                end += 1;
            }
            seq.serialize_element(&Turn {
                content: TurnBlocks {
                    messages: &messages[start..end],
                    first: start,
                    cache_at: self.cache_at,
                    references: self.references,
                },
                role,
            })?;
            start = end;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Turn<'a> {
    content: TurnBlocks<'a>,
    role: &'static str,
}

/// The blocks of the messages of one turn (system messages among them are
/// in the system prompt).
struct TurnBlocks<'a> {
    messages: &'a [Message],
    /// The index of `messages[0]` in the history.
    first: usize,
    cache_at: Option<usize>,
    references: bool,
}

impl Serialize for TurnBlocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for (i, message) in self.messages.iter().enumerate() {
            if message.role == Role::System {
                continue;
            }
            let mut blocks = blocks(message, self.references).peekable();
            while let Some(block) = blocks.next() {
                let last = blocks.peek().is_none() && self.cache_at == Some(self.first + i);
                seq.serialize_element(&Marked {
                    cache_control: last.then_some(CachePoint::EPHEMERAL),
                    block,
                })?;
            }
        }
        seq.end()
    }
}

/// A prompt-cache breakpoint (Anthropic caches the prefix up to it; three
/// are set, of the four it allows: system, tools, last user turn).
#[derive(Serialize)]
struct CachePoint {
    r#type: &'static str,
}

impl CachePoint {
    const EPHEMERAL: Self = Self { r#type: "ephemeral" };
}

/// A block, perhaps with a cache breakpoint (`cache_control` sorts before
/// every key of a block).
#[derive(Serialize)]
struct Marked<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CachePoint>,
    #[serde(flatten)]
    block: SentBlock<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum SentBlock<'a> {
    Text {
        text: Cow<'a, str>,
        r#type: &'static str,
    },
    Image {
        source: Source<'a>,
        r#type: &'static str,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        r#type: &'static str,
    },
    ToolReference {
        tool_name: &'a str,
        r#type: &'static str,
    },
    RedactedThinking {
        data: &'a Value,
        r#type: &'static str,
    },
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        r#type: &'static str,
    },
    ToolUse {
        id: &'a str,
        input: &'a Value,
        name: &'a str,
        r#type: &'static str,
    },
    ToolResult {
        content: ResultBlocks<'a>,
        is_error: bool,
        tool_use_id: &'a str,
        r#type: &'static str,
    },
}

impl<'a> SentBlock<'a> {
    fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            r#type: "text",
        }
    }

    fn image(image: &'a ImageSource) -> Self {
        let source = match image {
            ImageSource::Base64 { media_type, data } => Source::Base64 {
                data,
                media_type,
                r#type: "base64",
            },
            ImageSource::Url { url } => Source::Url { r#type: "url", url },
            _ => return Self::text("[unsupported image]"),
        };
        Self::Image {
            source,
            r#type: "image",
        }
    }

    /// A file as a document block: a PDF inline or by URL, a text file by
    /// value; anything else (refused in user messages beforehand) as its
    /// placeholder.
    fn document(file: &'a FileSource, title: Option<&'a str>, placeholder: impl FnOnce() -> String) -> Self {
        let source = match file {
            FileSource::Base64 { media_type, data } if media::is_pdf(media_type) => Source::Base64 {
                data,
                media_type,
                r#type: "base64",
            },
            FileSource::Base64 { media_type, .. } if media::is_text(media_type) => {
                match file.decoded_text() {
                    Some(text) => Source::Text {
                        data: Cow::Owned(text),
                        media_type: "text/plain",
                        r#type: "text",
                    },
                    None => return Self::text(placeholder()),
                }
            }
            FileSource::Url { url, .. } if file.media_type().is_none_or(media::is_pdf) => {
                Source::Url { r#type: "url", url }
            }
            _ => return Self::text(placeholder()),
        };
        Self::Document {
            source,
            title,
            r#type: "document",
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Source<'a> {
    Base64 {
        data: &'a str,
        media_type: &'a str,
        r#type: &'static str,
    },
    Text {
        data: Cow<'a, str>,
        media_type: &'static str,
        r#type: &'static str,
    },
    Url {
        r#type: &'static str,
        url: &'a str,
    },
}

/// A tool result's content: its parts as text, image and document blocks
/// (audio as its placeholder). With native tool loading, a result naming
/// tools (`search_tools`) holds their `tool_reference` blocks alone, which
/// the API expands into their definitions.
struct ResultBlocks<'a> {
    parts: &'a [ToolOutputPart],
    references: bool,
}

impl Serialize for ResultBlocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let referencing = self.references
            && self
                .parts
                .iter()
                .any(|p| matches!(p, ToolOutputPart::ToolReference { .. }));
        for part in self.parts {
            let block = match part {
                ToolOutputPart::ToolReference { tool } if referencing => SentBlock::ToolReference {
                    tool_name: tool,
                    r#type: "tool_reference",
                },
                _ if referencing => continue,
                ToolOutputPart::Text { text } => SentBlock::text(text.as_str()),
                ToolOutputPart::Image { image } => SentBlock::image(image),
                ToolOutputPart::Json { value } => SentBlock::text(value.to_string()),
                ToolOutputPart::File { file, filename } => {
                    SentBlock::document(file, filename.as_deref(), || {
                        part.placeholder().unwrap_or_default()
                    })
                }
                ToolOutputPart::ToolReference { .. } => continue,
                other => SentBlock::text(other.placeholder().unwrap_or_default()),
            };
            seq.serialize_element(&block)?;
        }
        seq.end()
    }
}

/// The blocks a message sends (an empty text, and reasoning that cannot
/// go back, send nothing).
fn blocks(message: &Message, references: bool) -> impl Iterator<Item = SentBlock<'_>> {
    message.content.iter().filter_map(move |part| match part {
        ContentPart::Text { text } if !text.is_empty() => Some(SentBlock::text(text.as_str())),
        ContentPart::Image { image } => Some(SentBlock::image(image)),
        ContentPart::File { file, filename } => Some(SentBlock::document(file, filename.as_deref(), || {
            part.placeholder().unwrap_or_default()
        })),
        ContentPart::Audio { audio } => Some(SentBlock::text(audio.placeholder("audio"))),
        ContentPart::Reasoning(r) => {
            if let Some(data) = r.provider_data.as_ref().and_then(|d| d.get("redacted_thinking")) {
                Some(SentBlock::RedactedThinking {
                    data,
                    r#type: "redacted_thinking",
                })
            } else {
                r.signature.as_deref().map(|signature| SentBlock::Thinking {
                    signature,
                    thinking: &r.text,
                    r#type: "thinking",
                })
            }
        }
        ContentPart::ToolCall(c) => Some(SentBlock::ToolUse {
            id: &c.id,
            input: &c.input,
            name: &c.name,
            r#type: "tool_use",
        }),
        ContentPart::ToolResult(r) => Some(SentBlock::ToolResult {
            content: ResultBlocks {
                parts: &r.parts,
                references,
            },
            is_error: r.is_error,
            tool_use_id: &r.call_id,
            r#type: "tool_result",
        }),
        _ => None,
    })
}

impl AnthropicModel {
    /// The JSON body for `request` (public for inspection and tests).
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.body(request).to_value()
    }

    /// The body as posted: [`Self::request_body`] serialised, written
    /// straight from the history (public for inspection and benches).
    ///
    /// ```
    /// use loopwright_types::{Message, ModelRequest};
    /// use loopwright_providers::AnthropicModel;
    ///
    /// let model = AnthropicModel::builder("claude-sonnet-4-5").build()?;
    /// let request = ModelRequest::new(vec![Message::user("hi")]);
    /// let bytes = model.request_bytes(&request)?;
    /// let posted: serde_json::Value = serde_json::from_slice(&bytes)?;
    /// assert_eq!(posted, model.request_body(&request));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_bytes(&self, request: &ModelRequest) -> Result<Bytes, ModelError> {
        self.body(request).to_bytes(&self.transport.body_size)
    }

    /// The body, its messages written straight from the history.
    pub(crate) fn body<'a>(&self, request: &'a ModelRequest) -> Body<Turns<'a>> {
        let system = system_texts(request);
        // Thinking, for a model that thinks: its budget, at least the
        // smallest Anthropic accepts.
        let thinking = request
            .reasoning
            .as_ref()
            .filter(|_| self.capabilities().reasoning)
            .and_then(ReasoningConfig::budget)
            .map(|b| b.max(MIN_THINKING_BUDGET));
        let max_tokens = request.max_output_tokens.unwrap_or(self.default_max_tokens);
        let mut body = json!({
            "model": self.model,
            // max_tokens counts the thinking too: the budget is added, so the
            // answer keeps its room and max_tokens stays above the budget.
            "max_tokens": max_tokens + thinking.unwrap_or(0),
            "stream": true,
        });
        if !system.is_empty() {
            let text = system.join("\n\n");
            body["system"] = if request.prompt_caching {
                json!([{"type": "text", "text": text, "cache_control": cache_point()}])
            } else {
                json!(text)
            };
        }
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(tools(request));
            let mut choice = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                // Thinking allows only `auto` and `none`.
                ToolChoice::Required | ToolChoice::Tool { .. } if thinking.is_some() => {
                    json!({"type": "auto"})
                }
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
                // A choice added to loopwright-core later: let the model decide.
                _ => json!({"type": "auto"}),
            };
            if request.parallel_tool_calls == Some(false) && request.tool_choice != ToolChoice::None {
                choice["disable_parallel_tool_use"] = json!(true);
            }
            body["tool_choice"] = choice;
        }
        match thinking {
            Some(budget) => {
                // Thinking takes no temperature, and top_p only from 0.95.
                body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
                if let Some(p) = request.top_p.filter(|p| *p >= MIN_TOP_P_WITH_THINKING) {
                    body["top_p"] = json!(p);
                }
            }
            None => {
                if let Some(t) = request.temperature {
                    body["temperature"] = json!(t);
                }
                if let Some(p) = request.top_p {
                    body["top_p"] = json!(p);
                }
            }
        }
        // Anthropic's structured output takes an object schema whose objects
        // all say `additionalProperties: false` (made so where possible).
        if let Some((_, schema, _)) = request.response_format.as_ref().and_then(json_schema_format) {
            body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema}});
        }
        if let Some(tokens) = request.compact_above {
            body["context_management"] = json!({"edits": [{
                "type": CLEAR_TOOL_USES,
                "trigger": {"type": "input_tokens", "value": tokens},
            }]});
        }
        merge_options(&mut body, self.options.as_ref());
        merge_options(&mut body, request.options_for("anthropic"));
        let references = !request.deferred_tools.is_empty();
        Body::new(
            body,
            "messages",
            Turns::new(&request.messages, request.prompt_caching, references),
        )
    }
}

/// Anthropic's edit clearing old tool uses (context management).
const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";
/// The beta that loads deferred tools (`defer_loading`, `tool_reference`).
pub const TOOL_SEARCH_BETA: &str = "advanced-tool-use-2025-11-20";
/// The beta of context management (clearing old tool uses).
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";

/// The betas `request` needs.
fn betas(request: &ModelRequest) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if !request.deferred_tools.is_empty() {
        out.push(("anthropic-beta", TOOL_SEARCH_BETA));
    }
    if request.compact_above.is_some() {
        out.push(("anthropic-beta", CONTEXT_MANAGEMENT_BETA));
    }
    out
}

/// The `tools` of a body: each tool with its `anthropic` options merged;
/// with tool search, the held-back tools and those a result references
/// declared with `defer_loading` (after the others, by name, so the list
/// stays the same from step to step) and the prompt-cache breakpoint on the
/// last tool loaded up front.
fn tools(request: &ModelRequest) -> Vec<Value> {
    let native = !request.deferred_tools.is_empty();
    let referenced: HashSet<&str> = if native {
        request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|p| match p {
                ContentPart::ToolResult(r) => Some(r.parts.iter()),
                _ => None,
            })
            .flatten()
            .filter_map(|p| match p {
                ToolOutputPart::ToolReference { tool } => Some(tool.as_str()),
                _ => None,
            })
            .collect()
    } else {
        HashSet::new()
    };
    let json_of = |t: &ToolDefinition| {
        let mut tool =
            json!({"name": t.name, "description": t.description, "input_schema": object_schema(t)});
        merge_options(&mut tool, t.options_for("anthropic"));
        tool
    };
    let (deferred_here, mut up_front): (Vec<&ToolDefinition>, Vec<&ToolDefinition>) = request
        .tools
        .iter()
        .partition(|t| referenced.contains(t.name.as_str()));
    let mut tools: Vec<Value> = up_front.drain(..).map(json_of).collect();
    if request.prompt_caching
        && let Some(last) = tools.last_mut()
        && last.get("cache_control").is_none()
    {
        last["cache_control"] = cache_point();
    }
    let mut deferred: Vec<&ToolDefinition> = deferred_here
        .into_iter()
        .chain(request.deferred_tools.iter())
        .collect();
    deferred.sort_by(|a, b| a.name.cmp(&b.name));
    tools.extend(deferred.into_iter().map(|t| {
        let mut tool = json_of(t);
        tool["defer_loading"] = json!(true);
        tool
    }));
    tools
}

/// A prompt-cache breakpoint (Anthropic caches the prefix up to it; three
/// are set, of the four it allows: system, tools, last user turn).
fn cache_point() -> Value {
    json!({"type": "ephemeral"})
}

/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1_024;

/// The smallest `top_p` Anthropic accepts with thinking on.
const MIN_TOP_P_WITH_THINKING: f32 = 0.95;

#[async_trait]
impl LanguageModel for AnthropicModel {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ModelCapabilities {
        capabilities::anthropic(&self.model)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let request = media::prepare(&request, self.provider(), media::anthropic)?;
        let body = self.request_bytes(&request)?;
        let url = format!("{}/messages", self.base);
        let bytes = self
            .transport
            .open_with(&url, body, &request, &betas(&request))
            .await?;
        Ok(drive(sse_frames(bytes), AnthropicDecoder::default()))
    }
}
