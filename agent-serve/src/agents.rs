//! The agents a server offers, by name. A served agent is an [`Agent`] plus
//! what callers see of it: its name (the model id of the OpenAI and
//! Anthropic surfaces, the tool name of the MCP surface, the path segment of
//! REST), a description and the schema of its input.

use std::sync::{Arc, OnceLock};

use loopwright_core::schema::{SchemaError, Validator};
use loopwright_core::{Agent, Message};
use serde_json::Value;

/// The description used when none is given.
const DEFAULT_DESCRIPTION: &str = "An agent: give it a task, it answers.";

/// The input property of the default input schema.
const PROMPT_PROPERTY: &str = "prompt";

/// An agent as a server offers it.
///
/// ```
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// let agent = loopwright_core::Agent::builder(model).name("researcher").build();
/// let served = loopwright_serve::ServedAgent::new(agent).with_description("Finds sources and sums them up.");
/// assert_eq!(served.name(), "researcher");
/// assert_eq!(served.input_schema()["required"][0], "prompt");
/// ```
#[derive(Clone)]
pub struct ServedAgent {
    agent: Agent,
    name: String,
    description: String,
    input_schema: Option<Value>,
    /// The input schema compiled, on first use.
    validator: Arc<OnceLock<Result<Validator, SchemaError>>>,
}

impl std::fmt::Debug for ServedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedAgent")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish()
    }
}

impl ServedAgent {
    /// Serve `agent` under its own name.
    pub fn new(agent: Agent) -> Self {
        Self {
            name: agent.name().to_owned(),
            agent,
            description: DEFAULT_DESCRIPTION.to_owned(),
            input_schema: None,
            validator: Arc::default(),
        }
    }

    /// Serve it under another name.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// # let agent = loopwright_core::Agent::builder(model).build();
    /// let served = loopwright_serve::ServedAgent::new(agent).with_name("helper");
    /// assert_eq!(served.name(), "helper");
    /// ```
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What it does (the MCP tool's description).
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// # let agent = loopwright_core::Agent::builder(model).build();
    /// let served = loopwright_serve::ServedAgent::new(agent).with_description("Reviews patches.");
    /// assert_eq!(served.description(), "Reviews patches.");
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The JSON Schema of its input as an MCP tool (default: one `prompt`
    /// string). Input that is not `{prompt}` reaches the agent as JSON.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// # let agent = loopwright_core::Agent::builder(model).build();
    /// let schema = serde_json::json!({"type": "object", "properties": {"patch": {"type": "string"}}});
    /// let served = loopwright_serve::ServedAgent::new(agent).with_input_schema(schema.clone());
    /// assert_eq!(served.input_schema(), schema);
    /// ```
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self.validator = Arc::default();
        self
    }

    /// Its name as callers see it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input schema (the default one when none was set).
    pub fn input_schema(&self) -> Value {
        self.input_schema
            .clone()
            .unwrap_or_else(loopwright_core::agent::default_input_schema)
    }

    /// The agent.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Whether `input` matches the input schema; the validator's errors
    /// when it does not.
    pub(crate) async fn check_input(&self, input: &Value) -> Result<(), String> {
        let validator = self
            .validator
            .get_or_init(|| Validator::new(&self.input_schema()));
        match validator {
            Ok(validator) => validator.check_async(input).await.map_err(|e| e.to_string()),
            Err(e) => Err(format!("the agent's input schema cannot be used: {e}")),
        }
    }

    /// The user message a tool-style input becomes: the `prompt` when the
    /// input schema is the default one, else the input as JSON.
    pub(crate) fn input_message(&self, input: &Value) -> Message {
        match input.get(PROMPT_PROPERTY).and_then(Value::as_str) {
            Some(prompt) if self.input_schema.is_none() => Message::user(prompt),
            _ => Message::user(input.to_string()),
        }
    }
}

/// The served agents, in the order they were added; names are unique.
#[derive(Debug, Default)]
pub(crate) struct Agents {
    list: Vec<ServedAgent>,
}

impl Agents {
    pub(crate) fn new(list: Vec<ServedAgent>) -> Result<Self, crate::ServeError> {
        let mut seen = std::collections::BTreeSet::new();
        for agent in &list {
            if !seen.insert(agent.name.clone()) {
                return Err(crate::ServeError::DuplicateAgent {
                    name: agent.name.clone(),
                });
            }
        }
        if list.is_empty() {
            return Err(crate::ServeError::NoAgent);
        }
        Ok(Self { list })
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ServedAgent> {
        self.list.iter().find(|a| a.name == name)
    }

    pub(crate) fn all(&self) -> &[ServedAgent] {
        &self.list
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.list.iter().map(|a| a.name.clone()).collect()
    }
}
