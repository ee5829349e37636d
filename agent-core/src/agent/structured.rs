//! The loop's side of structured output (see [`crate::output`]): which mode a
//! run uses, what each request carries for it, and whether a step's answer
//! is the final one.
//!
//! Invariant: a run with an output spec ends with an answer only when that
//! answer validated; the `final_answer` tool call, valid or not, gets
//! exactly one result like any other call.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::drive::Run;
use super::policy::{Policy, Rejection, Step};
use super::step::StepOutput;
use crate::output::{FINAL_ANSWER_TOOL, OutputError, OutputMode, OutputSpec, answer_json};
use loopwright_types::Message;
use loopwright_types::ResponseFormat;
use loopwright_types::tool::{ToolDefinition, ToolOutput};
use loopwright_types::{LanguageModel, ModelRequest, ToolChoice};

/// Told to the model with a final answer that did not validate.
fn feedback(spec: &OutputSpec, mode: Resolved, error: &str) -> String {
    match mode {
        Resolved::Native => format!(
            "Your answer does not match the required JSON schema `{}`: {error}. Answer again with only the \
             corrected JSON value, nothing else.",
            spec.name()
        ),
        Resolved::Tool => format!(
            "The final answer does not match the required schema: {error}. Call {FINAL_ANSWER_TOOL} again with \
             corrected arguments."
        ),
    }
}

/// A run's mode once the model is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    Native,
    Tool,
}

/// How a step's answer turned out.
pub(crate) enum Verdict {
    /// Not a final answer (tool calls to run, no output spec).
    NotFinal,
    /// The answer, validated.
    Accepted(Value),
    /// An answer that did not validate; the model is told why and tries
    /// again while retries are left.
    Rejected(OutputError),
}

/// Structured output for one run.
pub(crate) struct Structured {
    spec: OutputSpec,
    mode: Resolved,
    /// The final-answer tool, in tool mode.
    tool: Option<ToolDefinition>,
    retries_left: u32,
}

impl Structured {
    /// The mode: the spec's, or for `auto` native when the model supports it
    /// (with tools, when the run has tools), else the tool mode.
    pub fn new(spec: OutputSpec, model: &dyn LanguageModel, has_tools: bool, retries: u32) -> Self {
        let caps = model.capabilities();
        let mode = match spec.output_mode() {
            OutputMode::Native => Resolved::Native,
            OutputMode::Tool => Resolved::Tool,
            _ if caps.structured_output && (!has_tools || caps.structured_output_with_tools) => {
                Resolved::Native
            }
            _ => Resolved::Tool,
        };
        let tool = (mode == Resolved::Tool).then(|| {
            ToolDefinition::new(
                FINAL_ANSWER_TOOL,
                format!(
                    "Give your final answer, as `{}`. Call this once you are done; the arguments are the answer.",
                    spec.name()
                ),
                spec.wire_schema().clone(),
            )
        });
        Self {
            spec,
            mode,
            tool,
            retries_left: retries,
        }
    }

    /// Add what this mode needs to a request: the response format, or the
    /// final-answer tool (the only one a concluding call may use).
    pub fn prepare(&self, request: &mut ModelRequest, concluding: bool) {
        match &self.tool {
            None => {
                request.response_format = Some(ResponseFormat::json_schema(
                    self.spec.name(),
                    self.spec.wire_schema().clone(),
                ));
            }
            Some(tool) => {
                let mut tools = Vec::clone(&request.tools);
                tools.push(tool.clone());
                request.tools = Arc::new(tools);
                if concluding {
                    request.tool_choice = ToolChoice::Tool {
                        name: FINAL_ANSWER_TOOL.into(),
                    };
                }
            }
        }
    }

    /// Judge a completed step. In tool mode the final-answer calls get
    /// their results here (in `answered`, by call id); a step with other
    /// calls is not final unless it also holds a valid final answer.
    pub async fn judge(&self, output: &StepOutput, answered: &mut HashMap<String, ToolOutput>) -> Verdict {
        match self.mode {
            Resolved::Native if output.calls.is_empty() => self.check_text(&output.text).await,
            Resolved::Native => Verdict::NotFinal,
            Resolved::Tool => {
                let finals: Vec<_> = output
                    .calls
                    .iter()
                    .filter(|c| c.name == FINAL_ANSWER_TOOL)
                    .collect();
                if finals.is_empty() && !output.calls.is_empty() {
                    return Verdict::NotFinal;
                }
                match finals.first() {
                    None => Verdict::Rejected(OutputError::new(
                        format!("the answer must be given by calling {FINAL_ANSWER_TOOL}"),
                        output.text.clone(),
                    )),
                    Some(call) => {
                        let verdict = self
                            .check_value(self.spec.unwrap_value(call.input.clone()), &call.input)
                            .await;
                        for (i, c) in finals.iter().enumerate() {
                            let result = match (&verdict, i) {
                                (Verdict::Accepted(_), 0) => ToolOutput::text("Final answer recorded."),
                                (Verdict::Rejected(e), 0) => {
                                    ToolOutput::error(feedback(&self.spec, self.mode, &e.message))
                                }
                                _ => ToolOutput::error("Only the first final answer of a step counts."),
                            };
                            answered.insert(c.id.clone(), result);
                        }
                        verdict
                    }
                }
            }
        }
    }

    /// Set the retries left (a resumed run's state keeps them).
    pub fn set_retries_left(&mut self, left: u32) {
        self.retries_left = left;
    }

    /// Use up one retry after a rejected answer; false when none is left.
    pub fn take_retry(&mut self) -> bool {
        let left = self.retries_left > 0;
        self.retries_left = self.retries_left.saturating_sub(1);
        left
    }

    /// Whether the final answer comes through the final-answer tool.
    pub fn via_tool(&self) -> bool {
        self.mode == Resolved::Tool
    }

    /// The message that tells the model what to fix, for a rejected answer
    /// given as text (a final-answer call gets its error as its result).
    pub fn retry_message(&self, error: &OutputError) -> Message {
        Message::user(feedback(&self.spec, self.mode, &error.message))
    }

    async fn check_text(&self, text: &str) -> Verdict {
        match answer_json(text) {
            Ok(sent) => {
                self.check_value(self.spec.unwrap_value(sent), &Value::String(text.to_owned()))
                    .await
            }
            Err(e) => Verdict::Rejected(OutputError::new(e.to_string(), text)),
        }
    }

    async fn check_value(&self, value: Value, raw: &Value) -> Verdict {
        let raw = match raw {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match self.spec.validate_async(&value).await {
            Ok(()) => Verdict::Accepted(value),
            Err(e) => Verdict::Rejected(OutputError::new(e.to_string(), raw)),
        }
    }
}

#[async_trait::async_trait]
impl Policy for Structured {
    fn output_mode(&self) -> Option<OutputMode> {
        Some(match self.mode {
            Resolved::Native => OutputMode::Native,
            Resolved::Tool => OutputMode::Tool,
        })
    }

    fn shape(&self, _run: &Run, step: &Step, request: &mut ModelRequest) {
        self.prepare(request, step.concluding);
    }

    async fn judge(
        &mut self,
        output: &StepOutput,
        answered: &mut HashMap<String, ToolOutput>,
    ) -> Option<Verdict> {
        Some(Structured::judge(self, output, answered).await)
    }

    fn rejected(&mut self, error: &OutputError, told: bool) -> Option<Rejection> {
        if !self.take_retry() {
            return Some(Rejection::End(error.clone()));
        }
        Some(Rejection::Retry((!told).then(|| self.retry_message(error))))
    }

    fn continues_concluding(&self) -> bool {
        self.via_tool()
    }

    fn retries_left(&self) -> Option<u32> {
        Some(self.retries_left)
    }
}
