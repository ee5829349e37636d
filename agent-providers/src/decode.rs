//! Decoding a provider's response body without the HTTP request: bytes in,
//! [`ModelEvent`](loopwright_types::ModelEvent)s out, through exactly the framing
//! and decoder each model's `stream` uses. For replaying recorded streams,
//! for tests, and for measuring the parsing path alone.

use bytes::Bytes;
use futures::stream::BoxStream;
use loopwright_types::{ModelError, ModelStream};

use crate::driver::drive;
use crate::sse::{ndjson_frames, sse_frames};

/// A provider wire format.
///
/// ```
/// assert_eq!(loopwright_providers::decode::WireFormat::Anthropic.framing(), "sse");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions (and OpenRouter, and OpenAI-compatible servers).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `streamGenerateContent?alt=sse`.
    Gemini,
    /// Ollama's native `/api/chat` (newline-delimited JSON).
    Ollama,
}

impl WireFormat {
    /// `"sse"` or `"ndjson"`.
    pub fn framing(self) -> &'static str {
        match self {
            Self::Ollama => "ndjson",
            _ => "sse",
        }
    }
}

/// Decode `body` (a provider's streamed response body) into model events.
///
/// ```
/// use futures::StreamExt;
/// use loopwright_providers::decode::{WireFormat, decode_stream};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
///             data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
/// let bytes = futures::stream::iter([Ok(bytes::Bytes::from(body))]).boxed();
/// let events: Vec<_> = decode_stream(WireFormat::OpenAiChat, bytes).collect().await;
/// assert!(events.iter().all(Result::is_ok));
/// assert!(events.len() >= 2); // the text, then the finish
/// # }
/// ```
pub fn decode_stream(format: WireFormat, body: BoxStream<'static, Result<Bytes, ModelError>>) -> ModelStream {
    match format {
        WireFormat::OpenAiChat => drive(sse_frames(body), crate::openai_chat::ChatDecoder::default()),
        WireFormat::OpenAiResponses => drive(
            sse_frames(body),
            crate::openai_responses::ResponsesDecoder::default(),
        ),
        WireFormat::Anthropic => drive(sse_frames(body), crate::anthropic::AnthropicDecoder::default()),
        WireFormat::Gemini => drive(sse_frames(body), crate::gemini::GeminiDecoder::default()),
        WireFormat::Ollama => drive(ndjson_frames(body), crate::ollama::OllamaDecoder::default()),
    }
}
