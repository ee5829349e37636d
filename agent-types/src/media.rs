//! Files and audio in messages and tool results: where their bytes are
//! ([`FileSource`]), what a model that cannot take them is shown instead,
//! and the media type a file's name suggests.
//!
//! Invariant: inline data is standard base64 (RFC 4648, with padding), as
//! every provider and MCP carry it, so it passes through without being
//! decoded and encoded again; a placeholder names the kind, the media type
//! and the decoded size (or the URL), never the bytes.

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The media type of a file whose type nothing else says.
pub const OCTET_STREAM: &str = "application/octet-stream";

/// Where a file's or an audio clip's bytes are.
///
/// ```
/// use loopwright_types::FileSource;
/// let pdf = FileSource::from_bytes("application/pdf", b"%PDF-1.7");
/// assert_eq!(pdf.media_type(), Some("application/pdf"));
/// assert_eq!(pdf.placeholder("file"), "[file: application/pdf, 8 B]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileSource {
    /// Inline bytes, base64-encoded.
    Base64 {
        /// MIME type such as `application/pdf` or `audio/wav`.
        media_type: String,
        /// Standard base64 (RFC 4648, with padding).
        data: String,
    },
    /// A file the provider fetches itself.
    Url {
        /// The file's URL.
        url: String,
        /// Its MIME type, when known (Gemini needs it for a URL).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

impl FileSource {
    /// Inline `bytes` of this media type (encoded as base64).
    ///
    /// ```
    /// let wav = loopwright_types::FileSource::from_bytes("audio/wav", b"RIFF");
    /// assert!(matches!(wav, loopwright_types::FileSource::Base64 { ref data, .. } if data == "UklGRg=="));
    /// ```
    pub fn from_bytes(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        Self::Base64 {
            media_type: media_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// A file at `url`, of this media type when known.
    ///
    /// ```
    /// let doc = loopwright_types::FileSource::url("https://example.com/a.pdf", Some("application/pdf"));
    /// assert_eq!(doc.placeholder("file"), "[file: https://example.com/a.pdf]");
    /// ```
    pub fn url(url: impl Into<String>, media_type: Option<&str>) -> Self {
        Self::Url {
            url: url.into(),
            media_type: media_type.map(str::to_owned),
        }
    }

    /// The MIME type, when known.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Base64 { media_type, .. } => Some(media_type),
            Self::Url { media_type, .. } => media_type.as_deref(),
        }
    }

    /// The size of the inline bytes once decoded (`None` for a URL).
    ///
    /// ```
    /// assert_eq!(loopwright_types::FileSource::from_bytes("text/plain", b"hello").decoded_len(), Some(5));
    /// ```
    pub fn decoded_len(&self) -> Option<usize> {
        match self {
            Self::Base64 { data, .. } => Some(base64_len(data)),
            Self::Url { .. } => None,
        }
    }

    /// The inline bytes as UTF-8 text (a text file sent by value); `None`
    /// for a URL, bad base64 or bytes that are not UTF-8.
    ///
    /// ```
    /// let notes = loopwright_types::FileSource::from_bytes("text/plain", "héllo".as_bytes());
    /// assert_eq!(notes.decoded_text().as_deref(), Some("héllo"));
    /// ```
    pub fn decoded_text(&self) -> Option<String> {
        match self {
            Self::Base64 { data, .. } => {
                let bytes = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
                String::from_utf8(bytes).ok()
            }
            Self::Url { .. } => None,
        }
    }

    /// What a model that cannot take this file is shown instead: `kind`
    /// (`file`, `audio`), its type and decoded size, or its URL.
    pub fn placeholder(&self, kind: &str) -> String {
        match self {
            Self::Base64 { media_type, data } => {
                format!(
                    "[{kind}: {media_type}, {}]",
                    crate::util::human_size(base64_len(data))
                )
            }
            Self::Url { url, .. } => format!("[{kind}: {url}]"),
        }
    }
}

/// The decoded size of standard base64 text.
pub(crate) fn base64_len(data: &str) -> usize {
    data.trim_end_matches('=').len() * 3 / 4
}

/// The media type a file name's extension suggests ([`OCTET_STREAM`] when
/// it suggests none): documents, images, audio and common text formats.
///
/// ```
/// use loopwright_types::media::media_type_for_path;
/// assert_eq!(media_type_for_path("report.PDF"), "application/pdf");
/// assert_eq!(media_type_for_path("clip.mp3"), "audio/mpeg");
/// assert_eq!(media_type_for_path("notes.md"), "text/markdown");
/// assert_eq!(media_type_for_path("blob"), "application/octet-stream");
/// ```
pub fn media_type_for_path(path: impl AsRef<std::path::Path>) -> &'static str {
    let ext = path
        .as_ref()
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" => "audio/ogg",
        "flac" => "audio/flac",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "webm" => "audio/webm",
        "txt" | "log" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "xml" => "text/xml",
        "json" => "application/json",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => OCTET_STREAM,
    }
}

/// The kind of media a MIME type names: `image`, `audio`, or `file` for
/// anything else.
///
/// ```
/// use loopwright_types::media::kind_of;
/// assert_eq!(kind_of("audio/wav"), "audio");
/// assert_eq!(kind_of("image/png"), "image");
/// assert_eq!(kind_of("application/pdf"), "file");
/// ```
pub fn kind_of(media_type: &str) -> &'static str {
    if media_type.starts_with("image/") {
        "image"
    } else if media_type.starts_with("audio/") {
        "audio"
    } else {
        "file"
    }
}
