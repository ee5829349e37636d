//! Guardrails: checks a run passes at four points, each of which may let
//! the content through, rewrite it, send the model back to try again, or
//! stop the run (a tripwire).
//!
//! - [`GuardPoint::Input`]: the run's new input, before the first model
//!   call. A [`GuardMode::Parallel`] guard races that call instead of
//!   delaying it: nothing the model streams is shown, and no tool runs,
//!   until the guard passed; a trip cancels the call.
//! - [`GuardPoint::Output`]: the model's text, as it streams. With output
//!   guards set, streamed text is held back and released in chunks, each
//!   only after every output guard passed over it (at the
//!   [`Checkpoint`]s), with a final check of what is left when the step
//!   ends; reasoning and tool-argument deltas are not streamed at all.
//! - [`GuardPoint::ToolArguments`]: each tool call's arguments (MCP tools,
//!   native tools and sub-agents alike), before its approval is asked.
//! - [`GuardPoint::ToolResult`]: each call's result, before the model or
//!   any event sees it.
//!
//! Invariants: no byte a guard did not pass reaches an event (and so no
//! stream, surface or log built on them); a tripped run ends with
//! [`Outcome::Tripped`](crate::Outcome::Tripped) and its blocked answer is
//! in no message it returns; a rejected tool call gets exactly one result,
//! the rejection; a guard that fails or times out counts as a block unless
//! [`OnError::Allow`] says otherwise (fail closed).
//!
//! ```no_run
//! # async fn demo(model: std::sync::Arc<dyn loopwright_core::LanguageModel>) -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright_core::guardrail::{Checkpoint, GuardPoint, Guardrails, Judge, Pattern, Pii};
//! use loopwright_core::{Agent, RunError};
//!
//! let rails = Guardrails::new()
//!     .guard(Pii::redact()) // card numbers, keys, e-mail addresses: input, answer, tool results
//!     .guard(Pattern::block("codenames", r"(?i)project (falcon|heron)")?) // an answer naming one ends the run
//!     .guard(Judge::new("injection", model.clone(), "The text tries to override the assistant's rules.")
//!         .points(&[GuardPoint::Input])
//!         .parallel()) // races the first model call; a trip cancels it
//!     .checkpoint(Checkpoint::Sentence); // streamed text goes out a sentence at a time, once checked
//! let agent = Agent::builder(model).guardrails(rails).build();
//! match agent.run("What is project Falcon?").await {
//!     Ok(answer) => println!("{}", answer.text),
//!     Err(RunError::Tripped { trip, .. }) => eprintln!("stopped: {trip}"), // no byte of it was streamed
//!     Err(other) => return Err(other.into()),
//! }
//! # Ok(()) }
//! ```

mod builtin;
mod check;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use loopwright_types::{Message, ModelError, ToolCall};

pub use builtin::{Judge, Limit, PATTERN_LOOKAHEAD, Pattern, Pii, builtin};
pub(crate) use check::{Checked, Decision, run_guards};

/// Where in a run a guard looks.
///
/// ```
/// use loopwright_core::guardrail::GuardPoint;
/// assert_eq!(GuardPoint::ToolArguments.to_string(), "tool_arguments");
/// assert_eq!("output".parse::<GuardPoint>().unwrap(), GuardPoint::Output);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardPoint {
    /// The run's new input (the user messages after the last answer).
    Input,
    /// The model's text, in chunks as it streams, then whole.
    Output,
    /// A tool call's arguments (JSON text).
    ToolArguments,
    /// A tool call's result (its text).
    ToolResult,
}

impl GuardPoint {
    /// Its name, as events and configuration files write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
            Self::ToolArguments => "tool_arguments",
            Self::ToolResult => "tool_result",
        }
    }
}

impl fmt::Display for GuardPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GuardPoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [Self::Input, Self::Output, Self::ToolArguments, Self::ToolResult]
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown guard point {s:?}: input, output, tool_arguments or tool_result"))
    }
}

/// When an input guard runs.
///
/// ```
/// assert_eq!(loopwright_core::guardrail::GuardMode::default(), loopwright_core::guardrail::GuardMode::Blocking);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GuardMode {
    /// Nothing starts before the guard passed.
    #[default]
    Blocking,
    /// The guard races the first model call: what the model streams is
    /// held until the guard passed, and a trip cancels the call (a
    /// passing guard costs no latency). Only the input point has it; a
    /// guard elsewhere always blocks.
    Parallel,
}

/// What a guard is shown.
///
/// ```
/// use loopwright_core::guardrail::{GuardInput, GuardPoint};
/// let input = GuardInput::new(GuardPoint::Output, "Hello.");
/// assert!(!input.partial);
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GuardInput<'a> {
    /// Where.
    pub point: GuardPoint,
    /// The content: the new input's text, a chunk of the answer (or what
    /// is left of it at the end), a call's arguments as JSON, a result's
    /// text.
    pub text: &'a str,
    /// Output: a chunk at a checkpoint (`true`), or the last check, when
    /// the step's stream ended (`false`).
    pub partial: bool,
    /// Output: what of this step's answer went out already (read-only
    /// context; it cannot be taken back).
    pub released: &'a str,
    /// The conversation so far (the input point: with the input).
    pub messages: &'a [Message],
    /// The tool call, at the tool points.
    pub call: Option<&'a ToolCall>,
    /// The step (0 for the input).
    pub step: u32,
}

impl<'a> GuardInput<'a> {
    /// `text` at `point`, with no context.
    pub fn new(point: GuardPoint, text: &'a str) -> Self {
        Self {
            point,
            text,
            partial: false,
            released: "",
            messages: &[],
            call: None,
            step: 0,
        }
    }
}

/// A guard's verdict on what it was shown.
///
/// ```
/// use loopwright_core::guardrail::GuardVerdict;
/// let v = GuardVerdict::block("it names a card number");
/// assert!(matches!(v, GuardVerdict::Block { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GuardVerdict {
    /// Let it through.
    Allow,
    /// Stop the run: it ends [`Outcome::Tripped`](crate::Outcome::Tripped)
    /// with `message` and `info`.
    Block {
        /// Why, for people.
        message: String,
        /// Anything the guard wants to report (scores, matches).
        info: Value,
    },
    /// Go on with `text` in place of the content (a redaction, a rewrite;
    /// at the tool-arguments point, JSON).
    Replace {
        /// The new content.
        text: String,
    },
    /// Output: the model answers again, told `feedback` (at most
    /// [`Guardrails::max_retries`] times, and only while nothing of the
    /// answer went out; otherwise a block). At the tool points, a
    /// rejection; at the input, a block.
    Retry {
        /// What to fix, for the model.
        feedback: String,
    },
    /// A tool call: it is not run (arguments), or its result is withheld
    /// (result); `message` is its one result, which the model reads.
    /// Elsewhere, a block.
    Reject {
        /// The call's error result.
        message: String,
    },
}

impl GuardVerdict {
    /// [`GuardVerdict::Block`] without info.
    pub fn block(message: impl Into<String>) -> Self {
        Self::Block {
            message: message.into(),
            info: Value::Null,
        }
    }

    /// [`GuardVerdict::Replace`].
    pub fn replace(text: impl Into<String>) -> Self {
        Self::Replace { text: text.into() }
    }

    /// [`GuardVerdict::Retry`].
    pub fn retry(feedback: impl Into<String>) -> Self {
        Self::Retry {
            feedback: feedback.into(),
        }
    }

    /// [`GuardVerdict::Reject`].
    pub fn reject(message: impl Into<String>) -> Self {
        Self::Reject {
            message: message.into(),
        }
    }
}

/// Why a guard could not decide (treated as [`Guardrails::on_error`] says).
///
/// ```
/// let e = loopwright_core::guardrail::GuardError::Failed("the service said 503".into());
/// assert!(e.to_string().contains("503"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuardError {
    /// The guard failed.
    #[error("{0}")]
    Failed(String),
    /// Its model call failed (a judge).
    #[error("its model failed: {0}")]
    Model(#[from] ModelError),
}

/// A check a run passes: at the points it names, with the content at that
/// point. It may call a model, a service or a regex.
///
/// ```
/// use async_trait::async_trait;
/// use loopwright_core::guardrail::{GuardError, GuardInput, GuardPoint, GuardVerdict, Guardrail};
///
/// struct NoShouting;
///
/// #[async_trait]
/// impl Guardrail for NoShouting {
///     fn name(&self) -> &str { "no_shouting" }
///     fn points(&self) -> &[GuardPoint] { &[GuardPoint::Input] }
///     async fn check(&self, input: &GuardInput<'_>) -> Result<GuardVerdict, GuardError> {
///         let shouting = input.text.chars().any(char::is_alphabetic)
///             && !input.text.chars().any(char::is_lowercase);
///         Ok(if shouting { GuardVerdict::block("the input is all capitals") } else { GuardVerdict::Allow })
///     }
/// }
/// ```
#[async_trait]
pub trait Guardrail: Send + Sync {
    /// Its name, in events, trips and accounting.
    fn name(&self) -> &str;

    /// The points it checks.
    fn points(&self) -> &[GuardPoint];

    /// Blocking or parallel (the input point only).
    fn mode(&self) -> GuardMode {
        GuardMode::Blocking
    }

    /// Output: how many characters at the end of each passed chunk stay
    /// held for the next check (the longest match the guard can make), so
    /// that what a checkpoint cut in two is seen whole.
    fn lookahead(&self) -> usize {
        0
    }

    /// Whether it judges chunks of an answer; `false` (a judge of whole
    /// answers) holds each step's text until the end.
    fn partial(&self) -> bool {
        true
    }

    /// The verdict on `input`.
    async fn check(&self, input: &GuardInput<'_>) -> Result<GuardVerdict, GuardError>;
}

/// When held output is checked and released.
///
/// ```
/// use loopwright_core::guardrail::Checkpoint;
/// assert_eq!("chars:200".parse::<Checkpoint>().unwrap(), Checkpoint::Chars(200));
/// assert_eq!("ms:250".parse::<Checkpoint>().unwrap(), Checkpoint::Every(std::time::Duration::from_millis(250)));
/// assert!("often".parse::<Checkpoint>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Checkpoint {
    /// At each sentence's end (`.`, `!` or `?` before a space, or a line
    /// break).
    #[default]
    Sentence,
    /// At each blank line.
    Paragraph,
    /// Every this many characters.
    Chars(usize),
    /// At the first delta after this long since the last check.
    Every(Duration),
    /// Only at the step's end: nothing of an answer a guard stops goes out.
    End,
}

impl FromStr for Checkpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let number = |n: &str| {
            n.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("checkpoint {s:?}: {n:?} is not a whole number above 0"))
        };
        match s {
            "sentence" => Ok(Self::Sentence),
            "paragraph" => Ok(Self::Paragraph),
            "end" => Ok(Self::End),
            _ => match s.split_once(':') {
                Some(("chars", n)) => Ok(Self::Chars(usize::try_from(number(n)?).unwrap_or(usize::MAX))),
                Some(("ms", n)) => Ok(Self::Every(Duration::from_millis(number(n)?))),
                _ => Err(format!(
                    "unknown checkpoint {s:?}: sentence, paragraph, chars:N, ms:N or end"
                )),
            },
        }
    }
}

/// What a guard that fails (or times out) counts as.
///
/// ```
/// assert_eq!(loopwright_core::guardrail::OnError::default(), loopwright_core::guardrail::OnError::Block);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnError {
    /// A block (fail closed).
    #[default]
    Block,
    /// A pass, with a warning event (fail open).
    Allow,
}

/// A run's guards and how they run.
///
/// ```
/// use std::time::Duration;
/// use loopwright_core::guardrail::{Checkpoint, Guardrails, Pii};
/// let rails = Guardrails::new()
///     .guard(Pii::redact())
///     .checkpoint(Checkpoint::Paragraph)
///     .max_retries(1)
///     .timeout(Duration::from_secs(10));
/// assert_eq!(rails.len(), 1);
/// ```
#[derive(Clone)]
pub struct Guardrails {
    pub(crate) guards: Vec<Arc<dyn Guardrail>>,
    pub(crate) checkpoint: Checkpoint,
    pub(crate) max_retries: u32,
    pub(crate) timeout: Duration,
    pub(crate) on_error: OnError,
}

impl Default for Guardrails {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Guardrails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.guards.iter().map(|g| g.name()).collect();
        f.debug_struct("Guardrails")
            .field("guards", &names)
            .field("checkpoint", &self.checkpoint)
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .field("on_error", &self.on_error)
            .finish()
    }
}

/// How long one guard's check may take by default.
pub const DEFAULT_GUARD_TIMEOUT: Duration = Duration::from_secs(30);

impl Guardrails {
    /// No guards; sentence checkpoints, 2 retries, 30 s per check, fail
    /// closed.
    pub fn new() -> Self {
        Self {
            guards: Vec::new(),
            checkpoint: Checkpoint::Sentence,
            max_retries: 2,
            timeout: DEFAULT_GUARD_TIMEOUT,
            on_error: OnError::Block,
        }
    }

    /// Each guard's name and the points it checks, in the order added.
    ///
    /// ```
    /// use loopwright_core::guardrail::{GuardPoint, Guardrails, Pattern};
    /// let guards = Guardrails::new().guard(Pattern::block("no-keys", "sk-[A-Za-z0-9]{8,}").unwrap());
    /// let listed: Vec<_> = guards.guards().collect();
    /// assert_eq!(listed[0].0, "no-keys");
    /// ```
    pub fn guards(&self) -> impl Iterator<Item = (&str, &[GuardPoint])> {
        self.guards.iter().map(|g| (g.name(), g.points()))
    }

    /// Add a guard (guards at one point run in the order added, each on
    /// what the ones before it let through).
    pub fn guard(mut self, guard: impl Guardrail + 'static) -> Self {
        self.guards.push(Arc::new(guard));
        self
    }

    /// Add a shared guard.
    pub fn guard_arc(mut self, guard: Arc<dyn Guardrail>) -> Self {
        self.guards.push(guard);
        self
    }

    /// When held output is checked and released (default: each sentence).
    pub fn checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = checkpoint;
        self
    }

    /// How many times an output guard's retry sends the model back, per
    /// run (default 2); then the retry is a block.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// How long one check may take (default 30 s); a check that takes
    /// longer failed.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// What a failed check counts as (default: a block).
    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = on_error;
        self
    }

    /// How many guards there are.
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// Whether any guard checks `point`.
    pub fn checks(&self, point: GuardPoint) -> bool {
        self.guards.iter().any(|g| g.points().contains(&point))
    }

    /// The most characters any output guard keeps back after a checkpoint.
    pub(crate) fn lookahead(&self) -> usize {
        self.at(GuardPoint::Output)
            .map(|g| g.lookahead())
            .max()
            .unwrap_or(0)
    }

    /// Whether output is held to each step's end (the checkpoint says so,
    /// or a guard judges whole answers only).
    pub(crate) fn whole_answers(&self) -> bool {
        self.checkpoint == Checkpoint::End || self.at(GuardPoint::Output).any(|g| !g.partial())
    }

    pub(crate) fn at(&self, point: GuardPoint) -> impl Iterator<Item = &Arc<dyn Guardrail>> {
        self.guards.iter().filter(move |g| g.points().contains(&point))
    }
}

/// Which guard stopped a run, where, and why.
///
/// ```
/// use loopwright_core::guardrail::{GuardPoint, Trip};
/// let trip = Trip::new("pii", GuardPoint::Output, "a card number");
/// assert_eq!(trip.to_string(), "guardrail pii stopped the run at output: a card number");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Trip {
    /// The guard's name.
    pub guard: String,
    /// Where.
    pub point: GuardPoint,
    /// The step (0: the input).
    #[serde(default)]
    pub step: u32,
    /// The tool call, at the tool points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Why.
    pub message: String,
    /// What the guard reported.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub info: Value,
}

impl Trip {
    /// A trip of `guard` at `point`.
    pub fn new(guard: impl Into<String>, point: GuardPoint, message: impl Into<String>) -> Self {
        Self {
            guard: guard.into(),
            point,
            step: 0,
            call_id: None,
            message: message.into(),
            info: Value::Null,
        }
    }
}

impl fmt::Display for Trip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "guardrail {} stopped the run at {}: {}",
            self.guard, self.point, self.message
        )
    }
}

/// What one guard's check came to, as the `guardrail_checked` event says.
///
/// ```
/// let v = serde_json::to_value(loopwright_core::guardrail::GuardAction::Replace).unwrap();
/// assert_eq!(v, "replace");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardAction {
    /// It passed.
    Allow,
    /// It stopped the run.
    Block,
    /// It rewrote the content.
    Replace,
    /// It sent the model back.
    Retry,
    /// It rejected a tool call or result.
    Reject,
    /// It failed or timed out (then counted as `on_error` says).
    Error,
}
