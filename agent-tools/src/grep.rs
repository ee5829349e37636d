//! The `Grep` tool: search file contents with ripgrep's libraries.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use globset::{Glob, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::Value;

use crate::caps::cut_line;
use crate::util::{blocking, parse_input};
use crate::walk::walker;
use crate::workspace::Workspace;

/// Output lines (matches and context) returned at most in `content` mode.
pub const MAX_GREP_LINES: usize = 500;
/// Files listed at most in `files_with_matches` and `count` modes.
pub const MAX_GREP_FILES: usize = 200;
/// Bytes of output lines returned at most: under the agent loop's default
/// output cap, so the note on what was left out is never cut off.
pub const MAX_GREP_OUTPUT_BYTES: usize = loopwright_types::DEFAULT_MAX_TOOL_OUTPUT_BYTES - 1024;
/// Characters kept of one matching line (minified files have huge lines).
pub const MAX_GREP_LINE_CHARS: usize = 500;
/// Context lines allowed around a match (more is a Read, not a Grep).
pub const MAX_GREP_CONTEXT: usize = 20;

fn description() -> String {
    format!(
        "Search file contents with a regular expression (ripgrep syntax, e.g. \
`fn\\s+main` or `TODO|FIXME`). Searches `path` (a file or directory; default the workspace root), \
skipping files ignored by .gitignore and binary files. `glob` limits the files searched (e.g. \
`*.rs` or `src/**/*.ts`). `output_mode`: `files_with_matches` (default) lists matching files; \
`content` shows matching lines as `path:line:text` (context lines as `path-line-text`, with \
`context` lines around each match, at most {MAX_GREP_CONTEXT}); `count` shows `path:count`. Results \
are capped ({MAX_GREP_LINES} lines or {MAX_GREP_FILES} files) with a note of how many were left out; \
narrow the search when you see it."
    )
}

/// What Grep returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputMode {
    /// Matching lines.
    Content,
    /// The paths of files with a match.
    #[default]
    FilesWithMatches,
    /// The number of matching lines in each file.
    Count,
}

/// Input of [`GrepTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GrepInput {
    /// Regular expression to search for.
    pub pattern: String,
    /// File or directory to search (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs`.
    #[serde(default)]
    pub glob: Option<String>,
    /// `content`, `files_with_matches` (default) or `count`.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Lines of context before and after each match (content mode).
    #[serde(default)]
    pub context: Option<usize>,
    /// Match case-insensitively.
    #[serde(default)]
    pub case_insensitive: bool,
}

/// The `Grep` tool.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert!(loopwright_tools::GrepTool::new(ws).definition().annotations.read_only);
/// ```
#[derive(Debug)]
pub struct GrepTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl GrepTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Grep", description(), input_schema_for::<GrepInput>())
            .with_annotations(ToolAnnotations::default().read_only(true).idempotent(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for GrepTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: GrepInput = parse_input(input)?;
        let base = match self.workspace.resolve(input.path.as_deref().unwrap_or(".")) {
            Ok(p) => p,
            Err(e) => return Ok(ToolOutput::error(e.to_string())),
        };
        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(input.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&input.pattern)
        {
            Ok(m) => m,
            Err(e) => return Ok(ToolOutput::error(format!("invalid regular expression: {e}"))),
        };
        let filter = match input.glob.as_deref().map(Glob::new).transpose() {
            Ok(g) => g.map(|g| g.compile_matcher()),
            Err(e) => return Ok(ToolOutput::error(format!("invalid glob: {e}"))),
        };
        let workspace = self.workspace.clone();
        let cancel = ctx.cancellation().clone();
        blocking(&ctx, move || {
            let search = Search {
                workspace: &workspace,
                base: &base,
                matcher,
                filter,
                mode: input.output_mode,
                context: input.context.unwrap_or(0).min(MAX_GREP_CONTEXT),
            };
            search.run(|| cancel.is_cancelled())
        })
        .await
    }
}

struct Search<'a> {
    workspace: &'a Workspace,
    base: &'a Path,
    matcher: RegexMatcher,
    filter: Option<GlobMatcher>,
    mode: OutputMode,
    context: usize,
}

/// What the search found, capped.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    /// Bytes in `lines`.
    bytes: usize,
    /// Lines (content mode) or files left out by the cap.
    left_out: usize,
    files: usize,
}

impl Search<'_> {
    fn run(&self, cancelled: impl Fn() -> bool) -> ToolOutput {
        if !self.base.exists() {
            return ToolOutput::error(format!("`{}` does not exist", self.workspace.display(self.base)));
        }
        let context = if self.mode == OutputMode::Content {
            self.context
        } else {
            0
        };
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(context)
            .after_context(context)
            .build();
        let mut found = Found::default();
        let mut walk = walker(self.base);
        walk.sort_by_file_name(|a, b| a.cmp(b));
        for entry in walk.build() {
            if cancelled() {
                return ToolOutput::error("cancelled");
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) || !self.selected(entry.path()) {
                continue;
            }
            let shown = self.workspace.display(entry.path());
            let mut sink = FileSink {
                shown: &shown,
                mode: self.mode,
                found: &mut found,
                matches: 0,
                cancelled: &cancelled,
            };
            // An unreadable file is skipped, as ripgrep does.
            let _ = searcher.search_path(&self.matcher, entry.path(), &mut sink);
            let matches = sink.matches;
            if matches > 0 {
                self.file_done(&mut found, &shown, matches);
            }
        }
        self.render(found)
    }

    /// Whether the `glob` filter lets this file through.
    fn selected(&self, path: &Path) -> bool {
        let Some(filter) = &self.filter else { return true };
        let rel = path.strip_prefix(self.base).unwrap_or(path);
        filter.is_match(rel) || path.file_name().is_some_and(|name| filter.is_match(name))
    }

    fn file_done(&self, found: &mut Found, shown: &str, matches: usize) {
        found.files += 1;
        let entry = match self.mode {
            OutputMode::Content => return,
            OutputMode::FilesWithMatches => shown.to_owned(),
            OutputMode::Count => format!("{shown}:{matches}"),
        };
        if found.lines.len() < MAX_GREP_FILES && found.bytes + entry.len() < MAX_GREP_OUTPUT_BYTES {
            found.bytes += entry.len() + 1;
            found.lines.push(entry);
        } else {
            found.left_out += 1;
        }
    }

    fn render(&self, found: Found) -> ToolOutput {
        if found.files == 0 {
            return ToolOutput::text("No matches found");
        }
        let mut out = found.lines.join("\n");
        if found.left_out > 0 {
            let what = match self.mode {
                OutputMode::Content => "lines",
                _ => "files",
            };
            out.push_str(&format!(
                "\n[{} more {what} not shown ({} files matched); narrow the pattern, path or glob]",
                found.left_out, found.files
            ));
        }
        ToolOutput::text(out)
    }
}

/// Receives one file's matches.
struct FileSink<'a> {
    shown: &'a str,
    mode: OutputMode,
    found: &'a mut Found,
    matches: usize,
    /// Checked at each match, so one huge file does not outlive a cancel.
    cancelled: &'a dyn Fn() -> bool,
}

impl FileSink<'_> {
    fn push_line(&mut self, separator: char, line_number: Option<u64>, bytes: &[u8]) {
        if self.found.lines.len() >= MAX_GREP_LINES {
            self.found.left_out += 1;
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = cut_line(text, MAX_GREP_LINE_CHARS);
        let number = line_number.map_or_else(String::new, |n| n.to_string());
        let line = format!("{}{separator}{number}{separator}{text}", self.shown);
        if self.found.bytes + line.len() >= MAX_GREP_OUTPUT_BYTES {
            self.found.left_out += 1;
            return;
        }
        self.found.bytes += line.len() + 1;
        self.found.lines.push(line);
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        if (self.cancelled)() {
            return Ok(false);
        }
        match self.mode {
            // One match is enough to list the file.
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                self.push_line(':', mat.line_number(), mat.bytes());
                Ok(true)
            }
        }
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push_line('-', context.line_number(), context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        if self.found.lines.len() < MAX_GREP_LINES && self.found.bytes + 3 < MAX_GREP_OUTPUT_BYTES {
            self.found.bytes += 3;
            self.found.lines.push("--".to_owned());
        }
        Ok(true)
    }
}
