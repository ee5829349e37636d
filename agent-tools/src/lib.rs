//! # loopwright-tools
//!
//! Coding tools for agents — `Read`, `Write`, `Edit`, `Bash`, `Glob` and
//! `Grep` — confined to a [`Workspace`]. In [`WorkspaceMode::Limited`] every
//! path, after resolving `..` and every symlink, must lie inside the
//! workspace root; a path outside is an error result naming the path and
//! the root. The sandbox covers the paths the tools take; `Bash` runs a real
//! shell, whose commands are not confined (only its working directory is).
//!
//! [`coding_tools`] returns the six as one native
//! [`ToolSource`](loopwright_types::ToolSource) for a [`ToolSet`](loopwright_types::ToolSet).
//!
//! ```
//! use loopwright_types::ToolSet;
//! use loopwright_tools::{coding_tools, Workspace};
//!
//! let workspace = Workspace::limited(std::env::temp_dir()).unwrap();
//! let tools = ToolSet::builder().source(coding_tools(workspace)).build();
//! # let _ = tools;
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

// Process groups are a Unix notion: Bash is Unix-only for now.
#[cfg(unix)]
mod bash;
mod caps;
mod edit;
mod glob;
mod grep;
mod read;
mod source;
mod util;
mod walk;
mod workspace;
mod write;

#[cfg(unix)]
pub use bash::{
    BASH_HEAD_BYTES, BASH_TAIL_BYTES, BashInput, BashTool, DEFAULT_BASH_TIMEOUT, MAX_BASH_TIMEOUT,
};
pub use caps::HeadTail;
pub use edit::{DIFF_CAP_BYTES, DIFF_CONTEXT_LINES, EditInput, EditTool};
pub use glob::{GlobInput, GlobTool, MAX_GLOB_RESULTS};
pub use grep::{
    GrepInput, GrepTool, MAX_GREP_CONTEXT, MAX_GREP_FILES, MAX_GREP_LINE_CHARS, MAX_GREP_LINES,
    MAX_GREP_OUTPUT_BYTES, OutputMode,
};
pub use read::{
    DEFAULT_READ_LIMIT, MAX_IMAGE_BYTES, MAX_LINE_CHARS, MAX_READ_OUTPUT_BYTES, ReadInput, ReadTool,
};
pub use source::{CODING_TOOLS_SOURCE, CodingTools, coding_tools};
pub use workspace::{Workspace, WorkspaceError, WorkspaceMode};
pub use write::{WriteInput, WriteTool};
