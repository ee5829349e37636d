//! Typed tools without hand-written schemas: [`tool_fn()`] and
//! [`tool_fn_with_context`] turn an async closure into a [`Tool`];
//! [`TypedTool`] is the trait for a tool that carries state. The input schema
//! is generated from the argument type (schemars, flattened), and the loop
//! validates every call against it before the tool runs.
//!
//! A tool's `Ok` value becomes a text result when it serialises to a JSON
//! string and a JSON result otherwise; its error becomes an error result
//! showing the error (with its causes) to the model.

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::input_schema_for;
use crate::tool::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// A [`Tool`] made from an async closure; built by [`tool_fn()`] or
/// [`tool_fn_with_context`].
pub struct FnTool<Args, F> {
    definition: ToolDefinition,
    f: F,
    _args: PhantomData<fn(Args)>,
}

impl<Args, F> FnTool<Args, F> {
    /// The same tool with these annotations.
    ///
    /// ```
    /// use loopwright_types::{tool_fn, Tool, ToolAnnotations};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct NoArgs {}
    /// let t = tool_fn("now", "The time.", |_: NoArgs| async { Ok("12:00") })
    ///     .annotations(ToolAnnotations::default().read_only(true));
    /// assert!(t.definition().annotations.read_only);
    /// ```
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.definition.annotations = annotations;
        self
    }
}

/// Make a tool from an async closure taking typed arguments.
///
/// The closure returns `Result<T, ToolError>` with any `T: Serialize`; `?`
/// converts any error into [`ToolError`], and `Ok(..)` needs no type
/// annotation. For a tool that needs its cancellation token, progress
/// reporter or deadline, see [`tool_fn_with_context`]; for one with its own
/// error type or state, [`TypedTool`].
///
/// ```
/// use loopwright_types::{tool_fn, Tool, ToolContext};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let add = tool_fn("add", "Add two integers.", |args: Add| async move { Ok(args.a + args.b) });
///
/// let out = add.call(serde_json::json!({"a": 2, "b": 3}), ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out.as_text(), "5");
/// assert_eq!(add.definition().input_schema["required"], serde_json::json!(["a", "b"]));
/// # }
/// ```
pub fn tool_fn<Args, T, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<Args, impl Fn(Args, ToolContext) -> Fut + Send + Sync + 'static>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    F: Fn(Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send,
{
    tool_fn_with_context(name, description, move |args, _ctx| f(args))
}

/// Make a tool from an async closure taking typed arguments and the call's
/// [`ToolContext`]: its cancellation token (cancelled on timeout and when the
/// run is cancelled), its deadline and its progress reporter.
///
/// ```
/// use loopwright_types::{tool_fn_with_context, ToolError};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Crawl {
///     /// Pages to fetch.
///     pages: u32,
/// }
///
/// let crawl = tool_fn_with_context("crawl", "Fetch pages.", |args: Crawl, ctx| async move {
///     for page in 1..=args.pages {
///         if ctx.cancellation().is_cancelled() {
///             return Err(ToolError::Cancelled);
///         }
///         ctx.progress().report(page as f64, Some(args.pages as f64), None);
///     }
///     Ok(format!("fetched {} pages", args.pages))
/// });
/// # let _ = crawl;
/// ```
pub fn tool_fn_with_context<Args, T, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<Args, F>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send,
{
    tool_fn_with_context_schema(name, description, input_schema_for::<Args>(), f)
}

/// [`tool_fn_with_context`] with the input schema given.
pub(crate) fn tool_fn_with_context_schema<Args, T, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    schema: Value,
    f: F,
) -> FnTool<Args, F>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send,
{
    FnTool {
        definition: ToolDefinition::new(name, description, schema),
        f,
        _args: PhantomData,
    }
}

/// A tool's value as a result: text when it is a JSON string, else JSON.
fn into_output<T: Serialize>(value: T) -> Result<ToolOutput, ToolError> {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => Ok(ToolOutput::text(text)),
        Ok(value) => Ok(ToolOutput::json(value)),
        Err(e) => Err(ToolError::execution(format!(
            "could not serialise the tool's output: {e}"
        ))),
    }
}

#[async_trait]
impl<Args, T, F, Fut> Tool for FnTool<Args, F>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ToolError>> + Send,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = serde_json::from_value(input).map_err(ToolError::invalid_input)?;
        into_output((self.f)(args, ctx).await?)
    }
}

/// A tool that carries state (a client, a connection pool, settings), with
/// typed arguments and its own output and error types. Pass it to an agent
/// builder's `tool` or to
/// [`StaticToolSource::with_tool`](crate::StaticToolSource::with_tool) as it
/// is.
///
/// ```
/// use loopwright_types::{Tool, TypedTool, ToolContext, IntoTool};
///
/// struct Lookup {
///     prices: std::collections::HashMap<String, u32>,
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Item {
///     /// The item's name.
///     name: String,
/// }
///
/// impl TypedTool for Lookup {
///     type Args = Item;
///     type Output = u32;
///     type Error = String;
///
///     fn name(&self) -> &str { "price" }
///     fn description(&self) -> &str { "The price of an item, in cents." }
///
///     async fn call(&self, item: Item, _ctx: ToolContext) -> Result<u32, String> {
///         self.prices.get(&item.name).copied().ok_or_else(|| format!("no item named {}", item.name))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let tool = Lookup { prices: [("tea".to_string(), 250)].into() }.into_tool();
/// let out = tool.call(serde_json::json!({"name": "tea"}), ToolContext::new("c")).await.unwrap();
/// assert_eq!(out.as_text(), "250");
/// let err = tool.call(serde_json::json!({"name": "gin"}), ToolContext::new("c")).await.unwrap_err();
/// assert_eq!(err.to_string(), "no item named gin");
/// # }
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; the input schema is generated from this type.
    type Args: DeserializeOwned + schemars::JsonSchema + Send;
    /// What a call returns (text when it serialises to a string, else JSON).
    type Output: Serialize + Send;
    /// What a failed call returns; the model sees its `Display` text.
    type Error: Display + Send;

    /// The tool's name.
    fn name(&self) -> &str;

    /// What the tool does, written for a model.
    fn description(&self) -> &str;

    /// Hints about the tool's behaviour (approval defaults use them).
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Run the tool on validated, typed arguments.
    fn call(
        &self,
        args: Self::Args,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// A [`TypedTool`] as a [`Tool`] (its definition computed once).
pub struct TypedToolAdapter<T> {
    definition: ToolDefinition,
    inner: T,
}

impl<T: TypedTool> TypedToolAdapter<T> {
    /// Wrap a typed tool.
    pub fn new(inner: T) -> Self {
        let definition =
            ToolDefinition::new(inner.name(), inner.description(), input_schema_for::<T::Args>())
                .with_annotations(inner.annotations());
        Self { definition, inner }
    }
}

#[async_trait]
impl<T: TypedTool> Tool for TypedToolAdapter<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: T::Args = serde_json::from_value(input).map_err(ToolError::invalid_input)?;
        match self.inner.call(args, ctx).await {
            Ok(value) => into_output(value),
            Err(e) => Err(ToolError::execution(e)),
        }
    }
}

/// Markers telling apart the ways a value becomes a tool (see [`IntoTool`]).
pub mod markers {
    /// A [`Tool`](crate::Tool).
    #[derive(Debug)]
    pub enum Plain {}
    /// A [`TypedTool`](crate::TypedTool).
    #[derive(Debug)]
    pub enum Typed {}
    /// An `Arc<dyn Tool>`.
    #[derive(Debug)]
    pub enum Shared {}
}

/// Anything that can be added as a tool: a [`Tool`], a [`TypedTool`], or a
/// shared `Arc<dyn Tool>`. The marker `M` is inferred; a type implementing
/// both `Tool` and `TypedTool` must be wrapped by hand.
///
/// ```
/// use loopwright_types::{tool_fn, IntoTool, Tool};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct NoArgs {}
/// let tool = tool_fn("ping", "Answer pong.", |_: NoArgs| async { Ok("pong") }).into_tool();
/// assert_eq!(tool.definition().name, "ping");
/// ```
pub trait IntoTool<M> {
    /// The tool, shared.
    fn into_tool(self) -> Arc<dyn Tool>;
}

impl<T: Tool + 'static> IntoTool<markers::Plain> for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl<T: TypedTool> IntoTool<markers::Typed> for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(TypedToolAdapter::new(self))
    }
}

impl IntoTool<markers::Shared> for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}
