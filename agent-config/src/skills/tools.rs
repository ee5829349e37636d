//! Skills for a model: [`SkillsSource`], a native tool source whose
//! instructions are the catalog and whose tools load a skill
//! (`load_skill`) and read one of its files (`read_skill_file`).
//!
//! Invariants: without skills the source offers no tool and no
//! instructions; `read_skill_file` reads only inside the skill's folder: a
//! path with `..`, an absolute path, or one that leads out through a
//! symbolic link is refused with an error result before anything is read;
//! no result is larger than [`MAX_SKILL_FILE_BYTES`] of file content, and
//! a binary file is described, never returned.

use std::io::Read as _;
use std::path::{Component, Path};
use std::sync::Arc;

use async_trait::async_trait;
use loopwright_core::{
    Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, tool::ToolAnnotations, toolset::SourceKind,
};
use loopwright_core::{ToolSource, toolset::ToolSourceError};
use loopwright_tools::{Workspace, WorkspaceError};
use serde_json::{Value, json};

use super::Skills;
use super::skill::{SKILL_FILE, Skill};

/// The name of the skills' tool source.
pub const SKILLS_SOURCE: &str = "skills";
/// The tool returning a skill's instructions and the list of its files.
pub const LOAD_SKILL: &str = "load_skill";
/// The tool returning one file of a skill.
pub const READ_SKILL_FILE: &str = "read_skill_file";
/// Files `load_skill` lists at most (a skill is a handful of files; a
/// folder holding a whole project must not flood the context).
pub const MAX_LISTED_FILES: usize = 200;
/// Bytes of a file `read_skill_file` returns at most: under the loop's own
/// output cut, so the note saying the file was cut is never cut off.
pub const MAX_SKILL_FILE_BYTES: usize = loopwright_core::agent::DEFAULT_MAX_TOOL_OUTPUT_BYTES - 1024;
/// Bytes inspected to decide whether a file is binary (as git does).
const BINARY_SNIFF_BYTES: usize = 8192;

/// The skills as a native [`ToolSource`]: the catalog as its instructions
/// (which the agent appends to the system prompt), `load_skill` and
/// `read_skill_file` as its tools (bare names, read-only), and every
/// [`SkillWarning`](super::SkillWarning) as a catalog warning (so a run
/// reports them as `warning` events).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use loopwright_core::ToolSource;
/// use loopwright_config::skills::{Skills, SkillsSource};
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("notes")).unwrap();
/// std::fs::write(dir.path().join("notes/SKILL.md"), "---\nname: notes\ndescription: Takes notes.\n---\nWrite them down.\n").unwrap();
/// let source = SkillsSource::new(Skills::discover([dir.path()]));
/// let names: Vec<String> = source.tools().await.unwrap().iter().map(|t| t.definition().name.clone()).collect();
/// assert_eq!(names, ["load_skill", "read_skill_file"]);
/// assert!(source.instructions().unwrap().contains("<name>notes</name>"));
/// // With no skills there is nothing to offer.
/// let none = SkillsSource::new(Skills::default());
/// assert!(none.tools().await.unwrap().is_empty() && none.instructions().is_none());
/// # });
/// ```
pub struct SkillsSource {
    skills: Arc<Skills>,
    tools: Vec<Arc<dyn Tool>>,
}

impl SkillsSource {
    /// A source offering `skills`.
    pub fn new(skills: impl Into<Arc<Skills>>) -> Self {
        let skills = skills.into();
        let tools: Vec<Arc<dyn Tool>> = if skills.is_empty() {
            Vec::new()
        } else {
            vec![
                Arc::new(LoadSkill::new(skills.clone())),
                Arc::new(ReadSkillFile::new(skills.clone())),
            ]
        };
        Self { skills, tools }
    }

    /// The skills it offers.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }
}

impl std::fmt::Debug for SkillsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillsSource")
            .field(
                "skills",
                &self.skills.all().iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ToolSource for SkillsSource {
    fn name(&self) -> &str {
        SKILLS_SOURCE
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Native
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        Ok(self.tools.clone())
    }

    fn instructions(&self) -> Option<String> {
        self.skills.catalog()
    }

    fn warnings(&self) -> Vec<String> {
        self.skills.warnings().iter().map(ToString::to_string).collect()
    }
}

/// Both tools' definitions: read-only, the same answer every time.
fn definition(name: &str, description: String, properties: Value) -> ToolDefinition {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    ToolDefinition::new(name, description, schema)
        .with_annotations(ToolAnnotations::default().read_only(true).idempotent(true))
}

/// The `name` property of both tools.
fn name_property() -> Value {
    json!({"type": "string", "description": "The skill's name, as the available skills list it."})
}

/// A string argument (the loop has validated the input against the schema).
fn argument<'v>(input: &'v Value, key: &str) -> Result<&'v str, ToolError> {
    input
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid_input(format!("{key}: expected a string")))
}

/// The skill `input` names, or the error result listing the available ones.
fn find<'s>(skills: &'s Skills, input: &Value) -> Result<Result<&'s Skill, ToolOutput>, ToolError> {
    let name = argument(input, "name")?;
    Ok(skills.get(name).ok_or_else(|| {
        let names: Vec<&str> = skills.all().iter().map(|s| s.name.as_str()).collect();
        ToolOutput::error(format!(
            "no skill named `{name}`; the available skills are: {}",
            names.join(", ")
        ))
    }))
}

/// Run blocking file work on a blocking thread.
async fn on_blocking_thread(
    work: impl FnOnce() -> ToolOutput + Send + 'static,
) -> Result<ToolOutput, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::execution(format!("the skill's file work failed: {e}")))
}

/// `load_skill {name}`: the body of the skill's `SKILL.md` and its files.
struct LoadSkill {
    skills: Arc<Skills>,
    definition: ToolDefinition,
}

impl LoadSkill {
    fn new(skills: Arc<Skills>) -> Self {
        let description = "Load a skill: its instructions and the list of its files. Call it with the name \
            of one of the available skills when the task matches its description, before you start."
            .to_owned();
        let definition = definition(LOAD_SKILL, description, json!({"name": name_property()}));
        Self { skills, definition }
    }
}

#[async_trait]
impl Tool for LoadSkill {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let skill = match find(&self.skills, &input)? {
            Ok(skill) => skill.clone(),
            Err(unknown) => return Ok(unknown),
        };
        on_blocking_thread(move || ToolOutput::text(loaded(&skill))).await
    }
}

/// What `load_skill` returns: the body, then the folder and its files.
fn loaded(skill: &Skill) -> String {
    let (files, more) = list_files(&skill.dir);
    let mut text = format!(
        "{}\n\n---\nSkill folder: {}\n",
        skill.body.trim(),
        skill.dir.display()
    );
    if files.is_empty() {
        text.push_str("The skill has no other files.");
        return text;
    }
    text.push_str(&format!(
        "Files of the skill (read one with {READ_SKILL_FILE}, its path as listed):\n"
    ));
    for file in &files {
        text.push_str(&format!("- {file}\n"));
    }
    if more {
        text.push_str(&format!(
            "- ... (more files: only the first {MAX_LISTED_FILES} are listed)\n"
        ));
    }
    text.truncate(text.trim_end().len());
    text
}

/// The files under `dir` by relative path (`/`-separated), sorted, at most
/// [`MAX_LISTED_FILES`] (and whether there were more): not its `SKILL.md`,
/// not hidden entries (`.git`), not the inside of symlinked directories.
fn list_files(dir: &Path) -> (Vec<String>, bool) {
    fn walk(dir: &Path, prefix: &str, files: &mut Vec<String>) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || (prefix.is_empty() && name == SKILL_FILE) {
                continue;
            }
            let path = format!("{prefix}{name}");
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                if walk(&entry.path(), &format!("{path}/"), files) {
                    return true;
                }
            } else if files.len() == MAX_LISTED_FILES {
                return true;
            } else {
                files.push(path);
            }
        }
        false
    }
    let mut files = Vec::new();
    let more = walk(dir, "", &mut files);
    (files, more)
}

/// `read_skill_file {name, path}`: one file of a skill, confined to its
/// folder.
struct ReadSkillFile {
    skills: Arc<Skills>,
    definition: ToolDefinition,
}

impl ReadSkillFile {
    fn new(skills: Arc<Skills>) -> Self {
        let description = format!(
            "Read one file of a skill (a reference, a script, an asset) by its path relative to the \
             skill's folder, as {LOAD_SKILL} lists it. Text files are returned up to {MAX_SKILL_FILE_BYTES} \
             bytes; binary files are described, not shown."
        );
        let properties = json!({
            "name": name_property(),
            "path": {"type": "string", "description": "The file's path relative to the skill's folder, such as references/guide.md."},
        });
        let definition = definition(READ_SKILL_FILE, description, properties);
        Self { skills, definition }
    }
}

#[async_trait]
impl Tool for ReadSkillFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let skill = match find(&self.skills, &input)? {
            Ok(skill) => skill,
            Err(unknown) => return Ok(unknown),
        };
        let path = argument(&input, "path")?.to_owned();
        let dir = skill.dir.clone();
        on_blocking_thread(move || match confine(&dir, &path) {
            Ok(resolved) => read_text(&resolved, &path),
            Err(refused) => ToolOutput::error(refused),
        })
        .await
    }
}

/// Where `path` leads inside the skill's folder `dir`, or why it is
/// refused.
fn confine(dir: &Path, path: &str) -> Result<std::path::PathBuf, String> {
    let given = Path::new(path);
    if path.trim().is_empty() {
        return Err(format!(
            "give the file's path relative to the skill's folder, as {LOAD_SKILL} lists it"
        ));
    }
    if given.has_root() || given.is_absolute() {
        return Err(format!(
            "`{path}` is an absolute path: refused; give the path relative to the skill's folder, as \
             {LOAD_SKILL} lists it"
        ));
    }
    if given.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{path}` holds `..`: refused; only files inside the skill's folder can be read"
        ));
    }
    let workspace = Workspace::limited(dir)
        .map_err(|e| format!("the skill's folder {} cannot be opened: {e}", dir.display()))?;
    workspace.resolve(given).map_err(|e| match e {
        WorkspaceError::OutsideRoot { .. } => {
            format!("`{path}` leads outside the skill's folder through a symbolic link: refused")
        }
        other => other.to_string(),
    })
}

/// The text of `resolved` (shown as `shown`), cut at
/// [`MAX_SKILL_FILE_BYTES`]; a binary file is described.
fn read_text(resolved: &Path, shown: &str) -> ToolOutput {
    let cannot = |e: std::io::Error| ToolOutput::error(format!("cannot read `{shown}`: {e}"));
    let meta = match std::fs::metadata(resolved) {
        Ok(meta) => meta,
        Err(e) => return cannot(e),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "`{shown}` is a directory; {LOAD_SKILL} lists the skill's files"
        ));
    }
    // A FIFO or a device would block the read (and its thread) for good.
    if !meta.is_file() {
        return ToolOutput::error(format!("`{shown}` is not a regular file"));
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(resolved)
        .and_then(|file| file.take(MAX_SKILL_FILE_BYTES as u64).read_to_end(&mut bytes));
    if let Err(e) = read {
        return cannot(e);
    }
    let binary = || {
        ToolOutput::text(format!(
            "(`{shown}` is a binary file of {} bytes; its content is not shown)",
            meta.len()
        ))
    };
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return binary();
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // A character cut in two by the size cap does not make it binary.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return binary(),
    };
    if text.is_empty() {
        return ToolOutput::text(format!("(`{shown}` is empty)"));
    }
    if meta.len() > bytes.len() as u64 {
        return ToolOutput::text(format!(
            "{text}\n[`{shown}` is cut here: the first {} of its {} bytes are shown]",
            text.len(),
            meta.len()
        ));
    }
    ToolOutput::text(text)
}
