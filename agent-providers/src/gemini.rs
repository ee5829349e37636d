//! Google Gemini (`POST {base}/models/{model}:streamGenerateContent?alt=sse`).

use std::borrow::Cow;

use async_trait::async_trait;
use bytes::Bytes;
use loopwright_types::{
    ContentPart, FileSource, FinishReason, ImageSource, LanguageModel, Message, ModelCapabilities,
    ModelError, ModelEvent, ModelRequest, ModelStream, Role, ToolChoice, ToolOutputPart, Usage,
};
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::body::{Body, call_of, result_text, system_texts};
use crate::capabilities;
use crate::driver::{Decoder, drive, truncated};
use crate::error::{invalid, stream_error};
use crate::features::{gemini_thinking, json_schema_raw};
use crate::gemini_schema::gemini_parameters;
use crate::http::Transport;
use crate::media;
use crate::settings::{ProviderSettings, settings_methods};
use crate::sse::{Frame, sse_frames};
use crate::tools::{PendingCall, complete, finish_reason, merge_options, num};

/// Gemini API root.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A Gemini model.
#[derive(Debug, Clone)]
pub struct GeminiModel {
    model: String,
    base: String,
    transport: Transport,
    /// Merged into every request body.
    options: Option<Value>,
}

/// Builder for [`GeminiModel`].
#[derive(Debug, Clone)]
pub struct GeminiBuilder {
    pub(crate) model: String,
    settings: ProviderSettings,
}

impl GeminiModel {
    /// A Gemini model (`gemini-2.5-flash`, ...).
    pub fn builder(model: impl Into<String>) -> GeminiBuilder {
        GeminiBuilder {
            model: model.into(),
            settings: ProviderSettings::new(GEMINI_BASE_URL),
        }
    }
}

impl GeminiBuilder {
    settings_methods!();

    /// Build the model; fails on a malformed header.
    pub fn build(self) -> Result<GeminiModel, ModelError> {
        let auth = match &self.settings.api_key {
            Some(key) => vec![("x-goog-api-key".to_owned(), key.clone())],
            None => Vec::new(),
        };
        let model = self.model.trim_start_matches("models/").to_owned();
        Ok(GeminiModel {
            options: self.settings.body_options.clone(),
            transport: self.settings.transport(auth)?,
            base: self.settings.base().to_owned(),
            model,
        })
    }
}

/// The `contents` of a body: the history as alternating `user` / `model`
/// turns (system messages go to the system instruction, a message with
/// no parts is left out, consecutive messages of one role share a turn).
/// Fields are declared in sorted order (see [`crate::body`]).
pub(crate) struct Contents<'a>(&'a [Message]);

/// The role a message's turn has, `None` for a system message.
fn turn_role(message: &Message) -> Option<&'static str> {
    match message.role {
        Role::System => None,
        Role::User | Role::Tool => Some("user"),
        Role::Assistant => Some("model"),
    }
}

/// Whether a message sends any part (as [`push_parts`] would).
fn has_parts(message: &Message) -> bool {
    message.content.iter().any(|part| match part {
        ContentPart::Text { text } => !text.is_empty(),
        ContentPart::Reasoning(r) => r.signature.is_some(),
        ContentPart::Image { .. }
        | ContentPart::File { .. }
        | ContentPart::Audio { .. }
        | ContentPart::ToolCall(_)
        | ContentPart::ToolResult(_) => true,
        _ => false,
    })
}

impl Serialize for Contents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let messages = self.0;
        // One buffer of borrowed parts for every turn.
        let mut parts = Vec::new();
        let mut start = 0;
        while start < messages.len() {
            let Some(role) = turn_role(&messages[start]).filter(|_| has_parts(&messages[start])) else {
                start += 1;
                continue;
            };
            parts.clear();
            let mut end = start;
            while end < messages.len() {
                let m = &messages[end];
                match turn_role(m) {
                    Some(r) if r != role && has_parts(m) => break,
                    Some(_) => push_parts(&mut parts, messages, end),
                    None => {}
                }
                end += 1;
            }
            seq.serialize_element(&Content { parts: &parts, role })?;
            start = end;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Content<'p, 'a> {
    parts: &'p [Part<'a>],
    role: &'static str,
}

/// One part, with the thought signature that goes back on it
/// (`thoughtSignature` sorts after every other key of a part).
#[derive(Serialize)]
struct Part<'a> {
    #[serde(flatten)]
    kind: Kind<'a>,
    #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
    thought_signature: Option<Signature<'a>>,
}

impl<'a> From<Kind<'a>> for Part<'a> {
    fn from(kind: Kind<'a>) -> Self {
        Self {
            kind,
            thought_signature: None,
        }
    }
}

/// A signature: reasoning's text, or what a call's provider data held.
#[derive(Serialize)]
#[serde(untagged)]
enum Signature<'a> {
    Text(&'a str),
    Json(&'a Value),
}

#[derive(Serialize)]
#[serde(untagged)]
enum Kind<'a> {
    Text {
        text: &'a str,
    },
    Thought {
        text: &'a str,
        thought: bool,
    },
    InlineData {
        #[serde(rename = "inlineData")]
        inline_data: InlineData<'a>,
    },
    FileData {
        #[serde(rename = "fileData")]
        file_data: FileData<'a>,
    },
    FunctionCall {
        #[serde(rename = "functionCall")]
        function_call: FunctionCall<'a>,
    },
    FunctionResponse {
        #[serde(rename = "functionResponse")]
        function_response: FunctionResponse<'a>,
    },
}

#[derive(Serialize)]
struct InlineData<'a> {
    data: &'a str,
    #[serde(rename = "mimeType")]
    mime_type: &'a str,
}

#[derive(Serialize)]
struct FileData<'a> {
    #[serde(rename = "fileUri")]
    file_uri: &'a str,
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    args: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    name: &'a str,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: Response<'a>,
}

/// `{"content": ...}`, or `{"error": ...}` for a failed call.
struct Response<'a> {
    is_error: bool,
    value: ResponseValue<'a>,
}

impl Serialize for Response<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        let key = if self.is_error { "error" } else { "content" };
        map.serialize_entry(key, &self.value)?;
        map.end()
    }
}

/// A result that is one JSON value goes as that value, any other as text.
#[derive(Serialize)]
#[serde(untagged)]
enum ResponseValue<'a> {
    Json(&'a Value),
    Text(Cow<'a, str>),
}

fn image_part(image: &ImageSource) -> Kind<'_> {
    match image {
        ImageSource::Base64 { media_type, data } => Kind::InlineData {
            inline_data: InlineData {
                data,
                mime_type: media_type,
            },
        },
        ImageSource::Url { url } => Kind::FileData {
            file_data: FileData {
                file_uri: url,
                mime_type: None,
            },
        },
        _ => Kind::Text {
            text: "[unsupported image]",
        },
    }
}

/// A file or audio clip: `inlineData`, or `fileData` by URI.
fn file_part(file: &FileSource) -> Kind<'_> {
    match file {
        FileSource::Url { url, media_type } => Kind::FileData {
            file_data: FileData {
                file_uri: url,
                mime_type: media_type.as_deref(),
            },
        },
        FileSource::Base64 { media_type, data } => Kind::InlineData {
            inline_data: InlineData {
                data,
                mime_type: media_type,
            },
        },
        _ => Kind::Text {
            text: "[unsupported file]",
        },
    }
}

fn sig<'a>(data: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    data.and_then(|d| d.get(key))
}

/// Add the parts of `messages[at]` to `out`.
fn push_parts<'a>(out: &mut Vec<Part<'a>>, messages: &'a [Message], at: usize) {
    let first = out.len();
    for part in &messages[at].content {
        match part {
            ContentPart::Text { text } if !text.is_empty() => out.push(Kind::Text { text }.into()),
            ContentPart::Image { image } => out.push(image_part(image).into()),
            ContentPart::File { file, .. } => out.push(file_part(file).into()),
            ContentPart::Audio { audio } => out.push(file_part(audio).into()),
            ContentPart::Reasoning(r) => {
                // Only Gemini's own reasoning (it carries a signature) is sent back.
                let Some(signature) = r.signature.as_deref() else {
                    continue;
                };
                match out[first..].last_mut() {
                    // A signature that came on an answer part goes back on that part.
                    Some(last) if r.text.is_empty() && last.thought_signature.is_none() => {
                        last.thought_signature = Some(Signature::Text(signature));
                    }
                    _ => out.push(Part {
                        kind: Kind::Thought {
                            text: &r.text,
                            thought: true,
                        },
                        thought_signature: Some(Signature::Text(signature)),
                    }),
                }
            }
            ContentPart::ToolCall(c) => out.push(Part {
                kind: Kind::FunctionCall {
                    function_call: FunctionCall {
                        args: &c.input,
                        id: sig(c.provider_data.as_ref(), "id"),
                        name: &c.name,
                    },
                },
                thought_signature: sig(c.provider_data.as_ref(), "thoughtSignature").map(Signature::Json),
            }),
            ContentPart::ToolResult(r) => {
                let call = call_of(messages, at, &r.call_id);
                let value = match r.parts.as_slice() {
                    [ToolOutputPart::Json { value }] => ResponseValue::Json(value),
                    _ => ResponseValue::Text(result_text(r)),
                };
                let id = call.and_then(|c| sig(c.provider_data.as_ref(), "id")?.as_str());
                out.push(
                    Kind::FunctionResponse {
                        function_response: FunctionResponse {
                            id,
                            name: call.map_or(r.call_id.as_str(), |c| c.name.as_str()),
                            response: Response {
                                is_error: r.is_error,
                                value,
                            },
                        },
                    }
                    .into(),
                );
                // Media follows the response as parts of the same turn.
                for p in &r.parts {
                    match p {
                        ToolOutputPart::Image { image } => out.push(image_part(image).into()),
                        ToolOutputPart::Audio { audio } => out.push(file_part(audio).into()),
                        ToolOutputPart::File { file, .. } => out.push(file_part(file).into()),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

impl GeminiModel {
    /// The JSON body for `request` (public for inspection and tests).
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        self.body(request).to_value()
    }

    /// The body as posted: [`Self::request_body`] serialised, written
    /// straight from the history (public for inspection and benches).
    ///
    /// ```
    /// use loopwright_types::{Message, ModelRequest};
    /// use loopwright_providers::GeminiModel;
    ///
    /// let model = GeminiModel::builder("gemini-2.5-flash").build()?;
    /// let request = ModelRequest::new(vec![Message::user("hi")]);
    /// let bytes = model.request_bytes(&request)?;
    /// let posted: serde_json::Value = serde_json::from_slice(&bytes)?;
    /// assert_eq!(posted, model.request_body(&request));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_bytes(&self, request: &ModelRequest) -> Result<Bytes, ModelError> {
        self.body(request).to_bytes(&self.transport.body_size)
    }

    /// The body, its contents written straight from the history.
    pub(crate) fn body<'a>(&self, request: &'a ModelRequest) -> Body<Contents<'a>> {
        let system = system_texts(request);
        let mut body = json!({});
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
        }
        if !request.tools.is_empty() {
            let decls: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    let mut d = json!({"name": t.name, "description": t.description});
                    if let Some(p) = gemini_parameters(&t.input_schema) {
                        d["parameters"] = p;
                    }
                    merge_options(&mut d, t.options_for("google"));
                    d
                })
                .collect();
            body["tools"] = json!([{"functionDeclarations": decls}]);
            let config = match &request.tool_choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool { name } => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
                // A choice added to loopwright-core later: let the model decide.
                _ => json!({"mode": "AUTO"}),
            };
            body["toolConfig"] = json!({"functionCallingConfig": config});
        }
        let mut generation = Map::new();
        if let Some(t) = request.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if let Some(p) = request.top_p {
            generation.insert("topP".into(), json!(p));
        }
        if let Some(n) = request.max_output_tokens {
            generation.insert("maxOutputTokens".into(), json!(n));
        }
        if let Some(schema) = request.response_format.as_ref().and_then(json_schema_raw) {
            generation.insert("responseMimeType".into(), json!("application/json"));
            // Standard JSON Schema from Gemini 2.5; before, the OpenAPI
            // subset the function declarations use. Before Gemini 3 a JSON
            // response type beside function declarations is refused: the
            // schema then goes only on a request without tools.
            let refused = body.get("tools").is_some() && !capabilities::gemini_3(&self.model);
            if refused {
                generation.remove("responseMimeType");
            } else if capabilities::gemini_json_schema(&self.model) {
                generation.insert("responseJsonSchema".into(), schema);
            } else if let Some(openapi) = gemini_parameters(&schema) {
                generation.insert("responseSchema".into(), openapi);
            }
        }
        if let Some(reasoning) = &request.reasoning
            && self.capabilities().reasoning
        {
            generation.insert("thinkingConfig".into(), gemini_thinking(&self.model, reasoning));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        merge_options(&mut body, self.options.as_ref());
        merge_options(&mut body, request.options_for("google"));
        Body::new(body, "contents", Contents(&request.messages))
    }
}

#[async_trait]
impl LanguageModel for GeminiModel {
    fn provider(&self) -> &str {
        "google"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> ModelCapabilities {
        capabilities::gemini(&self.model)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let request = media::prepare(&request, self.provider(), media::gemini)?;
        let body = self.request_bytes(&request)?;
        let url = format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base, self.model
        );
        let bytes = self.transport.open(&url, body, &request).await?;
        Ok(drive(sse_frames(bytes), GeminiDecoder::default()))
    }
}

/// Decoder of Gemini `GenerateContentResponse` chunks.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    reasoning_open: bool,
    /// A call streamed with `partialArgs`, and its arguments so far.
    streaming: Option<(PendingCall, Value)>,
    calls_seen: usize,
    response_id: Option<String>,
    finish: Option<FinishReason>,
    usage: Usage,
}

impl GeminiDecoder {
    fn close_reasoning(&mut self, signature: Option<String>, out: &mut Vec<ModelEvent>) {
        if self.reasoning_open || signature.is_some() {
            self.reasoning_open = false;
            out.push(ModelEvent::ReasoningDone {
                signature,
                provider_data: None,
            });
        }
    }

    fn new_call(&mut self, call: &Value, signature: Option<&str>) -> PendingCall {
        let given = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
        let id = match given {
            Some(id) => id.to_owned(),
            None => format!(
                "{}_{}",
                self.response_id.as_deref().unwrap_or("gemini_call"),
                self.calls_seen
            ),
        };
        self.calls_seen += 1;
        let mut data = Map::new();
        if let Some(s) = signature {
            data.insert("thoughtSignature".into(), json!(s));
        }
        if let Some(g) = given {
            data.insert("id".into(), json!(g));
        }
        PendingCall {
            id,
            name: call
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            started: true,
            provider_data: if data.is_empty() {
                None
            } else {
                Some(Value::Object(data))
            },
            ..PendingCall::default()
        }
    }

    fn finish_streaming(&mut self, out: &mut Vec<ModelEvent>) {
        if let Some((mut call, args)) = self.streaming.take() {
            call.args = args.to_string();
            out.push(complete(call));
        }
    }

    fn function_call(&mut self, call: &Value, signature: Option<&str>, out: &mut Vec<ModelEvent>) {
        let has_name = call
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let will_continue = call.get("willContinue").and_then(Value::as_bool).unwrap_or(false);
        if has_name {
            self.finish_streaming(out);
            let mut pending = self.new_call(call, signature);
            out.push(ModelEvent::ToolCallStart {
                id: pending.id.clone(),
                name: pending.name.clone(),
            });
            if will_continue {
                let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
                self.streaming = Some((pending, args));
            } else {
                pending.args = call.get("args").map(Value::to_string).unwrap_or_default();
                if !pending.args.is_empty() {
                    out.push(ModelEvent::ToolCallDelta {
                        id: pending.id.clone(),
                        delta: pending.args.clone(),
                    });
                }
                out.push(complete(pending));
            }
            return;
        }
        if let Some((_, args)) = self.streaming.as_mut() {
            for partial in call
                .get("partialArgs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                apply_partial(args, partial);
            }
        }
        if !will_continue {
            self.finish_streaming(out);
        }
    }
}

/// Apply one `partialArgs` entry (`jsonPath` `$.a.b`, a typed value;
/// string values are appended to what the path already holds).
fn apply_partial(args: &mut Value, partial: &Value) {
    let Some(path) = partial.get("jsonPath").and_then(Value::as_str) else {
        return;
    };
    let keys: Vec<&str> = path
        .trim_start_matches('$')
        .split('.')
        .filter(|k| !k.is_empty())
        .collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut target = args;
    for key in parents {
        if !target.is_object() {
            *target = json!({});
        }
        target = &mut target[*key];
    }
    if !target.is_object() {
        *target = json!({});
    }
    let slot = &mut target[*last];
    if let Some(s) = partial.get("stringValue").and_then(Value::as_str) {
        match slot {
            Value::String(existing) => existing.push_str(s),
            _ => *slot = json!(s),
        }
    } else if let Some(v) = partial.get("numberValue").or_else(|| partial.get("boolValue")) {
        *slot = v.clone();
    } else if partial.get("nullValue").is_some() {
        *slot = Value::Null;
    }
}

impl Decoder for GeminiDecoder {
    fn frame(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = frame.data.trim();
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| invalid(format!("unparseable chunk: {e}"), data))?;
        if let Some(err) = chunk.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("stream error")
                .to_owned();
            let status = err.get("status").and_then(Value::as_str).unwrap_or_default();
            return Err(match status {
                "RESOURCE_EXHAUSTED" => ModelError::rate_limited(message, None),
                "UNAUTHENTICATED" | "PERMISSION_DENIED" => ModelError::authentication(None, message),
                other => stream_error(other, message),
            });
        }
        if self.response_id.is_none() {
            self.response_id = chunk.get("responseId").and_then(Value::as_str).map(str::to_owned);
        }
        if let Some(u) = chunk
            .get("usageMetadata")
            .filter(|u| u.get("promptTokenCount").is_some())
        {
            let thoughts = num(u, "thoughtsTokenCount");
            let candidates = num(u, "candidatesTokenCount");
            let output = match (candidates, thoughts) {
                (None, None) => None,
                (c, t) => Some(c.unwrap_or(0) + t.unwrap_or(0)),
            };
            self.usage = Usage::default()
                .with_input(num(u, "promptTokenCount"))
                .with_output(output)
                .with_cached_input(num(u, "cachedContentTokenCount"))
                .with_reasoning(thoughts)
                .with_total(num(u, "totalTokenCount"));
            out.push(ModelEvent::Usage { usage: self.usage });
        }
        if let Some(reason) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            self.finish = Some(finish_reason(reason));
        }
        let Some(candidate) = chunk.get("candidates").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let signature = part.get("thoughtSignature").and_then(Value::as_str);
            if let Some(call) = part.get("functionCall") {
                self.close_reasoning(None, out);
                self.function_call(call, signature, out);
                continue;
            }
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                if !text.is_empty() {
                    self.reasoning_open = true;
                    out.push(ModelEvent::ReasoningDelta {
                        text: text.to_owned(),
                    });
                }
                if let Some(s) = signature {
                    self.close_reasoning(Some(s.to_owned()), out);
                }
                continue;
            }
            if !text.is_empty() {
                self.close_reasoning(None, out);
                out.push(ModelEvent::TextDelta {
                    text: text.to_owned(),
                });
            }
            if let Some(s) = signature {
                // A signature on an answer part: kept as an (empty) reasoning block to replay.
                self.close_reasoning(Some(s.to_owned()), out);
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        false
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let Some(mut reason) = self.finish.take() else {
            return Err(truncated("a candidate's finishReason"));
        };
        self.close_reasoning(None, out);
        self.finish_streaming(out);
        if self.calls_seen > 0 && reason == FinishReason::Stop {
            reason = FinishReason::ToolCalls;
        }
        out.push(ModelEvent::Finish {
            reason,
            usage: self.usage,
        });
        Ok(())
    }
}
