//! [`ToolSet`]: tool sources merged into one catalog the model sees.
//!
//! Sources are merged by priority (native first); see [`naming`](self) for the
//! naming invariant. A catalog is built once and rebuilt only when a source
//! reports that its tool list changed; each tool's input validator is compiled
//! when the catalog is built, never per call.

mod filter;
mod naming;
mod report;
mod transform;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

pub use filter::{NameFilter, wildcard_match};
use naming::{Candidate, Resolution, resolve};
pub use naming::{
    MAX_TOOL_NAME_LEN, NAMESPACE_SEPARATOR, NameFn, Naming, is_valid_tool_name, sanitize_tool_name,
};
pub use report::{ConnectionReport, SourceFailure};
pub use transform::{ToolOverride, ToolOverrides, ToolTransform};

use crate::schema::{CheckError, SchemaError, Validator};
use crate::source::{SourceKind, ToolSource};
use crate::tool::{Tool, ToolDefinition};

/// Default priority of native sources: above every external one.
pub const NATIVE_PRIORITY: i32 = 100;
/// Default priority of external sources (MCP servers).
pub const EXTERNAL_PRIORITY: i32 = 0;

/// Heading of the system-prompt section that carries sources' instructions.
pub const INSTRUCTIONS_HEADING: &str = "## TOOLS' INSTRUCTIONS";

/// How one source joins a [`ToolSet`].
///
/// ```
/// use loopwright_types::{Naming, NameFilter, SourceOptions};
/// let opts = SourceOptions::default()
///     .naming(Naming::Bare)
///     .priority(50)
///     .filter(NameFilter::default().deny("delete_*"));
/// # let _ = opts;
/// ```
#[derive(Clone, Default)]
pub struct SourceOptions {
    naming: Option<Naming>,
    priority: Option<i32>,
    filter: NameFilter,
    transform: Option<Arc<ToolTransform>>,
}

impl std::fmt::Debug for SourceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceOptions")
            .field("naming", &self.naming)
            .field("priority", &self.priority)
            .field("filter", &self.filter)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

impl SourceOptions {
    /// Naming policy (default: bare for native sources, prefixed otherwise).
    pub fn naming(mut self, naming: Naming) -> Self {
        self.naming = Some(naming);
        self
    }

    /// Priority; higher wins bare-name clashes (default: [`NATIVE_PRIORITY`]
    /// or [`EXTERNAL_PRIORITY`]).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Which of the source's tools (by original name) to keep.
    pub fn filter(mut self, filter: NameFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Reshape the source's tools before they are named: `transform` gets
    /// each definition (after the filter, which sees raw names) and returns
    /// the one the model is told, or `None` to drop the tool. Calls still
    /// go to the tool as it was (an MCP server gets its raw name);
    /// [`ToolOverrides::transform`] makes one from name patterns.
    ///
    /// ```
    /// use loopwright_types::SourceOptions;
    /// let opts = SourceOptions::default().transform(|def: &loopwright_types::ToolDefinition| {
    ///     (!def.name.starts_with("delete")).then(|| def.clone().with_name(format!("gh_{}", def.name)))
    /// });
    /// # let _ = opts;
    /// ```
    pub fn transform(
        mut self,
        transform: impl Fn(&ToolDefinition) -> Option<ToolDefinition> + Send + Sync + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// [`SourceOptions::transform`] with a shared transform.
    pub fn shared_transform(mut self, transform: Arc<ToolTransform>) -> Self {
        self.transform = Some(transform);
        self
    }
}

#[derive(Clone)]
struct SourceEntry {
    source: Arc<dyn ToolSource>,
    options: SourceOptions,
    changes: Option<watch::Receiver<u64>>,
}

/// Tool sources merged into one catalog.
///
/// ```
/// use loopwright_types::{tool_fn, StaticToolSource, ToolSet};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let app = StaticToolSource::native("app")
///     .with_tool(tool_fn("ping", "Answer pong.", |_: NoArgs| async { Ok("pong") }));
/// let tools = ToolSet::builder().source(app).build();
/// let catalog = tools.catalog().await;
/// assert_eq!(catalog.get("ping").unwrap().source, "app");
/// # }
/// ```
pub struct ToolSet {
    entries: Vec<SourceEntry>,
    filter: NameFilter,
    report: Option<ConnectionReport>,
    cache: Mutex<Option<(Arc<ToolCatalog>, Vec<u64>)>>,
}

/// Builds a [`ToolSet`].
#[derive(Default)]
#[must_use = "a builder does nothing until `build()`"]
pub struct ToolSetBuilder {
    entries: Vec<SourceEntry>,
    filter: NameFilter,
    report: Option<ConnectionReport>,
}

impl ToolSetBuilder {
    /// Add a source with default options.
    pub fn source(self, source: impl ToolSource + 'static) -> Self {
        self.shared_source(Arc::new(source), SourceOptions::default())
    }

    /// Add a source with options.
    pub fn source_with(self, source: impl ToolSource + 'static, options: SourceOptions) -> Self {
        self.shared_source(Arc::new(source), options)
    }

    /// Add a shared source with options.
    pub fn shared_source(mut self, source: Arc<dyn ToolSource>, options: SourceOptions) -> Self {
        let changes = source.changes();
        self.entries.push(SourceEntry {
            source,
            options,
            changes,
        });
        self
    }

    /// Filter over exposed names, applied to every source.
    ///
    /// ```
    /// let set = loopwright_types::ToolSet::builder()
    ///     .filter(loopwright_types::NameFilter::default().deny("*__delete_*"))
    ///     .build();
    /// # let _ = set;
    /// ```
    pub fn filter(mut self, filter: NameFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Record which servers were connected and which failed; every run
    /// reports it as an `mcp_connected` event (then a `warning` per failure).
    /// Reports given more than once are merged.
    pub fn connection_report(mut self, report: ConnectionReport) -> Self {
        match &mut self.report {
            Some(existing) => existing.merge(report),
            None => self.report = Some(report),
        }
        self
    }

    /// The tool set.
    pub fn build(self) -> ToolSet {
        ToolSet {
            entries: self.entries,
            filter: self.filter,
            report: self.report,
            cache: Mutex::new(None),
        }
    }
}

impl ToolSet {
    /// A builder.
    pub fn builder() -> ToolSetBuilder {
        ToolSetBuilder::default()
    }

    /// A tool set with no tools.
    ///
    /// ```
    /// let set = loopwright_types::ToolSet::empty();
    /// # let _ = set;
    /// ```
    pub fn empty() -> Self {
        Self::builder().build()
    }

    /// A builder holding this set's sources, filter and report, to add more
    /// (the catalog is built anew).
    ///
    /// ```
    /// let set = loopwright_types::ToolSet::empty();
    /// let more = set.to_builder().source(loopwright_types::StaticToolSource::native("mine")).build();
    /// # let _ = more;
    /// ```
    pub fn to_builder(&self) -> ToolSetBuilder {
        ToolSetBuilder {
            entries: self.entries.clone(),
            filter: self.filter.clone(),
            report: self.report.clone(),
        }
    }

    /// Which servers were connected and which failed, when the builder was
    /// given a [`ConnectionReport`].
    pub fn connection_report(&self) -> Option<&ConnectionReport> {
        self.report.as_ref()
    }

    fn generations(&self) -> Vec<u64> {
        self.entries
            .iter()
            .map(|e| e.changes.as_ref().map_or(0, |rx| *rx.borrow()))
            .collect()
    }

    /// The current catalog: the cached one, or a new one when a source's tool
    /// list changed since it was built.
    pub async fn catalog(&self) -> Arc<ToolCatalog> {
        let generations = self.generations();
        if let Ok(cache) = self.cache.lock()
            && let Some((catalog, seen)) = cache.as_ref()
            && *seen == generations
        {
            return catalog.clone();
        }
        // Built outside the lock: listing tools awaits.
        let catalog = Arc::new(self.build_catalog().await);
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some((catalog.clone(), generations));
        }
        catalog
    }

    async fn build_catalog(&self) -> ToolCatalog {
        let listed = futures::future::join_all(self.entries.iter().map(|e| e.source.tools())).await;
        let mut gathered = self.gather(listed);
        let validators = self.validators(&gathered).await;
        let resolutions = resolve(&gathered.candidates);
        let mut exposed = Vec::with_capacity(gathered.tools.len());
        let warnings = &mut gathered.warnings;
        let listed = gathered
            .candidates
            .into_iter()
            .zip(gathered.tools)
            .zip(validators);
        for (((candidate, (tool, kind)), validator), resolution) in listed.zip(resolutions) {
            match resolution {
                Resolution::Named(name) => {
                    let clean = sanitize_tool_name(&candidate.desired);
                    if name != clean && clean.len() <= MAX_TOOL_NAME_LEN {
                        warnings.push(format!(
                            "tool {} from {} is exposed as {name}: the name {clean} is taken by another tool",
                            candidate.original, candidate.source
                        ));
                    }
                    let validator = match validator {
                        Ok(v) => Some(v),
                        Err(SchemaError::Invalid(e)) => {
                            warnings.push(format!(
                                "tool {name} ({} from {}): its input schema does not compile ({e}); \
                                 calls are passed on unvalidated",
                                candidate.original, candidate.source
                            ));
                            None
                        }
                        Err(e) => {
                            warnings.push(format!(
                                "tool {} from {} is hidden: its input schema cannot be used ({e})",
                                candidate.original, candidate.source
                            ));
                            continue;
                        }
                    };
                    exposed.push(ExposedTool {
                        name,
                        source: candidate.source,
                        original_name: candidate.original,
                        tool,
                        validator,
                        kind,
                    });
                }
                Resolution::Shadowed {
                    by_source,
                    by_original,
                } => warnings.push(format!(
                    "tool {} from {} is hidden: the name is taken by {by_original} from {by_source}",
                    candidate.original, candidate.source
                )),
            }
        }
        exposed.sort_by(|a, b| a.name.cmp(&b.name));
        ToolCatalog::new(exposed, gathered.warnings, &gathered.instructions)
    }

    /// The sources' tools after their filters and transforms, with the
    /// names they want, their instructions and what they warn about.
    fn gather(&self, listed: Vec<Result<Vec<Arc<dyn Tool>>, crate::source::ToolSourceError>>) -> Gathered {
        let mut gathered = Gathered::default();
        for (entry, result) in self.entries.iter().zip(listed) {
            let source_name = entry.source.name().to_owned();
            let kind = entry.source.kind();
            let naming = entry.options.naming.clone().unwrap_or(match kind {
                SourceKind::Native => Naming::Bare,
                SourceKind::External => Naming::Prefixed,
            });
            let priority = entry.options.priority.unwrap_or(match kind {
                SourceKind::Native => NATIVE_PRIORITY,
                SourceKind::External => EXTERNAL_PRIORITY,
            });
            let listed = match result {
                Ok(listed) => listed,
                Err(e) => {
                    gathered
                        .warnings
                        .push(format!("{e}; its tools are not available"));
                    continue;
                }
            };
            if let Some(text) = entry.source.instructions().filter(|t| !t.trim().is_empty()) {
                gathered.instructions.push((source_name.clone(), text));
            }
            gathered.warnings.extend(entry.source.warnings());
            for tool in listed {
                let original = tool.definition().name.clone();
                if !entry.options.filter.permits(&original) {
                    continue;
                }
                let tool = match &entry.options.transform {
                    Some(transform) => match transform::reshape(tool, transform.as_ref()) {
                        Some(tool) => tool,
                        None => continue,
                    },
                    None => tool,
                };
                let desired = naming.apply(&source_name, &tool.definition().name);
                if !self.filter.permits(&desired) {
                    continue;
                }
                gathered.candidates.push(Candidate {
                    source: source_name.clone(),
                    priority,
                    original,
                    bare: matches!(naming, Naming::Bare),
                    desired,
                });
                gathered.tools.push((tool, kind));
            }
        }
        gathered
    }

    /// A validator for each tool's input schema: the previous catalog's
    /// when the tool's schema did not change (a list change usually touches
    /// one source), else compiled on a blocking thread (a schema from an
    /// MCP server can take long to check against the limits).
    async fn validators(&self, gathered: &Gathered) -> Vec<Result<Validator, SchemaError>> {
        let tools = &gathered.tools;
        let previous = self
            .cache
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(|(catalog, _)| catalog.clone()));
        let by_origin: HashMap<(&str, &str), &ExposedTool> = previous
            .iter()
            .flat_map(|catalog| catalog.tools.iter())
            .map(|t| ((t.source.as_str(), t.original_name.as_str()), t))
            .collect();
        let reused: Vec<Option<Validator>> = tools
            .iter()
            .zip(&gathered.candidates)
            .map(|((tool, _), candidate)| {
                by_origin
                    .get(&(candidate.source.as_str(), candidate.original.as_str()))
                    .filter(|t| t.tool.definition().input_schema == tool.definition().input_schema)
                    .and_then(|t| t.validator.clone())
            })
            .collect();
        let missing: Vec<Arc<dyn Tool>> = tools
            .iter()
            .zip(&reused)
            .filter(|(_, old)| old.is_none())
            .map(|((tool, _), _)| tool.clone())
            .collect();
        let compile = move || {
            missing
                .iter()
                .map(|tool| Validator::new(&tool.definition().input_schema))
                .collect::<Vec<_>>()
        };
        let compiled = match tokio::task::spawn_blocking(compile).await {
            Ok(compiled) => compiled,
            Err(e) => {
                let error = SchemaError::Invalid(format!("compiling it failed: {e}"));
                vec![Err(error); tools.len()]
            }
        };
        let mut compiled = compiled.into_iter();
        reused
            .into_iter()
            .map(|old| match old {
                Some(validator) => Ok(validator),
                None => compiled
                    .next()
                    .unwrap_or_else(|| Err(SchemaError::Invalid("it was not compiled".to_owned()))),
            })
            .collect()
    }
}

/// What the sources offer, before names are resolved.
#[derive(Default)]
struct Gathered {
    candidates: Vec<Candidate>,
    tools: Vec<(Arc<dyn Tool>, SourceKind)>,
    warnings: Vec<String>,
    instructions: Vec<(String, String)>,
}

/// A tool as the model sees it.
#[derive(Clone)]
pub struct ExposedTool {
    /// The name the model sees.
    pub name: String,
    /// The source's name.
    pub source: String,
    /// The tool's own name (used on the wire to MCP servers).
    pub original_name: String,
    /// The tool.
    pub tool: Arc<dyn Tool>,
    validator: Option<Validator>,
    kind: SourceKind,
}

impl ExposedTool {
    /// Whether the tool's source is native (the application's own tools)
    /// or external (an MCP server).
    pub fn source_kind(&self) -> SourceKind {
        self.kind
    }

    /// Check an input against the tool's schema. `Err` carries the
    /// validator's messages with the place in the input each one is about.
    pub fn validate(&self, input: &Value) -> Result<(), CheckError> {
        match &self.validator {
            Some(validator) => validator.check(input),
            None => Ok(()),
        }
    }

    /// [`Self::validate`], off the async workers when the check could be
    /// slow ([`Validator::check_async`]).
    pub async fn validate_async(&self, input: &Value) -> Result<(), CheckError> {
        match &self.validator {
            Some(validator) => validator.check_async(input).await,
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for ExposedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExposedTool")
            .field("name", &self.name)
            .field("source", &self.source)
            .field("original_name", &self.original_name)
            .finish_non_exhaustive()
    }
}

/// The merged tools at one moment: exposed names, their definitions for the
/// model, and what merging had to warn about.
#[derive(Debug)]
pub struct ToolCatalog {
    tools: Vec<ExposedTool>,
    by_name: HashMap<String, usize>,
    definitions: Arc<Vec<ToolDefinition>>,
    warnings: Vec<String>,
    instructions: Option<String>,
    /// This catalog with a run's `search_tools` added, built once for the
    /// runs that share the catalog (by the search's result count).
    #[doc(hidden)]
    pub searched: std::sync::OnceLock<(usize, Arc<ToolCatalog>)>,
}

impl ToolCatalog {
    fn new(tools: Vec<ExposedTool>, warnings: Vec<String>, instructions: &[(String, String)]) -> Self {
        let instructions = (!instructions.is_empty()).then(|| {
            let mut text = String::from(INSTRUCTIONS_HEADING);
            for (source, body) in instructions {
                text.push_str(&format!("\n\n## TOOL {source} INSTRUCTIONS\n\n{}", body.trim()));
            }
            text
        });
        Self::assemble(tools, warnings, instructions)
    }

    fn assemble(tools: Vec<ExposedTool>, warnings: Vec<String>, instructions: Option<String>) -> Self {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let definitions = tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name.clone(),
                ..t.tool.definition().clone()
            })
            .collect();
        Self {
            tools,
            by_name,
            definitions: Arc::new(definitions),
            warnings,
            instructions,
            searched: std::sync::OnceLock::new(),
        }
    }

    /// This catalog with `tool` added under its own name, from `source`
    /// (the run's `search_tools`), replacing a tool of that name.
    #[doc(hidden)]
    pub fn with_tool(&self, tool: Arc<dyn Tool>, source: &str) -> Self {
        let name = tool.definition().name.clone();
        let validator = Validator::new(&tool.definition().input_schema).ok();
        let mut tools: Vec<ExposedTool> = self.tools.iter().filter(|t| t.name != name).cloned().collect();
        tools.push(ExposedTool {
            original_name: name.clone(),
            name,
            source: source.to_owned(),
            tool,
            validator,
            kind: SourceKind::Native,
        });
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Self::assemble(tools, self.warnings.clone(), self.instructions.clone())
    }

    /// A catalog with no tools.
    #[doc(hidden)]
    pub fn empty() -> Self {
        Self::new(Vec::new(), Vec::new(), &[])
    }

    /// The tool exposed under `name`.
    pub fn get(&self, name: &str) -> Option<&ExposedTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Every exposed tool, sorted by exposed name.
    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// Definitions under exposed names, as sent to the model.
    pub fn definitions(&self) -> &Arc<Vec<ToolDefinition>> {
        &self.definitions
    }

    /// Exposed names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// Clashes, failed sources, schemas that did not compile, and what the
    /// sources themselves warn about ([`ToolSource::warnings`]).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The system-prompt section with the sources' instructions, headed
    /// [`INSTRUCTIONS_HEADING`] with a `## TOOL {source} INSTRUCTIONS`
    /// subsection per source that has any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }
}
