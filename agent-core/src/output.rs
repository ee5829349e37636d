//! Structured final output: the answer a run ends with must be JSON matching
//! a schema ([`OutputSpec`]).
//!
//! Invariants: the answer is validated against the schema as given (never
//! against an adapted copy); what is sent to the model may be adapted (a
//! non-object root is wrapped as `{"value": ...}`, and providers make it
//! strict where they can, see [`strict_schema`]) and the answer is unwrapped
//! before validation; an answer that does not match goes back to the model
//! with the validator's errors, at most `max_output_retries` times.

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use loopwright_types::schema::{CheckError, SchemaError, Validator, input_schema_for};
use loopwright_types::toolset::sanitize_tool_name;

/// Name of the synthetic tool through which the model gives its final answer
/// in [`OutputMode::Tool`].
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

/// Retries after a final answer that does not match the schema: most models
/// fix their answer once they read the validator's message; more rarely
/// helps.
pub const DEFAULT_MAX_OUTPUT_RETRIES: u32 = 2;

/// Property under which a non-object answer travels (object roots are what
/// tool inputs and strict modes accept).
pub const WRAPPED_PROPERTY: &str = "value";

/// How the model is made to give a structured answer.
///
/// ```
/// assert_eq!(loopwright_core::output::OutputMode::default(), loopwright_core::output::OutputMode::Auto);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputMode {
    /// Native where the model supports it (with tools, when the run has
    /// tools), else the tool mode.
    #[default]
    Auto,
    /// The provider's own structured output (`response_format`,
    /// `text.format`, `output_config.format`, `responseJsonSchema`,
    /// Ollama's `format`).
    Native,
    /// A synthetic [`FINAL_ANSWER_TOOL`] whose input schema is the output
    /// schema; the run ends when the model calls it with a valid answer.
    Tool,
}

/// The schema a run's final answer must match.
///
/// ```
/// use loopwright_core::OutputSpec;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Forecast {
///     /// Degrees Celsius.
///     celsius: f64,
///     summary: String,
/// }
///
/// let spec = OutputSpec::of::<Forecast>();
/// assert_eq!(spec.name(), "Forecast");
/// assert!(spec.validate(&serde_json::json!({"celsius": 21.5, "summary": "mild"})).is_ok());
/// let err = spec.validate(&serde_json::json!({"celsius": "warm"})).unwrap_err().to_string();
/// assert!(err.contains("summary") && err.contains("/celsius"), "{err}");
/// ```
#[derive(Clone)]
pub struct OutputSpec {
    name: String,
    schema: Value,
    wire: Value,
    wrapped: bool,
    mode: OutputMode,
    validator: Result<Validator, SchemaError>,
}

/// A raw output schema that cannot be used: it does not compile, or it is
/// over the [`SchemaLimits`](loopwright_types::schema::SchemaLimits) (a client's
/// schema on a served surface can be hostile).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("output schema {name}: {error}")]
#[non_exhaustive]
pub struct OutputSchemaError {
    /// The schema's name.
    pub name: String,
    /// What is wrong.
    pub error: SchemaError,
}

impl OutputSpec {
    /// The schema of a Rust type (schemars, flattened: definitions inlined),
    /// named after the type.
    pub fn of<T: JsonSchema>() -> Self {
        Self::build(T::schema_name().into_owned(), input_schema_for::<T>())
    }

    /// A raw JSON Schema. Fails when it does not compile.
    ///
    /// ```
    /// let spec = loopwright_core::OutputSpec::from_schema("colors", serde_json::json!({
    ///     "type": "array", "items": {"type": "string"}
    /// })).unwrap();
    /// assert!(spec.validate(&serde_json::json!(["red"])).is_ok());
    /// // Sent to the model wrapped in an object, as tools and strict modes need.
    /// assert_eq!(spec.wire_schema()["required"], serde_json::json!(["value"]));
    /// assert!(loopwright_core::OutputSpec::from_schema("bad", serde_json::json!({"type": 7})).is_err());
    /// ```
    pub fn from_schema(name: impl Into<String>, schema: Value) -> Result<Self, OutputSchemaError> {
        let spec = Self::build(name.into(), schema);
        match &spec.validator {
            Ok(_) => Ok(spec),
            Err(error) => Err(OutputSchemaError {
                name: spec.name.clone(),
                error: error.clone(),
            }),
        }
    }

    fn build(name: String, schema: Value) -> Self {
        let name = sanitize_tool_name(&name);
        let validator = Validator::new(&schema);
        let wrapped = !is_object_schema(&schema);
        let wire = if wrapped { wrap(&schema) } else { schema.clone() };
        Self {
            name,
            schema,
            wire,
            wrapped,
            mode: OutputMode::Auto,
            validator,
        }
    }

    /// The same spec with this mode.
    pub fn mode(mut self, mode: OutputMode) -> Self {
        self.mode = mode;
        self
    }

    /// The schema's name (sanitised to `^[a-zA-Z0-9_-]{1,64}$`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The schema sent to the model: the schema as given when its root is an
    /// object, else an object holding it under [`WRAPPED_PROPERTY`].
    pub fn wire_schema(&self) -> &Value {
        &self.wire
    }

    /// The mode asked for.
    pub fn output_mode(&self) -> OutputMode {
        self.mode
    }

    /// Check a value against the schema as given; `Err` lists each error
    /// with the place in the value it is about.
    pub fn validate(&self, value: &Value) -> Result<(), CheckError> {
        let validator = self
            .validator
            .as_ref()
            .map_err(|e| CheckError::Schema(e.clone()))?;
        validator.check(value)
    }

    /// [`Self::validate`], off the async workers when the check could be
    /// slow, within the schema limits' deadline
    /// ([`Validator::check_async`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let spec = loopwright_core::OutputSpec::from_schema("n", serde_json::json!({"type": "integer"})).unwrap();
    /// assert!(spec.validate_async(&serde_json::json!(3)).await.is_ok());
    /// # }
    /// ```
    pub async fn validate_async(&self, value: &Value) -> Result<(), CheckError> {
        let validator = self
            .validator
            .as_ref()
            .map_err(|e| CheckError::Schema(e.clone()))?;
        validator.check_async(value).await
    }

    /// The answer inside what the model sent for the wire schema.
    pub(crate) fn unwrap_value(&self, mut sent: Value) -> Value {
        if self.wrapped {
            sent.get_mut(WRAPPED_PROPERTY)
                .map(Value::take)
                .unwrap_or(Value::Null)
        } else {
            sent
        }
    }
}

impl fmt::Debug for OutputSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSpec")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("wrapped", &self.wrapped)
            .finish_non_exhaustive()
    }
}

/// A final answer that did not match the schema (after the retries), or
/// that could not be read as the type asked for.
///
/// ```
/// let e = loopwright_core::output::OutputError::new("\"celsius\" is a required property", "{}");
/// assert_eq!(e.to_string(), "the answer does not match the output schema: \"celsius\" is a required property");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("the answer does not match the output schema: {message}")]
#[non_exhaustive]
pub struct OutputError {
    /// The last validation error (or why the answer is not JSON).
    pub message: String,
    /// The answer as the model gave it.
    pub raw: String,
}

impl OutputError {
    /// An error with this message about this raw answer.
    pub fn new(message: impl Into<String>, raw: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            raw: raw.into(),
        }
    }
}

/// Read a typed value from a validated answer.
pub(crate) fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, OutputError> {
    T::deserialize(value).map_err(|e| {
        OutputError::new(
            format!("not a valid {}: {e}", std::any::type_name::<T>()),
            value.to_string(),
        )
    })
}

/// The JSON value in a model's text answer: the whole text, or the inside
/// of one fenced block (```` ```json ... ``` ````) around it.
///
/// ```
/// use loopwright_core::output::answer_json;
/// assert_eq!(answer_json(" {\"a\": 1} ").unwrap(), serde_json::json!({"a": 1}));
/// assert_eq!(answer_json("```json\n[1, 2]\n```").unwrap(), serde_json::json!([1, 2]));
/// assert!(answer_json("It is sunny.").unwrap_err().to_string().contains("not JSON"));
/// ```
pub fn answer_json(text: &str) -> Result<Value, NotJson> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|body| body.split_once('\n').map_or(body, |(_, after)| after))
        .unwrap_or(trimmed);
    serde_json::from_str(inner.trim()).map_err(|error| NotJson { error })
}

/// A text answer that is not JSON, where the output schema needs it.
///
/// ```
/// let e = loopwright_core::output::answer_json("sunny").unwrap_err();
/// assert!(e.to_string().starts_with("the answer is not JSON ("));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("the answer is not JSON ({error})")]
#[non_exhaustive]
pub struct NotJson {
    /// Where parsing stopped, and why.
    #[source]
    pub error: serde_json::Error,
}

fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => schema.get("properties").is_some(),
    }
}

/// `schema` under [`WRAPPED_PROPERTY`] of an object schema; its definitions
/// move to the new root so `$ref`s keep resolving.
fn wrap(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    for defs in ["$defs", "definitions"] {
        if let Some(found) = inner.as_object_mut().and_then(|o| o.remove(defs)) {
            root.insert(defs.into(), found);
        }
    }
    root.insert("properties".into(), json!({ WRAPPED_PROPERTY: inner }));
    root.insert("required".into(), json!([WRAPPED_PROPERTY]));
    root.insert("additionalProperties".into(), json!(false));
    Value::Object(root)
}

pub use loopwright_types::schema::{STRICT_UNSUPPORTED, strict_schema};
