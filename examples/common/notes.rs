//! The notes tool of the approval examples: `append_note` appends a line to
//! `notes.txt` in the current directory (it changes a file, so the examples
//! have it approved).

use std::io::Write as _;
use std::sync::Arc;

use loopwright::{Tool, tool_fn};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    /// The note to append.
    text: String,
}

/// The `append_note` tool.
pub fn append_note() -> Arc<dyn Tool> {
    Arc::new(tool_fn(
        "append_note",
        "Append a note to notes.txt.",
        |note: Note| async move {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open("notes.txt")?;
            // One write a note: concurrent calls never interleave a line.
            file.write_all(format!("{}\n", note.text).as_bytes())?;
            Ok("appended")
        },
    ))
}
