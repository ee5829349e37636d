//! Reading a text file a person named (a configuration, an agent file, a
//! system prompt, a schema) without trusting what the path is.
//!
//! Invariants: the file is opened without blocking (`O_NONBLOCK`), so a
//! FIFO with no writer cannot hang the process (and leave it deaf to
//! signals while it waits in `open`); anything but a regular file (a FIFO,
//! a device such as `/dev/zero`, a directory, a socket) is refused on the
//! opened handle before a byte is read; at most
//! [`MAX_TEXT_FILE_BYTES`](crate::textfile::MAX_TEXT_FILE_BYTES) are read,
//! and a larger file is refused rather than cut. Every error is an
//! [`std::io::Error`] whose message says what was wrong, for callers that
//! name the path.
//!
//! The implementation is `loopwright_core`'s (hidden) `named_file`, the
//! one every crate of the workspace reads named files with: the command's
//! `--file` attachments, replay cassettes, eval datasets and the MCP OAuth
//! token file too.

use std::io;
use std::path::Path;

/// The largest text file read: far more than any configuration, agent
/// file, prompt or schema needs (a 1 MiB prompt is ~250,000 tokens).
pub const MAX_TEXT_FILE_BYTES: u64 = loopwright_core::named_file::MAX_TEXT_FILE_BYTES;

/// Read `path` as UTF-8 text: a regular file of at most
/// [`MAX_TEXT_FILE_BYTES`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("prompt.md");
/// std::fs::write(&path, "Be brief.").unwrap();
/// assert_eq!(loopwright_config::textfile::read_text_file(&path).unwrap(), "Be brief.");
/// let err = loopwright_config::textfile::read_text_file(std::path::Path::new("/dev/zero")).unwrap_err();
/// assert!(err.to_string().contains("not a regular file"), "{err}");
/// ```
pub fn read_text_file(path: &Path) -> io::Result<String> {
    read_text_file_limited(path, MAX_TEXT_FILE_BYTES)
}

/// [`read_text_file`] with another size limit.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("big.txt");
/// std::fs::write(&path, "x".repeat(2048)).unwrap();
/// let err = loopwright_config::textfile::read_text_file_limited(&path, 1024).unwrap_err();
/// assert_eq!(err.to_string(), "larger than 1 KiB, the most read for such a file");
/// ```
pub fn read_text_file_limited(path: &Path, limit: u64) -> io::Result<String> {
    loopwright_core::named_file::read_text(path, limit)
}
