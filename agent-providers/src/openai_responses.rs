//! OpenAI Responses (`POST {base}/responses`, typed SSE events), stateless:
//! `store: false` with encrypted reasoning returned and replayed.

use std::borrow::Cow;
use std::collections::HashMap;

use async_trait::async_trait;
use bytes::Bytes;
use loopwright_types::{
    CompactionItem, ContentPart, FileSource, FinishReason, LanguageModel, Message, ModelCapabilities,
    ModelError, ModelEvent, ModelRequest, ModelStream, Role, ToolChoice, ToolOutputPart, ToolResult,
};
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
use crate::openai_chat::{OPENAI_BASE_URL, openai_usage};
use crate::settings::{ProviderSettings, settings_methods};
use crate::sse::{Frame, sse_frames};
use crate::tools::{PendingCall, complete, merge_options, object_schema};

/// A model behind the OpenAI Responses API.
#[derive(Debug, Clone)]
pub struct OpenAiResponsesModel {
    model: String,
    base: String,
    transport: Transport,
    /// Merged into every request body.
    options: Option<Value>,
}

/// Builder for [`OpenAiResponsesModel`].
#[derive(Debug, Clone)]
pub struct OpenAiResponsesBuilder {
    pub(crate) model: String,
    settings: ProviderSettings,
}

impl OpenAiResponsesModel {
    /// A model (`gpt-5`, `o4-mini`, ...) on the Responses API.
    pub fn builder(model: impl Into<String>) -> OpenAiResponsesBuilder {
        OpenAiResponsesBuilder {
            model: model.into(),
            settings: ProviderSettings::new(OPENAI_BASE_URL),
        }
    }
}

impl OpenAiResponsesBuilder {
    settings_methods!();

    /// Build the model; fails on a malformed header.
    pub fn build(self) -> Result<OpenAiResponsesModel, ModelError> {
        let auth = match &self.settings.api_key {
            Some(key) => vec![("authorization".to_owned(), format!("Bearer {key}"))],
            None => Vec::new(),
        };
        Ok(OpenAiResponsesModel {
            options: self.settings.body_options.clone(),
            transport: self.settings.transport(auth)?,
            base: self.settings.base().to_owned(),
            model: self.model,
        })
    }
}

/// The `input` of a body: the history as Responses items (a message may
/// become several). Fields are declared in sorted order (see [`crate::body`]).
pub(crate) struct Items<'a>(&'a [Message]);

#[derive(Serialize)]
struct Said<C> {
    content: C,
    role: &'static str,
}

/// A part of a message's content (`input_text`, `input_image`,
/// `input_file`, `output_text`), also of a tool's output.
#[derive(Serialize)]
#[serde(untagged)]
enum Piece<'a> {
    Text {
        text: Cow<'a, str>,
        r#type: &'static str,
    },
    Image {
        image_url: ImageUrl<'a>,
        r#type: &'static str,
    },
    FileData {
        file_data: DataUrl<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
        r#type: &'static str,
    },
    FileUrl {
        file_url: &'a str,
        r#type: &'static str,
    },
}

impl<'a> Piece<'a> {
    fn input_text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            r#type: "input_text",
        }
    }

    fn file(file: &'a FileSource, filename: Option<&'a str>) -> Self {
        match file {
            FileSource::Url { url, .. } => Self::FileUrl {
                file_url: url,
                r#type: "input_file",
            },
            _ => Self::FileData {
                file_data: DataUrl(file),
                filename,
                r#type: "input_file",
            },
        }
    }
}

/// The input parts of a user message.
struct UserPieces<'a>(&'a Message);

impl Serialize for UserPieces<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for part in &self.0.content {
            match part {
                ContentPart::Text { text } => seq.serialize_element(&Piece::input_text(text.as_str()))?,
                ContentPart::Image { image } => seq.serialize_element(&Piece::Image {
                    image_url: ImageUrl(image),
                    r#type: "input_image",
                })?,
                ContentPart::File { file, filename } => {
                    seq.serialize_element(&Piece::file(file, filename.as_deref()))?;
                }
                _ => {}
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Reasoning {
        encrypted_content: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a Value>,
        summary: Vec<Summary<'a>>,
        r#type: &'static str,
    },
    FunctionCall {
        arguments: JsonText<'a>,
        call_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a Value>,
        name: &'a str,
        r#type: &'static str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
        r#type: &'static str,
    },
}

/// A tool's output: its text, or (with images or files) its parts as
/// `input_text`, `input_image` and `input_file` items; audio as its
/// placeholder, tool references left out.
enum Output<'a> {
    Text(Cow<'a, str>),
    Parts(&'a [ToolOutputPart]),
}

impl<'a> Output<'a> {
    fn of(result: &'a ToolResult) -> Self {
        let native = result
            .parts
            .iter()
            .any(|p| matches!(p, ToolOutputPart::Image { .. } | ToolOutputPart::File { .. }));
        if native {
            Self::Parts(&result.parts)
        } else {
            Self::Text(result_text_with_placeholders(result))
        }
    }
}

impl Serialize for Output<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let parts = match self {
            Self::Text(text) => return serializer.serialize_str(text),
            Self::Parts(parts) => parts,
        };
        let mut seq = serializer.serialize_seq(None)?;
        for part in parts.iter() {
            match part {
                ToolOutputPart::Text { text } => seq.serialize_element(&Piece::input_text(text.as_str()))?,
                ToolOutputPart::Json { value } => {
                    seq.serialize_element(&Piece::input_text(value.to_string()))?
                }
                ToolOutputPart::Image { image } => seq.serialize_element(&Piece::Image {
                    image_url: ImageUrl(image),
                    r#type: "input_image",
                })?,
                ToolOutputPart::File { file, filename } => {
                    seq.serialize_element(&Piece::file(file, filename.as_deref()))?;
                }
                ToolOutputPart::ToolReference { .. } => {}
                other => {
                    if let Some(text) = other.placeholder() {
                        seq.serialize_element(&Piece::input_text(text))?;
                    }
                }
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Summary<'a> {
    text: &'a str,
    r#type: &'static str,
}

/// The provider name of this API (its compaction items carry it).
const PROVIDER: &str = "openai";

impl Serialize for Items<'_> {
    /// From the latest compaction item on (it carries what came before),
    /// with the system messages before it.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let start = self
            .0
            .iter()
            .rposition(|m| {
                m.content
                    .iter()
                    .any(|p| matches!(p, ContentPart::Compaction(item) if item.provider == PROVIDER))
            })
            .unwrap_or(0);
        let kept = self.0[..start]
            .iter()
            .filter(|m| m.role == Role::System)
            .chain(&self.0[start..]);
        for message in kept {
            match message.role {
                Role::System => seq.serialize_element(&Said {
                    content: message_text(message),
                    role: "system",
                })?,
                Role::User => seq.serialize_element(&Said {
                    content: UserPieces(message),
                    role: "user",
                })?,
                Role::Assistant => {
                    for part in &message.content {
                        match part {
                            ContentPart::Reasoning(r) => {
                                // Only OpenAI's own reasoning (encrypted content) can go back.
                                let data = r.provider_data.as_ref();
                                if let Some(encrypted) = data.and_then(|d| d.get("encrypted_content")) {
                                    let summary = if r.text.is_empty() {
                                        Vec::new()
                                    } else {
                                        vec![Summary {
                                            text: &r.text,
                                            r#type: "summary_text",
                                        }]
                                    };
                                    seq.serialize_element(&Item::Reasoning {
                                        encrypted_content: encrypted,
                                        id: data.and_then(|d| d.get("id")),
                                        summary,
                                        r#type: "reasoning",
                                    })?;
                                }
                            }
                            ContentPart::Text { text } if !text.is_empty() => {
                                seq.serialize_element(&Said {
                                    content: [Piece::Text {
                                        text: Cow::Borrowed(text),
                                        r#type: "output_text",
                                    }],
                                    role: "assistant",
                                })?;
                            }
                            ContentPart::Compaction(item) if item.provider == PROVIDER => {
                                seq.serialize_element(&item.data)?;
                            }
                            ContentPart::ToolCall(c) => {
                                // The item id keeps a replayed reasoning item paired with its call.
                                let id = c.provider_data.as_ref().and_then(|d| d.get("id"));
                                seq.serialize_element(&Item::FunctionCall {
                                    arguments: JsonText(&c.input),
                                    call_id: &c.id,
                                    id: id.filter(|v| v.is_string()),
                                    name: &c.name,
                                    r#type: "function_call",
                                })?;
                            }
                            _ => {}
                        }
                    }
                }
                Role::Tool => {
                    for part in &message.content {
                        if let ContentPart::ToolResult(r) = part {
                            seq.serialize_element(&Item::FunctionCallOutput {
                                call_id: &r.call_id,
                                output: Output::of(r),
                                r#type: "function_call_output",
                            })?;
                        }
                    }
                }
            }
        }
        seq.end()
    }
}

impl OpenAiResponsesModel {
    /// The JSON body for `request` (public for inspection and tests).
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.body(request).to_value()
    }

    /// The body as posted: [`Self::request_body`] serialised, written
    /// straight from the history (public for inspection and benches).
    ///
    /// ```
    /// use loopwright_types::{Message, ModelRequest};
    /// use loopwright_providers::OpenAiResponsesModel;
    ///
    /// let model = OpenAiResponsesModel::builder("gpt-5").build()?;
    /// let request = ModelRequest::new(vec![Message::user("hi")]);
    /// let bytes = model.request_bytes(&request)?;
    /// let posted: serde_json::Value = serde_json::from_slice(&bytes)?;
    /// assert_eq!(posted, model.request_body(&request));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_bytes(&self, request: &ModelRequest) -> Result<Bytes, ModelError> {
        self.body(request).to_bytes(&self.transport.body_size)
    }

    /// The body, its input written straight from the history.
    pub(crate) fn body<'a>(&self, request: &'a ModelRequest) -> Body<Items<'a>> {
        let mut body = json!({
            "model": self.model,
            "stream": true,
            "store": false,
        });
        // Stateless: reasoning comes back encrypted to be replayed. Models
        // that do not reason refuse to be asked for it.
        if self.capabilities().reasoning {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        if let Some(system) = &request.system {
            body["instructions"] = json!(system);
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut tool = json!({"type": "function", "name": t.name, "description": t.description,
                        "parameters": object_schema(t), "strict": false});
                    merge_options(&mut tool, t.options_for("openai"));
                    tool
                })
                .collect();
            body["tools"] = Value::Array(tools);
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool { name } => json!({"type": "function", "name": name}),
                // A choice added to loopwright-core later: let the model decide.
                _ => json!("auto"),
            };
            if let Some(parallel) = request.parallel_tool_calls {
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
            body["max_output_tokens"] = json!(n);
        }
        if let Some((name, schema, strict)) = request.response_format.as_ref().and_then(json_schema_format) {
            body["text"] =
                json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}});
        }
        if let Some(reasoning) = &request.reasoning
            && self.capabilities().reasoning
        {
            body["reasoning"] =
                json!({"effort": openai_effort(&self.model, reasoning.effort), "summary": "auto"});
            // Reasoning models refuse sampling settings.
            if let Some(obj) = body.as_object_mut() {
                obj.remove("temperature");
                obj.remove("top_p");
            }
        }
        if let Some(tokens) = request.compact_above {
            body["context_management"] = json!([{"type": "compaction", "compact_threshold": tokens}]);
        }
        merge_options(&mut body, self.options.as_ref());
        merge_options(&mut body, request.options_for("openai"));
        Body::new(body, "input", Items(&request.messages))
    }
}

#[async_trait]
impl LanguageModel for OpenAiResponsesModel {
    fn provider(&self) -> &str {
        "openai"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ModelCapabilities {
        capabilities::openai(&self.model)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let request = media::prepare(&request, self.provider(), media::openai_responses)?;
        let body = self.request_bytes(&request)?;
        let url = format!("{}/responses", self.base);
        let bytes = self.transport.open(&url, body, &request).await?;
        Ok(drive(sse_frames(bytes), ResponsesDecoder::default()))
    }
}

/// Decoder of Responses stream events.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// Function calls by output item id.
    calls: HashMap<String, PendingCall>,
    any_calls: bool,
    done: bool,
}

/// The error for a failed response or an error event.
fn response_error(err: &Value) -> ModelError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("response failed")
        .to_owned();
    let code = err
        .get("code")
        .or_else(|| err.get("type"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match code {
        "insufficient_quota" => ModelError::quota_exceeded(message),
        "rate_limit_exceeded" => ModelError::rate_limited(message, None),
        other => stream_error(other, message),
    }
}

impl ResponsesDecoder {
    fn item_added(&mut self, item: &Value, out: &mut Vec<ModelEvent>) {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return;
        }
        let key = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let call = PendingCall {
            id: item
                .get("call_id")
                .and_then(Value::as_str)
                .unwrap_or(&key)
                .to_owned(),
            name: item
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            args: item
                .get("arguments")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            started: true,
            provider_data: (!key.is_empty()).then(|| json!({"id": key})),
            ..PendingCall::default()
        };
        out.push(ModelEvent::ToolCallStart {
            id: call.id.clone(),
            name: call.name.clone(),
        });
        self.any_calls = true;
        self.calls.insert(key, call);
    }

    fn item_done(&mut self, item: &Value, out: &mut Vec<ModelEvent>) {
        let key = item.get("id").and_then(Value::as_str).unwrap_or_default();
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                if !self.calls.contains_key(key) {
                    self.item_added(item, out);
                }
                if let Some(mut call) = self.calls.remove(key) {
                    if let Some(args) = item
                        .get("arguments")
                        .and_then(Value::as_str)
                        .filter(|a| !a.is_empty())
                    {
                        call.args = args.to_owned();
                    }
                    out.push(complete(call));
                }
            }
            Some("compaction") => out.push(ModelEvent::Compacted {
                item: Some(CompactionItem {
                    provider: PROVIDER.to_owned(),
                    data: item.clone(),
                }),
                cleared_tokens: None,
            }),
            Some("reasoning") => {
                let mut data = json!({"id": key});
                if let Some(e) = item.get("encrypted_content").filter(|e| !e.is_null()) {
                    data["encrypted_content"] = e.clone();
                }
                out.push(ModelEvent::ReasoningDone {
                    signature: None,
                    provider_data: Some(data),
                });
            }
            _ => {}
        }
    }

    fn finish(&mut self, response: &Value, out: &mut Vec<ModelEvent>) {
        let usage = response
            .get("usage")
            .map(|u| openai_usage(u, "input", "output"))
            .unwrap_or_default();
        if !usage.is_empty() {
            out.push(ModelEvent::Usage { usage });
        }
        let reason = match response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if self.any_calls => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        out.push(ModelEvent::Finish { reason, usage });
        self.done = true;
    }
}

/// A `response.*.delta` event, the bulk of every stream: read straight into
/// these fields, without building a JSON tree.
#[derive(Debug, serde::Deserialize)]
struct DeltaEvent {
    #[serde(default)]
    item_id: String,
    #[serde(default)]
    delta: String,
}

impl ResponsesDecoder {
    /// A delta event named `kind`.
    fn delta(
        &mut self,
        kind: &str,
        event: DeltaEvent,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let DeltaEvent { item_id, delta } = event;
        match kind {
            "response.output_text.delta" | "response.refusal.delta" if !delta.is_empty() => {
                out.push(ModelEvent::TextDelta { text: delta });
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta"
                if !delta.is_empty() =>
            {
                out.push(ModelEvent::ReasoningDelta { text: delta });
            }
            "response.function_call_arguments.delta" => match self.calls.get_mut(&item_id) {
                Some(call) => {
                    call.args.push_str(&delta);
                    out.push(ModelEvent::ToolCallDelta {
                        id: call.id.clone(),
                        delta,
                    });
                }
                None => return Err(invalid("arguments for an unknown function call", data)),
            },
            _ => {}
        }
        Ok(())
    }
}

/// Events read as [`DeltaEvent`]s.
const DELTA_EVENTS: [&str; 5] = [
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
];

impl Decoder for ResponsesDecoder {
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = frame.data.trim();
        if let Some(kind) = frame.event.as_deref().filter(|k| DELTA_EVENTS.contains(k)) {
            let event: DeltaEvent =
                serde_json::from_str(data).map_err(|e| invalid(format!("unparseable event: {e}"), data))?;
            return self.delta(kind, event, data, out);
        }
        let event: Value =
            serde_json::from_str(data).map_err(|e| invalid(format!("unparseable event: {e}"), data))?;
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .or(frame.event.as_deref())
            .unwrap_or_default();
        match kind {
            "response.output_item.added" => self.item_added(event.get("item").unwrap_or(&Value::Null), out),
            "response.output_item.done" => self.item_done(event.get("item").unwrap_or(&Value::Null), out),
            // Without an `event:` name (a proxy dropped it): the same, from the tree.
            delta if DELTA_EVENTS.contains(&delta) => {
                let kind = delta.to_owned();
                let parsed: DeltaEvent = serde_json::from_value(event)
                    .map_err(|e| invalid(format!("unparseable event: {e}"), data))?;
                return self.delta(&kind, parsed, data, out);
            }
            "response.function_call_arguments.done" => {
                let key = event.get("item_id").and_then(Value::as_str).unwrap_or_default();
                if let (Some(call), Some(args)) = (
                    self.calls.get_mut(key),
                    event.get("arguments").and_then(Value::as_str),
                ) {
                    call.args = args.to_owned();
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finish(event.get("response").unwrap_or(&Value::Null), out);
            }
            "response.failed" => {
                return Err(response_error(
                    event.pointer("/response/error").unwrap_or(&Value::Null),
                ));
            }
            "error" => return Err(response_error(event.get("error").unwrap_or(&event))),
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        Err(truncated("response.completed"))
    }
}
