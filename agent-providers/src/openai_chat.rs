//! OpenAI Chat Completions, and every server speaking its wire format:
//! OpenRouter (with attribution headers) and generic OpenAI-compatible
//! servers (vLLM, llama.cpp, LM Studio, Groq, DeepSeek, xAI, Mistral, ...).

use loopwright_types::{
    ContentPart, FileSource, FinishReason, LanguageModel, Message, ModelCapabilities, ModelError, ModelEvent,
    ModelRequest, ModelStream, Role, ToolChoice, Usage,
};
use std::borrow::Cow;

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Value, json};

use crate::body::{Body, DataUrl, ImageUrl, JsonText, message_text, result_text_with_placeholders};
use crate::capabilities;
use crate::driver::{Decoder, drive, truncated};
use crate::error::{invalid, stream_error};
use crate::features::{json_schema_format, openai_effort};
use crate::http::Transport;
use crate::media;
use crate::settings::{ProviderSettings, settings_methods};
use crate::sse::{Frame, sse_frames};
use crate::tools::{CallAssembler, finish_reason, merge_options, num, object_schema};

/// OpenAI's API root.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// OpenRouter's API root.
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

/// Which server family a [`OpenAiChatModel`] talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChatFlavor {
    /// OpenAI itself (`max_completion_tokens`).
    OpenAi,
    /// OpenRouter (attribution headers, `reasoning` deltas).
    OpenRouter,
    /// Any other server with this wire format (`max_tokens`).
    Compatible,
}

/// A model behind a Chat Completions endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiChatModel {
    provider: String,
    model: String,
    flavor: ChatFlavor,
    base: String,
    transport: Transport,
    supports_required: bool,
    /// Merged into every request body.
    options: Option<Value>,
}

/// Builder for [`OpenAiChatModel`].
#[derive(Debug, Clone)]
pub struct OpenAiChatBuilder {
    pub(crate) provider: String,
    pub(crate) model: String,
    flavor: ChatFlavor,
    settings: ProviderSettings,
    supports_required: bool,
}

impl OpenAiChatModel {
    /// An OpenAI model (`gpt-4.1`, ...).
    pub fn openai(model: impl Into<String>) -> OpenAiChatBuilder {
        OpenAiChatBuilder::new("openai", model, ChatFlavor::OpenAi, OPENAI_BASE_URL)
    }

    /// An OpenRouter model (`anthropic/claude-sonnet-4`, ...).
    pub fn openrouter(model: impl Into<String>) -> OpenAiChatBuilder {
        OpenAiChatBuilder::new("openrouter", model, ChatFlavor::OpenRouter, OPENROUTER_BASE_URL)
    }

    /// A model on any OpenAI-compatible server, named `provider` in events
    /// and errors.
    pub fn compatible(
        provider: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> OpenAiChatBuilder {
        OpenAiChatBuilder::new(provider, model, ChatFlavor::Compatible, base_url)
    }
}

impl OpenAiChatBuilder {
    fn new(
        provider: impl Into<String>,
        model: impl Into<String>,
        flavor: ChatFlavor,
        base: impl Into<String>,
    ) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
            flavor,
            settings: ProviderSettings::new(base),
            supports_required: true,
        }
    }

    settings_methods!();

    /// Whether the server accepts `tool_choice: "required"`; when not,
    /// `Required` is sent as `auto` (some compatible servers reject it).
    pub fn supports_required_tool_choice(mut self, yes: bool) -> Self {
        self.supports_required = yes;
        self
    }

    /// OpenRouter attribution: the app's URL (`HTTP-Referer`).
    pub fn referer(self, url: impl Into<String>) -> Self {
        self.header("HTTP-Referer", url)
    }

    /// OpenRouter attribution: the app's name (`X-Title`).
    pub fn title(self, name: impl Into<String>) -> Self {
        self.header("X-Title", name)
    }

    /// Build the model; fails on a malformed header.
    pub fn build(self) -> Result<OpenAiChatModel, ModelError> {
        let auth = match &self.settings.api_key {
            Some(key) => vec![("authorization".to_owned(), format!("Bearer {key}"))],
            None => Vec::new(),
        };
        Ok(OpenAiChatModel {
            options: self.settings.body_options.clone(),
            transport: self.settings.transport(auth)?,
            base: self.settings.base().to_owned(),
            provider: self.provider,
            model: self.model,
            flavor: self.flavor,
            supports_required: self.supports_required,
        })
    }
}

impl OpenAiChatModel {
    /// The JSON body for `request` (public for inspection and tests).
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.body(request).to_value()
    }

    /// The body as posted: [`Self::request_body`] serialised, written
    /// straight from the history (public for inspection and benches).
    ///
    /// ```
    /// use loopwright_types::{Message, ModelRequest};
    /// use loopwright_providers::OpenAiChatModel;
    ///
    /// let model = OpenAiChatModel::openai("gpt-4.1").build()?;
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
    pub(crate) fn body<'a>(&self, request: &'a ModelRequest) -> Body<ChatMessages<'a>> {
        let mut body = json!({
            "model": self.model,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut function =
                        json!({"name": t.name, "description": t.description, "parameters": object_schema(t)});
                    merge_options(&mut function, t.options_for(&self.provider));
                    json!({"type": "function", "function": function})
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required if self.supports_required => json!("required"),
                ToolChoice::Required => json!("auto"),
                ToolChoice::Tool { name } => json!({"type": "function", "function": {"name": name}}),
                // A choice added to loopwright-core later: let the model decide.
                _ => json!("auto"),
            };
            // OpenAI's o series refuses the setting ("Unsupported parameter").
            let refused = self.flavor == ChatFlavor::OpenAi && capabilities::openai_o_series(&self.model);
            if let Some(parallel) = request.parallel_tool_calls
                && !refused
            {
                body["parallel_tool_calls"] = json!(parallel);
            }
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = request.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(n) = request.max_output_tokens {
            let key = if self.flavor == ChatFlavor::OpenAi {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[key] = json!(n);
        }
        if let Some((name, schema, strict)) = request.response_format.as_ref().and_then(json_schema_format) {
            body["response_format"] = json!({"type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict}});
        }
        if let Some(reasoning) = &request.reasoning
            && self.capabilities().reasoning
        {
            match self.flavor {
                // OpenRouter's own field, which it maps for every model that reasons.
                ChatFlavor::OpenRouter => {
                    body["reasoning"] = json!({"effort": reasoning.effort.as_str()});
                }
                _ => {
                    body["reasoning_effort"] = json!(openai_effort(&self.model, reasoning.effort));
                    // OpenAI's reasoning models refuse sampling settings.
                    if let Some(obj) = body.as_object_mut() {
                        obj.remove("temperature");
                        obj.remove("top_p");
                    }
                }
            }
        }
        merge_options(&mut body, self.options.as_ref());
        merge_options(&mut body, request.options_for(&self.provider));
        let messages = ChatMessages {
            system: request.system.as_deref(),
            messages: &request.messages,
            replay_details: self.flavor == ChatFlavor::OpenRouter,
        };
        Body::new(body, "messages", messages)
    }
}

/// The `messages` of a body: the system prompt, then the history, each
/// message written as Chat Completions wants it (a tool message becomes one
/// `tool` message per result). Fields are declared in sorted order (see
/// [`crate::body`]).
pub(crate) struct ChatMessages<'a> {
    system: Option<&'a str>,
    messages: &'a [Message],
    /// OpenRouter: replay the `reasoning_details` kept in reasoning parts.
    replay_details: bool,
}

/// A message whose content is text.
#[derive(Serialize)]
struct Said<'a> {
    content: Cow<'a, str>,
    role: &'static str,
}

/// A user message with images: its content is a list of parts.
#[derive(Serialize)]
struct UserParts<'a> {
    content: Parts<'a>,
    role: &'static str,
}

struct Parts<'a>(&'a [ContentPart]);

#[derive(Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Text {
        text: &'a str,
        r#type: &'static str,
    },
    ImageUrl {
        image_url: Url<'a>,
        r#type: &'static str,
    },
    File {
        file: File<'a>,
        r#type: &'static str,
    },
    InputAudio {
        input_audio: InputAudio<'a>,
        r#type: &'static str,
    },
}

/// A file inline, as a data URL.
#[derive(Serialize)]
struct File<'a> {
    file_data: DataUrl<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
}

#[derive(Serialize)]
struct InputAudio<'a> {
    data: &'a str,
    format: &'static str,
}

#[derive(Serialize)]
struct Url<'a> {
    url: ImageUrl<'a>,
}

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for part in self.0 {
            match part {
                ContentPart::Text { text } => seq.serialize_element(&Part::Text { text, r#type: "text" })?,
                ContentPart::Image { image } => seq.serialize_element(&Part::ImageUrl {
                    image_url: Url { url: ImageUrl(image) },
                    r#type: "image_url",
                })?,
                // Refused beforehand when not inline (`media::openai_chat`).
                ContentPart::File { file, filename } => seq.serialize_element(&Part::File {
                    file: File {
                        file_data: DataUrl(file),
                        filename: filename.as_deref(),
                    },
                    r#type: "file",
                })?,
                ContentPart::Audio {
                    audio: FileSource::Base64 { media_type, data },
                } => seq.serialize_element(&Part::InputAudio {
                    input_audio: InputAudio {
                        data,
                        format: media::openai_audio_format(media_type).unwrap_or("wav"),
                    },
                    r#type: "input_audio",
                })?,
                _ => {}
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Assistant<'a> {
    /// `null` when the message has no text.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasoning_details: Vec<&'a Value>,
    role: &'static str,
    #[serde(skip_serializing_if = "Calls::is_empty")]
    tool_calls: Calls<'a>,
}

/// The tool calls of an assistant message.
struct Calls<'a>(&'a Message);

impl Calls<'_> {
    fn is_empty(&self) -> bool {
        self.0.tool_calls().next().is_none()
    }
}

#[derive(Serialize)]
struct Call<'a> {
    function: Function<'a>,
    id: &'a str,
    r#type: &'static str,
}

#[derive(Serialize)]
struct Function<'a> {
    arguments: JsonText<'a>,
    name: &'a str,
}

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for call in self.0.tool_calls() {
            seq.serialize_element(&Call {
                function: Function {
                    arguments: JsonText(&call.input),
                    name: &call.name,
                },
                id: &call.id,
                r#type: "function",
            })?;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    content: Cow<'a, str>,
    role: &'static str,
    tool_call_id: &'a str,
}

/// OpenRouter's `reasoning_details` kept in a message's reasoning parts.
fn reasoning_details(message: &Message) -> Vec<&Value> {
    message
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Reasoning(r) => r.provider_data.as_ref()?.get("reasoning_details")?.as_array(),
            _ => None,
        })
        .flatten()
        .collect()
}

impl Serialize for ChatMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        if let Some(system) = self.system {
            seq.serialize_element(&Said {
                content: Cow::Borrowed(system),
                role: "system",
            })?;
        }
        for message in self.messages {
            match message.role {
                Role::System => seq.serialize_element(&Said {
                    content: message_text(message),
                    role: "system",
                })?,
                Role::User => {
                    let has_media = message.content.iter().any(|p| p.placeholder().is_some());
                    if has_media {
                        seq.serialize_element(&UserParts {
                            content: Parts(&message.content),
                            role: "user",
                        })?;
                    } else {
                        seq.serialize_element(&Said {
                            content: message_text(message),
                            role: "user",
                        })?;
                    }
                }
                Role::Assistant => {
                    let text = message_text(message);
                    seq.serialize_element(&Assistant {
                        content: (!text.is_empty()).then_some(text),
                        reasoning_details: if self.replay_details {
                            reasoning_details(message)
                        } else {
                            Vec::new()
                        },
                        role: "assistant",
                        tool_calls: Calls(message),
                    })?;
                }
                Role::Tool => {
                    for part in &message.content {
                        if let ContentPart::ToolResult(result) = part {
                            seq.serialize_element(&ToolMessage {
                                content: result_text_with_placeholders(result),
                                role: "tool",
                                tool_call_id: &result.call_id,
                            })?;
                        }
                    }
                }
            }
        }
        seq.end()
    }
}

#[async_trait]
impl LanguageModel for OpenAiChatModel {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    /// OpenAI's models by id; OpenRouter maps reasoning for every model but
    /// structured output only for some (so `auto` uses the tool mode);
    /// another compatible server is not assumed to do either.
    fn capabilities(&self) -> ModelCapabilities {
        match self.flavor {
            ChatFlavor::OpenAi => capabilities::openai(&self.model),
            ChatFlavor::OpenRouter => ModelCapabilities::default().reasoning(true),
            ChatFlavor::Compatible => ModelCapabilities::default(),
        }
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let request = media::prepare(&request, self.provider(), media::openai_chat)?;
        let body = self.request_bytes(&request)?;
        let url = format!("{}/chat/completions", self.base);
        let bytes = self.transport.open(&url, body, &request).await?;
        Ok(drive(sse_frames(bytes), ChatDecoder::default()))
    }
}

/// Decoder of Chat Completions chunks.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    calls: CallAssembler,
    any_calls: bool,
    reasoning_open: bool,
    /// OpenRouter `reasoning_details` of the open reasoning block.
    details: Vec<Value>,
    finish: Option<FinishReason>,
    usage: Usage,
    done: bool,
}

impl ChatDecoder {
    fn close_reasoning(&mut self, out: &mut Vec<ModelEvent>) {
        if self.reasoning_open {
            self.reasoning_open = false;
            let details = std::mem::take(&mut self.details);
            let signature = details
                .iter()
                .rev()
                .find_map(|d| d.get("signature").and_then(Value::as_str))
                .map(str::to_owned);
            let provider_data = (!details.is_empty()).then(|| json!({"reasoning_details": details}));
            out.push(ModelEvent::ReasoningDone {
                signature,
                provider_data,
            });
        }
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        self.close_reasoning(out);
        self.calls.complete_all(out);
        let mut reason = self.finish.take().unwrap_or(FinishReason::Stop);
        if self.any_calls && reason == FinishReason::Stop {
            reason = FinishReason::ToolCalls;
        }
        out.push(ModelEvent::Finish {
            reason,
            usage: self.usage,
        });
        self.done = true;
    }
}

/// Add a streamed `reasoning_details` fragment: one with the index and type
/// of an earlier entry extends its text fields, any other is a new entry.
fn merge_detail(details: &mut Vec<Value>, fragment: &Value) {
    let same = |d: &&mut Value| {
        fragment.get("index").is_some()
            && d.get("index") == fragment.get("index")
            && d.get("type") == fragment.get("type")
    };
    let Some(existing) = details.iter_mut().find(|d| same(d)) else {
        details.push(fragment.clone());
        return;
    };
    let Some(fields) = fragment.as_object() else {
        return;
    };
    for (key, value) in fields {
        match (existing.get_mut(key), value) {
            (Some(Value::String(old)), Value::String(new))
                if matches!(key.as_str(), "text" | "summary" | "data") =>
            {
                old.push_str(new);
            }
            (_, Value::Null) => {}
            _ => existing[key] = value.clone(),
        }
    }
}

/// Usage from an OpenAI `usage` object, whose fields are named after
/// `input` and `output` (`prompt` / `completion` in Chat Completions,
/// `input` / `output` in Responses): `{input}_tokens`,
/// `{input}_tokens_details.cached_tokens`, `{output}_tokens_details.reasoning_tokens`.
pub(crate) fn openai_usage(u: &Value, input: &str, output: &str) -> Usage {
    let detail = |side: &str, field: &str| {
        u.pointer(&format!("/{side}_tokens_details/{field}"))
            .and_then(Value::as_u64)
    };
    Usage::default()
        .with_input(num(u, &format!("{input}_tokens")))
        .with_output(num(u, &format!("{output}_tokens")))
        .with_cached_input(detail(input, "cached_tokens"))
        .with_reasoning(detail(output, "reasoning_tokens"))
        .with_total(num(u, "total_tokens"))
}

impl Decoder for ChatDecoder {
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = frame.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| invalid(format!("unparseable chunk: {e}"), data))?;
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("stream error")
                .to_owned();
            let kind = err
                .get("type")
                .or_else(|| err.get("code"))
                .map(|v| v.to_string())
                .unwrap_or_default();
            return Err(stream_error(&kind, message));
        }
        let usage = chunk
            .get("usage")
            .filter(|u| u.is_object())
            .or_else(|| chunk.pointer("/x_groq/usage"));
        if let Some(u) = usage {
            self.usage = openai_usage(u, "prompt", "completion");
            out.push(ModelEvent::Usage { usage: self.usage });
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            let reasoning = ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|k| delta.get(*k).and_then(Value::as_str))
                .filter(|s| !s.is_empty());
            for detail in delta
                .get("reasoning_details")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                merge_detail(&mut self.details, detail);
                self.reasoning_open = true;
            }
            if let Some(text) = reasoning {
                self.reasoning_open = true;
                out.push(ModelEvent::ReasoningDelta {
                    text: text.to_owned(),
                });
            }
            if let Some(text) = delta
                .get("content")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                self.close_reasoning(out);
                out.push(ModelEvent::TextDelta {
                    text: text.to_owned(),
                });
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                self.close_reasoning(out);
                for call in calls {
                    let pos = self.calls.route(
                        call.get("index").and_then(Value::as_u64),
                        call.get("id").and_then(Value::as_str),
                    );
                    self.any_calls = true;
                    let function = call.get("function");
                    let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
                    // Some servers send the arguments as a JSON object rather than text.
                    let args = match function.and_then(|f| f.get("arguments")) {
                        Some(Value::String(s)) => Some(s.clone()),
                        Some(Value::Null) | None => None,
                        Some(other) => Some(other.to_string()),
                    };
                    self.calls.update(pos, name, args.as_deref(), out);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
            self.close_reasoning(out);
            self.calls.complete_all(out);
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.finish.is_some() {
            self.finish(out);
            Ok(())
        } else {
            Err(truncated("[DONE] or a finish_reason"))
        }
    }
}
