//! The gitignore-aware directory walk shared by Glob and Grep.

use std::path::Path;

use ignore::WalkBuilder;

/// A walker over `base` that honours `.gitignore`, `.ignore` and git's
/// exclude files (inside a git repository or not), includes hidden files,
/// skips `.git` and does not follow symlinks.
pub(crate) fn walker(base: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}
