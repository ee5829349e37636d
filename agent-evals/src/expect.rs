//! [`Expectation`]s and how a run is checked against them.
//!
//! Invariant: every failed expectation says why in words a person can act
//! on (what was expected, what the run did), never just "failed".

use loopwright_core::{AgentEvent, OutputSpec};
use serde_json::Value;

/// What must hold of a case's run.
///
/// ```
/// use loopwright_core::{AgentEvent, ExitReason, Usage};
/// use loopwright_evals::{Expectation, RunView};
/// let run = RunView::new("It is 12:00 in Paris.", None, 1, vec![]);
/// assert!(Expectation::contains("Paris").check(&run).is_ok());
/// assert_eq!(Expectation::regex(r"\d{2}:\d{2} in Rome").unwrap().check(&run).unwrap_err(),
///     r#"the answer does not match /\d{2}:\d{2} in Rome/: "It is 12:00 in Paris.""#);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Expectation {
    /// The answer is exactly this text (surrounding whitespace aside).
    Exact(String),
    /// The answer contains this text.
    Contains(String),
    /// The answer matches this regular expression.
    Regex(regex::Regex),
    /// The answer (the structured output, else the answer's JSON) validates
    /// against this JSON Schema.
    Schema(Value),
    /// A tool was called (by its exposed or its own name), with arguments
    /// containing the ones given.
    ToolCalled(ToolExpectation),
    /// A tool was not called.
    ToolNotCalled(String),
    /// The run took at most this many steps (model calls).
    MaxSteps(u32),
    /// A judge model finds the answer meets this rubric.
    Rubric(String),
}

/// [`Expectation::ToolCalled`]: the tool, and arguments the call must
/// contain (objects match when every key given matches).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolExpectation {
    /// The exposed name (`time__now`) or the tool's own (`now`).
    pub tool: String,
    /// Arguments the call must contain.
    pub with: Option<Value>,
}

impl Expectation {
    /// The keys of the kinds in a dataset file.
    pub const KINDS: [&'static str; 8] = [
        "exact",
        "contains",
        "regex",
        "schema",
        "tool_called",
        "tool_not_called",
        "max_steps",
        "rubric",
    ];

    /// [`Expectation::Contains`].
    pub fn contains(text: impl Into<String>) -> Self {
        Self::Contains(text.into())
    }

    /// [`Expectation::Regex`]; an error when `pattern` does not compile.
    pub fn regex(pattern: &str) -> Result<Self, regex::Error> {
        regex::Regex::new(pattern).map(Self::Regex)
    }

    /// [`Expectation::ToolCalled`] with arguments `with` (`None`: any).
    ///
    /// ```
    /// use loopwright_evals::{Expectation, RunView, ToolCallView};
    /// let run = RunView::new("", None, 2, vec![ToolCallView::new("time__now", Some("now"), serde_json::json!({"tz": "UTC", "fmt": "iso"}))]);
    /// assert!(Expectation::tool_called("now", Some(serde_json::json!({"tz": "UTC"}))).check(&run).is_ok());
    /// assert!(Expectation::tool_called("now", Some(serde_json::json!({"tz": "CET"}))).check(&run).is_err());
    /// ```
    pub fn tool_called(tool: impl Into<String>, with: Option<Value>) -> Self {
        Self::ToolCalled(ToolExpectation {
            tool: tool.into(),
            with,
        })
    }

    /// Whether checking it needs the judge model.
    pub fn needs_judge(&self) -> bool {
        matches!(self, Self::Rubric(_))
    }

    /// The expectation in a few words, for reports (`contains "Paris"`).
    pub fn describe(&self) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self {
            Self::Exact(t) => format!("exact {}", quote(t)),
            Self::Contains(t) => format!("contains {}", quote(t)),
            Self::Regex(r) => format!("regex /{}/", r.as_str()),
            Self::Schema(_) => "matches the schema".into(),
            Self::ToolCalled(t) => match &t.with {
                Some(with) => format!("calls {} with {with}", t.tool),
                None => format!("calls {}", t.tool),
            },
            Self::ToolNotCalled(t) => format!("does not call {t}"),
            Self::MaxSteps(n) => format!("within {n} steps"),
            Self::Rubric(r) => format!("rubric {}", quote(r)),
        }
    }

    /// Check the run; `Err` says why it failed. A rubric is not checked
    /// here (it needs the judge): it fails saying so.
    pub fn check(&self, run: &RunView) -> Result<(), String> {
        let answer = run.text.trim();
        let shown = || serde_json::to_string(&shorten(answer)).unwrap_or_default();
        match self {
            Self::Exact(t) if answer == t.trim() => Ok(()),
            Self::Exact(t) => Err(format!("the answer is not exactly {:?}: {}", t, shown())),
            Self::Contains(t) if answer.contains(t.as_str()) => Ok(()),
            Self::Contains(t) => Err(format!("the answer does not contain {:?}: {}", t, shown())),
            Self::Regex(r) if r.is_match(answer) => Ok(()),
            Self::Regex(r) => Err(format!("the answer does not match /{}/: {}", r.as_str(), shown())),
            Self::Schema(schema) => check_schema(schema, run),
            Self::ToolCalled(t) => check_called(t, run),
            Self::ToolNotCalled(name) => match run.calls.iter().find(|c| c.is(name)) {
                Some(call) => Err(format!("{} was called with {}", call.tool, call.input)),
                None => Ok(()),
            },
            Self::MaxSteps(n) if run.steps <= *n => Ok(()),
            Self::MaxSteps(n) => Err(format!("the run took {} steps, more than {n}", run.steps)),
            Self::Rubric(_) => Err("a rubric needs a judge model".into()),
        }
    }
}

/// Characters of an answer quoted in a reason.
const SHOWN_CHARS: usize = 200;

fn shorten(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn check_schema(schema: &Value, run: &RunView) -> Result<(), String> {
    let spec = OutputSpec::from_schema("expected", schema.clone()).map_err(|e| e.to_string())?;
    let value = match &run.output {
        Some(v) => v.clone(),
        None => loopwright_core::output::answer_json(&run.text)
            .map_err(|e| format!("the answer is not JSON ({e}): {}", shorten(run.text.trim())))?,
    };
    spec.validate(&value)
        .map_err(|e| format!("the answer does not match the schema: {e}"))
}

fn check_called(t: &ToolExpectation, run: &RunView) -> Result<(), String> {
    let calls: Vec<&ToolCallView> = run.calls.iter().filter(|c| c.is(&t.tool)).collect();
    if calls.is_empty() {
        let called: Vec<&str> = run.calls.iter().map(|c| c.tool.as_str()).collect();
        return Err(format!(
            "{} was not called (called: {})",
            t.tool,
            if called.is_empty() {
                "none".to_owned()
            } else {
                called.join(", ")
            }
        ));
    }
    let Some(with) = &t.with else { return Ok(()) };
    if calls.iter().any(|c| contains(&c.input, with)) {
        return Ok(());
    }
    let inputs: Vec<String> = calls.iter().map(|c| c.input.to_string()).collect();
    Err(format!(
        "{} was called, but never with {with} (with: {})",
        t.tool,
        inputs.join("; ")
    ))
}

/// Whether `actual` contains `expected`: objects key by key, everything
/// else equal.
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            e.iter().all(|(k, v)| a.get(k).is_some_and(|x| contains(x, v)))
        }
        (Value::Number(a), Value::Number(e)) => a.as_f64() == e.as_f64(),
        _ => actual == expected,
    }
}

/// What expectations look at in a run.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunView {
    /// The answer text.
    pub text: String,
    /// The validated structured output, for an agent with an output schema.
    pub output: Option<Value>,
    /// Model calls made.
    pub steps: u32,
    /// Every tool call, sub-agents' included, in order.
    pub calls: Vec<ToolCallView>,
}

impl RunView {
    /// A view of a run.
    pub fn new(text: impl Into<String>, output: Option<Value>, steps: u32, calls: Vec<ToolCallView>) -> Self {
        Self {
            text: text.into(),
            output,
            steps,
            calls,
        }
    }

    /// The tool calls among `events` (sub-agents' included).
    pub fn calls_in(events: &[AgentEvent]) -> Vec<ToolCallView> {
        let mut out = Vec::new();
        for event in events {
            collect_calls(event, &mut out);
        }
        out
    }
}

fn collect_calls(event: &AgentEvent, out: &mut Vec<ToolCallView>) {
    match event {
        AgentEvent::ToolCall {
            tool,
            original_name,
            input,
            ..
        } => out.push(ToolCallView::new(
            tool.clone(),
            original_name.clone(),
            input.clone(),
        )),
        AgentEvent::SubAgent { event, .. } => collect_calls(event, out),
        _ => {}
    }
}

/// A tool call as expectations see it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCallView {
    /// The exposed name.
    pub tool: String,
    /// The tool's own name, when known.
    pub original_name: Option<String>,
    /// The arguments.
    pub input: Value,
}

impl ToolCallView {
    /// A call.
    pub fn new<S: Into<String>>(tool: impl Into<String>, original_name: Option<S>, input: Value) -> Self {
        Self {
            tool: tool.into(),
            original_name: original_name.map(Into::into),
            input,
        }
    }

    /// Whether it is a call of `name` (exposed or own name).
    fn is(&self, name: &str) -> bool {
        self.tool == name || self.original_name.as_deref() == Some(name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn run(text: &str, calls: Vec<ToolCallView>) -> RunView {
        RunView::new(text, None, 2, calls)
    }

    #[test]
    fn each_kind_passes_and_fails_with_a_reason() {
        let echo = ToolCallView::new("test__echo", Some("echo"), json!({"text": "hi", "n": 1}));
        let r = run(r#"{"city": "Paris"}"#, vec![echo]);
        assert!(
            Expectation::Exact(r#"{"city": "Paris"}"#.into())
                .check(&r)
                .is_ok()
        );
        assert!(
            Expectation::Exact("Paris".into())
                .check(&r)
                .unwrap_err()
                .starts_with("the answer is not exactly")
        );
        let schema = json!({"type": "object", "required": ["city"]});
        assert!(Expectation::Schema(schema).check(&r).is_ok());
        let schema = json!({"type": "object", "required": ["country"]});
        assert!(
            Expectation::Schema(schema)
                .check(&r)
                .unwrap_err()
                .contains("country")
        );
        assert!(
            Expectation::tool_called("echo", Some(json!({"n": 1.0})))
                .check(&r)
                .is_ok()
        );
        assert_eq!(
            Expectation::tool_called("add", None).check(&r).unwrap_err(),
            "add was not called (called: test__echo)"
        );
        assert_eq!(
            Expectation::ToolNotCalled("test__echo".into())
                .check(&r)
                .unwrap_err(),
            r#"test__echo was called with {"n":1,"text":"hi"}"#
        );
        assert!(Expectation::MaxSteps(2).check(&r).is_ok());
        assert_eq!(
            Expectation::MaxSteps(1).check(&r).unwrap_err(),
            "the run took 2 steps, more than 1"
        );
    }
}
