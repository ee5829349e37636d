//! Typed tools without boilerplate: [`tool_fn`] turns an `async fn(Args)` into
//! a [`Tool`], with the input schema generated from `Args`.

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::schema::input_schema_for;
use crate::tool::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// A [`Tool`] made from an async function; built by [`tool_fn`].
pub struct FnTool<Args, F> {
    definition: ToolDefinition,
    f: F,
    _args: PhantomData<fn(Args)>,
}

impl<Args, F> FnTool<Args, F> {
    /// The same tool with these annotations.
    ///
    /// ```
    /// use agent_core::{tool_fn, Tool, ToolAnnotations};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct NoArgs {}
    /// let t = tool_fn("now", "The time.", |_: NoArgs| async { Ok::<_, String>("12:00") })
    ///     .annotations(ToolAnnotations { read_only: true, ..Default::default() });
    /// assert!(t.definition().annotations.read_only);
    /// ```
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.definition.annotations = annotations;
        self
    }
}

/// Make a tool from an async function taking typed arguments.
///
/// The input schema comes from `Args` (schemars, flattened). The function's
/// `Ok` value becomes text when it serialises to a JSON string and JSON
/// output otherwise; its `Err` becomes an error result showing the error.
///
/// ```
/// use agent_core::{tool_fn, Tool, ToolContext};
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
/// let add = tool_fn("add", "Add two integers.", |args: Add| async move {
///     Ok::<_, std::convert::Infallible>(args.a + args.b)
/// });
///
/// let out = add.call(serde_json::json!({"a": 2, "b": 3}), ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out.as_text(), "5");
/// assert_eq!(add.definition().input_schema["required"], serde_json::json!(["a", "b"]));
/// # }
/// ```
pub fn tool_fn<Args, T, E, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<Args, F>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    E: Display,
    F: Fn(Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send,
{
    FnTool {
        definition: ToolDefinition::new(name, description, input_schema_for::<Args>()),
        f,
        _args: PhantomData,
    }
}

#[async_trait]
impl<Args, T, E, F, Fut> Tool for FnTool<Args, F>
where
    Args: DeserializeOwned + schemars::JsonSchema + Send + 'static,
    T: Serialize,
    E: Display,
    F: Fn(Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = serde_json::from_value(input).map_err(ToolError::invalid_input)?;
        match (self.f)(args).await {
            Ok(value) => match serde_json::to_value(value) {
                Ok(Value::String(text)) => Ok(ToolOutput::text(text)),
                Ok(value) => Ok(ToolOutput::json(value)),
                Err(e) => Err(ToolError::execution(format!(
                    "could not serialise the tool's output: {e}"
                ))),
            },
            Err(e) => Err(ToolError::execution(e)),
        }
    }
}
