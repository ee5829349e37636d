//! Tool search: a catalog too big to send whole is offered through one
//! `search_tools` tool, and the tools the model finds are offered from the
//! next step on.
//!
//! Invariants:
//! - search is on for a catalog only above the thresholds
//!   ([`ToolSearch::max_tools`], [`ToolSearch::schema_share`] of the
//!   context window) and when some tool can be held back; otherwise the
//!   model gets every tool, as without it;
//! - a step offers `search_tools`, the always-on tools (marked
//!   [`ToolDefinition::always_on`], matching [`ToolSearch::always_on`], or
//!   from a native source) and every tool the history shows as loaded: named
//!   by a `search_tools` result ([`ToolOutputPart::ToolReference`]) or
//!   called before. The loaded set is read from the history, so it holds
//!   across the steps of a run, the turns of a conversation and a resume;
//! - the rest goes in [`ModelRequest::deferred_tools`](crate::model::ModelRequest::deferred_tools),
//!   for providers that load tools natively (Anthropic's `defer_loading`);
//! - a call to a catalog tool not offered yet still runs (it is validated
//!   like any other): deferral changes what the model is shown, not what
//!   it may do.

mod index;

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use loopwright_types::SourceKind;
use loopwright_types::budget::ContextBudget;
use loopwright_types::tool::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use loopwright_types::toolset::{ToolCatalog, wildcard_match};
use loopwright_types::{ContentPart, Message, ToolOutputPart};

/// The name of the search tool.
pub const SEARCH_TOOLS_NAME: &str = "search_tools";
/// The source the search tool is listed under.
pub const SEARCH_SOURCE: &str = "tool_search";
/// Tools a catalog may hold before search takes over: more than a model
/// picks from well, fewer than most multi-server setups bring.
pub const DEFAULT_MAX_TOOLS: usize = 64;
/// Share of the context window the tool definitions may fill before search
/// takes over.
pub const DEFAULT_SCHEMA_SHARE: f64 = 0.25;
/// Tools one search returns: enough for a task, few enough to choose from.
pub const DEFAULT_MAX_RESULTS: usize = 8;
/// Characters of a tool's description a search result shows.
const DESCRIPTION_CHARS: usize = 240;
/// The longest query `search_tools` takes, in characters: its schema says
/// so, so a longer one is refused before the call with a message the model
/// reads (and only its first [`index::MAX_QUERY_WORDS`] words are scored).
const MAX_QUERY_CHARS: usize = 1_000;

/// `query` cut to [`MAX_QUERY_CHARS`] characters (for a caller that did
/// not go through the schema).
fn cut_query(query: &str) -> String {
    query.chars().take(MAX_QUERY_CHARS).collect()
}

/// When and how tool search holds a catalog back (see the module's
/// invariants). Off unless set ([`AgentOptions::tool_search`](crate::agent::AgentOptions::tool_search));
/// the `loopwright` command, configuration files and agent files turn it
/// on.
///
/// ```
/// use loopwright_core::tool_search::ToolSearch;
/// let search = ToolSearch::default().max_tools(32).always_on("github__search_*");
/// assert_eq!(search.max_tools, 32);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSearch {
    /// Search takes over above this many tools.
    pub max_tools: usize,
    /// ... or when the definitions fill more than this share of the context
    /// window (with a [`ContextBudget`]).
    pub schema_share: f64,
    /// Tools one search returns at most.
    pub max_results: usize,
    /// Exposed-name patterns (`*` wildcards) of tools always offered.
    pub always_on: Vec<String>,
    /// Hold back native sources' tools too (the application's own, the
    /// coding tools, sub-agents), which are always offered otherwise.
    pub defer_native: bool,
}

impl Default for ToolSearch {
    fn default() -> Self {
        Self {
            max_tools: DEFAULT_MAX_TOOLS,
            schema_share: DEFAULT_SCHEMA_SHARE,
            max_results: DEFAULT_MAX_RESULTS,
            always_on: Vec::new(),
            defer_native: false,
        }
    }
}

impl ToolSearch {
    /// Set the tool count above which search takes over.
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = n;
        self
    }

    /// Set the share of the context window the definitions may fill.
    pub fn schema_share(mut self, share: f64) -> Self {
        self.schema_share = share;
        self
    }

    /// Set how many tools one search returns (at least 1).
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.max(1);
        self
    }

    /// Always offer the tools whose exposed names match `pattern`.
    pub fn always_on(mut self, pattern: impl Into<String>) -> Self {
        self.always_on.push(pattern.into());
        self
    }

    /// Hold back native sources' tools too.
    pub fn defer_native(mut self, on: bool) -> Self {
        self.defer_native = on;
        self
    }

    /// Whether `catalog` is big enough for search: more tools than
    /// [`Self::max_tools`], or definitions over [`Self::schema_share`] of
    /// `budget`'s window.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let catalog = loopwright_core::ToolSet::empty().catalog().await;
    /// assert!(!loopwright_core::tool_search::ToolSearch::default().applies(&catalog, None));
    /// # }
    /// ```
    pub fn applies(&self, catalog: &ToolCatalog, budget: Option<&ContextBudget>) -> bool {
        if catalog.tools().len() > self.max_tools {
            return true;
        }
        budget.is_some_and(|b| {
            let text = serde_json::to_string(catalog.definitions().as_ref()).unwrap_or_default();
            let tokens = b.counter.count(&text) as f64;
            tokens > self.schema_share * b.context_window as f64
        })
    }

    fn always_offered(&self, tool: &loopwright_types::toolset::ExposedTool) -> bool {
        tool.tool.definition().always_on
            || (tool.source_kind() == SourceKind::Native && !self.defer_native)
            || self.always_on.iter().any(|p| wildcard_match(p, &tool.name))
    }
}

/// Names the history shows as loaded: referenced by tool results, or
/// called.
pub(crate) fn loaded_names(history: &[Message]) -> HashSet<&str> {
    let mut names = HashSet::new();
    for part in history.iter().flat_map(|m| &m.content) {
        match part {
            ContentPart::ToolCall(call) => {
                names.insert(call.name.as_str());
            }
            ContentPart::ToolResult(result) => {
                for p in &result.parts {
                    if let ToolOutputPart::ToolReference { tool } = p {
                        names.insert(tool.as_str());
                    }
                }
            }
            _ => {}
        }
    }
    names
}

/// One step's tools under search: those offered, and those held back.
#[derive(Debug, Clone)]
pub(crate) struct Offer {
    pub tools: Arc<Vec<ToolDefinition>>,
    pub deferred: Arc<Vec<ToolDefinition>>,
}

/// Tool search within one run: the catalog with `search_tools` added and
/// the offer of each step, rebuilt only when the catalog or the loaded set
/// changes (so the guard's and the provider's caches keep hitting).
pub(crate) struct SearchRun {
    config: ToolSearch,
    /// (base catalog, the catalog the loop uses, search on).
    catalog: Option<(Arc<ToolCatalog>, Arc<ToolCatalog>, bool)>,
    /// (loaded names, the offer for them).
    offer: Option<(Vec<String>, Offer)>,
}

impl SearchRun {
    pub fn new(config: ToolSearch) -> Self {
        Self {
            config,
            catalog: None,
            offer: None,
        }
    }

    /// The catalog the loop uses with `base`: `base` itself, or with
    /// `search_tools` added when search applies.
    pub fn catalog(&mut self, base: &Arc<ToolCatalog>, budget: Option<&ContextBudget>) -> Arc<ToolCatalog> {
        if let Some((seen, used, _)) = &self.catalog
            && Arc::ptr_eq(seen, base)
        {
            return used.clone();
        }
        // Search only when something can be held back.
        let on =
            self.config.applies(base, budget) && base.tools().iter().any(|t| !self.config.always_offered(t));
        let used = if on { self.searched(base) } else { base.clone() };
        self.catalog = Some((base.clone(), used.clone(), on));
        self.offer = None;
        used
    }

    /// `base` with `search_tools` added: built once per catalog and shared
    /// by the runs on it (its search index included).
    fn searched(&self, base: &Arc<ToolCatalog>) -> Arc<ToolCatalog> {
        let build = || {
            let tool = SearchTools::new(base, self.config.max_results);
            Arc::new(base.with_tool(Arc::new(tool), SEARCH_SOURCE))
        };
        let (results, searched) = base.searched.get_or_init(|| (self.config.max_results, build()));
        if *results == self.config.max_results {
            searched.clone()
        } else {
            build()
        }
    }

    /// This step's offer, when search is on for the current catalog.
    pub fn offer(&mut self, history: &[Message]) -> Option<Offer> {
        let (_, catalog, true) = self.catalog.as_ref()? else {
            return None;
        };
        let loaded = loaded_names(history);
        let mut names: Vec<String> = loaded
            .into_iter()
            .filter(|n| catalog.get(n).is_some())
            .map(str::to_owned)
            .collect();
        names.sort_unstable();
        if let Some((seen, offer)) = &self.offer
            && *seen == names
        {
            return Some(offer.clone());
        }
        let mut tools = Vec::new();
        let mut deferred = Vec::new();
        for (exposed, def) in catalog.tools().iter().zip(catalog.definitions().iter()) {
            let offered = exposed.name == SEARCH_TOOLS_NAME
                || self.config.always_offered(exposed)
                || names.binary_search(&exposed.name).is_ok();
            if offered {
                tools.push(def.clone());
            } else {
                deferred.push(def.clone());
            }
        }
        let offer = Offer {
            tools: Arc::new(tools),
            deferred: Arc::new(deferred),
        };
        self.offer = Some((names, offer.clone()));
        Some(offer)
    }
}

/// The `search_tools` tool of one catalog. It holds the catalog's
/// definitions, not the catalog (which holds it: no cycle).
struct SearchTools {
    definition: ToolDefinition,
    /// Shared with the blocking thread a search runs on.
    found: Arc<Finder>,
}

/// What a search reads.
struct Finder {
    definitions: Arc<Vec<ToolDefinition>>,
    /// The catalog's sources, sorted, for the answer that finds nothing.
    sources: Vec<String>,
    index: index::Index,
    max_results: usize,
}

impl SearchTools {
    fn new(catalog: &ToolCatalog, max_results: usize) -> Self {
        let index = index::Index::new(catalog.definitions().iter());
        let mut sources: Vec<String> = catalog.tools().iter().map(|t| t.source.clone()).collect();
        sources.sort_unstable();
        sources.dedup();
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "Words for what you need done, or a tool's name (\"create github issue\", \"read_file\")."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let description = format!(
            "Find tools to use. {} more tools are available than those you see; search them by what you need \
             (words from a tool's name, description or parameters). The tools found are listed with what they \
             do and become callable from your next step.",
            catalog.tools().len()
        );
        let definition = ToolDefinition::new(SEARCH_TOOLS_NAME, description, schema)
            .with_annotations(ToolAnnotations::default().read_only(true).idempotent(true))
            .always_on(true);
        Self {
            definition,
            found: Arc::new(Finder {
                definitions: catalog.definitions().clone(),
                sources,
                index,
                max_results,
            }),
        }
    }
}

impl Finder {
    /// The answer for `query`: a line per tool found, then a reference to
    /// each (which loads it).
    fn answer(&self, query: &str) -> ToolOutput {
        let query = cut_query(query);
        let found = self.index.search(&query, self.max_results);
        if found.is_empty() {
            return ToolOutput::text(format!(
                "No tool matches \"{query}\". Search again with other words: what the tool does, or part of \
                 its name. The tools come from: {}.",
                self.sources.join(", ")
            ));
        }
        let mut text = format!(
            "Found {} tool(s) for \"{query}\"; call them directly from your next step:",
            found.len()
        );
        let mut parts = Vec::new();
        for name in &found {
            let Some(def) = self.definitions.iter().find(|d| d.name == *name) else {
                continue;
            };
            let description: String = def.description.chars().take(DESCRIPTION_CHARS).collect();
            let required: HashSet<&str> = def
                .input_schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let parameters: Vec<String> = index::parameter_names(def)
                .into_iter()
                .map(|p| {
                    if required.contains(p) {
                        format!("{p} (required)")
                    } else {
                        p.to_owned()
                    }
                })
                .collect();
            text.push_str(&format!("\n- {name}: {}", description.trim()));
            if !parameters.is_empty() {
                text.push_str(&format!(" Parameters: {}.", parameters.join(", ")));
            }
            parts.push(ToolOutputPart::ToolReference {
                tool: (*name).to_owned(),
            });
        }
        parts.insert(0, ToolOutputPart::text(text));
        ToolOutput::new(parts)
    }
}

#[async_trait]
impl Tool for SearchTools {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = input.get("query").and_then(Value::as_str).unwrap_or_default();
        if query.trim().is_empty() {
            return Err(ToolError::invalid_input(
                "query is empty: say what you need a tool for",
            ));
        }
        // Off the async workers, so the call's deadline and cancellation
        // reach it like any tool's.
        let finder = self.found.clone();
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || finder.answer(&query))
            .await
            .map_err(ToolError::execution)
    }
}
