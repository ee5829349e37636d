//! Agent definition files (feature `files`): Markdown with YAML
//! frontmatter, the body being the system prompt; and building them, with a
//! configuration, into agents whose sub-agents are wired as tools.
//!
//! ```markdown
//! ---
//! description: Splits a task between a researcher and a coder.
//! model: [anthropic/claude-sonnet-4-5, openai/gpt-4.1]
//! agents: [researcher.md, coder.md]
//! mcp: [github]
//! tools: ["github__search_*"]
//! maxSteps: 12
//! ---
//! You lead a small team. Today is ${DATE}.
//! ```
//!
//! Keys (all optional): `name` (default: the file stem), `description`
//! (required for an agent used as a sub-agent), `model` (a selector or a
//! list: a fallback order), `reasoning`, `temperature`, `topP`,
//! `maxOutputTokens`, `maxSteps`, `toolTimeout` (as in the configuration
//! file's `defaults`), `mcp` (configured server names), `tools` (allow
//! patterns, `*` a wildcard, over exposed names), `codingTools`, `agents`
//! (sub-agent files, relative to this one), `input` (a JSON Schema for the
//! sub-agent's arguments) and `output` (a JSON Schema, inline or a file
//! relative to this one: the structured answer), `compaction`,
//! `toolSearch` and `guardrails` (as in the configuration file's
//! `defaults`).
//!
//! Invariants: reading is strict: an unknown key, a value of the wrong type
//! or a file that cannot be read is an error naming the file, the key path
//! and its line (the opening `---` is line 1); a file without frontmatter
//! is a body alone. Prompt variables are replaced when the agent is built
//! (see [`PromptVars`](crate::files::PromptVars)).

mod build;
mod pool;
mod vars;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

pub use build::{AgentBuildError, BuildOptions, BuiltAgent};
pub use pool::McpServerPool;
pub use vars::PromptVars;

use crate::config::ConfigFileError;
use crate::config::keys::defaults;
use crate::frontmatter::{self, FrontmatterError, Located, Mapping};
use crate::json::type_name;

/// The keys a frontmatter may have.
pub const AGENT_FILE_KEYS: &[&str] = &[
    "name",
    "description",
    "model",
    "reasoning",
    "temperature",
    "topP",
    "maxOutputTokens",
    "maxSteps",
    "toolTimeout",
    "mcp",
    "tools",
    "codingTools",
    "agents",
    "input",
    "output",
    "compaction",
    "toolSearch",
    "guardrails",
];

/// The keys of a `reasoning` mapping.
const REASONING_KEYS: &[&str] = &["effort", "budgetTokens"];

/// Why an agent file could not be read. Every variant names the file; all
/// but `Read` and `Frontmatter` the line, and where it applies the key.
///
/// ```
/// let err = loopwright_config::files::AgentFile::parse("---\nmaxSteps: ten\n---\nHi", "a.md".as_ref()).unwrap_err();
/// assert_eq!(err.to_string(), "a.md:2: maxSteps: expected an unsigned integer, got \"ten\"");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The frontmatter is not closed.
    #[error("{}: {message}", path.display())]
    Frontmatter {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The frontmatter is not YAML.
    #[error("{}:{line}:{column}: invalid YAML: {message}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based line in the file.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A key this format does not have.
    #[error("{}:{line}: unknown key `{key}` (known: {known})", path.display())]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key path.
        key: String,
        /// Its line.
        line: usize,
        /// The keys allowed there, comma-separated.
        known: String,
    },
    /// A value of the wrong type or form.
    #[error("{}:{line}: {key}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key path.
        key: String,
        /// Its line.
        line: usize,
        /// What was expected.
        message: String,
    },
    /// A file the frontmatter names cannot be read (or is not JSON).
    #[error("{}:{line}: {key}: {}: {message}", path.display(), file.display())]
    MissingFile {
        /// The agent file.
        path: PathBuf,
        /// The key path (`agents[1]`, `output`).
        key: String,
        /// Its line.
        line: usize,
        /// The file named, resolved against the agent file's directory.
        file: PathBuf,
        /// Why it cannot be used.
        message: String,
    },
}

/// An agent file, read and checked; [`AgentFile::build`] makes it an agent.
///
/// ```
/// let text = "---\ndescription: Finds sources.\nmodel: openai/gpt-4.1, anthropic/claude-sonnet-4-5\nmaxSteps: 5\n---\nYou research.\n";
/// let file = loopwright_config::files::AgentFile::parse(text, "agents/researcher.md".as_ref()).unwrap();
/// assert_eq!(file.name, "researcher");
/// assert_eq!(file.model, ["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"]);
/// assert_eq!((file.max_steps, file.body.as_str()), (Some(5), "You research.\n"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentFile {
    /// The file, as given.
    pub path: PathBuf,
    /// `name`, else the file's stem.
    pub name: String,
    /// What its callers' models read about it.
    pub description: Option<String>,
    /// Model selectors, a fallback order (empty: the caller's or the
    /// configuration's).
    pub model: Vec<String>,
    /// Reasoning effort (and budget).
    pub reasoning: Option<loopwright_core::model::ReasoningConfig>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit per model call.
    pub max_output_tokens: Option<u32>,
    /// Model calls that may use tools.
    pub max_steps: Option<u32>,
    /// Timeout of one tool call.
    pub tool_timeout: Option<Duration>,
    /// Names of configured MCP servers.
    pub mcp: Vec<String>,
    /// Allow patterns over exposed tool names (`None`: every tool).
    pub tools: Option<Vec<String>>,
    /// Whether it has the coding tools.
    pub coding_tools: Option<bool>,
    /// Sub-agent files, resolved against this file's directory.
    pub agents: Vec<PathBuf>,
    /// The JSON Schema of its arguments as a sub-agent.
    pub input: Option<Value>,
    /// The JSON Schema of its structured answer.
    pub output: Option<Value>,
    /// `compaction` (`false` turns it off; on by default, as in a
    /// configuration's `defaults`), when the file sets it.
    pub compaction: Option<crate::config::CompactionDefaults>,
    /// `guardrails` (as in a configuration's `defaults`: they replace the
    /// configuration's for this agent), when the file sets them.
    pub guardrails: Option<crate::config::GuardrailsConfig>,
    /// `toolSearch` (`false` turns it off), when the file sets it.
    pub tool_search: Option<crate::config::ToolSearchDefaults>,
    /// The body, variables not yet replaced.
    pub body: String,
}

impl AgentFile {
    /// Read and check the file at `path`.
    pub fn load(path: &Path) -> Result<Self, AgentFileError> {
        let text = crate::textfile::read_text_file(path).map_err(|source| AgentFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Check the text of an agent file; `path` names it in errors and
    /// anchors its relative paths (the `agents` and an `output` file, which
    /// is read here).
    pub fn parse(text: &str, path: &Path) -> Result<Self, AgentFileError> {
        let document = frontmatter::parse(text).map_err(|e| match e {
            FrontmatterError::Unclosed => AgentFileError::Frontmatter {
                path: path.to_path_buf(),
                message: frontmatter::UNCLOSED.into(),
            },
            FrontmatterError::Syntax {
                line,
                column,
                message,
            } => AgentFileError::Yaml {
                path: path.to_path_buf(),
                line,
                column,
                message,
            },
            FrontmatterError::Value(located) => invalid(path, located),
        })?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("agent");
        let mut file = AgentFile {
            path: path.to_path_buf(),
            name: stem.to_owned(),
            description: None,
            model: Vec::new(),
            reasoning: None,
            temperature: None,
            top_p: None,
            max_output_tokens: None,
            max_steps: None,
            tool_timeout: None,
            mcp: Vec::new(),
            tools: None,
            coding_tools: None,
            agents: Vec::new(),
            input: None,
            output: None,
            compaction: None,
            guardrails: None,
            tool_search: None,
            body: document.body.to_owned(),
        };
        if let Some(fm) = document.frontmatter {
            Reader { path, fm }.read(&mut file)?;
        }
        Ok(file)
    }

    /// The body with its variables replaced, and a warning for each
    /// unknown one.
    ///
    /// ```
    /// let file = loopwright_config::files::AgentFile::parse("Steps: ${MAX_STEPS}", "a.md".as_ref()).unwrap();
    /// let (text, warnings) = file.system_prompt(&loopwright_config::files::PromptVars::new().max_steps(9));
    /// assert_eq!((text.as_str(), warnings.len()), ("Steps: 9", 0));
    /// ```
    pub fn system_prompt(&self, vars: &PromptVars) -> (String, Vec<String>) {
        vars.expand(&self.body, &self.path.display().to_string())
    }
}

/// A located error as [`AgentFileError::Invalid`].
fn invalid(path: &Path, (key, line, message): Located) -> AgentFileError {
    AgentFileError::Invalid {
        path: path.to_path_buf(),
        key,
        line,
        message,
    }
}

/// Typed reading of a frontmatter, every error naming key and line.
struct Reader<'p> {
    path: &'p Path,
    fm: Mapping,
}

impl Reader<'_> {
    fn line(&self, key: &str) -> usize {
        self.fm.line(key)
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> AgentFileError {
        invalid(self.path, self.fm.invalid(key, message))
    }

    fn unknown(&self, map: &Map<String, Value>, prefix: &str, known: &[&str]) -> Result<(), AgentFileError> {
        match self.fm.unknown(map, prefix, known) {
            None => Ok(()),
            Some((key, line)) => Err(AgentFileError::UnknownKey {
                path: self.path.to_path_buf(),
                key,
                line,
                known: known.join(", "),
            }),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.fm.get(key)
    }

    fn string(&self, key: &str) -> Result<Option<String>, AgentFileError> {
        self.fm.string(key).map_err(|e| invalid(self.path, e))
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, AgentFileError> {
        self.fm.strings(key).map_err(|e| invalid(self.path, e))
    }

    fn schema(&self, key: &str) -> Result<Option<Value>, AgentFileError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(_)) => Ok(self.get(key).cloned()),
            Some(Value::String(file)) if key == "output" => {
                let resolved = self.resolve(file);
                let missing = |message: String| AgentFileError::MissingFile {
                    path: self.path.to_path_buf(),
                    key: key.to_owned(),
                    line: self.line(key),
                    file: resolved.clone(),
                    message,
                };
                let text = crate::textfile::read_text_file(&resolved).map_err(|e| missing(e.to_string()))?;
                match serde_json::from_str::<Value>(&text) {
                    Ok(schema @ Value::Object(_)) => Ok(Some(schema)),
                    Ok(other) => Err(missing(format!(
                        "expected a JSON Schema object, got {}",
                        type_name(&other)
                    ))),
                    Err(e) => Err(missing(format!("not JSON: {e}"))),
                }
            }
            Some(other) => Err(self.invalid(
                key,
                format!(
                    "expected a JSON Schema mapping{}, got {}",
                    if key == "output" { " or a file path" } else { "" },
                    type_name(other)
                ),
            )),
        }
    }

    fn resolve(&self, file: &str) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        dir.join(file)
    }

    fn read(&self, file: &mut AgentFile) -> Result<(), AgentFileError> {
        self.unknown(self.fm.root(), "", AGENT_FILE_KEYS)?;
        if let Some(Value::Object(reasoning)) = self.get("reasoning") {
            self.unknown(reasoning, "reasoning", REASONING_KEYS)?;
        }
        // The settings the configuration file's `defaults` also has are
        // read the same way.
        let shared: Map<String, Value> = [
            "model",
            "reasoning",
            "temperature",
            "topP",
            "maxOutputTokens",
            "maxSteps",
            "toolTimeout",
            "compaction",
            "toolSearch",
            "guardrails",
        ]
        .iter()
        .filter_map(|k| self.fm.root().get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
        let invalid = |key: &str, message: String| ConfigFileError::Invalid {
            path: String::new(),
            key: key.to_owned(),
            message,
        };
        let (sets_compaction, sets_search) = (
            shared.contains_key("compaction"),
            shared.contains_key("toolSearch"),
        );
        let settings = defaults(&Value::Object(shared), &invalid).map_err(|e| match e {
            ConfigFileError::Invalid { key, message, .. } => {
                self.invalid(key.strip_prefix("defaults.").unwrap_or(&key), message)
            }
            other => self.invalid(frontmatter::WHOLE, other.to_string()),
        })?;
        file.model = settings.model;
        file.reasoning = settings.reasoning;
        file.temperature = settings.temperature;
        file.top_p = settings.top_p;
        file.max_output_tokens = settings.max_output_tokens;
        file.max_steps = settings.max_steps;
        file.tool_timeout = settings.tool_timeout;
        file.compaction = sets_compaction.then_some(settings.compaction);
        file.tool_search = sets_search.then_some(settings.tool_search);
        file.guardrails = settings.guardrails;

        if let Some(name) = self.string("name")? {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                return Err(self.invalid(
                    "name",
                    format!("`{name}` must be letters, digits, `_` and `-` (it names the agent's tool)"),
                ));
            }
            file.name = name;
        }
        file.description = self.string("description")?;
        file.mcp = self.strings("mcp")?.unwrap_or_default();
        file.tools = self.strings("tools")?;
        file.coding_tools = self
            .get("codingTools")
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.invalid("codingTools", format!("expected true or false, got {v}")))
            })
            .transpose()?;
        for (i, agent) in self.strings("agents")?.unwrap_or_default().iter().enumerate() {
            let key = format!("agents[{i}]");
            let resolved = self.resolve(agent);
            if !resolved.is_file() {
                return Err(AgentFileError::MissingFile {
                    path: self.path.to_path_buf(),
                    line: self.line(&key),
                    key,
                    message: "no such agent file".into(),
                    file: resolved,
                });
            }
            file.agents.push(resolved);
        }
        file.input = self.schema("input")?;
        file.output = self.schema("output")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
