//! The JSON-lines files of a cassette: reading them with line numbers,
//! appending whole lines.
//!
//! Invariants: a line is appended with one `write` of the line and its
//! newline, under the file's lock, so concurrent recorders never interleave
//! and a line is whole or absent; a file is read only when it is a regular
//! file (a FIFO or a device such as `/dev/zero` is refused on the opened
//! handle, before a byte is read) of at most [`MAX_CASSETTE_FILE_BYTES`].

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;

use super::CassetteError;

/// The largest cassette file read (`model.jsonl`, one `tools/*.jsonl`):
/// each model call's line holds the whole request, so a long recorded run
/// takes tens of MiB; a larger file is refused, naming it and this limit.
///
/// ```
/// assert_eq!(loopwright_testing::replay::MAX_CASSETTE_FILE_BYTES, 256 * 1024 * 1024);
/// ```
pub const MAX_CASSETTE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The text of a cassette file (see the module docs).
fn read_text(path: &Path) -> std::io::Result<String> {
    loopwright_types::named_file::read_text(path, MAX_CASSETTE_FILE_BYTES)
}

/// Every non-blank line of `path` parsed as `T`, with its 1-based number.
pub(crate) fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<(usize, T)>, CassetteError> {
    let text = read_text(path).map_err(|e| CassetteError::io(path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(line).map_err(|e| CassetteError::Malformed {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push((i + 1, value));
    }
    Ok(out)
}

/// The number of lines in `path` (0 when it does not exist).
fn count_lines(path: &Path) -> Result<usize, CassetteError> {
    match read_text(path) {
        Ok(text) => Ok(text.lines().count()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(CassetteError::io(path, e)),
    }
}

/// A JSON-lines file that recorders append to.
#[derive(Debug)]
pub(crate) struct Appender {
    path: PathBuf,
    /// The open file and the number of lines in it.
    file: Mutex<Option<(File, usize)>>,
}

impl Appender {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            file: Mutex::new(None),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Append `value` as one line; its 1-based line number.
    pub(crate) fn append<T: serde::Serialize>(&self, value: &T) -> Result<usize, CassetteError> {
        let mut line = serde_json::to_string(value).map_err(|e| CassetteError::Malformed {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        line.push('\n');
        let mut guard = self
            .file
            .lock()
            .map_err(|_| CassetteError::io(&self.path, "lock poisoned"))?;
        if guard.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| CassetteError::io(dir, e))?;
            }
            let lines = count_lines(&self.path)?;
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .map_err(|e| CassetteError::io(&self.path, e))?;
            *guard = Some((file, lines));
        }
        let Some((file, lines)) = guard.as_mut() else {
            return Err(CassetteError::io(&self.path, "not open"));
        };
        file.write_all(line.as_bytes())
            .map_err(|e| CassetteError::io(&self.path, e))?;
        *lines += 1;
        Ok(*lines)
    }
}
