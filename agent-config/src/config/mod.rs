//! The configuration file the `loopwright` command reads, for applications that
//! want the same format: providers, MCP servers, run defaults and
//! accounting in one JSON file (feature `config`).
//!
//! ```json
//! {
//!   "providers": { "anthropic": { "apiKey": "${ANTHROPIC_API_KEY}" },
//!                  "local": { "type": "openai-compatible", "baseUrl": "http://localhost:8000/v1" } },
//!   "mcpServers": { "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] },
//!                   "api": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${API_TOKEN}" } } },
//!   "defaults": { "model": "anthropic/claude-sonnet-4-5", "toolTimeout": "30s", "llmTimeout": 120000,
//!                 "temperature": 0.2, "maxSteps": 20, "maxOutputTokens": 4096, "parallelToolCalls": true,
//!                 "topP": 0.9, "toolResponseMaxBytes": 65536, "contextWindowBufferTokens": 4096 },
//!   "accounting": { "file": "accounting.jsonl" },
//!   "skills": [".agents/skills", "~/team/skills"],
//!   "serve": { "apiKeys": ["${SERVE_KEY}"] }
//! }
//! ```
//!
//! Invariants:
//! - `${VAR}` and `${VAR:-default}` are expanded everywhere except inside
//!   `mcpServers.*.env` and `mcpServers.*.headers`, which loopwright-mcp resolves
//!   when the server starts, by the same rules: the default is used when the
//!   variable is unset or empty and may name another variable
//!   (`${KEY:-${OTHER_KEY}}`), a `${` never closed is kept as written, and
//!   there is no escape;
//! - a missing variable in `providers.<name>` makes only that provider
//!   unusable, in `mcpServers.<name>` only that server; anywhere else it is
//!   an error naming the key;
//! - unknown keys are warnings (in `serve` errors, see [`ServeConfig`](crate::config::ServeConfig)); a
//!   value of the wrong type is an error that names its key path
//!   (`defaults.maxSteps: expected an unsigned integer`).

mod a2a;
pub(crate) mod cassette;
mod choose;
mod expand;
mod guardrails;
pub(crate) mod keys;
mod long_runs;
mod run;
mod secrets;
mod sections;
mod serve;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use loopwright_core::agent::AgentOptions;
use loopwright_core::toolset::SourceFailure;
use loopwright_mcp::McpServerConfig;
use loopwright_providers::ProvidersConfig;
use serde_json::{Map, Value};

pub use cassette::McpSources;
pub use choose::{ChosenModel, EmbeddedFallback, ModelChoiceError, NO_MODEL_HELP, PendingDownload};
use expand::expand;

pub use a2a::A2aAgentConfig;
pub use guardrails::{GuardSpec, GuardrailsConfig};
pub use long_runs::{CompactionDefaults, ToolSearchDefaults};
pub use loopwright_core::util::parse_duration;
pub use loopwright_mcp::{arg_secrets, looks_secret, url_secrets};
pub use run::RunSetupError;
pub use serve::{Retention, SERVE_KEYS, ServeConfig};

/// The file looked for in the current directory, then in the home directory.
pub const CONFIG_FILE_NAME: &str = ".ai-agent.json";

/// Why a configuration file could not be used. Every variant names the file
/// and, where it applies, the key.
///
/// ```
/// let err = loopwright_config::config::AgentConfig::parse(r#"{"defaults": {"maxSteps": "ten"}}"#, "a.json", &|_| None).unwrap_err();
/// assert_eq!(err.to_string(), "a.json: defaults.maxSteps: expected an unsigned integer, got \"ten\"");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path}: invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A value has the wrong type or form.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The key path (`defaults.toolTimeout`).
        key: String,
        /// What was expected.
        message: String,
    },
    /// `${VAR}` names an unset variable outside providers and MCP servers.
    #[error("{path}: {key}: environment variable {variable} is not set")]
    MissingVariable {
        /// The file.
        path: String,
        /// The key path.
        key: String,
        /// The variable.
        variable: String,
    },
}

/// Run defaults (`defaults` in the file); command-line options override them.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Defaults {
    /// `provider/model` selectors: the model, then its fallbacks.
    pub model: Vec<String>,
    /// Longest silence of a model stream.
    pub llm_timeout: Option<Duration>,
    /// Timeout of one tool call.
    pub tool_timeout: Option<Duration>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    pub top_p: Option<f32>,
    /// Output token limit per model call.
    pub max_output_tokens: Option<u32>,
    /// Whether the model may call several tools at once.
    pub parallel_tool_calls: Option<bool>,
    /// Model calls that may use tools before one concluding call without
    /// tools (`maxSteps`; see `AgentOptions::max_steps`).
    pub max_steps: Option<u32>,
    /// Model calls the whole run tree may make (`maxModelCalls`; see
    /// `AgentOptions::max_model_calls`).
    pub max_model_calls: Option<u64>,
    /// Tokens the whole run tree may use (`maxTreeTokens`).
    pub max_tree_tokens: Option<u64>,
    /// How long a run may go on before it is cancelled (`runTimeout`).
    pub run_timeout: Option<Duration>,
    /// Tool output kept (head and tail) beyond this many bytes.
    pub tool_response_max_bytes: Option<usize>,
    /// Tokens kept free in the context window.
    pub context_window_buffer_tokens: Option<u64>,
    /// Reasoning effort and budget (`reasoning`: an effort, or
    /// `{"effort": "high", "budgetTokens": 16000}`).
    pub reasoning: Option<loopwright_core::model::ReasoningConfig>,
    /// The schema the final answer must match (`outputSchema`: a file path,
    /// relative to the config file, or an inline object).
    pub output_schema: Option<SchemaSource>,
    /// Compaction instead of stopping at the context window (`compaction`;
    /// on unless `false`).
    pub compaction: CompactionDefaults,
    /// Tool search over big catalogs (`toolSearch`; on unless `false`).
    pub tool_search: ToolSearchDefaults,
    /// Guardrails (`guardrails`: a list of guards, or an object with
    /// `guards`, `checkpoint`, `maxRetries`, `onError` and `timeout`).
    pub guardrails: Option<GuardrailsConfig>,
}

/// Where an output schema comes from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SchemaSource {
    /// A JSON Schema file (resolved against the config file's directory
    /// by [`AgentConfig::load`]).
    File(PathBuf),
    /// The schema itself.
    Inline(Value),
}

impl SchemaSource {
    /// The output spec: the schema read (from its file) and compiled, named
    /// after the file's stem (`output` for an inline schema).
    ///
    /// ```
    /// use loopwright_config::config::SchemaSource;
    /// let inline = SchemaSource::Inline(serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}));
    /// assert_eq!(inline.load().unwrap().name(), "output");
    /// let missing = SchemaSource::File("/no/such/schema.json".into()).load().unwrap_err();
    /// assert!(missing.to_string().contains("/no/such/schema.json"), "{missing}");
    /// ```
    pub fn load(&self) -> Result<loopwright_core::OutputSpec, SchemaLoadError> {
        use loopwright_core::OutputSpec;
        match self {
            Self::Inline(schema) => OutputSpec::from_schema("output", schema.clone())
                .map_err(|error| SchemaLoadError::Unusable { path: None, error }),
            Self::File(path) => {
                let text = crate::textfile::read_text_file(path).map_err(|error| SchemaLoadError::Read {
                    path: path.clone(),
                    error,
                })?;
                let schema: Value =
                    serde_json::from_str(&text).map_err(|error| SchemaLoadError::NotJson {
                        path: path.clone(),
                        error,
                    })?;
                let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("output");
                OutputSpec::from_schema(name, schema).map_err(|error| SchemaLoadError::Unusable {
                    path: Some(path.clone()),
                    error,
                })
            }
        }
    }
}

/// Why an output schema could not be loaded, naming its file.
///
/// ```
/// use loopwright_config::config::{SchemaLoadError, SchemaSource};
/// let e = SchemaSource::File("/no/such.json".into()).load().unwrap_err();
/// assert!(matches!(e, SchemaLoadError::Read { .. }));
/// assert!(e.to_string().starts_with("/no/such.json: "));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaLoadError {
    /// The file could not be read.
    #[error("{}: {error}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}: not JSON: {error}", .path.display())]
    NotJson {
        /// The file.
        path: std::path::PathBuf,
        /// Where parsing stopped.
        #[source]
        error: serde_json::Error,
    },
    /// The schema cannot be an output schema (its limits, its shape).
    #[error("{}{error}", .path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Unusable {
        /// The file, unless the schema was inline.
        path: Option<std::path::PathBuf>,
        /// Why.
        #[source]
        error: loopwright_core::output::OutputSchemaError,
    },
}

impl Defaults {
    /// Apply the defaults that are set to `options`, and compaction and
    /// tool search (on unless the file turns them off). Two take effect
    /// elsewhere: `llmTimeout` in [`AgentConfig::choose_model`] (the
    /// providers' stream timeout) and `contextWindowBufferTokens` in
    /// [`ChosenModel::budget`].
    ///
    /// ```
    /// let config = loopwright_config::config::AgentConfig::parse(r#"{"defaults": {"maxSteps": 7, "toolTimeout": "5s"}}"#, "a.json", &|_| None).unwrap();
    /// let options = config.defaults.apply(loopwright_core::agent::AgentOptions::default());
    /// assert_eq!((options.max_steps, options.tool_timeout.as_secs()), (7, 5));
    /// ```
    pub fn apply(&self, mut options: AgentOptions) -> AgentOptions {
        if let Some(t) = self.tool_timeout {
            options.tool_timeout = t;
        }
        if self.temperature.is_some() {
            options.temperature = self.temperature;
        }
        if self.top_p.is_some() {
            options.top_p = self.top_p;
        }
        if self.max_output_tokens.is_some() {
            options.max_output_tokens = self.max_output_tokens;
        }
        if let Some(on) = self.parallel_tool_calls {
            options.parallel_tool_calls = on;
        }
        if let Some(n) = self.max_steps {
            options.max_steps = n.max(1);
        }
        if self.max_model_calls.is_some() {
            options.max_model_calls = self.max_model_calls;
        }
        if self.max_tree_tokens.is_some() {
            options.max_tree_tokens = self.max_tree_tokens;
        }
        if self.run_timeout.is_some() {
            options.run_timeout = self.run_timeout;
        }
        if let Some(n) = self.tool_response_max_bytes {
            options.max_tool_output_bytes = n;
        }
        if let Some(r) = self.reasoning {
            options.reasoning = Some(r);
        }
        options.compaction = self.compaction.compaction();
        options.tool_search = self.tool_search.tool_search();
        options
    }
}

/// A parsed configuration file (or none: [`AgentConfig::default`] is the
/// environment alone).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AgentConfig {
    /// The file it came from.
    pub path: Option<PathBuf>,
    /// Usable providers, variables expanded.
    pub providers: ProvidersConfig,
    /// Providers left out, with why (a missing variable).
    pub unusable_providers: BTreeMap<String, String>,
    /// MCP servers, `env` and `headers` still holding their `${VAR}`s.
    pub mcp_servers: Vec<McpServerConfig>,
    /// MCP servers left out of [`Self::mcp_servers`], with why.
    pub mcp_failures: Vec<SourceFailure>,
    /// Remote A2A agents (`a2aAgents`), offered as tools
    /// ([`AgentConfig::a2a_source`]).
    pub a2a_agents: Vec<A2aAgentConfig>,
    /// Run defaults.
    pub defaults: Defaults,
    /// Where accounting entries go (JSONL), relative paths resolved against
    /// the file's directory.
    pub accounting_file: Option<PathBuf>,
    /// Skills directories (`skills`), in precedence order: `~` and
    /// `${VAR}` expanded, relative ones resolved against the file's
    /// directory by [`AgentConfig::load`]. `None` without the key (the
    /// default directories apply); an empty list means no skills.
    pub skills: Option<Vec<PathBuf>>,
    /// Where conversations and paused runs are kept (`store`: a store URL,
    /// `sqlite:PATH`, `postgres://...`, `memory:`; `${VAR}` expanded); `None`
    /// without the key (the command then uses a SQLite file in the user's
    /// data directory).
    pub store: Option<String>,
    /// What `loopwright serve` reads (`serve`: its bearer keys).
    pub serve: ServeConfig,
    /// Overrides for the tools of native sources: the coding tools and the
    /// skills (`toolOverrides`, as an MCP server's; see
    /// [`AgentConfig::native_source_options`]).
    pub tool_overrides: loopwright_core::toolset::ToolOverrides,
    /// Unknown keys and other things worth telling the user.
    pub warnings: Vec<String>,
}

impl AgentConfig {
    /// The configuration file to use when none is given: `./.ai-agent.json`,
    /// then `~/.ai-agent.json`; `None` when neither exists.
    ///
    /// ```
    /// let dir = std::env::temp_dir();
    /// assert_eq!(loopwright_config::config::AgentConfig::discover(&dir.join("no-such-dir"), None), None);
    /// ```
    pub fn discover(cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
        std::iter::once(cwd)
            .chain(home)
            .map(|dir| dir.join(CONFIG_FILE_NAME))
            .find(|path| path.is_file())
    }

    /// The configuration the `loopwright` command reads when no `--config`
    /// is given: [`AgentConfig::discover`] from the current directory and
    /// `$HOME`, loaded; the default (empty) configuration when neither file
    /// exists. The examples read it too, so one file configures both.
    ///
    /// ```no_run
    /// let config = loopwright_config::config::AgentConfig::from_default_location()?;
    /// for warning in &config.warnings {
    ///     eprintln!("warning: {warning}");
    /// }
    /// # Ok::<(), loopwright_config::config::ConfigFileError>(())
    /// ```
    pub fn from_default_location() -> Result<Self, ConfigFileError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let home = std::env::var_os("HOME").map(PathBuf::from);
        match Self::discover(&cwd, home.as_deref()) {
            Some(path) => Self::load(&path),
            None => Ok(Self::default()),
        }
    }

    /// Read and parse `path`, variables from the process environment.
    pub fn load(path: &Path) -> Result<Self, ConfigFileError> {
        let shown = path.display().to_string();
        let text = crate::textfile::read_text_file(path).map_err(|source| ConfigFileError::Read {
            path: shown.clone(),
            source,
        })?;
        let mut config = Self::parse(&text, &shown, &|name| std::env::var(name).ok())?;
        if let (Some(file), Some(dir)) = (&config.accounting_file, path.parent())
            && file.is_relative()
        {
            config.accounting_file = Some(dir.join(file));
        }
        if let (Some(SchemaSource::File(file)), Some(dir)) =
            (&mut config.defaults.output_schema, path.parent())
            && file.is_relative()
        {
            *file = dir.join(&*file);
        }
        // A SQLite store named by a relative path sits next to the file.
        if let (Some(url), Some(dir)) = (&mut config.store, path.parent())
            && let Some(file) = url
                .strip_prefix("sqlite:")
                .filter(|f| !f.starts_with('/') && !f.starts_with("//"))
        {
            *url = format!("sqlite:{}", dir.join(file).display());
        }
        if let (Some(dirs), Some(dir)) = (&mut config.skills, path.parent()) {
            for skills_dir in dirs.iter_mut().filter(|d| d.is_relative()) {
                *skills_dir = dir.join(&*skills_dir);
            }
        }
        config.path = Some(path.to_path_buf());
        Ok(config)
    }

    /// Parse the text of a configuration file; `origin` names it in errors.
    ///
    /// ```
    /// use loopwright_config::config::AgentConfig;
    /// let text = r#"{"providers": {"work": {"type": "openai", "apiKey": "${WORK_KEY}"}},
    ///                "mcpServers": {"gh": {"command": "gh-mcp", "env": {"TOKEN": "${GH_TOKEN}"}}},
    ///                "defaults": {"model": ["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"]}, "colour": "blue"}"#;
    /// let config = AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// assert!(config.unusable_providers["work"].contains("WORK_KEY"));
    /// assert_eq!(config.mcp_servers[0].name, "gh"); // env is resolved when the server starts
    /// assert_eq!(config.defaults.model.len(), 2);
    /// assert_eq!(config.warnings, ["a.json: unknown key `colour`"]);
    /// ```
    pub fn parse(
        text: &str,
        origin: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigFileError> {
        let root: Value = serde_json::from_str(text).map_err(|e| ConfigFileError::Json {
            path: origin.to_string(),
            line: e.line(),
            column: e.column(),
            message: json_message(&e),
        })?;
        let invalid = |key: &str, message: String| ConfigFileError::Invalid {
            path: origin.to_string(),
            key: key.to_string(),
            message,
        };
        let Value::Object(mut root) = root else {
            return Err(invalid("(top level)", "expected a JSON object".into()));
        };
        // `serve` is read strictly by its own module (an unknown key there
        // is an error), so it is out before unknown keys are warned about.
        let serve_section = section(&mut root, "serve", &invalid)?;
        let mut config = Self::default();
        let mut warn = |key: String| config.warnings.push(format!("{origin}: unknown key `{key}`"));
        keys::warn_unknown(&root, &mut warn);

        let providers = section(&mut root, "providers", &invalid)?;
        config.read_providers(providers, lookup, &invalid)?;
        let servers = section(&mut root, "mcpServers", &invalid)?;
        config.read_mcp_servers(servers, lookup, &invalid)?;
        let a2a_agents = section(&mut root, "a2aAgents", &invalid)?;
        config.read_a2a_agents(a2a_agents, lookup, &invalid)?;

        config.read_expanded(&mut root, origin, lookup, &invalid)?;
        config.read_serve(serve_section, origin, lookup, &invalid)?;
        Ok(config)
    }

    /// The sections read with every `${VAR}` expanded (a missing variable
    /// is an error naming its key): `defaults`, `toolOverrides`, `skills`,
    /// `store` and `accounting`.
    fn read_expanded(
        &mut self,
        root: &mut Map<String, Value>,
        origin: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
        invalid: &dyn Fn(&str, String) -> ConfigFileError,
    ) -> Result<(), ConfigFileError> {
        // Expanded in full: a missing variable is an error naming its key.
        let expanded = |mut value: Value, key: &str| {
            expand(&mut value, key, &|_| false, lookup)
                .map(|()| value)
                .map_err(|m| ConfigFileError::MissingVariable {
                    path: origin.to_string(),
                    key: m.key,
                    variable: m.variable,
                })
        };
        let defaults_value = expanded(Value::Object(section(root, "defaults", invalid)?), "defaults")?;
        self.defaults = keys::defaults(&defaults_value, invalid)?;

        let overrides = expanded(
            root.remove("toolOverrides").unwrap_or(Value::Null),
            "toolOverrides",
        )?;
        if !overrides.is_null() {
            self.tool_overrides = loopwright_core::toolset::ToolOverrides::from_json(&overrides)
                .map_err(|e| invalid(&e.path, e.message))?;
        }

        let skills = expanded(root.remove("skills").unwrap_or(Value::Null), "skills")?;
        self.skills = keys::skills(&skills, lookup("HOME").as_deref(), invalid)?;

        self.store = match expanded(root.remove("store").unwrap_or(Value::Null), "store")? {
            Value::Null => None,
            Value::String(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
            other => {
                return Err(invalid(
                    "store",
                    format!(
                        "expected a store URL (sqlite:PATH, postgres://...), got {}",
                        keys::type_name(&other)
                    ),
                ));
            }
        };

        let accounting_value = expanded(Value::Object(section(root, "accounting", invalid)?), "accounting")?;
        self.accounting_file = match accounting_value.get("file") {
            None | Some(Value::Null) => None,
            Some(Value::String(file)) => Some(PathBuf::from(file)),
            Some(other) => {
                return Err(invalid(
                    "accounting.file",
                    format!("expected a path string, got {other}"),
                ));
            }
        };

        Ok(())
    }

    /// `serve`, its keys checked strictly, then expanded.
    fn read_serve(
        &mut self,
        serve_section: Map<String, Value>,
        origin: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
        invalid: &dyn Fn(&str, String) -> ConfigFileError,
    ) -> Result<(), ConfigFileError> {
        serve::check_keys(&serve_section, invalid)?;
        let mut serve_value = Value::Object(serve_section);
        expand(&mut serve_value, "serve", &|_| false, lookup).map_err(|m| {
            ConfigFileError::MissingVariable {
                path: origin.to_string(),
                key: m.key,
                variable: m.variable,
            }
        })?;
        self.serve = serve::serve(&serve_value, invalid)?;
        Ok(())
    }

    /// How a native source (the coding tools, the skills) joins a tool set:
    /// with the file's top-level `toolOverrides`.
    ///
    /// ```
    /// let text = r#"{"toolOverrides": {"Bash": {"description": "[Shell] {description}"}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// assert!(format!("{:?}", config.native_source_options()).contains("transform: true"));
    /// ```
    pub fn native_source_options(&self) -> loopwright_core::toolset::SourceOptions {
        if self.tool_overrides.is_empty() {
            loopwright_core::toolset::SourceOptions::default()
        } else {
            loopwright_core::toolset::SourceOptions::default()
                .shared_transform(self.tool_overrides.clone().transform())
        }
    }

    /// Why the provider a `provider/model` selector names cannot be used,
    /// if it was configured with a missing variable.
    ///
    /// ```
    /// let config = loopwright_config::config::AgentConfig::parse(r#"{"providers": {"openai": {"apiKey": "${K2}"}}}"#, "a.json", &|_| None).unwrap();
    /// assert!(config.provider_problem("openai/gpt-4.1").unwrap().contains("K2"));
    /// assert_eq!(config.provider_problem("anthropic/claude-sonnet-4-5"), None);
    /// ```
    pub fn provider_problem(&self, selector: &str) -> Option<&str> {
        let provider = selector.split_once('/').map_or(selector, |(p, _)| p);
        self.unusable_providers.get(provider).map(String::as_str)
    }
}

/// Take a top-level section that must be an object (absent: empty).
fn section(
    root: &mut Map<String, Value>,
    key: &str,
    invalid: &dyn Fn(&str, String) -> ConfigFileError,
) -> Result<Map<String, Value>, ConfigFileError> {
    match root.remove(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(invalid(
            key,
            format!("expected an object, got {}", keys::type_name(&other)),
        )),
    }
}

/// serde_json's message without its ` at line L column C` tail (the
/// position is reported separately).
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rsplit_once(" at line ") {
        Some((message, _)) => message.to_string(),
        None => text,
    }
}

/// loopwright-mcp's config message without its `mcp server NAME: invalid config:` prefix.
fn config_message(e: &loopwright_mcp::McpError) -> String {
    match e {
        loopwright_mcp::McpError::Config { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn parse(text: &str) -> Result<AgentConfig, ConfigFileError> {
        AgentConfig::parse(text, "c.json", &|name| {
            (name == "SET").then(|| "value".to_string())
        })
    }

    #[test]
    fn type_errors_name_the_key_path() {
        let cases = [
            (
                r#"{"providers": {"x": {"type": "openai", "models": {"m": {"contextWindow": "big"}}}}}"#,
                "providers.x.models.m.contextWindow",
            ),
            (
                r#"{"providers": {"x": {"type": "carrier-pigeon"}}}"#,
                "providers.x.type",
            ),
            (
                r#"{"mcpServers": {"s": {"command": "a", "args": "b"}}}"#,
                "mcpServers.s",
            ),
            (r#"{"defaults": {"toolTimeout": "soon"}}"#, "defaults.toolTimeout"),
            (r#"{"defaults": {"temperature": "hot"}}"#, "defaults.temperature"),
            (
                r#"{"defaults": {"parallelToolCalls": "yes"}}"#,
                "defaults.parallelToolCalls",
            ),
            (r#"{"accounting": {"file": 3}}"#, "accounting.file"),
            (r#"{"skills": "skills"}"#, "skills"),
            (r#"{"skills": ["skills", 3]}"#, "skills[1]"),
            (r#"{"defaults": []}"#, "defaults"),
            (r#"[]"#, "(top level)"),
        ];
        for (text, key) in cases {
            match parse(text) {
                Err(ConfigFileError::Invalid { key: got, .. }) => assert_eq!(got, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn values_are_read_and_variables_expanded_outside_mcp_env_and_headers() {
        let config = parse(
            r#"{"providers": {"p": {"type": "openai-compatible", "baseUrl": "http://${SET}/v1"}},
                "mcpServers": {"s": {"command": "${SET}", "env": {"K": "${UNSET}"}, "shutdownTimeout": "1s"},
                               "h": {"url": "http://${SET}/mcp", "headers": {"Authorization": "Bearer ${UNSET}"}}},
                "defaults": {"model": "p/a, p/b", "llmTimeout": "2m", "maxOutputTokens": 100,
                             "parallelToolCalls": false, "toolResponseMaxBytes": 10, "contextWindowBufferTokens": 5}}"#,
        )
        .unwrap();
        assert_eq!(
            config.providers.providers["p"].base_url.as_deref(),
            Some("http://value/v1")
        );
        let server = |name: &str| config.mcp_servers.iter().find(|s| s.name == name).unwrap();
        let loopwright_mcp::McpTransport::Stdio(stdio) = &server("s").transport else {
            unreachable!()
        };
        assert_eq!(
            (stdio.command.as_str(), stdio.env["K"].as_str()),
            ("value", "${UNSET}")
        );
        // Headers too are resolved when the server starts, not here.
        let loopwright_mcp::McpTransport::Http(remote) = &server("h").transport else {
            unreachable!()
        };
        assert_eq!(
            (remote.url.as_str(), remote.headers["Authorization"].as_str()),
            ("http://value/mcp", "Bearer ${UNSET}")
        );
        let d = &config.defaults;
        assert_eq!(d.model, ["p/a", "p/b"]);
        assert_eq!(d.llm_timeout, Some(Duration::from_secs(120)));
        assert_eq!(
            (d.max_output_tokens, d.parallel_tool_calls),
            (Some(100), Some(false))
        );
        assert_eq!(
            (d.tool_response_max_bytes, d.context_window_buffer_tokens),
            (Some(10), Some(5))
        );
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    }

    #[test]
    fn numbers_and_switches_may_come_from_variables() {
        let config = AgentConfig::parse(
            r#"{"defaults": {"maxSteps": "${STEPS}", "temperature": "${TEMP:-0.5}", "parallelToolCalls": "${PAR}"}}"#,
            "c.json",
            &|name| match name {
                "STEPS" => Some("12".into()),
                "PAR" => Some("false".into()),
                _ => None,
            },
        )
        .unwrap();
        let d = &config.defaults;
        assert_eq!(
            (d.max_steps, d.temperature, d.parallel_tool_calls),
            (Some(12), Some(0.5), Some(false))
        );
        let err = AgentConfig::parse(r#"{"defaults": {"maxSteps": "${STEPS}"}}"#, "c.json", &|_| {
            Some("many".into())
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.json: defaults.maxSteps: expected an unsigned integer, got \"many\""
        );
    }

    #[test]
    fn skills_directories_expand_home_and_variables_and_are_next_to_the_config_file() {
        let lookup = |name: &str| match name {
            "HOME" => Some("/home/me".to_owned()),
            "TEAM" => Some("/srv/team".to_owned()),
            _ => None,
        };
        let text = r#"{"skills": ["~/.agents/skills", "${TEAM}/skills", "~", "local"]}"#;
        let config = AgentConfig::parse(text, "c.json", &lookup).unwrap();
        let dirs: Vec<&str> = config
            .skills
            .iter()
            .flatten()
            .map(|p| p.to_str().unwrap())
            .collect();
        assert_eq!(
            dirs,
            ["/home/me/.agents/skills", "/srv/team/skills", "/home/me", "local"]
        );
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let homeless = AgentConfig::parse(r#"{"skills": ["~/s"]}"#, "c.json", &|_| None).unwrap_err();
        assert_eq!(
            homeless.to_string(),
            "c.json: skills[0]: `~` needs HOME to be set"
        );
        assert_eq!(parse("{}").unwrap().skills, None);
        assert_eq!(parse(r#"{"skills": []}"#).unwrap().skills, Some(Vec::new()));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.json");
        std::fs::write(&path, r#"{"skills": ["team-skills", "/abs/skills"]}"#).unwrap();
        let config = AgentConfig::load(&path).unwrap();
        assert_eq!(
            config.skills.unwrap(),
            [dir.path().join("team-skills"), PathBuf::from("/abs/skills")]
        );
    }

    #[test]
    fn a_relative_accounting_file_is_next_to_the_config_file() {
        let dir = std::env::temp_dir().join(format!("loopwright-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("agent.json");
        std::fs::write(&path, r#"{"accounting": {"file": "ledger.jsonl"}}"#).unwrap();
        let config = AgentConfig::load(&path).unwrap();
        assert_eq!(config.accounting_file, Some(dir.join("ledger.jsonl")));
        assert_eq!(AgentConfig::discover(&dir.join("nowhere"), Some(&dir)), None);
        std::fs::rename(&path, dir.join(CONFIG_FILE_NAME)).unwrap();
        assert_eq!(
            AgentConfig::discover(&dir.join("nowhere"), Some(&dir)),
            Some(dir.join(CONFIG_FILE_NAME))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
