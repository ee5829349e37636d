//! Reading a text file a person named (a configuration, an agent file, a
//! system prompt, a schema) without trusting what the path is.
//!
//! Invariants: the file is opened without blocking (`O_NONBLOCK`), so a
//! FIFO with no writer cannot hang the process (and leave it deaf to
//! signals while it waits in `open`); anything but a regular file (a FIFO,
//! a device such as `/dev/zero`, a directory, a socket) is refused before a
//! byte is read; at most [`MAX_TEXT_FILE_BYTES`](crate::textfile::MAX_TEXT_FILE_BYTES) are read, and a larger
//! file is refused rather than cut. Every error is an [`std::io::Error`]
//! whose message says what was wrong, for callers that name the path.

use std::io::{self, Read};
use std::path::Path;

/// The largest text file read: far more than any configuration, agent
/// file, prompt or schema needs (a 1 MiB prompt is ~250,000 tokens).
pub const MAX_TEXT_FILE_BYTES: u64 = 1024 * 1024;

/// Read `path` as UTF-8 text: a regular file of at most
/// [`MAX_TEXT_FILE_BYTES`].
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("prompt.md");
/// std::fs::write(&path, "Be brief.").unwrap();
/// assert_eq!(loopwright::textfile::read_text_file(&path).unwrap(), "Be brief.");
/// let err = loopwright::textfile::read_text_file(std::path::Path::new("/dev/zero")).unwrap_err();
/// assert!(err.to_string().contains("not a regular file"), "{err}");
/// ```
pub fn read_text_file(path: &Path) -> io::Result<String> {
    read_text_file_limited(path, MAX_TEXT_FILE_BYTES)
}

/// [`read_text_file`] with another size limit.
pub fn read_text_file_limited(path: &Path, limit: u64) -> io::Result<String> {
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({}): give a file", kind(&meta.file_type())),
        ));
    }
    if meta.len() > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("larger than {} KiB, the most read for such a file", limit / 1024),
    )
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    std::fs::File::open(path)
}

fn kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn devices_directories_and_large_files_are_refused_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text_file(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a directory"), "{err}");
        let err = read_text_file(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(err.contains("a device"), "{err}");
        let big = dir.path().join("big.txt");
        std::fs::write(&big, "x".repeat(2048)).unwrap();
        let err = read_text_file_limited(&big, 1024).unwrap_err().to_string();
        assert!(err.contains("larger than 1 KiB"), "{err}");
        let binary = dir.path().join("bin");
        std::fs::write(&binary, [b'a', 0xff, b'b']).unwrap();
        let err = read_text_file(&binary).unwrap_err().to_string();
        assert!(err.contains("offset 1"), "{err}");
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // A blocking open would wait here for a writer for ever.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_text_file(&fifo).map_err(|e| e.to_string())));
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("opening the FIFO blocked")
            .unwrap_err();
        assert!(err.contains("a FIFO"), "{err}");
    }
}
