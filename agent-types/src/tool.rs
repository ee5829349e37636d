//! The [`Tool`] trait and what a tool receives and returns.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::message::{ImageSource, ToolOutputPart};
#[doc(hidden)]
pub use crate::progress::ProgressQueue;
pub use crate::progress::{PROGRESS_BUFFER, ProgressReceiver, ProgressReporter, ToolProgress};
use crate::user_input::{UserInputAnswer, UserInputRequest};

pub use crate::tool_error::ToolError;

/// A tool the model can call.
///
/// Object-safe: tool sets hold `Arc<dyn Tool>`. For a typed tool in a few
/// lines, see [`tool_fn`](fn@crate::tool_fn).
///
/// ```
/// use loopwright_types::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Echo(ToolDefinition);
///
/// #[async_trait::async_trait]
/// impl Tool for Echo {
///     fn definition(&self) -> &ToolDefinition { &self.0 }
///     async fn call(&self, input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text(input.to_string()))
///     }
/// }
///
/// let echo = Echo(ToolDefinition::new("echo", "Echo the input.", json!({"type": "object"})));
/// assert_eq!(echo.definition().name, "echo");
/// ```
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and schemas. The name is the tool's original name;
    /// the [`ToolSet`](crate::ToolSet) decides the name the model sees.
    fn definition(&self) -> &ToolDefinition;

    /// Run the tool. The input has already been validated against
    /// `definition().input_schema` by the agent loop.
    ///
    /// A tool should return promptly once `ctx.cancellation` is cancelled.
    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;

    /// The time this call needs when the tool enforces a timeout of its own
    /// (the Bash tool's `timeout_ms`). The loop then waits that long plus
    /// [`OWN_TIMEOUT_GRACE`] instead of its default tool timeout, so the
    /// tool's own, more informative timeout fires first. `None` (the default)
    /// keeps the loop's timeout.
    ///
    /// ```
    /// # use loopwright_types::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
    /// # use serde_json::Value;
    /// # use std::time::Duration;
    /// struct Build(ToolDefinition);
    /// #[async_trait::async_trait]
    /// impl Tool for Build {
    ///     fn definition(&self) -> &ToolDefinition { &self.0 }
    ///     async fn call(&self, _: Value, _: ToolContext) -> Result<ToolOutput, ToolError> { Ok(ToolOutput::text("built")) }
    ///     fn timeout_for(&self, input: &Value) -> Option<Duration> {
    ///         input["timeout_ms"].as_u64().map(Duration::from_millis)
    ///     }
    /// }
    /// let b = Build(ToolDefinition::new("build", "Build.", serde_json::json!({"type": "object"})));
    /// assert_eq!(b.timeout_for(&serde_json::json!({"timeout_ms": 5})), Some(Duration::from_millis(5)));
    /// ```
    fn timeout_for(&self, _input: &Value) -> Option<std::time::Duration> {
        None
    }

    /// This tool as [`Any`](std::any::Any), for the engine running it to
    /// find tools of its own kind behind wrappers (the agent loop finds
    /// its sub-agents this way). Tools return `None`, the default; a tool
    /// wrapping another returns the inner tool's.
    ///
    /// ```
    /// # use loopwright_types::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
    /// struct Plain(ToolDefinition);
    /// #[async_trait::async_trait]
    /// impl Tool for Plain {
    ///     fn definition(&self) -> &ToolDefinition { &self.0 }
    ///     async fn call(&self, _: serde_json::Value, _: ToolContext) -> Result<ToolOutput, ToolError> {
    ///         Ok(ToolOutput::text("ok"))
    ///     }
    /// }
    /// let p = Plain(ToolDefinition::new("p", "P.", serde_json::json!({"type": "object"})));
    /// assert!(p.as_any().is_none());
    /// ```
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// The run a tool call is part of, as the engine that runs the tool tells
/// it (the agent loop gives one to every call it makes): what
/// [`ToolContext::agent_path`], [`ToolContext::run_id`],
/// [`ToolContext::idempotency_key`] and [`ToolContext::ask_user`] read.
/// Tool authors never implement it; an engine does, once.
///
/// ```
/// use std::sync::Arc;
/// use loopwright_types::{RunScope, ToolContext};
///
/// struct Job;
/// #[async_trait::async_trait]
/// impl RunScope for Job {
///     fn agent_path(&self) -> &str { "batch" }
///     fn run_id(&self) -> Option<&str> { Some("job_7") }
///     fn key_prefix(&self) -> Option<&str> { Some("job_7") }
///     fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> { self }
/// }
/// let ctx = ToolContext::new("c1").with_scope(Arc::new(Job));
/// assert_eq!(ctx.agent_path(), Some("batch"));
/// assert_eq!(ctx.idempotency_key().as_deref(), Some("job_7/0/c1"));
/// ```
#[async_trait]
pub trait RunScope: Send + Sync + 'static {
    /// The path of the agent whose run makes the call
    /// (`coordinator/researcher`).
    fn agent_path(&self) -> &str;

    /// The id of the run at the root of the caller's tree, when it has one.
    fn run_id(&self) -> Option<&str> {
        None
    }

    /// What the run's idempotency keys start with, when it has them.
    fn key_prefix(&self) -> Option<&str> {
        None
    }

    /// Ask the person behind the run `request`, waiting at most `wait`;
    /// the default has nobody to ask ([`UserInputAnswer::Decline`]).
    async fn ask_user(
        &self,
        call_id: &str,
        request: UserInputRequest,
        wait: std::time::Duration,
        cancel: &CancellationToken,
    ) -> UserInputAnswer {
        let _ = (call_id, request, wait, cancel);
        UserInputAnswer::Decline
    }

    /// The scope as the engine's own type (see [`ToolContext::scope`]).
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// What separates the run id, the step and the call id of an idempotency
/// key.
pub const IDEMPOTENCY_KEY_SEPARATOR: char = '/';

/// The `_meta` key of an MCP `tools/call` carrying the idempotency key (run
/// id, step, call id, `/`-separated) of a call made by a run with a run id.
pub const MCP_META_IDEMPOTENCY_KEY: &str = "loopwright.dev/idempotencyKey";

/// The idempotency key of call `call_id` of step `step` under `prefix`.
///
/// ```
/// assert_eq!(loopwright_types::tool::idempotency_key("run_1", 3, "call_0"), "run_1/3/call_0");
/// ```
pub fn idempotency_key(prefix: &str, step: u32, call_id: &str) -> String {
    let sep = IDEMPOTENCY_KEY_SEPARATOR;
    format!("{prefix}{sep}{step}{sep}{call_id}")
}

/// Extra time the loop gives a tool that enforces its own timeout (see
/// [`Tool::timeout_for`]), so the tool can kill its work and report first.
pub const OWN_TIMEOUT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// What a model is told about a tool.
///
/// ```
/// use loopwright_types::ToolDefinition;
/// let d = ToolDefinition::new("add", "Add two numbers.", serde_json::json!({"type": "object"}));
/// assert!(d.output_schema.is_none());
/// assert!(!d.annotations.read_only);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What the tool does, written for a model.
    pub description: String,
    /// JSON Schema of the input (an object schema).
    pub input_schema: Value,
    /// JSON Schema of structured output, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints about the tool's behaviour (approval defaults use them).
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Options merged into this tool's definition in one provider's
    /// request, keyed by provider name as
    /// [`ModelRequest::provider_options`](crate::ModelRequest::provider_options)
    /// is (`openai`, `anthropic`, `google`, `ollama`, a compatible
    /// provider's name): `{"strict": true}` for OpenAI, `{"cache_control":
    /// {"type": "ephemeral"}}` for Anthropic, anything else the application
    /// passes through. Each provider says where it merges them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_options: BTreeMap<String, Value>,
    /// Offered on every step even when tool search holds the catalog back
    /// (see the agent loop's tool search).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always_on: bool,
}

impl ToolDefinition {
    /// A definition with no output schema and no annotations.
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}));
    /// assert_eq!(d.description, "d");
    /// ```
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            provider_options: BTreeMap::new(),
            always_on: false,
        }
    }

    /// The same definition carrying `options` for `provider`'s request
    /// (merged with options given before for it).
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}))
    ///     .with_provider_options("openai", serde_json::json!({"strict": true}));
    /// assert_eq!(d.provider_options["openai"]["strict"], true);
    /// ```
    pub fn with_provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        let slot = self
            .provider_options
            .entry(provider.into())
            .or_insert(Value::Null);
        match (slot, options) {
            (Value::Object(existing), Value::Object(more)) => existing.extend(more),
            (slot, options) => *slot = options,
        }
        self
    }

    /// The options this tool carries for `provider`'s request, if any.
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({}));
    /// assert!(d.options_for("openai").is_none());
    /// ```
    pub fn options_for(&self, provider: &str) -> Option<&Value> {
        self.provider_options.get(provider)
    }

    /// The same definition, offered on every step even under tool search
    /// (or not).
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({})).always_on(true);
    /// assert!(d.always_on);
    /// ```
    pub fn always_on(mut self, on: bool) -> Self {
        self.always_on = on;
        self
    }

    /// The same definition with these annotations.
    ///
    /// ```
    /// use loopwright_types::{ToolAnnotations, ToolDefinition};
    /// let d = ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}))
    ///     .with_annotations(ToolAnnotations::default().read_only(true));
    /// assert!(d.annotations.read_only);
    /// ```
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The same definition with this output schema.
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({"type": "object"}))
    ///     .with_output_schema(serde_json::json!({"type": "object"}));
    /// assert!(d.output_schema.is_some());
    /// ```
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The same definition under another name.
    ///
    /// ```
    /// let d = loopwright_types::ToolDefinition::new("t", "d", serde_json::json!({})).with_name("u");
    /// assert_eq!(d.name, "u");
    /// ```
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// Hints about a tool's behaviour, as MCP defines them. Approval tiers rely
/// on them, so they must come from a party the application trusts: the
/// application's own tools, the coding tools, or an MCP server its
/// configuration marks as trusted (untrusted servers' hints are dropped).
///
/// ```
/// let a = loopwright_types::ToolAnnotations::default();
/// assert!(!a.read_only && !a.destructive && !a.idempotent && !a.open_world);
/// let b = loopwright_types::ToolAnnotations::default().read_only(true).idempotent(true);
/// assert!(b.read_only && b.idempotent);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    #[serde(default)]
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    #[serde(default)]
    pub destructive: bool,
    /// Calling it twice with the same input has no further effect.
    #[serde(default)]
    pub idempotent: bool,
    /// The tool reaches outside systems (the web, other services).
    #[serde(default)]
    pub open_world: bool,
}

/// Setters `name(bool) -> Self` for boolean fields of the same name.
macro_rules! flag_setters {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $($(#[$doc])* pub fn $name(mut self, on: bool) -> Self {
            self.$name = on;
            self
        })*
    };
}

impl ToolAnnotations {
    flag_setters! {
        /// Set whether the tool leaves its environment unchanged.
        read_only;
        /// Set whether the tool may destroy or overwrite data.
        destructive;
        /// Set whether a repeated call has no further effect.
        idempotent;
        /// Set whether the tool reaches outside systems.
        open_world;
    }
}

/// What a running tool gets besides its input.
///
/// ```
/// let ctx = loopwright_types::ToolContext::new("call_1");
/// assert_eq!(ctx.call_id(), "call_1");
/// assert!(!ctx.cancellation().is_cancelled());
/// assert!(ctx.deadline().is_none());
/// ```
#[derive(Clone)]
pub struct ToolContext {
    call_id: String,
    cancellation: CancellationToken,
    deadline: Option<Instant>,
    progress: ProgressReporter,
    /// The calling run (absent when the tool is called directly).
    scope: Option<Arc<dyn RunScope>>,
    /// The loop's step the call is of (0 when called directly).
    step: u32,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("deadline", &self.deadline)
            .field("agent_path", &self.agent_path())
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context with a fresh cancellation token, no deadline and a progress
    /// reporter that discards reports (for calling a tool directly).
    ///
    /// ```
    /// let ctx = loopwright_types::ToolContext::new("c");
    /// ctx.progress().report(1.0, Some(2.0), None);
    /// ```
    pub fn new(call_id: impl Into<String>) -> Self {
        let call_id = call_id.into();
        Self {
            progress: ProgressReporter::discard(call_id.clone()),
            call_id,
            cancellation: CancellationToken::new(),
            deadline: None,
            scope: None,
            step: 0,
        }
    }

    /// The same context with this cancellation token.
    ///
    /// ```
    /// let token = tokio_util::sync::CancellationToken::new();
    /// let ctx = loopwright_types::ToolContext::new("c").with_cancellation(token.clone());
    /// token.cancel();
    /// assert!(ctx.cancellation().is_cancelled());
    /// ```
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// The same context with this deadline.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let at = tokio::time::Instant::now();
    /// let ctx = loopwright_types::ToolContext::new("c").with_deadline(at);
    /// assert_eq!(ctx.deadline(), Some(at));
    /// # }
    /// ```
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The same context with this progress reporter.
    ///
    /// ```
    /// let (reporter, _rx) = loopwright_types::ProgressReporter::channel("c");
    /// let ctx = loopwright_types::ToolContext::new("c").with_progress(reporter);
    /// ctx.progress().report(0.5, None, None);
    /// ```
    pub fn with_progress(mut self, progress: ProgressReporter) -> Self {
        self.progress = progress;
        self
    }

    /// The same context as step `step` of its run (engines set it: it is
    /// part of the idempotency key).
    ///
    /// ```
    /// use std::sync::Arc;
    /// # struct Job;
    /// # #[async_trait::async_trait]
    /// # impl loopwright_types::RunScope for Job {
    /// #     fn agent_path(&self) -> &str { "a" }
    /// #     fn key_prefix(&self) -> Option<&str> { Some("r") }
    /// #     fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> { self }
    /// # }
    /// let ctx = loopwright_types::ToolContext::new("c").with_scope(Arc::new(Job)).with_step(2);
    /// assert_eq!(ctx.idempotency_key().as_deref(), Some("r/2/c"));
    /// ```
    pub fn with_step(mut self, step: u32) -> Self {
        self.step = step;
        self
    }

    /// The same context as a call of the run `scope` describes (engines
    /// set it; see [`RunScope`]).
    pub fn with_scope(mut self, scope: Arc<dyn RunScope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The calling run's scope, for the engine that set it (downcast it
    /// with [`RunScope::into_any`]).
    ///
    /// ```
    /// assert!(loopwright_types::ToolContext::new("c").scope().is_none());
    /// ```
    pub fn scope(&self) -> Option<&Arc<dyn RunScope>> {
        self.scope.as_ref()
    }

    /// The path of the agent whose run made this call
    /// (`coordinator/researcher`), when a run made it.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ToolContext::new("c").agent_path(), None);
    /// ```
    pub fn agent_path(&self) -> Option<&str> {
        self.scope.as_deref().map(|s| s.agent_path())
    }

    /// The id of the run that made this call, when it has one (a durable
    /// run's); a sub-agent's calls carry the id of the run at the root of
    /// its tree.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ToolContext::new("c").run_id(), None);
    /// ```
    pub fn run_id(&self) -> Option<&str> {
        self.scope.as_deref().and_then(|s| s.run_id())
    }

    /// The call's idempotency key, `run_id/step/call_id` (a sub-agent's
    /// call: the key of the call that started the sub-agent, `/step/call_id`),
    /// when the run has an id: the same in every execution of a durable
    /// run, so a tool with side effects can make a call that is run again
    /// (after a crash) do its work once. The step is in it because some
    /// providers number calls afresh each step (`call_0`).
    /// MCP tools send it in the request's `_meta`
    /// ([`MCP_META_IDEMPOTENCY_KEY`]).
    ///
    /// ```
    /// assert_eq!(loopwright_types::ToolContext::new("c").idempotency_key(), None);
    /// ```
    pub fn idempotency_key(&self) -> Option<String> {
        let prefix = self.scope.as_deref()?.key_prefix()?;
        Some(idempotency_key(prefix, self.step, &self.call_id))
    }

    /// The id of the call being run.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Cancelled when the run is cancelled or the call timed out.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// When the call will be timed out, if it has a timeout.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Where to report progress; each report becomes a `tool_progress` event.
    pub fn progress(&self) -> &ProgressReporter {
        &self.progress
    }

    /// Ask the person behind the run (an `input_requested` event with a
    /// responder) and wait for the answer, at most `timeout` (default
    /// [`DEFAULT_INPUT_TIMEOUT`](crate::user_input::DEFAULT_INPUT_TIMEOUT))
    /// and never past the call's deadline. No answer in time, or nobody to
    /// answer (a call not made by a run), is
    /// [`UserInputAnswer::Decline`]; a
    /// cancelled call is [`UserInputAnswer::Cancel`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use loopwright_types::{ToolContext, UserInputAnswer, UserInputRequest};
    /// let ctx = ToolContext::new("c");
    /// let q = UserInputRequest::form("srv", "Name?", serde_json::json!({"type": "object"}));
    /// // Called directly, not by a run: nobody can answer.
    /// assert_eq!(ctx.ask_user(q, None).await, UserInputAnswer::Decline);
    /// # }
    /// ```
    pub async fn ask_user(
        &self,
        request: crate::UserInputRequest,
        timeout: Option<std::time::Duration>,
    ) -> crate::UserInputAnswer {
        let mut wait = timeout.unwrap_or(crate::user_input::DEFAULT_INPUT_TIMEOUT);
        if let Some(deadline) = self.deadline {
            wait = wait.min(deadline.saturating_duration_since(Instant::now()));
        }
        match &self.scope {
            Some(scope) => {
                scope
                    .ask_user(&self.call_id, request, wait, &self.cancellation)
                    .await
            }
            None => crate::UserInputAnswer::Decline,
        }
    }
}

/// What a tool returns.
///
/// ```
/// use loopwright_types::ToolOutput;
/// let out = ToolOutput::text("42");
/// assert!(!out.is_error);
/// let err = ToolOutput::error("no such file");
/// assert!(err.is_error);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The content.
    pub parts: Vec<ToolOutputPart>,
    /// Whether the tool reports failure (the model sees an error result).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// One text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            parts: vec![ToolOutputPart::text(text)],
            is_error: false,
        }
    }

    /// One text part, flagged as an error.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            parts: vec![ToolOutputPart::text(text)],
            is_error: true,
        }
    }

    /// One JSON part.
    ///
    /// ```
    /// let out = loopwright_types::ToolOutput::json(serde_json::json!({"ok": true}));
    /// assert_eq!(out.as_text(), r#"{"ok":true}"#);
    /// ```
    pub fn json(value: Value) -> Self {
        Self {
            parts: vec![ToolOutputPart::Json { value }],
            is_error: false,
        }
    }

    /// One image part.
    ///
    /// ```
    /// let out = loopwright_types::ToolOutput::image("image/png", "iVBORw0KGgo=");
    /// assert_eq!(out.parts.len(), 1);
    /// ```
    pub fn image(media_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        Self {
            parts: vec![ToolOutputPart::Image {
                image: ImageSource::Base64 {
                    media_type: media_type.into(),
                    data: base64_data.into(),
                },
            }],
            is_error: false,
        }
    }

    /// These parts, not flagged as an error.
    ///
    /// ```
    /// use loopwright_types::{ToolOutput, ToolOutputPart};
    /// let out = ToolOutput::new(vec![ToolOutputPart::text("a"), ToolOutputPart::text("b")]);
    /// assert_eq!(out.as_text(), "a\nb");
    /// ```
    pub fn new(parts: Vec<ToolOutputPart>) -> Self {
        Self {
            parts,
            is_error: false,
        }
    }

    /// The same output flagged (or not) as an error.
    ///
    /// ```
    /// assert!(loopwright_types::ToolOutput::text("x").with_error(true).is_error);
    /// ```
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The same output with every text part passed through `f`.
    ///
    /// ```
    /// let out = loopwright_types::ToolOutput::text("token=abc").map_text(|t| t.replace("abc", "***"));
    /// assert_eq!(out.as_text(), "token=***");
    /// ```
    pub fn map_text(mut self, mut f: impl FnMut(String) -> String) -> Self {
        for part in &mut self.parts {
            if let ToolOutputPart::Text { text } = part {
                *text = f(std::mem::take(text));
            }
        }
        self
    }

    /// Text and JSON parts rendered as text, joined by newlines; images,
    /// audio, files and tool references are left out.
    ///
    /// ```
    /// assert_eq!(loopwright_types::ToolOutput::text("a").as_text(), "a");
    /// ```
    pub fn as_text(&self) -> String {
        render_parts_text(&self.parts)
    }
}

/// Text and JSON parts as text, joined by newlines.
#[doc(hidden)]
pub fn render_parts_text(parts: &[ToolOutputPart]) -> String {
    let mut out = String::new();
    for part in parts {
        let piece = match part {
            ToolOutputPart::Text { text } => text.clone(),
            ToolOutputPart::Json { value } => value.to_string(),
            ToolOutputPart::Image { .. }
            | ToolOutputPart::Audio { .. }
            | ToolOutputPart::File { .. }
            | ToolOutputPart::ToolReference { .. } => continue,
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

/// A shared tool.
pub type SharedTool = Arc<dyn Tool>;
