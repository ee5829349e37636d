//! [`Workspace`]: the directory the coding tools work in, and the sandbox
//! check every path goes through.

use std::io;
use std::path::{Component, Path, PathBuf};

/// How many symlinks one path may go through before it is refused (the
/// Linux kernel's own limit, so a symlink loop ends).
const MAX_SYMLINK_HOPS: usize = 40;

/// Whether paths are confined to the workspace root.
///
/// ```
/// assert_eq!(loopwright_tools::WorkspaceMode::default(), loopwright_tools::WorkspaceMode::Limited);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WorkspaceMode {
    /// Every path, after resolving `..` and every symlink, must lie inside
    /// the root.
    #[default]
    Limited,
    /// No restriction: relative paths still resolve against the root.
    Full,
}

/// Why a path was refused.
///
/// ```
/// let e = loopwright_tools::WorkspaceError::OutsideRoot {
///     path: "../x".into(),
///     resolved: "/x".into(),
///     root: "/ws".into(),
/// };
/// assert!(e.to_string().contains("/ws"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The path resolves outside the root in [`WorkspaceMode::Limited`].
    #[error(
        "access denied: `{}` resolves to `{}`, which is outside the workspace root `{}`",
        path.display(),
        resolved.display(),
        root.display()
    )]
    OutsideRoot {
        /// The path as given.
        path: PathBuf,
        /// Where it leads once `..` and symlinks are resolved.
        resolved: PathBuf,
        /// The workspace root.
        root: PathBuf,
    },
    /// The path could not be resolved (a symlink loop, a permission error).
    #[error("cannot resolve `{}`: {message}", path.display())]
    Unresolvable {
        /// The path as given.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The directory the coding tools work in, and how strictly they are kept
/// inside it.
///
/// ```
/// use loopwright_tools::{Workspace, WorkspaceMode};
/// let dir = std::env::temp_dir();
/// let ws = Workspace::new(&dir, WorkspaceMode::Limited).unwrap();
/// assert!(ws.resolve("notes/todo.txt").unwrap().starts_with(ws.root()));
/// assert!(ws.resolve("/").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    mode: WorkspaceMode,
}

impl Workspace {
    /// A workspace at `root` (which must exist; it is canonicalised).
    ///
    /// ```
    /// let ws = loopwright_tools::Workspace::new(std::env::temp_dir(), loopwright_tools::WorkspaceMode::Full).unwrap();
    /// assert_eq!(ws.mode(), loopwright_tools::WorkspaceMode::Full);
    /// ```
    pub fn new(root: impl AsRef<Path>, mode: WorkspaceMode) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root `{}` is not a directory", root.display()),
            ));
        }
        Ok(Self { root, mode })
    }

    /// A [`WorkspaceMode::Limited`] workspace at `root`.
    ///
    /// ```
    /// let ws = loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap();
    /// assert_eq!(ws.mode(), loopwright_tools::WorkspaceMode::Limited);
    /// ```
    pub fn limited(root: impl AsRef<Path>) -> io::Result<Self> {
        Self::new(root, WorkspaceMode::Limited)
    }

    /// A [`WorkspaceMode::Full`] workspace at `root`.
    ///
    /// ```
    /// let ws = loopwright_tools::Workspace::full(std::env::temp_dir()).unwrap();
    /// assert!(ws.resolve("/").is_ok());
    /// ```
    pub fn full(root: impl AsRef<Path>) -> io::Result<Self> {
        Self::new(root, WorkspaceMode::Full)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The mode.
    pub fn mode(&self) -> WorkspaceMode {
        self.mode
    }

    /// Resolve a path given by the model: relative paths are taken from the
    /// root. In [`WorkspaceMode::Limited`] the result has every `..` and
    /// symlink resolved (for a path that does not exist yet, its nearest
    /// existing parent is) and must lie inside the root.
    ///
    /// ```
    /// let ws = loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap();
    /// assert!(ws.resolve("../outside.txt").is_err());
    /// ```
    pub fn resolve(&self, path: impl AsRef<Path>) -> Result<PathBuf, WorkspaceError> {
        let given = path.as_ref();
        let joined = self.root.join(given);
        if self.mode == WorkspaceMode::Full {
            return Ok(joined);
        }
        let resolved = resolve_fully(&joined).map_err(|e| WorkspaceError::Unresolvable {
            path: given.to_path_buf(),
            message: e.to_string(),
        })?;
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(WorkspaceError::OutsideRoot {
                path: given.to_path_buf(),
                resolved,
                root: self.root.clone(),
            })
        }
    }

    /// How a resolved path is shown to the model: relative to the root when
    /// inside it, absolute otherwise.
    ///
    /// ```
    /// let ws = loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap();
    /// assert_eq!(ws.display(&ws.root().join("a/b.rs")), "a/b.rs");
    /// ```
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Resolve every `..` and symlink of an absolute path. The part of the path
/// that does not exist yet is normalised lexically on top of its nearest
/// existing (canonical) ancestor; a dangling symlink is followed to where it
/// points.
fn resolve_fully(path: &Path) -> io::Result<PathBuf> {
    let mut next = Some(path.to_path_buf());
    let mut hops = 0;
    let mut current = PathBuf::new();
    while let Some(path) = next.take() {
        // `current` holds the canonical prefix; `missing` the names after the
        // first component that does not exist.
        current.clear();
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        let components: Vec<Component<'_>> = path.components().collect();
        for (index, component) in components.iter().enumerate() {
            match component {
                Component::Prefix(p) => current.push(p.as_os_str()),
                Component::RootDir => current.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if missing.pop().is_none() {
                        current.pop();
                    }
                }
                Component::Normal(name) if !missing.is_empty() => missing.push(name),
                Component::Normal(name) => {
                    let candidate = current.join(name);
                    match std::fs::symlink_metadata(&candidate) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            hops += 1;
                            if hops > MAX_SYMLINK_HOPS {
                                return Err(io::Error::other("too many levels of symbolic links"));
                            }
                            // Start over from the link's target (relative to
                            // the link's directory) followed by the rest.
                            let mut restart = current.join(std::fs::read_link(&candidate)?);
                            for rest in &components[index + 1..] {
                                restart.push(rest.as_os_str());
                            }
                            next = Some(restart);
                            break;
                        }
                        Ok(_) => current = candidate,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(name),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        if next.is_none() {
            for name in missing {
                current.push(name);
            }
            return Ok(current);
        }
    }
    Ok(current)
}
