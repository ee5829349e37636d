//! The `Glob` tool: find files by name pattern, newest first.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use globset::GlobBuilder;
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use crate::util::{blocking, parse_input};
use crate::walk::walker;
use crate::workspace::Workspace;

/// Paths listed at most (more is noise to a model; it should narrow the
/// pattern).
pub const MAX_GLOB_RESULTS: usize = 200;

fn description() -> String {
    format!(
        "Find files whose path matches a glob pattern, such as `**/*.rs` or \
`src/**/test_*.py`. The pattern is matched against paths relative to `path` (default: the \
workspace root); `*` does not cross `/`, `**` matches any number of directories, `{{a,b}}` \
alternatives are allowed. Files ignored by .gitignore are skipped. Returns matching file paths, \
most recently modified first, at most {MAX_GLOB_RESULTS} (with a note of how many more matched)."
    )
}

/// Input of [`GlobTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GlobInput {
    /// Glob pattern, e.g. `**/*.rs`.
    pub pattern: String,
    /// Directory to search in (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
}

/// The `Glob` tool.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert!(loopwright_tools::GlobTool::new(ws).definition().annotations.read_only);
/// ```
#[derive(Debug)]
pub struct GlobTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl GlobTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Glob", description(), input_schema_for::<GlobInput>())
            .with_annotations(ToolAnnotations::default().read_only(true).idempotent(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for GlobTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: GlobInput = parse_input(input)?;
        let base = match self.workspace.resolve(input.path.as_deref().unwrap_or(".")) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::error(e.to_string())),
        };
        // An absolute pattern under the base is taken relative to it.
        let pattern = match Path::new(&input.pattern).strip_prefix(&base) {
            Ok(rel) if Path::new(&input.pattern).is_absolute() => rel.to_string_lossy().into_owned(),
            _ => input.pattern.clone(),
        };
        let matcher = match GlobBuilder::new(&pattern).literal_separator(true).build() {
            Ok(g) => g.compile_matcher(),
            Err(e) => return Ok(ToolOutput::error(format!("invalid glob pattern: {e}"))),
        };
        let workspace = self.workspace.clone();
        let cancel = ctx.cancellation().clone();
        blocking(&ctx, move || {
            if !base.is_dir() {
                return ToolOutput::error(format!("`{}` is not a directory", workspace.display(&base)));
            }
            let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
            for entry in walker(&base).build() {
                if cancel.is_cancelled() {
                    return ToolOutput::error("cancelled");
                }
                let Ok(entry) = entry else { continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let Ok(rel) = entry.path().strip_prefix(&base) else {
                    continue;
                };
                if matcher.is_match(rel) {
                    let modified = entry.metadata().ok().and_then(|m| m.modified().ok());
                    found.push((modified.unwrap_or(SystemTime::UNIX_EPOCH), entry.into_path()));
                }
            }
            render(&workspace, found)
        })
        .await
    }
}

fn render(workspace: &Workspace, mut found: Vec<(SystemTime, PathBuf)>) -> ToolOutput {
    if found.is_empty() {
        return ToolOutput::text("No files found");
    }
    // Newest first; ties by path so the order is stable.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: Vec<String> = found
        .iter()
        .take(MAX_GLOB_RESULTS)
        .map(|(_, p)| workspace.display(p))
        .collect();
    if total > MAX_GLOB_RESULTS {
        out.push(format!(
            "[{} more files not shown ({total} matched); use a narrower pattern or path]",
            total - MAX_GLOB_RESULTS
        ));
    }
    ToolOutput::text(out.join("\n"))
}
