//! Reading a file a person named (a configuration, an agent file, a prompt,
//! an attachment, a cassette, an eval dataset, the OAuth token file)
//! without trusting what the path is: the one implementation every crate
//! of the workspace uses. Hidden from the documentation:
//! `loopwright::textfile` is its documented face.
//!
//! Invariants:
//! - the file is opened without blocking (`O_NONBLOCK`), so a FIFO with no
//!   writer cannot hang the process (and leave it deaf to signals while it
//!   waits in `open`);
//! - the opened handle is checked (`fstat`), not the path before the open,
//!   so nothing can be swapped in between: anything but a regular file (a
//!   FIFO, a device such as `/dev/zero`, a directory, a socket) is refused
//!   before a byte is read; `O_NONBLOCK` is cleared afterwards;
//! - with `Links::Refuse` a symbolic link in the last component is not
//!   followed (`O_NOFOLLOW`) and is refused;
//! - at most the caller's limit is read, and a larger file is refused
//!   rather than cut (checked on the size `fstat` gives and again while
//!   reading, for a file that grows);
//! - every error is an [`std::io::Error`] whose message says what was wrong
//!   (and the limit, when it is the size): callers name the path.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The largest text file read by default: far more than any configuration,
/// agent file, prompt or schema needs (a 1 MiB prompt is ~250,000 tokens).
pub const MAX_TEXT_FILE_BYTES: u64 = 1024 * 1024;

/// What to do when the path's last component is a symbolic link.
///
/// ```
/// assert_ne!(loopwright_types::named_file::Links::Follow, loopwright_types::named_file::Links::Refuse);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Links {
    /// Open what the link points to (then check that it is a regular file).
    Follow,
    /// Refuse the link (a file that must be the one at this path).
    Refuse,
}

/// Open `path` for reading: a regular file (see the module docs), in
/// blocking mode again once checked.
///
/// ```
/// use loopwright_types::named_file::{Links, open_regular};
/// let err = open_regular("/dev/zero".as_ref(), Links::Follow).unwrap_err();
/// assert_eq!(err.to_string(), "not a regular file (a device): give a file");
/// ```
pub fn open_regular(path: &Path, links: Links) -> io::Result<File> {
    let file = open_nonblocking(path, links)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({}): give a file", kind(&meta.file_type())),
        ));
    }
    set_blocking(&file)?;
    Ok(file)
}

/// Read an opened file whole, refusing one larger than `limit` bytes.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("big");
/// std::fs::write(&path, [0u8; 2048]).unwrap();
/// let file = std::fs::File::open(&path).unwrap();
/// let err = loopwright_types::named_file::read_limited(file, 1024).unwrap_err();
/// assert_eq!(err.to_string(), "larger than 1 KiB, the most read for such a file");
/// ```
pub fn read_limited(file: File, limit: u64) -> io::Result<Vec<u8>> {
    if file.metadata()?.len() > limit {
        return Err(too_large(limit));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(limit));
    }
    Ok(bytes)
}

/// The bytes of `path`: a regular file (links followed) of at most `limit`
/// bytes.
///
/// ```
/// let err = loopwright_types::named_file::read_bytes("/dev/zero".as_ref(), 1024).unwrap_err();
/// assert!(err.to_string().contains("a device"), "{err}");
/// ```
pub fn read_bytes(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_limited(open_regular(path, Links::Follow)?, limit)
}

/// The UTF-8 text of `path`: a regular file (links followed) of at most
/// `limit` bytes.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("prompt.md");
/// std::fs::write(&path, "Be brief.").unwrap();
/// assert_eq!(loopwright_types::named_file::read_text(&path, 1024).unwrap(), "Be brief.");
/// ```
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_bytes(path, limit)?).map_err(|e| {
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
        format!("larger than {}, the most read for such a file", show_size(limit)),
    )
}

/// `20 MiB`, `1 KiB`, `100 bytes`.
fn show_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path, links: Links) -> io::Result<File> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::OpenOptionsExt;
    let mut flags = OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= OFlag::O_NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if links == Links::Refuse && code == nix::errno::Errno::ELOOP as i32 => {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a symbolic link, which is not followed here: give the file itself",
                )
            }
            _ => e,
        })
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path, links: Links) -> io::Result<File> {
    if links == Links::Refuse && std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a symbolic link, which is not followed here: give the file itself",
        ));
    }
    File::open(path)
}

/// Clear `O_NONBLOCK` on an opened file.
#[cfg(unix)]
fn set_blocking(file: &File) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_retain(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(not(unix))]
fn set_blocking(_file: &File) -> io::Result<()> {
    Ok(())
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
    fn devices_directories_links_and_large_files_are_refused_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path(), 1024).unwrap_err().to_string();
        assert!(err.contains("a directory"), "{err}");
        let err = read_bytes(Path::new("/dev/zero"), 1024).unwrap_err().to_string();
        assert!(err.contains("a device"), "{err}");
        let big = dir.path().join("big.txt");
        std::fs::write(&big, "x".repeat(2048)).unwrap();
        let err = read_text(&big, 1024).unwrap_err().to_string();
        assert!(err.contains("larger than 1 KiB"), "{err}");
        let err = read_text(&big, 1000).unwrap_err().to_string();
        assert!(err.contains("larger than 1000 bytes"), "{err}");
        let binary = dir.path().join("bin");
        std::fs::write(&binary, [b'a', 0xff, b'b']).unwrap();
        let err = read_text(&binary, 1024).unwrap_err().to_string();
        assert!(err.contains("offset 1"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert_eq!(read_bytes(&link, 4096).unwrap().len(), 2048);
        let err = open_regular(&link, Links::Refuse).unwrap_err().to_string();
        assert!(err.contains("a symbolic link"), "{err}");
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // A blocking open would wait here for a writer for ever.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_text(&fifo, 1024).map_err(|e| e.to_string())));
        let err = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("opening the FIFO blocked")
            .unwrap_err();
        assert!(err.contains("a FIFO"), "{err}");
    }

    #[test]
    fn the_opened_file_blocks_again() {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let file = open_regular(&path, Links::Refuse).unwrap();
        let flags = OFlag::from_bits_retain(fcntl(&file, FcntlArg::F_GETFL).unwrap());
        assert!(!flags.contains(OFlag::O_NONBLOCK));
    }
}
