//! From agent files to agents: the root file and every file its `agents`
//! name (recursively) become [`Agent`]s, each sub-agent a tool
//! `agent__<name>` of the agents that list it.
//!
//! Invariants:
//! - each file is built once, however many agents list it; agents that
//!   list each other (a cycle) are joined through deferred tools, and the
//!   loop's self-call guard refuses a call that would recurse;
//! - MCP servers are connected once for the whole tree, concurrently, and
//!   shared: an agent sees only the servers its `mcp` names; with a
//!   [`McpServerPool`] once for every tree built with that pool;
//! - a sub-agent without a `description`, an MCP server the configuration
//!   does not have, or a model that cannot be chosen is an error naming the
//!   file; nothing is connected before every file was read and checked;
//! - settings: the configuration's defaults, then the file's, then (root
//!   only) the application's; a file without `model` uses the root's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use loopwright_core::toolset::SourceFailure;
use loopwright_core::{
    Agent, AgentTool, Approvals, OutputSpec, ToolSet, ToolSource, agent::AgentOptions, agent::AgentSlot,
    agent::SUB_AGENT_SOURCE, toolset::NAMESPACE_SEPARATOR, toolset::NameFilter,
};
use loopwright_mcp::Connected;
use loopwright_testing::replay::Cassette;
use loopwright_tools::{Workspace, coding_tools};

use super::pool::{McpServerPool, Servers};
use super::{AgentFile, AgentFileError, PromptVars};
use crate::config::cassette::{replayed, replays_offline, through};
use crate::config::{AgentConfig, ChosenModel, ModelChoiceError, RunSetupError};

/// Why agent files could not be built into agents.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("lead.md"), "---\nagents: [helper.md]\nmodel: none/x\n---\nLead.").unwrap();
/// std::fs::write(dir.path().join("helper.md"), "---\nmodel: none/x\n---\nHelp.").unwrap();
/// let file = loopwright_config::files::AgentFile::load(&dir.path().join("lead.md")).unwrap();
/// let err = file.build(&loopwright_config::config::AgentConfig::default()).await.unwrap_err();
/// assert!(err.to_string().ends_with("helper.md: description: required for an agent used as a sub-agent (by lead)"), "{err}");
/// # });
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentBuildError {
    /// A file could not be read or parsed.
    #[error(transparent)]
    File(#[from] AgentFileError),
    /// A sub-agent has no description for its callers' models.
    #[error("{}: description: required for an agent used as a sub-agent (by {used_by})", path.display())]
    MissingDescription {
        /// The sub-agent's file.
        path: PathBuf,
        /// The name of an agent listing it.
        used_by: String,
    },
    /// `mcp` names a server the configuration does not have.
    #[error("{}: mcp: no MCP server named {name} in the configuration (configured: {configured})", path.display())]
    UnknownMcpServer {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
        /// The configured names (`none` when there are none).
        configured: String,
    },
    /// The agent's model could not be chosen.
    #[error("{}: model: {source}", path.display())]
    Model {
        /// The file.
        path: PathBuf,
        /// Why.
        source: ModelChoiceError,
    },
    /// The output schema is not a usable JSON Schema.
    #[error("{}: output: {message}", path.display())]
    Output {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The coding tools' workspace could not be opened.
    #[error("{}: codingTools: workspace {}: {source}", path.display(), workspace.display())]
    Workspace {
        /// The file.
        path: PathBuf,
        /// The workspace directory.
        workspace: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The run could not be set up (the accounting file).
    #[error(transparent)]
    Setup(#[from] RunSetupError),
}

/// A change to the root agent's options ([`BuildOptions::root`]).
pub type RootChange = dyn Fn(&mut AgentOptions) + Send + Sync;

/// How [`AgentFile::build_with`] builds: the application's settings.
///
/// ```
/// let options = loopwright_config::files::BuildOptions::default()
///     .var("TEAM", "search")
///     .model(["openai/gpt-4.1"])
///     .root(|o| o.max_steps = 5);
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct BuildOptions {
    vars: BTreeMap<String, String>,
    model: Vec<String>,
    llm_timeout: Option<Duration>,
    root: Option<Arc<RootChange>>,
    approvals: Option<Approvals>,
    mcp: Option<Vec<String>>,
    no_mcp: bool,
    coding_tools: bool,
    workspace: Option<Workspace>,
    #[cfg(feature = "skills")]
    skills: Option<Arc<crate::skills::Skills>>,
    pool: Option<McpServerPool>,
    cassette: Option<Cassette>,
}

impl BuildOptions {
    /// A prompt variable (`${NAME}` in every file's body).
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The root's model selectors (a fallback order), over its file's.
    pub fn model<S: Into<String>>(mut self, selectors: impl IntoIterator<Item = S>) -> Self {
        self.model = selectors.into_iter().map(Into::into).collect();
        self
    }

    /// The providers' stream inactivity timeout (else `defaults.llmTimeout`).
    pub fn llm_timeout(mut self, timeout: Duration) -> Self {
        self.llm_timeout = Some(timeout);
        self
    }

    /// Change the root's options after its file's settings (so they win
    /// over them): the application's own settings, each set (or put back)
    /// exactly as `change` says.
    pub fn root(mut self, change: impl Fn(&mut AgentOptions) + Send + Sync + 'static) -> Self {
        self.root = Some(Arc::new(change));
        self
    }

    /// Approval of tool calls for every agent of the tree.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = Some(approvals);
        self
    }

    /// The MCP servers of the root, instead of its file's `mcp`.
    pub fn mcp<S: Into<String>>(mut self, servers: impl IntoIterator<Item = S>) -> Self {
        self.mcp = Some(servers.into_iter().map(Into::into).collect());
        self
    }

    /// Connect no MCP server for any agent.
    pub fn no_mcp(mut self) -> Self {
        self.no_mcp = true;
        self
    }

    /// Give the root the coding tools, whatever its file says.
    pub fn coding_tools(mut self) -> Self {
        self.coding_tools = true;
        self
    }

    /// The coding tools' workspace [default: the current directory,
    /// limited to it].
    pub fn workspace(mut self, workspace: Workspace) -> Self {
        self.workspace = Some(workspace);
        self
    }

    /// Offer the root these skills (a [`SkillsSource`](crate::skills::SkillsSource):
    /// the catalog, `load_skill` and `read_skill_file`, whatever its
    /// `tools` patterns say) when there are any, or warnings about them.
    ///
    /// ```
    /// let skills = loopwright_config::skills::Skills::discover(loopwright_config::skills::Skills::default_dirs());
    /// let options = loopwright_config::files::BuildOptions::default().skills(skills);
    /// # let _ = options;
    /// ```
    #[cfg(feature = "skills")]
    pub fn skills(mut self, skills: impl Into<Arc<crate::skills::Skills>>) -> Self {
        let skills = skills.into();
        self.skills = (!skills.is_empty() || !skills.warnings().is_empty()).then_some(skills);
        self
    }

    /// Take MCP servers from `pool`, connecting there the ones it does not
    /// have yet, so that files built with the same pool share one
    /// connection per server; the pool then holds them (the build's
    /// [`BuiltAgent::connected`] is empty).
    pub fn server_pool(mut self, pool: McpServerPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Record every agent's model calls and tool calls into `cassette`, or
    /// replay them from it (see [`loopwright_testing::replay`]): each model
    /// goes through [`Cassette::model`], each MCP server, the coding tools
    /// and the skills through [`Cassette::tool_source`] (a sub-agent is an
    /// agent: its own calls go through it); a strict replay connects no
    /// server (nor takes any from the pool) and serves them from the
    /// cassette.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let cassette = loopwright_testing::replay::Cassette::record(dir.path()).unwrap();
    /// let options = loopwright_config::files::BuildOptions::default().cassette(cassette);
    /// # let _ = options;
    /// ```
    pub fn cassette(mut self, cassette: Cassette) -> Self {
        self.cassette = Some(cassette);
        self
    }
}

/// Agents built from files: the root agent, and the MCP servers to close
/// when done.
#[non_exhaustive]
pub struct BuiltAgent {
    /// The root agent, its sub-agents wired as its tools.
    pub agent: Agent,
    /// Every MCP server the tree connected (close them at the end); empty
    /// with a [`BuildOptions::server_pool`], which holds them instead.
    pub connected: Connected,
    /// Every agent of the tree, by name, root first.
    pub agents: Vec<(String, Agent)>,
    /// Things worth telling the user: unknown prompt variables, model
    /// selectors left out.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for BuiltAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltAgent")
            .field("agent", &self.agent.name())
            .field("agents", &self.agents.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("servers", &self.connected.server_names())
            .field("warnings", &self.warnings)
            .finish()
    }
}

impl AgentFile {
    /// Build this file's agent and its sub-agents with `config`'s providers
    /// and MCP servers.
    pub async fn build(&self, config: &AgentConfig) -> Result<BuiltAgent, AgentBuildError> {
        self.build_with(config, BuildOptions::default()).await
    }

    /// [`build`](Self::build) with the application's settings.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use loopwright_config::files::{AgentFile, BuildOptions};
    /// let config = loopwright_config::config::AgentConfig::load(std::path::Path::new(".ai-agent.json"))?;
    /// let built = AgentFile::load(std::path::Path::new("agents/coordinator.md"))?
    ///     .build_with(&config, BuildOptions::default().var("REPO", "loopwright"))
    ///     .await?;
    /// let answer = built.agent.run("Plan the release").await?;
    /// println!("{} ({} tokens for the whole tree)", answer.text, answer.tree_usage.total().unwrap_or(0));
    /// built.connected.close_all().await;
    /// # Ok(()) }
    /// ```
    pub async fn build_with(
        &self,
        config: &AgentConfig,
        options: BuildOptions,
    ) -> Result<BuiltAgent, AgentBuildError> {
        let tree = Tree::load(self.clone())?;
        let servers = tree.servers(config, &options)?;
        let cassette = options.cassette.as_ref();
        let (connected, shared) = match (&options.pool, cassette) {
            (_, Some(c)) if replays_offline(cassette) => {
                let (sources, failed) = replayed(c, &servers);
                (Connected::default(), TreeServers { sources, failed })
            }
            (Some(pool), _) => {
                let servers = pool.servers(config, &servers).await?;
                (Connected::default(), TreeServers::of(servers, cassette))
            }
            (None, _) if servers.is_empty() => (Connected::default(), TreeServers::default()),
            (None, _) => {
                let connected = config.connect_mcp(&servers).await?;
                let shared = TreeServers::of(Servers::of(&connected), cassette);
                (connected, shared)
            }
        };
        let mut builder = Builder {
            config,
            options: &options,
            tree: &tree,
            servers: &shared,
            built: HashMap::new(),
            building: HashSet::new(),
            slots: Vec::new(),
            root_model: None,
            warnings: Vec::new(),
        };
        let root = match Box::pin(builder.build(0)).await {
            Ok(root) => root,
            Err(e) => {
                connected.close_all().await;
                return Err(e);
            }
        };
        for (index, slot) in std::mem::take(&mut builder.slots) {
            if let Some(agent) = builder.built.get(&index) {
                // Each slot is filled once, here.
                slot.set(agent.clone());
            }
        }
        let Builder { built, warnings, .. } = builder;
        let agents = (0..tree.files.len())
            .filter_map(|i| built.get(&i).map(|a| (tree.files[i].name.clone(), a.clone())))
            .collect();
        Ok(BuiltAgent {
            agent: root,
            connected,
            agents,
            warnings,
        })
    }
}

/// Every file of the tree, read once (the root is index 0), with the
/// indices of each file's sub-agents.
struct Tree {
    files: Vec<AgentFile>,
    children: Vec<Vec<usize>>,
}

impl Tree {
    fn load(root: AgentFile) -> Result<Self, AgentBuildError> {
        let mut tree = Tree {
            files: vec![root],
            children: Vec::new(),
        };
        let mut index: HashMap<PathBuf, usize> = HashMap::new();
        index.insert(canonical(&tree.files[0].path), 0);
        let mut next = 0;
        while next < tree.files.len() {
            let mut children = Vec::new();
            for path in tree.files[next].agents.clone() {
                let key = canonical(&path);
                let child = match index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let file = AgentFile::load(&path)?;
                        tree.files.push(file);
                        index.insert(key, tree.files.len() - 1);
                        tree.files.len() - 1
                    }
                };
                if tree.files[child].description.is_none() {
                    return Err(AgentBuildError::MissingDescription {
                        path: tree.files[child].path.clone(),
                        used_by: tree.files[next].name.clone(),
                    });
                }
                children.push(child);
            }
            tree.children.push(children);
            next += 1;
        }
        Ok(tree)
    }

    /// The MCP servers each file asks for (the root's as the options say),
    /// checked against the configuration; their union, in first-use order.
    fn servers(&self, config: &AgentConfig, options: &BuildOptions) -> Result<Vec<String>, AgentBuildError> {
        let known: Vec<&str> = config
            .mcp_servers
            .iter()
            .map(|s| s.name.as_str())
            .chain(config.mcp_failures.iter().map(|f| f.server.as_str()))
            .collect();
        let mut all: Vec<String> = Vec::new();
        for (i, file) in self.files.iter().enumerate() {
            for name in wanted_servers(i, file, options) {
                if !known.contains(&name.as_str()) {
                    return Err(AgentBuildError::UnknownMcpServer {
                        path: file.path.clone(),
                        name,
                        configured: if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        },
                    });
                }
                if !all.contains(&name) {
                    all.push(name);
                }
            }
        }
        Ok(all)
    }
}

/// The servers agent `index` uses.
fn wanted_servers(index: usize, file: &AgentFile, options: &BuildOptions) -> Vec<String> {
    if options.no_mcp {
        return Vec::new();
    }
    match (&options.mcp, index) {
        (Some(root), 0) => root.clone(),
        _ => file.mcp.clone(),
    }
}

/// A path's canonical form, or the path itself when it has none.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The tree's servers as tool sources (through the cassette, if any).
#[derive(Default)]
struct TreeServers {
    sources: Vec<Arc<dyn ToolSource>>,
    failed: Vec<SourceFailure>,
}

impl TreeServers {
    fn of(servers: Servers, cassette: Option<&Cassette>) -> Self {
        let sources = servers
            .sources
            .into_iter()
            .map(|s| through(cassette, Arc::new(s)))
            .collect();
        Self {
            sources,
            failed: servers.failed,
        }
    }

    fn names(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.name().to_owned()).collect()
    }
}

struct Builder<'a> {
    config: &'a AgentConfig,
    options: &'a BuildOptions,
    tree: &'a Tree,
    /// The tree's servers (its own, or from the pool).
    servers: &'a TreeServers,
    built: HashMap<usize, Agent>,
    building: HashSet<usize>,
    /// Deferred tools to fill once their agent is built.
    slots: Vec<(usize, AgentSlot)>,
    /// The root's selectors, for files without `model`.
    root_model: Option<Vec<String>>,
    warnings: Vec<String>,
}

impl Builder<'_> {
    /// Build file `index` (its sub-agents first).
    async fn build(&mut self, index: usize) -> Result<Agent, AgentBuildError> {
        if let Some(agent) = self.built.get(&index) {
            return Ok(agent.clone());
        }
        self.building.insert(index);
        let file = &self.tree.files[index];
        let chosen = self.choose(index, file).await?;
        let mut sub_agents = Vec::new();
        for &child in &self.tree.children[index] {
            let tool = if self.building.contains(&child) {
                let target = &self.tree.files[child];
                let description = target.description.clone().unwrap_or_default();
                let (mut tool, slot) = AgentTool::deferred(target.name.clone(), description);
                if let Some(schema) = &target.input {
                    tool = tool.input_schema(schema.clone());
                }
                if let Some(schema) = &target.output {
                    tool = tool.output_schema(schema.clone());
                }
                self.slots.push((child, slot));
                tool
            } else {
                let agent = Box::pin(self.build(child)).await?;
                self.tool_for(child, agent)
            };
            sub_agents.push(tool);
        }
        let options = self.agent_options(index, file, &chosen)?;
        let tools = self.tool_set(index, file)?;
        let mut builder = Agent::builder(chosen.model.clone())
            .options(options)
            .name(file.name.clone())
            .shared_tools(Arc::new(tools));
        for tool in sub_agents {
            builder = builder.sub_agent(tool);
        }
        let agent = builder.build();
        self.building.remove(&index);
        self.built.insert(index, agent.clone());
        Ok(agent)
    }

    /// The agent as its callers' tool.
    fn tool_for(&self, index: usize, agent: Agent) -> AgentTool {
        let file = &self.tree.files[index];
        let mut tool = AgentTool::new(agent);
        if let Some(description) = &file.description {
            tool = tool.description(description.clone());
        }
        if let Some(schema) = &file.input {
            tool = tool.input_schema(schema.clone());
        }
        tool
    }

    async fn choose(&mut self, index: usize, file: &AgentFile) -> Result<ChosenModel, AgentBuildError> {
        let requested = match (index, &self.root_model) {
            (0, _) if !self.options.model.is_empty() => self.options.model.clone(),
            _ if !file.model.is_empty() => file.model.clone(),
            (_, Some(root)) => root.clone(),
            _ => Vec::new(),
        };
        let mut chosen = self
            .config
            .choose_model(&requested, self.options.llm_timeout)
            .await
            .map_err(|source| AgentBuildError::Model {
                path: file.path.clone(),
                source,
            })?;
        if let Some(cassette) = &self.options.cassette {
            chosen.model = cassette.model(chosen.model);
        }
        for (selector, why) in &chosen.skipped {
            self.warnings.push(format!(
                "{}: model {selector} left out: {why}",
                file.path.display()
            ));
        }
        if index == 0 {
            self.root_model = Some(chosen.selectors.clone());
        }
        Ok(chosen)
    }

    /// The configuration's defaults, the file's settings, then (root only)
    /// the application's; the root opens the accounting file (the tree
    /// shares its sink); every agent gets its chain's context budget.
    fn agent_options(
        &mut self,
        index: usize,
        file: &AgentFile,
        chosen: &ChosenModel,
    ) -> Result<AgentOptions, AgentBuildError> {
        let file_settings = |mut o: AgentOptions| -> Result<AgentOptions, AgentBuildError> {
            if file.temperature.is_some() {
                o.temperature = file.temperature;
            }
            if file.top_p.is_some() {
                o.top_p = file.top_p;
            }
            if file.max_output_tokens.is_some() {
                o.max_output_tokens = file.max_output_tokens;
            }
            if let Some(n) = file.max_steps {
                o.max_steps = n.max(1);
            }
            if let Some(t) = file.tool_timeout {
                o.tool_timeout = t;
            }
            if file.reasoning.is_some() {
                o.reasoning = file.reasoning;
            }
            if let Some(c) = &file.compaction {
                o.compaction = c.compaction();
            }
            if let Some(t) = &file.tool_search {
                o.tool_search = t.tool_search();
            }
            if let Some(g) = &file.guardrails {
                let rails = g.build(self.config);
                o.guardrails = (!rails.is_empty()).then(|| std::sync::Arc::new(rails));
            }
            if let Some(schema) = &file.output {
                let spec = OutputSpec::from_schema(file.name.clone(), schema.clone()).map_err(|e| {
                    AgentBuildError::Output {
                        path: file.path.clone(),
                        message: e.to_string(),
                    }
                })?;
                o.output = Some(spec);
            }
            if let Some(approvals) = &self.options.approvals {
                o.approvals = Some(approvals.clone());
            }
            Ok(o)
        };
        let mut options = file_settings(self.config.base_options())?;
        if index == 0 {
            if let Some(root) = &self.options.root {
                root(&mut options);
            }
            options = self.config.agent_options(chosen, |_| options)?;
        } else if let Some(budget) = chosen.budget(
            options.max_output_tokens,
            self.config.defaults.context_window_buffer_tokens,
        ) {
            options.budget = Some(budget);
        }
        let vars = self
            .options
            .vars
            .iter()
            .fold(PromptVars::new().max_steps(options.max_steps), |v, (k, value)| {
                v.var(k.clone(), value.clone())
            });
        let (system, warnings) = file.system_prompt(&vars);
        self.warnings.extend(warnings);
        if options.system.is_none() && !system.trim().is_empty() {
            options.system = Some(system);
        }
        Ok(options)
    }

    /// The coding tools (when asked), the file's MCP servers and (root
    /// only) the application's skills, narrowed by its `tools` patterns
    /// (sub-agents and skills are always offered).
    fn tool_set(&self, index: usize, file: &AgentFile) -> Result<ToolSet, AgentBuildError> {
        let mut builder = ToolSet::builder();
        let coding = file.coding_tools.unwrap_or(false) || (index == 0 && self.options.coding_tools);
        if coding {
            let workspace = match &self.options.workspace {
                Some(workspace) => workspace.clone(),
                None => {
                    let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
                    Workspace::limited(&dir).map_err(|source| AgentBuildError::Workspace {
                        path: file.path.clone(),
                        workspace: dir,
                        source,
                    })?
                }
            };
            let coding = through(self.options.cassette.as_ref(), Arc::new(coding_tools(workspace)));
            builder = builder.shared_source(coding, self.config.native_source_options());
        }
        let wanted = wanted_servers(index, file, self.options);
        if !wanted.is_empty() {
            let sources = self
                .servers
                .sources
                .iter()
                .filter(|s| wanted.iter().any(|w| w == s.name()));
            for source in sources {
                builder = builder.shared_source(source.clone(), self.config.source_options(source.name()));
            }
            let failed = self
                .servers
                .failed
                .iter()
                .filter(|f| wanted.contains(&f.server))
                .cloned()
                .collect();
            let servers = self
                .servers
                .names()
                .into_iter()
                .filter(|n| wanted.contains(n))
                .collect();
            builder =
                builder.connection_report(loopwright_core::toolset::ConnectionReport::new(servers, failed));
        }
        // The configuration's remote A2A agents, for the root agent.
        if index == 0
            && let Some(remote) = self.config.a2a_source()
        {
            let remote = through(self.options.cassette.as_ref(), Arc::new(remote));
            builder = builder.shared_source(remote, loopwright_core::toolset::SourceOptions::default());
        }
        // The application's skills are always offered, like sub-agents.
        let always = vec![format!("{SUB_AGENT_SOURCE}{NAMESPACE_SEPARATOR}*")];
        #[cfg(feature = "skills")]
        let always = match (index, &self.options.skills) {
            (0, Some(skills)) => {
                use crate::skills::{LOAD_SKILL, READ_SKILL_FILE, SkillsSource};
                let source = through(
                    self.options.cassette.as_ref(),
                    Arc::new(SkillsSource::new(skills.clone())),
                );
                builder = builder.shared_source(source, loopwright_core::toolset::SourceOptions::default());
                [always, vec![LOAD_SKILL.to_owned(), READ_SKILL_FILE.to_owned()]].concat()
            }
            _ => always,
        };
        if let Some(patterns) = &file.tools {
            let filter = patterns
                .iter()
                .chain(&always)
                .fold(NameFilter::default(), |f, p| f.allow(p.clone()));
            builder = builder.filter(filter);
        }
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests;
