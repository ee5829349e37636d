//! Helpers shared by the integration tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::Path;
use std::sync::Arc;

use loopwright_core::{Tool, ToolContext, ToolError, ToolOutput, ToolOutputPart};
use loopwright_tools::{BashTool, EditTool, GlobTool, GrepTool, ReadTool, Workspace, WriteTool};
use serde_json::Value;

/// The six tools over one workspace.
pub struct Tools {
    pub ws: Arc<Workspace>,
    pub read: ReadTool,
    pub write: WriteTool,
    pub edit: EditTool,
    pub bash: BashTool,
    pub glob: GlobTool,
    pub grep: GrepTool,
}

impl Tools {
    pub fn new(ws: Workspace) -> Self {
        let ws = Arc::new(ws);
        Self {
            read: ReadTool::new(ws.clone()),
            write: WriteTool::new(ws.clone()),
            edit: EditTool::new(ws.clone()),
            bash: BashTool::new(ws.clone()),
            glob: GlobTool::new(ws.clone()),
            grep: GrepTool::new(ws.clone()),
            ws,
        }
    }

    pub fn limited(root: &Path) -> Self {
        Self::new(Workspace::limited(root).unwrap())
    }
}

/// Call a tool with a fresh context.
pub async fn call(tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
    tool.call(input, ToolContext::new("test")).await
}

/// Call a tool and expect a successful (non-error) output; return its text.
pub async fn ok(tool: &dyn Tool, input: Value) -> String {
    let out = call(tool, input.clone()).await.unwrap();
    assert!(
        !out.is_error,
        "{} {input} failed: {}",
        tool.definition().name,
        out.as_text()
    );
    out.as_text()
}

/// Call a tool and expect an error output; return its text.
pub async fn err(tool: &dyn Tool, input: Value) -> String {
    let out = call(tool, input.clone()).await.unwrap();
    assert!(
        out.is_error,
        "{} {input} should fail, got: {}",
        tool.definition().name,
        out.as_text()
    );
    out.as_text()
}

/// The first image part of an output.
pub fn image_of(out: &ToolOutput) -> Option<(String, String)> {
    out.parts.iter().find_map(|p| match p {
        ToolOutputPart::Image {
            image: loopwright_core::message::ImageSource::Base64 { media_type, data },
        } => Some((media_type.clone(), data.clone())),
        _ => None,
    })
}
