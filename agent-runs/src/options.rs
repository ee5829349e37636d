//! What a request changes of a served agent's options, as data: a
//! background run that continues on another replica, after its approvals,
//! is built again from its record, so the change must be stored, not held
//! in a closure.
//!
//! Invariant: [`RunOptions::apply`] gives the same options on every replica
//! from the same stored value; an output schema that does not compile was
//! refused when the request came ([`RunOptions::check`]), so applying never
//! fails.

use loopwright_core::output::OutputSchemaError;
use loopwright_core::{OutputSpec, ReasoningEffort, agent::AgentOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request's changes to a served agent's options, stored with its run.
///
/// ```
/// use loopwright_runs::{OutputRequest, RunOptions};
/// let options = RunOptions {
///     system: vec!["Answer in French.".into()],
///     output: Some(OutputRequest {
///         name: "answer".into(),
///         schema: serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
///     }),
///     max_output_tokens: Some(400),
///     ..RunOptions::default()
/// };
/// # drop(options);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// System texts added after the agent's own prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<String>,
    /// The answer's JSON schema, and its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputRequest>,
    /// The sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling's probability mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// The most tokens one model answer may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The reasoning effort asked of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningEffort>,
    /// Deny, with a reason the model reads, the calls that would pause for
    /// a person: the request that started the run waits for its answer
    /// and cannot wait for a person (a synchronous stored response).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deny_pauses: bool,
    /// Tools the client runs ([`AgentBuilder::client_tools`](loopwright_core::AgentBuilder::client_tools)):
    /// a call to one pauses the run until the client's output comes
    /// ([`Decision::output`](crate::Decision::output)), whatever
    /// `deny_pauses` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_tools: Vec<loopwright_core::ToolDefinition>,
    /// The model the run uses instead of its agent's: one the server
    /// offers by this label ([`Host::model`](crate::Host::model)), found
    /// again by whichever replica drives the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A structured answer asked for: the schema's name and the schema (one
/// that does not compile refuses the run, [`RunsError::Invalid`](crate::RunsError::Invalid)).
///
/// ```
/// let output = loopwright_runs::OutputRequest {
///     name: "verdict".into(),
///     schema: serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
/// };
/// # drop(output);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputRequest {
    /// The schema's name.
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
}

impl OutputRequest {
    fn spec(&self) -> Result<OutputSpec, OutputSchemaError> {
        OutputSpec::from_schema(&self.name, self.schema.clone())
    }
}

impl RunOptions {
    /// Whether the output schema compiles (the error names what is wrong).
    ///
    /// ```
    /// use loopwright_runs::{OutputRequest, RunOptions};
    /// let output = OutputRequest { name: "x".into(), schema: serde_json::json!({"type": 12}) };
    /// let options = RunOptions { output: Some(output), ..RunOptions::default() };
    /// assert!(options.check().is_err());
    /// ```
    pub fn check(&self) -> Result<(), OutputSchemaError> {
        match &self.output {
            Some(output) => output.spec().map(|_| ()),
            None => Ok(()),
        }
    }

    /// `options` with these changes, and the approvals of a run that may
    /// pause (or, with [`deny_pauses`](Self::deny_pauses), of one that
    /// may not).
    pub(crate) fn apply_for_background(&self, options: AgentOptions) -> AgentOptions {
        let options = self.apply(options);
        if self.deny_pauses {
            crate::approvals::foreground_approvals(options)
        } else {
            crate::approvals::background_approvals(options)
        }
    }

    /// `options` with these changes.
    ///
    /// ```
    /// use loopwright_core::agent::AgentOptions;
    /// let options = loopwright_runs::RunOptions { max_output_tokens: Some(100), ..Default::default() };
    /// assert_eq!(options.apply(AgentOptions::default()).max_output_tokens, Some(100));
    /// ```
    pub fn apply(&self, mut options: AgentOptions) -> AgentOptions {
        options = add_system(options, &self.system);
        if let Some(Ok(spec)) = self.output.as_ref().map(OutputRequest::spec) {
            options.output = Some(spec);
        }
        if self.temperature.is_some() {
            options.temperature = self.temperature;
        }
        if self.top_p.is_some() {
            options.top_p = self.top_p;
        }
        if self.max_output_tokens.is_some() {
            options.max_output_tokens = self.max_output_tokens;
        }
        if let Some(effort) = self.reasoning {
            options.reasoning = Some(effort.into());
        }
        options
    }
}

/// Between the agent's own prompt and each system text a request adds.
const SYSTEM_SEPARATOR: &str = "\n\n";

/// `options` with a request's system texts after the agent's own prompt
/// (blank ones left out).
///
/// ```
/// use loopwright_core::agent::AgentOptions;
/// use loopwright_runs::shared::add_system;
/// let mut own = AgentOptions::default();
/// own.system = Some("You help.".into());
/// let options = add_system(own, &["Be brief.".into(), " ".into()]);
/// assert_eq!(options.system.as_deref(), Some("You help.\n\nBe brief."));
/// ```
pub fn add_system(mut options: AgentOptions, extra: &[String]) -> AgentOptions {
    let extra: Vec<&str> = extra
        .iter()
        .map(String::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    if extra.is_empty() {
        return options;
    }
    let joined = extra.join(SYSTEM_SEPARATOR);
    let system = match &options.system {
        Some(own) if !own.trim().is_empty() => format!("{own}{SYSTEM_SEPARATOR}{joined}"),
        _ => joined,
    };
    options.system = Some(system);
    options
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn stored_options_come_back_the_same_and_apply() {
        let options = RunOptions {
            system: vec!["Be brief.".into()],
            output: Some(OutputRequest {
                name: "answer".into(),
                schema: serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            }),
            max_output_tokens: Some(100),
            reasoning: Some(ReasoningEffort::Low),
            ..RunOptions::default()
        };
        let back: RunOptions = serde_json::from_value(serde_json::to_value(&options).unwrap()).unwrap();
        assert_eq!(back, options);
        assert!(back.check().is_ok());
        let mut base = AgentOptions::default();
        base.system = Some("You help.".into());
        let applied = back.apply(base);
        assert_eq!(applied.system.as_deref(), Some("You help.\n\nBe brief."));
        assert!(applied.output.is_some());
        assert_eq!(applied.max_output_tokens, Some(100));
    }

    #[test]
    fn a_schema_that_does_not_compile_is_refused_by_check() {
        let options = RunOptions {
            output: Some(OutputRequest {
                name: "x".into(),
                schema: serde_json::json!({"type": 12}),
            }),
            ..RunOptions::default()
        };
        assert!(options.check().is_err());
    }
}
