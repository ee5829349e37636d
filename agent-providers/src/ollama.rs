//! Ollama's native chat API (`POST {root}/api/chat`, newline-delimited JSON).

use std::borrow::Cow;

use async_trait::async_trait;
use bytes::Bytes;
use loopwright_types::{
    ContentPart, FinishReason, ImageSource, LanguageModel, Message, ModelCapabilities, ModelError,
    ModelEvent, ModelRequest, ModelStream, ReasoningEffort, Role, ToolChoice, Usage,
};
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::body::{Body, call_of, message_text, result_text_with_placeholders};
use crate::capabilities;
use crate::driver::{Decoder, drive, truncated};
use crate::error::invalid;
use crate::features::json_schema_raw;
use crate::http::Transport;
use crate::media;
use crate::settings::{ProviderSettings, settings_methods};
use crate::sse::{Frame, ndjson_frames};
use crate::tools::{PendingCall, complete, finish_reason, merge_options, num, object_schema};

/// Ollama's default address.
pub const OLLAMA_BASE_URL: &str = "http://localhost:11434";

/// A model served by Ollama.
#[derive(Debug, Clone)]
pub struct OllamaModel {
    model: String,
    api: String,
    transport: Transport,
    /// Merged into every request body.
    options: Option<Value>,
}

/// Builder for [`OllamaModel`].
#[derive(Debug, Clone)]
pub struct OllamaBuilder {
    pub(crate) model: String,
    settings: ProviderSettings,
}

impl OllamaModel {
    /// A model (`llama3.2`, `qwen3:8b`, ...).
    pub fn builder(model: impl Into<String>) -> OllamaBuilder {
        OllamaBuilder {
            model: model.into(),
            settings: ProviderSettings::new(OLLAMA_BASE_URL),
        }
    }
}

/// The native API root for a configured base URL: a scheme is added when
/// missing (`OLLAMA_HOST=127.0.0.1:11434`), a trailing `/v1` (the
/// OpenAI-compatible path) is dropped and `/api` appended when absent.
///
/// ```
/// use loopwright_providers::ollama_api_root;
/// assert_eq!(ollama_api_root("http://h:11434/v1/"), "http://h:11434/api");
/// assert_eq!(ollama_api_root("127.0.0.1:11434"), "http://127.0.0.1:11434/api");
/// assert_eq!(ollama_api_root("https://x/ollama/api"), "https://x/ollama/api");
/// ```
pub fn ollama_api_root(base: &str) -> String {
    let mut root = base.trim().trim_end_matches('/').to_owned();
    if !root.contains("://") {
        root = format!("http://{root}");
    }
    if let Some(stripped) = root.strip_suffix("/v1") {
        root = stripped.to_owned();
    }
    if !root.ends_with("/api") {
        root.push_str("/api");
    }
    root
}

impl OllamaBuilder {
    settings_methods!();

    /// Build the model; fails on a malformed header.
    pub fn build(self) -> Result<OllamaModel, ModelError> {
        let auth = match &self.settings.api_key {
            Some(key) => vec![("authorization".to_owned(), format!("Bearer {key}"))],
            None => Vec::new(),
        };
        Ok(OllamaModel {
            options: self.settings.body_options.clone(),
            transport: self.settings.transport(auth)?,
            api: ollama_api_root(&self.settings.base_url),
            model: self.model,
        })
    }
}

/// The `messages` of a body: the system prompt, then the history (a tool
/// message becomes one `tool` message per result, named after its call).
/// Fields are declared in sorted order (see [`crate::body`]).
pub(crate) struct OllamaMessages<'a> {
    system: Option<&'a str>,
    messages: &'a [Message],
}

#[derive(Serialize)]
struct Said<'a> {
    content: Cow<'a, str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<&'a str>,
    role: &'static str,
    #[serde(skip_serializing_if = "is_empty")]
    thinking: Cow<'a, str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
}

#[derive(Serialize)]
struct Call<'a> {
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    arguments: &'a Value,
    name: &'a str,
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    content: Cow<'a, str>,
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
}

impl<'a> Said<'a> {
    fn text(role: &'static str, content: Cow<'a, str>) -> Self {
        Self {
            content,
            images: Vec::new(),
            role,
            thinking: Cow::Borrowed(""),
            tool_calls: Vec::new(),
        }
    }
}

#[allow(clippy::ptr_arg)] // serde's skip_serializing_if passes the field's own type
fn is_empty(text: &Cow<'_, str>) -> bool {
    text.is_empty()
}

/// The reasoning texts of a message, concatenated (borrowed when one).
fn thinking(message: &Message) -> Cow<'_, str> {
    let mut texts = message.content.iter().filter_map(|p| match p {
        ContentPart::Reasoning(r) => Some(r.text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        (Some(a), Some(b)) => Cow::Owned([a, b].into_iter().chain(texts).collect()),
    }
}

impl Serialize for OllamaMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        if let Some(system) = self.system {
            seq.serialize_element(&Said::text("system", Cow::Borrowed(system)))?;
        }
        for (at, message) in self.messages.iter().enumerate() {
            match message.role {
                Role::System => seq.serialize_element(&Said::text("system", message_text(message)))?,
                Role::User | Role::Assistant => {
                    let role = if message.role == Role::User {
                        "user"
                    } else {
                        "assistant"
                    };
                    let images = message
                        .content
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::Image {
                                image: ImageSource::Base64 { data, .. },
                            } => Some(data.as_str()),
                            _ => None,
                        })
                        .collect();
                    let tool_calls = message
                        .tool_calls()
                        .map(|c| Call {
                            function: Function {
                                arguments: &c.input,
                                name: &c.name,
                            },
                        })
                        .collect();
                    seq.serialize_element(&Said {
                        content: message_text(message),
                        images,
                        role,
                        thinking: thinking(message),
                        tool_calls,
                    })?;
                }
                Role::Tool => {
                    for part in &message.content {
                        if let ContentPart::ToolResult(r) = part {
                            seq.serialize_element(&ToolMessage {
                                content: result_text_with_placeholders(r),
                                role: "tool",
                                tool_name: call_of(self.messages, at, &r.call_id).map(|c| c.name.as_str()),
                            })?;
                        }
                    }
                }
            }
        }
        seq.end()
    }
}

impl OllamaModel {
    /// The JSON body for `request` (public for inspection and tests).
    /// Ollama has no tool choice: `None` sends no tools; `Required` and a
    /// named tool are sent as the plain tool list.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.body(request).to_value()
    }

    /// The body as posted: [`Self::request_body`] serialised, written
    /// straight from the history (public for inspection and benches).
    ///
    /// ```
    /// use loopwright_types::{Message, ModelRequest};
    /// use loopwright_providers::OllamaModel;
    ///
    /// let model = OllamaModel::builder("qwen3").build()?;
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
    pub(crate) fn body<'a>(&self, request: &'a ModelRequest) -> Body<OllamaMessages<'a>> {
        let mut body = json!({"model": self.model, "stream": true});
        if !request.tools.is_empty() && request.tool_choice != ToolChoice::None {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut function =
                        json!({"name": t.name, "description": t.description, "parameters": object_schema(t)});
                    merge_options(&mut function, t.options_for("ollama"));
                    json!({"type": "function", "function": function})
                })
                .collect();
            body["tools"] = Value::Array(tools);
        }
        let mut options = Map::new();
        if let Some(t) = request.temperature {
            options.insert("temperature".into(), json!(t));
        }
        if let Some(p) = request.top_p {
            options.insert("top_p".into(), json!(p));
        }
        if let Some(n) = request.max_output_tokens {
            options.insert("num_predict".into(), json!(n));
        }
        if !options.is_empty() {
            body["options"] = Value::Object(options);
        }
        // Ollama's grammar would forbid tool calls: the schema goes only
        // on a request that offers no tools (a concluding call, or a run
        // without tools).
        if body.get("tools").is_none()
            && let Some(schema) = request.response_format.as_ref().and_then(json_schema_raw)
        {
            body["format"] = schema;
        }
        if let Some(reasoning) = &request.reasoning
            && self.capabilities().reasoning
        {
            // gpt-oss takes a level; the other thinking models on or off.
            body["think"] = match (
                self.model.to_ascii_lowercase().starts_with("gpt-oss"),
                reasoning.effort,
            ) {
                (_, ReasoningEffort::None) => json!(false),
                (true, ReasoningEffort::Minimal) => json!("low"),
                (true, effort) => json!(effort.as_str()),
                (false, _) => json!(true),
            };
        }
        merge_options(&mut body, self.options.as_ref());
        merge_options(&mut body, request.options_for("ollama"));
        let messages = OllamaMessages {
            system: request.system.as_deref(),
            messages: &request.messages,
        };
        Body::new(body, "messages", messages)
    }
}

#[async_trait]
impl LanguageModel for OllamaModel {
    fn provider(&self) -> &str {
        "ollama"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ModelCapabilities {
        capabilities::ollama(&self.model)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let request = media::prepare(&request, self.provider(), media::ollama)?;
        let body = self.request_bytes(&request)?;
        let url = format!("{}/chat", self.api);
        let bytes = self.transport.open(&url, body, &request).await?;
        Ok(drive(ndjson_frames(bytes), OllamaDecoder::default()))
    }
}

/// Decoder of Ollama chat lines.
#[derive(Debug, Default)]
pub(crate) struct OllamaDecoder {
    reasoning_open: bool,
    calls: Vec<PendingCall>,
    calls_seen: usize,
    done: bool,
}

impl OllamaDecoder {
    fn close_reasoning(&mut self, out: &mut Vec<ModelEvent>) {
        if self.reasoning_open {
            self.reasoning_open = false;
            out.push(ModelEvent::ReasoningDone {
                signature: None,
                provider_data: None,
            });
        }
    }
}

impl Decoder for OllamaDecoder {
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = frame.data.trim();
        let line: Value =
            serde_json::from_str(data).map_err(|e| invalid(format!("unparseable line: {e}"), data))?;
        if let Some(err) = line.get("error") {
            let message = err.as_str().map(str::to_owned).unwrap_or_else(|| err.to_string());
            return Err(crate::error::stream_error("", message));
        }
        if let Some(message) = line.get("message") {
            if let Some(t) = message
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.reasoning_open = true;
                out.push(ModelEvent::ReasoningDelta { text: t.to_owned() });
            }
            if let Some(t) = message
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.close_reasoning(out);
                out.push(ModelEvent::TextDelta { text: t.to_owned() });
            }
            // Every entry is a whole call, even when Ollama reuses index 0.
            for call in message
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.close_reasoning(out);
                let function = call.get("function").unwrap_or(&Value::Null);
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("ollama_call_{}", self.calls_seen));
                self.calls_seen += 1;
                let args = match function.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(v) => v.to_string(),
                };
                let name = function
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                out.push(ModelEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                if !args.is_empty() {
                    out.push(ModelEvent::ToolCallDelta {
                        id: id.clone(),
                        delta: args.clone(),
                    });
                }
                self.calls.push(PendingCall {
                    id,
                    name,
                    args,
                    started: true,
                    ..PendingCall::default()
                });
            }
        }
        if line.get("done").and_then(Value::as_bool) == Some(true) {
            self.close_reasoning(out);
            let any_calls = !self.calls.is_empty();
            for call in self.calls.drain(..) {
                out.push(complete(call));
            }
            let input = num(&line, "prompt_eval_count");
            let output = num(&line, "eval_count");
            let usage = Usage::default().with_input(input).with_output(output);
            if !usage.is_empty() {
                out.push(ModelEvent::Usage { usage });
            }
            let mut reason = line
                .get("done_reason")
                .and_then(Value::as_str)
                .map_or(FinishReason::Stop, finish_reason);
            if any_calls && reason == FinishReason::Stop {
                reason = FinishReason::ToolCalls;
            }
            out.push(ModelEvent::Finish { reason, usage });
            self.done = true;
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        Err(truncated("done: true"))
    }
}
