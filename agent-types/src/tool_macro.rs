//! [`tool_fn!`](macro@crate::tool_fn): a tool from what reads like an `async fn` of
//! several arguments, no argument struct to write.
//!
//! Invariants: the input schema is an object with one property per
//! argument (its type's schema, its doc comment as the description),
//! required unless the argument's type accepts `null` (an `Option`); the
//! loop validates a call against it before the body runs, and an argument
//! that still does not deserialize is an invalid-input error naming it.

/// Make a [`Tool`](crate::Tool) from an `async fn` of several typed
/// arguments (the macro form of [`tool_fn()`](fn@crate::tool_fn), which
/// takes a closure of one argument struct). The function's doc comment is the tool's description, each
/// argument's doc comment its description in the input schema, and an
/// `Option` argument is optional. The body returns `Result<T, ToolError>`
/// with any `T: Serialize` (text when it serialises to a string, else JSON),
/// and `?` converts any error into [`ToolError`](crate::ToolError).
///
/// The body is a plain function body: for a tool that needs the call's
/// [`ToolContext`](crate::ToolContext) (cancellation, progress, deadline)
/// use [`tool_fn_with_context`](crate::tool_fn_with_context), and for one
/// that holds state (a client, a pool) a [`TypedTool`](crate::TypedTool).
///
/// ```
/// use loopwright_types::{Tool, ToolContext, ToolError, tool_fn};
///
/// let add = tool_fn! {
///     /// Add two integers.
///     async fn add(
///         /// The first number.
///         a: i64,
///         /// The second number.
///         b: i64,
///         /// Multiply the sum by this, if given.
///         times: Option<i64>,
///     ) -> Result<i64, ToolError> {
///         Ok((a + b) * times.unwrap_or(1))
///     }
/// };
///
/// let definition = add.definition();
/// assert_eq!(definition.name, "add");
/// assert_eq!(definition.description, "Add two integers.");
/// assert_eq!(definition.input_schema["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(definition.input_schema["properties"]["a"]["description"], "The first number.");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = add.call(serde_json::json!({"a": 2, "b": 3}), ToolContext::new("c1")).await.unwrap();
/// assert_eq!(out.as_text(), "5");
/// let out = add.call(serde_json::json!({"a": 2, "b": 3, "times": 2}), ToolContext::new("c2")).await.unwrap();
/// assert_eq!(out.as_text(), "10");
/// # });
/// ```
#[macro_export]
macro_rules! tool_fn {
    (
        $(#[doc = $doc:literal])*
        async fn $name:ident ( $( $(#[doc = $arg_doc:literal])* $arg:ident : $ty:ty ),* $(,)? )
            -> $ret:ty $body:block
    ) => {{
        #[allow(unused_mut)]
        let mut schema = $crate::__tool::Schema::default();
        $( schema.argument::<$ty>(::core::stringify!($arg), &[$($arg_doc),*]); )*
        $crate::__tool::tool(
            ::core::stringify!($name),
            &[$($doc),*],
            schema,
            |#[allow(unused_mut, unused_variables)] mut arguments: $crate::__tool::Arguments| async move {
                $( let $arg: $ty = $crate::__tool::take(&mut arguments, ::core::stringify!($arg))?; )*
                let result: $ret = async move $body.await;
                result
            },
        )
    }};
}

/// What [`tool_fn!`](macro@crate::tool_fn) expands to call; not public API.
#[doc(hidden)]
pub mod support {
    use std::future::Future;

    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Map, Value};

    use crate::schema::value_schema_for;
    use crate::tool::{ToolContext, ToolError};
    use crate::typed::{FnTool, tool_fn_with_context_schema};

    /// A call's arguments, by name.
    pub type Arguments = Map<String, Value>;

    /// The input schema, built one argument at a time.
    #[derive(Default)]
    pub struct Schema {
        properties: Map<String, Value>,
        required: Vec<Value>,
    }

    impl Schema {
        /// Add an argument: its type's schema with its doc comment, required
        /// unless its type accepts `null`.
        pub fn argument<T: schemars::JsonSchema + DeserializeOwned>(&mut self, name: &str, docs: &[&str]) {
            let mut schema = value_schema_for::<T>();
            let description = join(docs);
            if let (Value::Object(obj), false) = (&mut schema, description.is_empty()) {
                obj.insert("description".into(), Value::String(description));
            }
            if serde_json::from_value::<T>(Value::Null).is_err() {
                self.required.push(Value::String(name.to_owned()));
            }
            self.properties.insert(name.to_owned(), schema);
        }

        fn into_value(self) -> Value {
            serde_json::json!({
                "type": "object",
                "properties": self.properties,
                "required": self.required,
            })
        }
    }

    /// Doc-comment lines as one text.
    fn join(docs: &[&str]) -> String {
        docs.iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned()
    }

    /// The argument `name`, taken out of the call's arguments (absent is
    /// `null`, which an `Option` reads as `None`).
    pub fn take<T: DeserializeOwned>(arguments: &mut Arguments, name: &str) -> Result<T, ToolError> {
        let value = arguments.remove(name).unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| ToolError::invalid_input(format!("argument `{name}`: {e}")))
    }

    /// The tool.
    pub fn tool<T, F, Fut>(
        name: &str,
        docs: &[&str],
        schema: Schema,
        f: F,
    ) -> FnTool<Arguments, impl Fn(Arguments, ToolContext) -> Fut + Send + Sync + 'static>
    where
        T: Serialize,
        F: Fn(Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, ToolError>> + Send,
    {
        tool_fn_with_context_schema(name, join(docs), schema.into_value(), move |args, _ctx| f(args))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::{Tool, ToolContext, ToolError};
    use serde_json::json;

    #[tokio::test]
    async fn question_mark_converts_errors_and_bad_arguments_are_named() {
        let parse = tool_fn! {
            /// Parse a number
            /// written in base ten.
            async fn parse(text: String, base: Option<u32>) -> Result<String, ToolError> {
                let n = i64::from_str_radix(&text, base.unwrap_or(10))?;
                Ok(format!("{n}"))
            }
        };
        let definition = parse.definition();
        assert_eq!(definition.description, "Parse a number\nwritten in base ten.");
        assert_eq!(definition.input_schema["type"], "object");
        assert_eq!(definition.input_schema["required"], json!(["text"]));
        let ok = parse
            .call(json!({"text": "ff", "base": 16}), ToolContext::new("c1"))
            .await;
        assert_eq!(ok.unwrap().as_text(), "255");
        let failed = parse.call(json!({"text": "x"}), ToolContext::new("c2")).await;
        assert!(failed.unwrap_err().to_string().contains("invalid digit"));
        let bad = parse
            .call(json!({"text": 7}), ToolContext::new("c3"))
            .await
            .unwrap_err();
        assert!(matches!(bad, ToolError::InvalidInput(_)), "{bad:?}");
        assert!(bad.to_string().contains("argument `text`"), "{bad}");
    }

    #[test]
    fn a_tool_without_arguments_has_an_empty_object_schema() {
        let now = tool_fn! {
            async fn now() -> Result<&'static str, ToolError> {
                Ok("12:00")
            }
        };
        assert_eq!(
            now.definition().input_schema,
            json!({"type": "object", "properties": {}, "required": []})
        );
        assert_eq!(now.definition().description, "");
    }
}
