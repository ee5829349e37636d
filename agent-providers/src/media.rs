//! Images, files and audio in user messages, checked against what a wire
//! format takes before the request is sent.
//!
//! Invariant: a request that reaches a provider's body holds only media
//! parts its wire format takes natively: one it cannot take fails the
//! request with an invalid-request error (no status: nothing was sent)
//! naming the message, the part and the provider, or, when the request
//! asks for [`MediaFallback::Placeholder`], becomes its text placeholder.
//! Tool results never fail: each provider shows a placeholder for what its
//! tool results cannot carry.

use std::borrow::Cow;
use std::sync::Arc;

use loopwright_types::{
    ContentPart, FileSource, ImageSource, MediaFallback, Message, ModelError, ModelRequest, Role,
};

/// Why a wire format cannot take a part: `None` when it can.
pub(crate) type Accepts = fn(&ContentPart) -> Option<&'static str>;

/// The request as the provider can send it: itself when every media part
/// of its user messages is accepted, else (placeholders asked for) a copy
/// with those parts replaced, or the error.
pub(crate) fn prepare<'a>(
    request: &'a ModelRequest,
    provider: &str,
    accepts: Accepts,
) -> Result<Cow<'a, ModelRequest>, ModelError> {
    let refused = |m: &Message| m.role == Role::User && m.content.iter().any(|p| accepts(p).is_some());
    let Some(first) = request.messages.iter().position(refused) else {
        return Ok(Cow::Borrowed(request));
    };
    if request.unsupported_media == MediaFallback::Error {
        let message = &request.messages[first];
        let (part, why) = message
            .content
            .iter()
            .find_map(|p| accepts(p).map(|why| (p, why)))
            .unwrap_or((&message.content[0], "unsupported"));
        return Err(ModelError::invalid_request(
            None,
            format!(
                "messages[{first}]: {} cannot be sent to {provider}: {why}. Remove it, send it to a model that \
                 takes it, or ask for placeholders (AgentOptions::unsupported_media)",
                describe(part)
            ),
        ));
    }
    let messages = request
        .messages
        .iter()
        .map(|m| {
            if !refused(m) {
                return m.clone();
            }
            let content = m
                .content
                .iter()
                .map(|p| match (accepts(p), p.placeholder()) {
                    (Some(_), Some(text)) => ContentPart::text(text),
                    _ => p.clone(),
                })
                .collect();
            Message::new(m.role, content)
        })
        .collect();
    let mut placed = request.clone();
    placed.messages = Arc::new(messages);
    Ok(Cow::Owned(placed))
}

/// A part as an error names it.
fn describe(part: &ContentPart) -> String {
    let what = match part {
        ContentPart::Image { .. } => "an image",
        ContentPart::Audio { .. } => "an audio clip",
        ContentPart::File { .. } => "a file",
        _ => "a part",
    };
    match part.placeholder() {
        Some(placeholder) => format!("{what} {placeholder}"),
        None => what.to_owned(),
    }
}

/// Whether a media type is PDF.
pub(crate) fn is_pdf(media_type: &str) -> bool {
    media_type == "application/pdf"
}

/// Whether a media type is plain text of some kind (`text/*`).
pub(crate) fn is_text(media_type: &str) -> bool {
    media_type.starts_with("text/")
}

/// OpenAI's `input_audio` format for a media type (`wav`, `mp3`).
pub(crate) fn openai_audio_format(media_type: &str) -> Option<&'static str> {
    match media_type {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// Anthropic Messages: images; PDF and text documents, inline or (PDF) by
/// URL; no audio.
pub(crate) fn anthropic(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::Audio { .. } => Some("Anthropic's API takes no audio"),
        ContentPart::File { file, .. } => match file {
            FileSource::Base64 { media_type, .. } if is_pdf(media_type) || is_text(media_type) => None,
            FileSource::Url { .. } if file.media_type().is_none_or(is_pdf) => None,
            _ => Some("Anthropic takes PDF and plain-text documents only (text by value, not by URL)"),
        },
        _ => None,
    }
}

/// OpenAI Chat Completions: images; inline files (`file` parts); WAV and
/// MP3 audio inline (`input_audio`).
pub(crate) fn openai_chat(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::File {
            file: FileSource::Url { .. },
            ..
        } => Some("Chat Completions takes files inline only, not by URL"),
        ContentPart::Audio { audio } => match audio {
            FileSource::Base64 { media_type, .. } if openai_audio_format(media_type).is_some() => None,
            _ => Some("Chat Completions takes WAV and MP3 audio, inline only"),
        },
        _ => None,
    }
}

/// OpenAI Responses: images; files inline or by URL (`input_file`); no
/// audio.
pub(crate) fn openai_responses(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::Audio { .. } => Some("the Responses API takes no audio input (Chat Completions does)"),
        _ => None,
    }
}

/// Gemini: images, files and audio, inline or by URI.
pub(crate) fn gemini(_part: &ContentPart) -> Option<&'static str> {
    None
}

/// Ollama: inline images only.
pub(crate) fn ollama(part: &ContentPart) -> Option<&'static str> {
    match part {
        ContentPart::Image {
            image: ImageSource::Url { .. },
        } => Some("Ollama takes images inline only, not by URL"),
        ContentPart::File { .. } => Some("Ollama's chat API takes no files"),
        ContentPart::Audio { .. } => Some("Ollama's chat API takes no audio"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(part: ContentPart, fallback: MediaFallback) -> ModelRequest {
        let mut request = ModelRequest::new(vec![
            Message::user("hi"),
            Message::new(Role::User, vec![ContentPart::text("listen"), part]),
        ]);
        request.unsupported_media = fallback;
        request
    }

    #[test]
    fn a_part_a_provider_cannot_take_fails_before_sending_or_becomes_its_placeholder() {
        let audio = ContentPart::audio("audio/wav", b"RIFF0000");
        let err = prepare(
            &request(audio.clone(), MediaFallback::Error),
            "anthropic",
            anthropic,
        )
        .unwrap_err();
        assert_eq!(err.status(), None);
        assert!(
            err.to_string()
                .contains("messages[1]: an audio clip [audio: audio/wav, 8 B] cannot be sent to anthropic"),
            "{err}"
        );
        let asked = request(audio.clone(), MediaFallback::Placeholder);
        let placed = prepare(&asked, "anthropic", anthropic).unwrap();
        assert_eq!(placed.messages[1].text(), "listen[audio: audio/wav, 8 B]");
        let same = request(audio, MediaFallback::Error);
        assert!(matches!(
            prepare(&same, "google", gemini).unwrap(),
            Cow::Borrowed(_)
        ));
    }
}
