//! [`ToolSource`]: a named group of tools, such as one MCP server or the
//! built-in coding tools.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::tool::Tool;
use crate::typed::IntoTool;

/// Whether a source is the application's own (native) or comes from outside.
///
/// Native sources (the application's tools, the coding tools) come first in a
/// [`ToolSet`](crate::ToolSet), win name clashes, and keep bare tool names by
/// default; external ones (MCP servers) are namespaced `{source}__{tool}`.
///
/// ```
/// assert_eq!(loopwright_types::SourceKind::default(), loopwright_types::SourceKind::External);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SourceKind {
    /// The application's own tools.
    Native,
    /// Tools from outside, such as an MCP server.
    #[default]
    External,
}

/// Why a source could not list its tools.
///
/// ```
/// use std::error::Error;
/// let e = loopwright_types::ToolSourceError::new("fs", "server exited")
///     .with_source(std::io::Error::other("broken pipe"));
/// assert_eq!(e.to_string(), "tool source fs: server exited");
/// assert_eq!(e.source().unwrap().to_string(), "broken pipe");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("tool source {source_name}: {message}")]
#[non_exhaustive]
pub struct ToolSourceError {
    /// The source's name.
    pub source_name: String,
    /// What went wrong.
    pub message: String,
    /// The underlying error.
    #[source]
    pub source: Option<crate::model_error::ErrorSource>,
}

impl ToolSourceError {
    /// An error for a source.
    pub fn new(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            source_name: source_name.into(),
            message: message.into(),
            source: None,
        }
    }

    /// The same error with its underlying error.
    pub fn with_source(mut self, error: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(error));
        self
    }
}

/// A named group of tools.
///
/// ```
/// use std::sync::Arc;
/// use loopwright_types::{tool_fn, StaticToolSource, ToolSource};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
/// let source = StaticToolSource::native("app")
///     .with_tool(tool_fn("ping", "Answer pong.", |_: NoArgs| async { Ok("pong") }));
/// assert_eq!(source.name(), "app");
/// ```
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The source's name (an MCP server's configured name). Used in
    /// namespaced tool names and in events.
    fn name(&self) -> &str;

    /// Native or external; decides default naming and priority.
    fn kind(&self) -> SourceKind {
        SourceKind::External
    }

    /// The tools the source offers now.
    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError>;

    /// Text the model should read about these tools (an MCP server's
    /// `instructions`).
    fn instructions(&self) -> Option<String> {
        None
    }

    /// A receiver whose value changes whenever the tool list changed (MCP
    /// `tools/list_changed`); `None` for a source whose list is fixed.
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// What the application should hear about the last [`tools`](Self::tools)
    /// listing that did not stop the source (a tool it left out, a skill
    /// found invalid, and why). A [`ToolSet`](crate::ToolSet) adds them to
    /// its catalog's warnings, which every run reports as `warning` events.
    ///
    /// ```
    /// use loopwright_types::ToolSource;
    /// assert!(loopwright_types::StaticToolSource::native("app").warnings().is_empty());
    /// ```
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A fixed list of tools.
pub struct StaticToolSource {
    name: String,
    kind: SourceKind,
    tools: Vec<Arc<dyn Tool>>,
    instructions: Option<String>,
}

impl StaticToolSource {
    /// An empty native source (bare names, wins clashes).
    ///
    /// ```
    /// let s = loopwright_types::StaticToolSource::native("app");
    /// assert_eq!(loopwright_types::ToolSource::kind(&s), loopwright_types::SourceKind::Native);
    /// ```
    pub fn native(name: impl Into<String>) -> Self {
        Self::new(name, SourceKind::Native)
    }

    /// An empty source of the given kind.
    ///
    /// ```
    /// let s = loopwright_types::StaticToolSource::new("other", loopwright_types::SourceKind::External);
    /// assert_eq!(loopwright_types::ToolSource::name(&s), "other");
    /// ```
    pub fn new(name: impl Into<String>, kind: SourceKind) -> Self {
        Self {
            name: name.into(),
            kind,
            tools: Vec::new(),
            instructions: None,
        }
    }

    /// Add a tool: a [`Tool`], a [`TypedTool`](crate::TypedTool) or an
    /// `Arc<dyn Tool>`.
    pub fn with_tool<M>(mut self, tool: impl IntoTool<M>) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Add a shared tool.
    pub fn with_shared_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Set the instructions text.
    ///
    /// ```
    /// use loopwright_types::ToolSource;
    /// let s = loopwright_types::StaticToolSource::native("app").with_instructions("Use ping first.");
    /// assert_eq!(s.instructions().as_deref(), Some("Use ping first."));
    /// ```
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }
}

#[async_trait]
impl ToolSource for StaticToolSource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        self.kind
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        Ok(self.tools.clone())
    }

    fn instructions(&self) -> Option<String> {
        self.instructions.clone()
    }
}
