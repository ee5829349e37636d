//! The token file on disk: read only when it is this user's private regular
//! file, written whole through a temporary file nobody can have planted.
//!
//! Invariants:
//! - reading opens the file itself, never a symbolic link (`O_NOFOLLOW`),
//!   without blocking, and checks the opened handle: a FIFO, a device or a
//!   file larger than [`MAX_TOKEN_FILE_BYTES`] is refused before a byte is
//!   read (`loopwright_types::named_file`);
//! - a file owned by another user is refused ([`Unsafe::ForeignOwner`]); a
//!   file of this user that others may read or write is tightened to 0600
//!   (on the handle) before it is read, and its old mode reported
//!   ([`Contents::tightened_from`]) for the store to warn about;
//! - writing creates a temporary file in the same directory with a random
//!   name, exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`, so a planted file or
//!   link at that name is never opened), mode 0600 from its creation; the
//!   bytes are synced and the file renamed over the target, which replaces
//!   the directory entry (a link there is replaced, its target untouched);
//!   the directory is synced after the rename;
//! - a missing directory is created 0700; an existing one is tightened to
//!   0700 only when it is dedicated to the file (the default location's
//!   `loopwright` directory) and owned by this user; any other directory
//!   (a home, a shared one) is left as it is.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use loopwright_types::named_file::{Links, open_regular, read_limited};
use nix::fcntl::OFlag;
use ring::rand::{SecureRandom, SystemRandom};

/// The largest token file read: an entry is a few KiB, so this is room for
/// hundreds of servers; a larger file is refused, naming it and this limit.
///
/// ```
/// assert_eq!(loopwright_mcp::oauth::MAX_TOKEN_FILE_BYTES, 1024 * 1024);
/// ```
pub const MAX_TOKEN_FILE_BYTES: u64 = 1024 * 1024;

/// Attempts at a fresh temporary name before giving up (each name has 128
/// random bits: a collision means someone is planting names, or a bug).
const TEMP_ATTEMPTS: usize = 8;

/// Why a token file is not used as it is.
#[derive(Debug)]
pub(crate) enum Unsafe {
    /// Reading failed (not a regular file, too large, a link, I/O).
    Io(io::Error),
    /// The file belongs to another user.
    ForeignOwner {
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
    },
}

impl From<io::Error> for Unsafe {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// What [`read`] found.
#[derive(Debug)]
pub(crate) struct Contents {
    pub(crate) bytes: Vec<u8>,
    /// The mode the file had when it was tightened to 0600.
    pub(crate) tightened_from: Option<u32>,
}

/// The file (see the module docs); `None` when there is none. `tighten`:
/// make a file of this user that others may read 0600 (the store's reads);
/// without it the mode is left alone (the redaction list, read before
/// logging is set up, when a warning would be lost).
pub(crate) fn read(path: &Path, tighten: bool) -> Result<Option<Contents>, Unsafe> {
    let file = match open_regular(path, Links::Refuse) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    let mode = meta.mode() & 0o7777;
    if meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(Unsafe::ForeignOwner {
            owner: meta.uid(),
            mode,
        });
    }
    let tightened_from = if tighten && mode & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(0o600))?;
        Some(mode)
    } else {
        None
    };
    Ok(Some(Contents {
        bytes: read_limited(file, MAX_TOKEN_FILE_BYTES)?,
        tightened_from,
    }))
}

/// Write `bytes` to `path` (see the module docs); `dedicated_dir`: the
/// directory is the file's own, to be tightened to 0700.
pub(crate) fn write(path: &Path, bytes: &[u8], dedicated_dir: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if dedicated_dir {
        tighten_dir(dir)?;
    }
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the token file's path names no file"))?;
    let (tmp, mut file) = create_temp(dir, &name.to_string_lossy())?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.set_permissions(Permissions::from_mode(0o600)))
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        if let Err(removing) = std::fs::remove_file(&tmp) {
            tracing::warn!(
                target: "loopwright_mcp::oauth::store",
                "could not remove the temporary token file {}: {removing}",
                tmp.display()
            );
        }
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

/// A new 0600 file `.NAME.RANDOM.tmp` in `dir`, created exclusively.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let rng = SystemRandom::new();
    let mut last = None;
    for _ in 0..TEMP_ATTEMPTS {
        let mut random = [0u8; 16];
        rng.fill(&mut random)
            .map_err(|_| io::Error::other("no randomness for the temporary token file's name"))?;
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = dir.join(format!(".{name}.{hex}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary token file could be created")))
}

/// Make `dir` 0700 when this user owns it and it is looser.
fn tighten_dir(dir: &Path) -> io::Result<()> {
    let handle = File::open(dir)?;
    let meta = handle.metadata()?;
    let mode = meta.mode() & 0o7777;
    if meta.is_dir() && meta.uid() == nix::unistd::geteuid().as_raw() && mode & 0o077 != 0 {
        handle.set_permissions(Permissions::from_mode(0o700))?;
        tracing::warn!(
            target: "loopwright_mcp::oauth::store",
            "the token file's directory {} had mode {mode:04o}: tightened to 0700",
            dir.display()
        );
    }
    Ok(())
}
