//! Finding skills: every folder with a `SKILL.md` directly under the
//! directories given, in precedence order; and the catalog the model reads.
//!
//! Invariants: nothing is left out silently: an invalid skill, a name
//! already taken by an earlier directory, a directory that exists but
//! cannot be read, each is a [`SkillWarning`]; a directory that does not
//! exist has no skills and is not a warning; a directory given twice
//! (however it is spelled) is searched once; skills keep the order of
//! their directories, then of their folder names.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::skill::{SKILL_FILE, Skill, SkillError};

/// Where skills live under a project and under the home directory.
pub const SKILLS_DIR: &str = ".agents/skills";

/// What the catalog says before the list: when to load a skill, and how to
/// read its files.
const CATALOG_PREAMBLE: &str = "Skills are folders of instructions, scripts and resources for particular \
tasks. When a task matches a skill's description below, call the load_skill tool with the skill's name before \
you start, and follow the instructions it returns. When those instructions refer to files of the skill (such as \
references/... or scripts/...), read them with the read_skill_file tool, giving the skill's name and the file's \
path relative to the skill's folder.";

/// Something [`Skills::discover`] left out, and why.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("notes")).unwrap();
/// std::fs::write(dir.path().join("notes/SKILL.md"), "---\nname: notes\n---\n").unwrap();
/// let skills = loopwright_config::skills::Skills::discover([dir.path()]);
/// assert!(skills.is_empty());
/// let warning = skills.warnings()[0].to_string();
/// assert!(warning.ends_with("notes/SKILL.md:2: description: required: what the skill does and when to use it"), "{warning}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillWarning {
    /// A folder's `SKILL.md` is not valid: the skill is left out.
    #[error("skill left out: {0}")]
    Invalid(#[from] SkillError),
    /// An earlier directory has a skill of the same name: this one is left
    /// out.
    #[error(
        "skill {name} of {} is left out: {} has the same name (the earlier directory wins)",
        hidden.display(),
        kept.display()
    )]
    Clash {
        /// The name.
        name: String,
        /// The `SKILL.md` of the skill kept.
        kept: PathBuf,
        /// The `SKILL.md` of the skill left out.
        hidden: PathBuf,
    },
    /// A directory given exists but cannot be listed.
    #[error("skills directory {}: {message}", dir.display())]
    Unreadable {
        /// The directory.
        dir: PathBuf,
        /// The operating system's error.
        message: String,
    },
    /// A directory named (not one of the defaults) does not exist.
    #[error("skills directory {} does not exist (check the path given to --skills or in `skills`)", dir.display())]
    MissingDir {
        /// The directory.
        dir: PathBuf,
    },
}

/// The skills found in some directories, in precedence order, with what
/// was left out.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("pdf-reader")).unwrap();
/// std::fs::write(dir.path().join("pdf-reader/SKILL.md"), "---\nname: pdf-reader\ndescription: Reads PDF files.\n---\nRun pdftotext.\n").unwrap();
/// let skills = loopwright_config::skills::Skills::discover([dir.path(), &dir.path().join("missing")]);
/// assert_eq!(skills.get("pdf-reader").unwrap().body, "Run pdftotext.\n");
/// // A directory named that does not exist is said (the defaults need not exist).
/// assert!(skills.warnings()[0].to_string().contains("missing does not exist"));
/// ```
#[derive(Debug, Default)]
pub struct Skills {
    skills: Vec<Skill>,
    warnings: Vec<SkillWarning>,
}

impl Skills {
    /// Every skill folder directly under each of `dirs`; on a name clash
    /// the earlier directory wins (and the clash is a warning).
    pub fn discover<P: AsRef<Path>>(dirs: impl IntoIterator<Item = P>) -> Self {
        let mut found = Self::default();
        let mut searched = HashSet::new();
        let mut by_name: HashMap<String, PathBuf> = HashMap::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            if !searched.insert(key) {
                continue;
            }
            for folder in found.folders(dir) {
                match Skill::load(&folder) {
                    Ok(skill) => match by_name.get(&skill.name) {
                        Some(kept) => found.warnings.push(SkillWarning::Clash {
                            name: skill.name.clone(),
                            kept: kept.clone(),
                            hidden: folder.join(SKILL_FILE),
                        }),
                        None => {
                            by_name.insert(skill.name.clone(), folder.join(SKILL_FILE));
                            found.skills.push(skill);
                        }
                    },
                    Err(e) => found.warnings.push(e.into()),
                }
            }
        }
        found
    }

    /// The folders of `dir` that hold a `SKILL.md`, sorted by name; a
    /// `skill.md` in another case is a warning.
    fn folders(&mut self, dir: &Path) -> Vec<PathBuf> {
        let unreadable = |e: std::io::Error| SkillWarning::Unreadable {
            dir: dir.to_path_buf(),
            message: e.to_string(),
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !Self::default_dirs().iter().any(|d| d == dir) {
                    self.warnings.push(SkillWarning::MissingDir {
                        dir: dir.to_path_buf(),
                    });
                }
                return Vec::new();
            }
            Err(e) => {
                self.warnings.push(unreadable(e));
                return Vec::new();
            }
        };
        let mut folders = Vec::new();
        for entry in entries {
            match entry {
                Ok(entry) if entry.path().is_dir() => folders.push(entry.path()),
                Ok(_) => {}
                Err(e) => self.warnings.push(unreadable(e)),
            }
        }
        folders.sort();
        folders.retain(|folder| {
            // Not only a regular file: a FIFO or a device named SKILL.md is
            // kept, so that loading it says what it is (and refuses it).
            if folder.join(SKILL_FILE).exists() {
                return true;
            }
            if let Some(misnamed) = misnamed_skill_file(folder) {
                self.warnings.push(SkillWarning::Invalid(SkillError::Format {
                    path: misnamed,
                    line: 1,
                    message: format!("a skill's file must be named {SKILL_FILE}, in upper case"),
                }));
            }
            false
        });
        folders
    }

    /// `./.agents/skills`, then `~/.agents/skills` (when `HOME` is set).
    ///
    /// ```
    /// let dirs = loopwright_config::skills::Skills::default_dirs();
    /// assert!(dirs[0].ends_with(".agents/skills"));
    /// ```
    pub fn default_dirs() -> Vec<PathBuf> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        std::iter::once(cwd)
            .chain(home)
            .map(|dir| dir.join(SKILLS_DIR))
            .collect()
    }

    /// The directories to search, in precedence order: those `given` (the
    /// command line's), then those `configured` (a configuration file's);
    /// [`default_dirs`](Self::default_dirs) only when neither names any
    /// (`Some(&[])` configured means no skills).
    ///
    /// ```
    /// use loopwright_config::skills::Skills;
    /// use std::path::PathBuf;
    /// let (a, b) = (PathBuf::from("a"), PathBuf::from("b"));
    /// assert_eq!(Skills::dirs(&[a.clone()], Some(&[b.clone()])), [a, b]);
    /// assert_eq!(Skills::dirs(&[], Some(&[])), Vec::<PathBuf>::new());
    /// assert_eq!(Skills::dirs(&[], None), Skills::default_dirs());
    /// ```
    pub fn dirs(given: &[PathBuf], configured: Option<&[PathBuf]>) -> Vec<PathBuf> {
        if given.is_empty() && configured.is_none() {
            return Self::default_dirs();
        }
        given
            .iter()
            .chain(configured.unwrap_or_default())
            .cloned()
            .collect()
    }

    /// The skills, in precedence order.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// How many skills were found.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// What was left out, and why.
    pub fn warnings(&self) -> &[SkillWarning] {
        &self.warnings
    }

    /// The system-prompt section listing every skill's name and
    /// description (not its body), in the format's `<available_skills>`
    /// form with the values HTML-escaped; `None` without skills.
    ///
    /// ```
    /// let skills = loopwright_config::skills::Skills::default();
    /// assert_eq!(skills.catalog(), None);
    /// ```
    pub fn catalog(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut text = format!("{CATALOG_PREAMBLE}\n\n<available_skills>\n");
        for skill in &self.skills {
            text.push_str(&format!(
                "<skill>\n<name>{}</name>\n<description>{}</description>\n</skill>\n",
                escape(&skill.name),
                escape(&skill.description)
            ));
        }
        text.push_str("</available_skills>");
        Some(text)
    }
}

/// A `skill.md` in another case than `SKILL.md` in `folder`, if any.
fn misnamed_skill_file(folder: &Path) -> Option<PathBuf> {
    std::fs::read_dir(folder)
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.eq_ignore_ascii_case(SKILL_FILE))
        })
}

/// Text as HTML escapes it (`&`, `<`, `>`, `"`, `'`), as the format's
/// reference implementation writes the catalog.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            other => out.push(other),
        }
    }
    out
}
