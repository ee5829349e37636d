//! What a request changes of a served agent's options, as data: a
//! background run that continues on another replica, after its approvals,
//! is built again from its record, so the change must be stored, not held
//! in a closure.
//!
//! Invariant: [`RunOptions::apply`] gives the same options on every replica
//! from the same stored value; an output schema that does not compile was
//! refused when the request came ([`RunOptions::check`]), so applying never
//! fails.

use loopwright_core::{OutputSpec, ReasoningEffort, agent::AgentOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request's changes to a served agent's options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunOptions {
    /// System texts added after the agent's own prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) system: Vec<String>,
    /// The answer's JSON schema, and its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<OutputRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning: Option<ReasoningEffort>,
    /// Deny, with a reason the model reads, the calls that would pause for
    /// a person: the request that started the run waits for its answer
    /// and cannot wait for a person (a synchronous stored response).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) deny_pauses: bool,
}

/// A structured answer asked for: the schema's name and the schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct OutputRequest {
    pub(crate) name: String,
    pub(crate) schema: Value,
}

impl OutputRequest {
    fn spec(&self) -> Result<OutputSpec, String> {
        OutputSpec::from_schema(&self.name, self.schema.clone()).map_err(|e| e.to_string())
    }
}

impl RunOptions {
    /// Whether the output schema compiles (the error names what is wrong).
    pub(crate) fn check(&self) -> Result<(), String> {
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
            super::approvals::foreground_approvals(options)
        } else {
            super::approvals::background_approvals(options)
        }
    }

    /// `options` with these changes.
    pub(crate) fn apply(&self, mut options: AgentOptions) -> AgentOptions {
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
pub(crate) fn add_system(mut options: AgentOptions, extra: &[String]) -> AgentOptions {
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
