//! The `Read` tool: numbered lines of a text file, or an image.

use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use crate::caps::cut_line;
use crate::util::{blocking, parse_input};
use crate::workspace::Workspace;

/// Lines returned when the model gives no `limit` (enough for most source
/// files, small enough for a context window).
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// Characters kept of one line (minified files have megabyte lines).
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes of numbered text one call returns at most, whatever the limit: just
/// under the agent loop's default output cap, so the note saying where to
/// read on is never cut off.
pub const MAX_READ_OUTPUT_BYTES: usize = loopwright_types::DEFAULT_MAX_TOOL_OUTPUT_BYTES - 1024;
/// Largest image returned (providers reject larger inline images).
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes inspected to decide whether a file is binary (as git and grep do).
const BINARY_SNIFF_BYTES: usize = 8192;

fn description() -> String {
    format!(
        "Read a file from the workspace. Returns the lines numbered like `cat -n` \
(line number, a tab, then the line). By default returns up to {DEFAULT_READ_LIMIT} lines from the \
start; use `offset` (1-based line number to start at) and `limit` (number of lines) to read other \
parts of long files. Lines longer than {MAX_LINE_CHARS} characters are cut. Images (png, jpeg, gif, \
webp) are returned as images. Binary files are refused. Use Glob or Grep to find files, and Bash \
`ls` to list a directory."
    )
}

/// Input of [`ReadTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadInput {
    /// Path of the file, absolute or relative to the workspace root.
    pub file_path: String,
    /// 1-based line number to start reading at (default 1).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Number of lines to read (default 2000, see `DEFAULT_READ_LIMIT`).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The `Read` tool.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// let read = loopwright_tools::ReadTool::new(ws);
/// assert_eq!(read.definition().name, "Read");
/// assert!(read.definition().annotations.read_only);
/// ```
#[derive(Debug)]
pub struct ReadTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl ReadTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Read", description(), input_schema_for::<ReadInput>())
            .with_annotations(ToolAnnotations::default().read_only(true).idempotent(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for ReadTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: ReadInput = parse_input(input)?;
        let path = match self.workspace.resolve(&input.file_path) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::error(e.to_string())),
        };
        let shown = self.workspace.display(&path);
        blocking(&ctx, move || read_file(&path, &shown, input.offset, input.limit)).await
    }
}

fn image_media_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn read_file(path: &Path, shown: &str, offset: Option<usize>, limit: Option<usize>) -> ToolOutput {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return ToolOutput::error(format!("cannot read `{shown}`: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "`{shown}` is a directory, not a file; use Glob or Bash `ls` to list it"
        ));
    }
    if let Some(media_type) = image_media_type(path) {
        if meta.len() > MAX_IMAGE_BYTES {
            return ToolOutput::error(format!(
                "`{shown}` is an image of {} bytes, larger than the {MAX_IMAGE_BYTES}-byte limit",
                meta.len()
            ));
        }
        return match std::fs::read(path) {
            Ok(bytes) => ToolOutput::image(
                media_type,
                base64::engine::general_purpose::STANDARD.encode(bytes),
            ),
            Err(e) => ToolOutput::error(format!("cannot read `{shown}`: {e}")),
        };
    }
    match read_lines(
        path,
        offset.unwrap_or(1).max(1),
        limit.unwrap_or(DEFAULT_READ_LIMIT),
    ) {
        Ok(Lines::Binary) => ToolOutput::error(format!(
            "`{shown}` looks like a binary file (it contains NUL bytes); it cannot be read as text"
        )),
        Ok(Lines::Text {
            text,
            first,
            last,
            total,
            byte_capped,
        }) => {
            if total == 0 {
                return ToolOutput::text(format!("(`{shown}` is empty)"));
            }
            if first > total {
                return ToolOutput::error(format!(
                    "offset {first} is past the end of `{shown}`, which has {total} lines"
                ));
            }
            let mut out = text;
            if last < total {
                let why = if byte_capped {
                    " (output size cap reached)"
                } else {
                    ""
                };
                out.push_str(&format!(
                    "\n[showing lines {first}-{last} of {total}{why}; use offset={} to read on]",
                    last + 1
                ));
            }
            ToolOutput::text(out)
        }
        Err(e) => ToolOutput::error(format!("cannot read `{shown}`: {e}")),
    }
}

enum Lines {
    Binary,
    Text {
        text: String,
        first: usize,
        last: usize,
        total: usize,
        byte_capped: bool,
    },
}

fn read_lines(path: &Path, first: usize, limit: usize) -> std::io::Result<Lines> {
    let mut file = std::fs::File::open(path)?;
    let mut sniff = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)?;
    if sniff.contains(&0) {
        return Ok(Lines::Binary);
    }
    let reader = BufReader::new(std::io::Cursor::new(sniff).chain(file));
    let mut text = String::new();
    let mut total = 0;
    let mut last = first.saturating_sub(1);
    let mut byte_capped = false;
    for line in reader.split(b'\n') {
        let line = line?;
        total += 1;
        if total < first || total >= first.saturating_add(limit) || byte_capped {
            continue;
        }
        let line = String::from_utf8_lossy(&line);
        let line = cut_line(line.strip_suffix('\r').unwrap_or(&line), MAX_LINE_CHARS);
        let numbered = format!("{total:>6}\t{line}\n");
        if text.len() + numbered.len() > MAX_READ_OUTPUT_BYTES {
            byte_capped = true;
            continue;
        }
        text.push_str(&numbered);
        last = total;
    }
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(Lines::Text {
        text,
        first,
        last,
        total,
        byte_capped,
    })
}
