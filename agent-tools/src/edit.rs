//! The `Edit` tool: replace an exact string in a file and show the diff.

use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;
use similar::TextDiff;

use crate::caps::HeadTail;
use crate::util::{blocking, parse_input};
use crate::workspace::Workspace;

/// Lines of unchanged context around each change in the diff (as `diff -u`).
pub const DIFF_CONTEXT_LINES: usize = 3;
/// Bytes kept from the start and from the end of a long diff.
pub const DIFF_CAP_BYTES: usize = 16 * 1024;

const DESCRIPTION: &str = "Edit a text file by exact string replacement. `old_string` must match the \
file's text exactly, including whitespace and indentation (do not include Read's line-number \
prefixes), and must occur exactly once, unless `replace_all` is true, which replaces every \
occurrence. If it occurs several times, add surrounding lines to make it unique. Returns a unified \
diff of the change. Read the file first.";

/// Input of [`EditTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EditInput {
    /// Path of the file, absolute or relative to the workspace root.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// The `Edit` tool.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert_eq!(loopwright_tools::EditTool::new(ws).definition().name, "Edit");
/// ```
#[derive(Debug)]
pub struct EditTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl EditTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Edit", DESCRIPTION, input_schema_for::<EditInput>())
            .with_annotations(ToolAnnotations::default().destructive(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for EditTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: EditInput = parse_input(input)?;
        let path = match self.workspace.resolve(&input.file_path) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::error(e.to_string())),
        };
        let shown = self.workspace.display(&path);
        blocking(&ctx, move || {
            let before = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) => return ToolOutput::error(format!("cannot read `{shown}` as text: {e}")),
            };
            let after = match apply_edit(&before, &input, &shown) {
                Ok(after) => after,
                Err(message) => return ToolOutput::error(message),
            };
            if let Err(e) = std::fs::write(&path, after.as_bytes()) {
                return ToolOutput::error(format!("cannot write `{shown}`: {e}"));
            }
            ToolOutput::text(unified_diff(&before, &after, &shown))
        })
        .await
    }
}

/// The file's new text, or why the edit cannot be made.
fn apply_edit(before: &str, input: &EditInput, shown: &str) -> Result<String, String> {
    if input.old_string.is_empty() {
        return Err(
            "old_string is empty; give the exact text to replace (use Write to create a file)".into(),
        );
    }
    if input.old_string == input.new_string {
        return Err("old_string and new_string are the same; there is nothing to change".into());
    }
    let (old, new) = line_endings_of(before, &input.old_string, &input.new_string);
    let count = before.matches(old.as_str()).count();
    match count {
        0 => Err(format!(
            "old_string was not found in `{shown}`; it must match the file exactly, including \
             whitespace (Read the file again to check)"
        )),
        1 => Ok(before.replacen(old.as_str(), &new, 1)),
        _ if input.replace_all => Ok(before.replace(old.as_str(), &new)),
        n => Err(format!(
            "old_string occurs {n} times in `{shown}`; add surrounding context to make it unique, \
             or set replace_all to true to replace all {n}"
        )),
    }
}

/// The strings to use on this file: a model writes `\n`, so in a file with
/// CRLF line endings where `old` only matches as CRLF, both get CRLF.
fn line_endings_of(file: &str, old: &str, new: &str) -> (String, String) {
    let crlf = |s: &str| s.replace("\r\n", "\n").replace('\n', "\r\n");
    if old.contains('\n') && !old.contains('\r') && !file.contains(old) && file.contains(&crlf(old)) {
        (crlf(old), crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    }
}

/// A unified diff of the change, capped head and tail.
fn unified_diff(before: &str, after: &str, shown: &str) -> String {
    let diff = TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(DIFF_CONTEXT_LINES)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let mut capped = HeadTail::new(DIFF_CAP_BYTES, DIFF_CAP_BYTES);
    capped.push(diff.as_bytes());
    capped.render()
}
