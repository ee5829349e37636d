//! `--file PATH`: files attached to the prompt, each as the part its media
//! type calls for (an image, an audio clip, or a file: a PDF or another
//! document), read whole before the run starts.
//!
//! Invariant: a file that cannot be read, is not a regular file (a FIFO, a
//! device such as `/dev/zero`: checked on the opened handle, before a byte
//! is read), or is larger than [`MAX_ATTACHMENT_BYTES`], is a usage error
//! naming it; nothing is sent.

use std::path::PathBuf;

use loopwright::media::media_type_for_path;
use loopwright::{ContentPart, Message, Role};

use crate::exit::Failure;

/// The largest file `--file` attaches: providers refuse requests much
/// larger (Anthropic's 32 MB, OpenAI's 50 MB per file, as base64).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// The prompt as a user message, with the files after its text.
pub fn prompt_message(prompt: String, files: &[PathBuf]) -> Result<Message, Failure> {
    let mut content = vec![ContentPart::text(prompt)];
    for path in files {
        // A regular file only (checked on the opened handle: a FIFO would
        // block, /dev/zero would never end), read up to the limit.
        let bytes = loopwright::named_file::read_bytes(path, MAX_ATTACHMENT_BYTES)
            .map_err(|e| Failure::usage(format!("--file {}: {e}", path.display())))?;
        let name = path.file_name().and_then(|n| n.to_str());
        content.push(ContentPart::attachment(media_type_for_path(path), &bytes, name));
    }
    Ok(Message::new(Role::User, content))
}
