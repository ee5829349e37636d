//! The `Write` tool: create or overwrite a file.

use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use crate::util::{blocking, parse_input};
use crate::workspace::Workspace;

const DESCRIPTION: &str = "Write a file in the workspace, replacing it if it exists and creating \
missing parent directories. Give the complete new content. To change part of an existing file, \
prefer Edit, which sends only the change. Reports the number of bytes written.";

/// Input of [`WriteTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct WriteInput {
    /// Path of the file, absolute or relative to the workspace root.
    pub file_path: String,
    /// The complete content to write.
    pub content: String,
}

/// The `Write` tool.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert!(loopwright_tools::WriteTool::new(ws).definition().annotations.destructive);
/// ```
#[derive(Debug)]
pub struct WriteTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl WriteTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Write", DESCRIPTION, input_schema_for::<WriteInput>())
            .with_annotations(ToolAnnotations::default().destructive(true).idempotent(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for WriteTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: WriteInput = parse_input(input)?;
        let path = match self.workspace.resolve(&input.file_path) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::error(e.to_string())),
        };
        let shown = self.workspace.display(&path);
        blocking(&ctx, move || {
            if path.is_dir() {
                return ToolOutput::error(format!("`{shown}` is a directory"));
            }
            if let Some(parent) = path.parent()
                && let Err(e) = std::fs::create_dir_all(parent)
            {
                return ToolOutput::error(format!("cannot create the directories of `{shown}`: {e}"));
            }
            match std::fs::write(&path, input.content.as_bytes()) {
                Ok(()) => ToolOutput::text(format!("Wrote {} bytes to {shown}", input.content.len())),
                Err(e) => ToolOutput::error(format!("cannot write `{shown}`: {e}")),
            }
        })
        .await
    }
}
