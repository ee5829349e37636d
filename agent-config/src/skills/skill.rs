//! One skill: its `SKILL.md` read and checked against the Agent Skills
//! format (agentskills.io).
//!
//! Invariants: a [`Skill`] exists only if its frontmatter passed every
//! check below; every [`SkillError`] names the `SKILL.md` and, except for a
//! file that cannot be read, the line (and key) it is about.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::frontmatter::{self, FrontmatterError, Located, Mapping};
use crate::json::type_name;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// The keys a `SKILL.md` frontmatter may have (any other is an error, as in
/// the format's reference validator).
pub const SKILL_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// Longest skill name, in characters (the format's limit).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters (the format's limit: the catalog
/// carries every description in every system prompt).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters (the format's limit).
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// The line reported for the file as a whole (the opening fence).
const FILE_LINE: usize = 1;

/// Why a skill folder is not a valid skill. Every variant names the
/// `SKILL.md`; all but `Read` the line.
///
/// ```
/// use loopwright_config::skills::Skill;
/// let err = Skill::parse("---\nname: PDF\ndescription: Reads PDFs.\n---\n", "skills/PDF".as_ref()).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "skills/PDF/SKILL.md:2: name: `PDF` may hold only lowercase letters a-z, digits and `-` (found `P`)"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The `SKILL.md` could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not a `SKILL.md`: no frontmatter, one never closed,
    /// YAML that does not parse, or a file named in the wrong case.
    #[error("{}:{line}: {message}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A key is missing, unknown, or has a value the format does not allow.
    #[error("{}:{line}: {key}: {message}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// The key path (`name`, `metadata.version`).
        key: String,
        /// Its line (the frontmatter's first line for a missing key).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// A skill: a folder whose `SKILL.md` has `name` and `description` in its
/// frontmatter and the skill's instructions in its body. The folder may
/// hold more files (`scripts/`, `references/`, `assets/`).
///
/// ```
/// let text = "---\nname: pdf-reader\ndescription: Reads PDF files.\nmetadata:\n  version: \"1.0\"\n---\nUse pdftotext.\n";
/// let skill = loopwright_config::skills::Skill::parse(text, "skills/pdf-reader".as_ref()).unwrap();
/// assert_eq!((skill.name.as_str(), skill.description.as_str()), ("pdf-reader", "Reads PDF files."));
/// assert_eq!((skill.metadata["version"].as_str(), skill.body.as_str()), ("1.0", "Use pdftotext.\n"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skill {
    /// 1-64 characters of `a-z`, `0-9` and `-` (not at either end, never
    /// two in a row): the folder's name.
    pub name: String,
    /// What the skill does and when to use it (the catalog shows it).
    pub description: String,
    /// `license`: a licence name or a file of the skill.
    pub license: Option<String>,
    /// `compatibility`: what the skill needs of its environment.
    pub compatibility: Option<String>,
    /// `metadata`: free string keys and values.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools` (experimental in the format), split at whitespace.
    pub allowed_tools: Vec<String>,
    /// The skill's folder ([`Skill::load`] resolves its symlinks).
    pub dir: PathBuf,
    /// The instructions: the `SKILL.md` after its frontmatter.
    pub body: String,
}

impl Skill {
    /// Read and check the skill in folder `dir`.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let folder = dir.path().join("notes");
    /// std::fs::create_dir(&folder).unwrap();
    /// std::fs::write(folder.join("SKILL.md"), "---\nname: notes\ndescription: Takes notes.\n---\nWrite them down.\n").unwrap();
    /// let skill = loopwright_config::skills::Skill::load(&folder).unwrap();
    /// assert_eq!(skill.dir, folder.canonicalize().unwrap());
    /// ```
    pub fn load(dir: &Path) -> Result<Self, SkillError> {
        let path = dir.join(SKILL_FILE);
        let text = crate::textfile::read_text_file(&path).map_err(|source| SkillError::Read {
            path: path.clone(),
            source,
        })?;
        let mut skill = Self::parse(&text, dir)?;
        if let Ok(canonical) = std::fs::canonicalize(dir) {
            skill.dir = canonical;
        }
        Ok(skill)
    }

    /// Check the text of the `SKILL.md` of folder `dir` (whose last
    /// component must be the skill's name; nothing is read from disk).
    pub fn parse(text: &str, dir: &Path) -> Result<Self, SkillError> {
        let path = dir.join(SKILL_FILE);
        let format = |line: usize, message: String| SkillError::Format {
            path: path.clone(),
            line,
            message,
        };
        let document = frontmatter::parse(text).map_err(|e| match e {
            FrontmatterError::Unclosed => format(FILE_LINE, frontmatter::UNCLOSED.into()),
            FrontmatterError::Syntax {
                line,
                column,
                message,
            } => format(line, format!("invalid YAML (column {column}): {message}")),
            FrontmatterError::Value(located) => key_error(&path, located),
        })?;
        let Some(fm) = document.frontmatter else {
            return Err(format(
                FILE_LINE,
                "no YAML frontmatter: a SKILL.md starts with a `---` line, then `name` and `description`, \
                 then a `---` line"
                    .into(),
            ));
        };
        let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        read(&fm, folder, dir, document.body).map_err(|located| key_error(&path, located))
    }

    /// The skill's `SKILL.md`.
    ///
    /// ```
    /// let skill = loopwright_config::skills::Skill::parse("---\nname: a\ndescription: b\n---\n", "s/a".as_ref()).unwrap();
    /// assert_eq!(skill.file(), std::path::Path::new("s/a/SKILL.md"));
    /// ```
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// A located problem as [`SkillError::Key`].
fn key_error(path: &Path, (key, line, message): Located) -> SkillError {
    SkillError::Key {
        path: path.to_path_buf(),
        key,
        line,
        message,
    }
}

/// The skill a checked frontmatter and body describe.
fn read(fm: &Mapping, folder: &str, dir: &Path, body: &str) -> Result<Skill, Located> {
    if let Some((key, line)) = fm.unknown(fm.root(), "", SKILL_KEYS) {
        let message = format!("unknown key (a SKILL.md has only {})", SKILL_KEYS.join(", "));
        return Err((key, line, message));
    }
    let required = |key: &str, what: &str| fm.invalid(key, format!("required: {what}"));
    let name = fm.string("name")?.ok_or_else(|| {
        required(
            "name",
            "1-64 characters of a-z, 0-9 and `-`, the name of the skill's folder",
        )
    })?;
    check_name(&name, folder).map_err(|m| fm.invalid("name", m))?;
    let description = fm
        .string("description")?
        .ok_or_else(|| required("description", "what the skill does and when to use it"))?;
    if description.trim().is_empty() {
        return Err(fm.invalid("description", "must not be empty"));
    }
    check_length(&description, MAX_DESCRIPTION_CHARS).map_err(|m| fm.invalid("description", m))?;
    let compatibility = fm.string("compatibility")?;
    if let Some(text) = &compatibility {
        check_length(text, MAX_COMPATIBILITY_CHARS).map_err(|m| fm.invalid("compatibility", m))?;
    }
    let allowed_tools = match fm.get("allowed-tools") {
        None => Vec::new(),
        Some(Value::String(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(other) => {
            return Err(fm.invalid(
                "allowed-tools",
                format!(
                    "expected a string of tool names separated by spaces, got {}",
                    type_name(other)
                ),
            ));
        }
    };
    Ok(Skill {
        name,
        description,
        license: fm.string("license")?,
        compatibility,
        metadata: metadata(fm)?,
        allowed_tools,
        dir: dir.to_path_buf(),
        body: body.to_owned(),
    })
}

/// `metadata`: a mapping of strings to strings.
fn metadata(fm: &Mapping) -> Result<BTreeMap<String, String>, Located> {
    let Some(value) = fm.get("metadata") else {
        return Ok(BTreeMap::new());
    };
    let Value::Object(map) = value else {
        return Err(fm.invalid(
            "metadata",
            format!(
                "expected a mapping of strings to strings, got {}",
                type_name(value)
            ),
        ));
    };
    map.iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key.clone(), text.clone())),
            other => {
                let hint = match other {
                    Value::Number(_) | Value::Bool(_) => format!(" (quote it: \"{other}\")"),
                    _ => String::new(),
                };
                let message = format!("expected a string, got {}{hint}", type_name(other));
                Err(fm.invalid(&format!("metadata.{key}"), message))
            }
        })
        .collect()
}

/// At most `max` characters.
fn check_length(text: &str, max: usize) -> Result<(), String> {
    let chars = text.chars().count();
    if chars > max {
        return Err(format!("{chars} characters; at most {max}"));
    }
    Ok(())
}

/// The format's rules for a name, and that it names its folder.
fn check_name(name: &str, folder: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "`{name}` is {} characters; at most {MAX_NAME_CHARS}",
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "`{name}` may hold only lowercase letters a-z, digits and `-` (found `{bad}`)"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(format!("`{name}` must not start or end with `-`"));
    }
    if name.contains("--") {
        return Err(format!("`{name}` must not hold `--`"));
    }
    if name != folder {
        return Err(format!(
            "`{name}` must be the name of the skill's folder, `{folder}`"
        ));
    }
    Ok(())
}
