//! [`coding_tools`]: the six tools as one native [`ToolSource`].

use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::{SourceKind, Tool, ToolSource, ToolSourceError};

#[cfg(unix)]
use crate::BashTool;
use crate::{EditTool, GlobTool, GrepTool, ReadTool, Workspace, WriteTool};

/// The name of the coding tools' source.
pub const CODING_TOOLS_SOURCE: &str = "coding";

const INSTRUCTIONS: &str = "Coding tools work inside the workspace directory; relative paths are \
taken from its root. Prefer Read, Edit, Write, Glob and Grep over shell equivalents in Bash.";

/// Read, Write, Edit, Bash (on Unix), Glob and Grep working in one [`Workspace`]: a
/// native source (bare names, priority over MCP tools of the same name).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use loopwright_types::{SourceKind, ToolSource};
/// let tools = loopwright_tools::coding_tools(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert_eq!(tools.kind(), SourceKind::Native);
/// let names: Vec<String> = tools.tools().await.unwrap().iter().map(|t| t.definition().name.clone()).collect();
/// assert_eq!(names, ["Read", "Write", "Edit", "Bash", "Glob", "Grep"]);
/// # }
/// ```
pub fn coding_tools(workspace: Workspace) -> CodingTools {
    CodingTools::new(Arc::new(workspace))
}

/// The coding tools as a [`ToolSource`]; see [`coding_tools`].
pub struct CodingTools {
    workspace: Arc<Workspace>,
    tools: Vec<Arc<dyn Tool>>,
}

impl CodingTools {
    /// The six tools sharing `workspace`.
    ///
    /// ```
    /// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
    /// let tools = loopwright_tools::CodingTools::new(ws);
    /// assert_eq!(tools.workspace().mode(), loopwright_tools::WorkspaceMode::Limited);
    /// ```
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ReadTool::new(workspace.clone())),
            Arc::new(WriteTool::new(workspace.clone())),
            Arc::new(EditTool::new(workspace.clone())),
        ];
        #[cfg(unix)]
        tools.push(Arc::new(BashTool::new(workspace.clone())));
        tools.push(Arc::new(GlobTool::new(workspace.clone())));
        tools.push(Arc::new(GrepTool::new(workspace.clone())));
        Self { workspace, tools }
    }

    /// The workspace the tools work in.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}

impl std::fmt::Debug for CodingTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodingTools")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ToolSource for CodingTools {
    fn name(&self) -> &str {
        CODING_TOOLS_SOURCE
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Native
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        Ok(self.tools.clone())
    }

    fn instructions(&self) -> Option<String> {
        Some(INSTRUCTIONS.to_owned())
    }
}
