//! [`AgentTool`]: an agent as a tool of another agent (a sub-agent).
//!
//! Invariants:
//! - each call runs the sub-agent in a fresh conversation whose one user
//!   message is the call's `prompt` (or, with a custom input schema, the
//!   call's arguments as JSON); nothing of the caller's conversation goes
//!   along;
//! - a call that would nest deeper than the root's depth limit, or run an
//!   agent already running among its callers, gets an error result and
//!   makes no model call;
//! - the sub-agent's run ends with the call: it is cancelled with the
//!   calling run, at its own timeout, and when the call's task is dropped;
//! - every event of the sub-agent's run reaches the caller's event stream,
//!   wrapped once in [`AgentEvent::SubAgent`] with its path, in order,
//!   before the call's result;
//! - the sub-agent's usage (its subtree's) is added to the caller's tree
//!   usage once, however its run ended; its accounting entries go to the
//!   tree's sink, stamped with its path.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::drive::Start;
use super::events::{AgentEvent, ExitReason};
use super::outcome::{AgentResult, Outcome};
use super::resume::ResumeError;
use super::run::AgentRun;
use super::scope::{AGENT_PATH_SEPARATOR, Lineage, SharedScope};
use super::state::RunState;
use super::{Agent, start};
use loopwright_types::Message;
use loopwright_types::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use loopwright_types::util::error_chain;

/// The source name of sub-agent tools added with
/// [`AgentBuilder::sub_agent`](crate::AgentBuilder::sub_agent): the model
/// sees them as `agent__<name>`.
pub const SUB_AGENT_SOURCE: &str = "agent";

/// How long one sub-agent call may run: a sub-agent makes many model and
/// tool calls, so it gets far longer than one tool call's timeout, bounded
/// so a stuck sub-agent cannot hold its caller forever.
pub const DEFAULT_SUB_AGENT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The input property of the default schema.
const PROMPT_PROPERTY: &str = "prompt";

/// The default input schema of an agent called as a tool: one `prompt`
/// string (the served agents of loopwright-serve use it too).
///
/// ```
/// let schema = loopwright_core::agent::default_input_schema();
/// assert_eq!(schema["required"][0], "prompt");
/// ```
pub fn default_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            PROMPT_PROPERTY: {
                "type": "string",
                "description": "The task, with everything the agent needs to know: it sees nothing of this conversation."
            }
        },
        "required": [PROMPT_PROPERTY],
        "additionalProperties": false
    })
}

/// The agent a tool runs: given, or set later through an [`AgentSlot`].
#[derive(Clone)]
enum Target {
    Ready(Box<Agent>),
    Deferred(Arc<OnceLock<Agent>>),
}

/// An [`Agent`] as a [`Tool`]: each call runs the agent on the call's
/// input, and its answer (its structured output as JSON when it has an
/// output schema, else its final text) is the result. A run that did not
/// complete (model error, token limit, step limit, invalid output,
/// timeout, cancellation) gives an error result with the reason and its
/// partial text; the calling run goes on.
///
/// ```
/// use loopwright_core::{Agent, AgentTool, Tool};
/// # let model = || std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// let researcher = Agent::builder(model()).name("researcher").system("Find sources.").build();
/// let coordinator = Agent::builder(model())
///     .name("coordinator")
///     .sub_agent(AgentTool::new(researcher).description("Finds and summarises sources on a question."))
///     .build();
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let catalog = coordinator.tools().catalog().await;
/// assert_eq!(catalog.names(), ["agent__researcher"]);
/// # });
/// ```
#[derive(Clone)]
pub struct AgentTool {
    target: Target,
    definition: ToolDefinition,
    /// The input is the default `{prompt}` (else it is sent as JSON).
    prompt_input: bool,
    timeout: Duration,
}

/// Where the agent of a [`AgentTool::deferred`] tool goes once it is built
/// (agents that call each other).
///
/// ```
/// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
/// let (tool, slot) = loopwright_core::AgentTool::deferred("critic", "Reviews a draft.");
/// let critic = loopwright_core::Agent::builder(model).name("critic").sub_agent(tool).build();
/// assert!(slot.set(critic));
/// ```
#[derive(Clone)]
pub struct AgentSlot(Arc<OnceLock<Agent>>);

impl AgentSlot {
    /// Set the agent; false (and the agent dropped) when one was set
    /// already.
    pub fn set(&self, agent: Agent) -> bool {
        self.0.set(agent).is_ok()
    }
}

impl AgentTool {
    /// A tool running `agent`, named after it ([`Agent::name`]), with a
    /// generic description (set a better one), the input `{prompt}` and,
    /// when the agent has an output schema, that schema as the tool's
    /// output schema.
    pub fn new(agent: Agent) -> Self {
        let name = agent.name().to_owned();
        let output = agent.options.output.as_ref().map(|o| o.schema().clone());
        let mut definition = ToolDefinition::new(&name, default_description(&name), default_input_schema());
        if let Some(schema) = output {
            definition = definition.with_output_schema(schema);
        }
        Self {
            target: Target::Ready(Box::new(agent)),
            definition,
            prompt_input: true,
            timeout: DEFAULT_SUB_AGENT_TIMEOUT,
        }
    }

    /// A tool whose agent is set later through the returned slot, for
    /// agents that call each other (the agent being built needs the tool
    /// first). A call made before the slot is set gets an error result.
    /// The tool keeps its agent alive, so agents joined in a cycle this way
    /// live as long as any of them.
    pub fn deferred(name: impl Into<String>, description: impl Into<String>) -> (Self, AgentSlot) {
        let slot = Arc::new(OnceLock::new());
        let tool = Self {
            target: Target::Deferred(slot.clone()),
            definition: ToolDefinition::new(name, description, default_input_schema()),
            prompt_input: true,
            timeout: DEFAULT_SUB_AGENT_TIMEOUT,
        };
        (tool, AgentSlot(slot))
    }

    /// The tool's name (before its source's namespace).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.definition = self.definition.with_name(name);
        self
    }

    /// What the calling model reads about the agent: what it is for and
    /// what to give it.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = description.into();
        self
    }

    /// Take arguments matching `schema` (a JSON Schema object) instead of
    /// `{prompt}`; the sub-agent's prompt is then the arguments as JSON.
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// # let agent = loopwright_core::Agent::builder(model).name("coder").build();
    /// use loopwright_core::Tool;
    /// let schema = serde_json::json!({"type": "object", "properties": {"file": {"type": "string"}, "change": {"type": "string"}},
    ///                                  "required": ["file", "change"]});
    /// let tool = loopwright_core::AgentTool::new(agent).input_schema(schema.clone());
    /// assert_eq!(tool.definition().input_schema, schema);
    /// ```
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.definition.input_schema = schema;
        self.prompt_input = false;
        self
    }

    /// Declare this output schema for the tool (set from the agent's own
    /// when it has one; use it for a [`deferred`](Self::deferred) tool).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.definition = self.definition.with_output_schema(schema);
        self
    }

    /// How long one call may run (default [`DEFAULT_SUB_AGENT_TIMEOUT`]);
    /// it replaces the calling run's tool timeout for this tool.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn agent(&self) -> Option<Agent> {
        match &self.target {
            Target::Ready(agent) => Some(Agent::clone(agent)),
            Target::Deferred(slot) => slot.get().cloned(),
        }
    }

    fn prompt(&self, input: &Value) -> String {
        match input.get(PROMPT_PROPERTY).and_then(Value::as_str) {
            Some(prompt) if self.prompt_input => prompt.to_owned(),
            _ => input.to_string(),
        }
    }
}

fn default_description(name: &str) -> String {
    format!("Hand a task to the {name} agent and get its answer.")
}

impl Agent {
    /// This agent as a tool of another agent; see [`AgentTool`].
    ///
    /// ```
    /// # let model = std::sync::Arc::new(loopwright_testing::ScriptedModel::new(vec![]));
    /// use loopwright_core::Tool;
    /// let tool = loopwright_core::Agent::builder(model).name("researcher").build().as_tool();
    /// assert_eq!(tool.definition().name, "researcher");
    /// ```
    pub fn as_tool(&self) -> AgentTool {
        AgentTool::new(self.clone())
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn timeout_for(&self, _input: &Value) -> Option<Duration> {
        Some(self.timeout)
    }

    /// Run the sub-agent outside a loop's run (a direct call): a question
    /// it pauses on cannot be answered here, so it is an error result.
    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        match self.run(input, None, ctx).await {
            SubAgentEnd::Done(result) => result,
            SubAgentEnd::Paused(state) => Ok(ToolOutput::error(format!(
                "The sub-agent {} paused on a question (state {}); only an agent's run can answer it.",
                self.definition.name, state.id
            ))),
        }
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

/// How a sub-agent's call ended in its caller's run.
pub(crate) enum SubAgentEnd {
    /// Its answer, error result or failure.
    Done(Result<ToolOutput, ToolError>),
    /// It paused on a question of its own: the caller pauses too, and the
    /// call continues from this state once the questions are decided.
    Paused(Box<RunState>),
}

/// `tool` as a sub-agent, when it is one (behind any wrapper).
pub(crate) fn sub_agent(tool: &dyn Tool) -> Option<&AgentTool> {
    tool.as_any()?.downcast_ref::<AgentTool>()
}

impl AgentTool {
    /// Run the sub-agent for a call: from `input`, or continuing the child
    /// run `resume` paused with the run tree's decisions.
    pub(crate) async fn run(
        &self,
        input: Value,
        resume: Option<(Box<RunState>, super::resume::SharedDecisions)>,
        ctx: ToolContext,
    ) -> SubAgentEnd {
        let start = match resume {
            Some((state, decisions)) => Start::Resume { state, decisions },
            None => Start::Fresh(vec![Message::user(self.prompt(&input))]),
        };
        self.run_child(start, &ctx).await
    }

    /// Check, before anything runs, that the child run `state` can be
    /// continued: the agent is there and has every tool its pending calls
    /// name.
    pub(crate) async fn check_resume(&self, state: &RunState) -> Result<(), ResumeError> {
        match self.agent() {
            // Boxed: a sub-agent's state holds its own sub-agents'.
            Some(agent) => Box::pin(super::resume::check_tools(&agent, state)).await,
            None => Err(ResumeError::NotResumable {
                tool: self.definition.name.clone(),
                agent_path: state.agent_path.clone(),
            }),
        }
    }
}

impl AgentTool {
    /// Start the child run from `input` under the caller's scope and follow
    /// it to its end.
    async fn run_child(&self, input: Start, ctx: &ToolContext) -> SubAgentEnd {
        let Some(agent) = self.agent() else {
            return SubAgentEnd::Done(Ok(self.unavailable()));
        };
        let (lineage, parent) = match self.lineage(&agent, ctx) {
            Ok(found) => found,
            Err(refused) => return SubAgentEnd::Done(Ok(refused)),
        };
        let path = lineage.path();
        let mut options = agent.options.clone();
        options.cancellation.push(ctx.cancellation().clone());
        // A durable tree is journaled at its root: the child runs inside
        // the root's journaled tool step, so it journals nothing itself.
        options.durable = None;
        options.trace_content |= lineage.trace_content;
        let run = start(agent.model.clone(), agent.tools.clone(), input, options, lineage);
        self.follow(run, path, parent.as_ref(), ctx).await
    }

    fn unavailable(&self) -> ToolOutput {
        ToolOutput::error(format!(
            "The agent {} is not available yet (its definition was not finished). Do the task another way.",
            self.definition.name
        ))
    }

    /// The child run's lineage under the caller's scope (a root of its own
    /// when called directly); an error result when the child may not run
    /// (it would call itself, or nest too deep).
    fn lineage(
        &self,
        agent: &Agent,
        ctx: &ToolContext,
    ) -> Result<(Lineage, Option<SharedScope>), ToolOutput> {
        let parent = super::scope::of(ctx);
        let lineage = match &parent {
            Some(parent) => {
                let lineage = &parent.lineage;
                let path = format!("{}{AGENT_PATH_SEPARATOR}{}", parent.path, agent.name());
                if lineage.ids.iter().any(|id| id.same(&agent.id)) {
                    return Err(ToolOutput::error(format!(
                        "Not run: {path} would have the agent {} call itself (it is already running in {}). \
                         An agent cannot hand a task to itself; do this part yourself.",
                        agent.name(),
                        parent.path
                    )));
                }
                let depth = lineage.depth() + 1;
                if depth > lineage.max_depth as usize {
                    return Err(ToolOutput::error(format!(
                        "Not run: {path} would be {depth} levels deep, and sub-agents may nest at most {} deep. \
                         Do this part yourself.",
                        lineage.max_depth
                    )));
                }
                let mut child = lineage.clone();
                child.names.push(agent.name().to_owned());
                child.ids.push(agent.id.clone());
                child.key_prefix = ctx.idempotency_key().map(Arc::from);
                // The tree's budget; a sub-agent with limits of its own
                // under a tree without any gets one for its subtree.
                if child.budget.is_none() {
                    child.budget = super::limits::TreeBudget::from_options(&agent.options);
                }
                child
            }
            // Called directly: the sub-agent is a root of its own.
            None => Lineage::root(agent.name(), agent.id.clone(), &agent.options),
        };
        Ok((lineage, parent))
    }

    /// Follow the child run to its end, forwarding its events to the
    /// caller; its answer, its error result, or its pause.
    async fn follow(
        &self,
        mut run: AgentRun,
        path: String,
        parent: Option<&SharedScope>,
        ctx: &ToolContext,
    ) -> SubAgentEnd {
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut timed_out = false;
        loop {
            tokio::select! {
                event = run.next() => {
                    let Some(event) = event else { break };
                    if let Some(parent) = parent.filter(|p| !(p.holds_output && is_delta(&event))) {
                        let event = match event {
                            nested @ AgentEvent::SubAgent { .. } => nested,
                            event => AgentEvent::SubAgent { path: path.clone(), event: Box::new(event) },
                        };
                        // A caller no longer listening is being cancelled;
                        // the sub-agent's run hears it through its token.
                        let _ = parent.emit.send(event).await;
                    }
                }
                () = &mut deadline, if !timed_out => {
                    timed_out = true;
                    run.cancel();
                }
            }
        }
        let result = match run.into_outcome().await {
            Ok(result) => result,
            Err(aborted) => {
                return SubAgentEnd::Done(Ok(ToolOutput::error(format!(
                    "The sub-agent {path} failed: {aborted}. Do the task another way."
                ))));
            }
        };
        if let Outcome::AwaitingApproval { state } = result.outcome {
            // The child asked a person: the caller pauses too. Its usage so
            // far is in the state, added when it finally ends.
            return SubAgentEnd::Paused(state);
        }
        if let Some(parent) = parent {
            parent.add_child_usage(result.tree_usage);
        }
        if result.exit() == ExitReason::Completed {
            return SubAgentEnd::Done(Ok(match result.output {
                Some(value) => ToolOutput::json(value),
                None => ToolOutput::text(result.text),
            }));
        }
        if result.exit() == ExitReason::Cancelled && !timed_out && ctx.cancellation().is_cancelled() {
            return SubAgentEnd::Done(Err(ToolError::Cancelled));
        }
        SubAgentEnd::Done(Ok(ToolOutput::error(incomplete_message(
            &path,
            &result,
            timed_out.then_some(self.timeout),
        ))))
    }
}

/// The error result of a sub-agent run that did not complete: why, what
/// it had written, and what the caller can do.
fn incomplete_message(path: &str, result: &AgentResult, timed_out: Option<Duration>) -> String {
    let reason = match (&result.outcome, timed_out) {
        (_, Some(after)) => format!("it timed out after {} s", after.as_secs()),
        (Outcome::MaxSteps, _) => format!("it reached its step limit ({} model calls)", result.steps.len()),
        (Outcome::ModelFailed { error }, _) => format!("its model failed: {}", error_chain(error)),
        (Outcome::TokenLimit, _) => "its conversation no longer fits its model's context window".to_owned(),
        (Outcome::OutputInvalid { error }, _) => {
            format!("its answer never matched its output schema ({error})")
        }
        (Outcome::Stopped, _) => "a stop condition ended it".to_owned(),
        (Outcome::Cancelled { reason: Some(why) }, _) => format!("it was cancelled: {why}"),
        (Outcome::Cancelled { reason: None }, _) => "it was cancelled".to_owned(),
        (Outcome::BudgetExhausted { reason }, _) => reason.clone(),
        (other, _) => format!("it ended with {:?}", other.exit()),
    };
    if result.exit() == ExitReason::BudgetExhausted {
        // No model call is left for anyone in the tree: retrying would fail.
        return format!(
            "The sub-agent {path} did not complete: {reason}. No more model calls can be made in this run; \
             answer now with what you have."
        );
    }
    let partial = if result.text.trim().is_empty() {
        "It wrote no answer.".to_owned()
    } else {
        format!("Its partial answer:\n{}", result.text)
    };
    format!(
        "The sub-agent {path} did not complete: {reason}. {partial}\n\nRetry with a smaller task, do it another way, \
         or answer with what you have."
    )
}

/// Whether `event` is a delta (text, reasoning or tool arguments), a
/// sub-agent's at any depth included.
fn is_delta(event: &AgentEvent) -> bool {
    match event {
        AgentEvent::SubAgent { event, .. } => is_delta(event),
        AgentEvent::TextDelta { .. }
        | AgentEvent::ReasoningDelta { .. }
        | AgentEvent::ToolInputDelta { .. } => true,
        _ => false,
    }
}
