//! Helpers shared by the loop tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, AgentResult, ContentPart, Message, Role, Tool, ToolContext,
    ToolDefinition, ToolError, ToolOutput, ToolSet, toolset::StaticToolSource,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};

pub mod recorded;

/// Upper bound used only to detect a hang, never to measure speed.
pub const HANG_GUARD: Duration = Duration::from_secs(20);

type Handler =
    Arc<dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync>;

/// A tool whose behaviour is a closure.
pub struct TestTool {
    def: ToolDefinition,
    handler: Handler,
}

impl TestTool {
    pub fn new<F, Fut>(name: &str, schema: Value, f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        Self {
            def: ToolDefinition::new(name, format!("test tool {name}"), schema),
            handler: Arc::new(move |v, c| Box::pin(f(v, c))),
        }
    }

    /// The same tool with this description.
    pub fn describe(mut self, description: &str) -> Self {
        self.def.description = description.to_owned();
        self
    }

    pub fn set_annotations(&mut self, annotations: loopwright_core::tool::ToolAnnotations) {
        self.def.annotations = annotations;
    }
}

/// A tool counting its runs in `runs`, with `annotations`.
pub fn counted(
    name: &str,
    annotations: loopwright_core::tool::ToolAnnotations,
    runs: Arc<std::sync::atomic::AtomicUsize>,
) -> TestTool {
    let mut tool = TestTool::new(name, object_schema(), move |_, _| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(ToolOutput::text("ran"))
        }
    });
    tool.set_annotations(annotations);
    tool
}

#[async_trait::async_trait]
impl Tool for TestTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }
    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        (self.handler)(input, ctx).await
    }
}

/// A tool answering `output`, and the count of its calls.
pub fn counted_tool(name: &str, output: &'static str) -> (TestTool, Arc<std::sync::atomic::AtomicUsize>) {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let tool = TestTool::new(name, object_schema(), move |_, _| {
        c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move { Ok(ToolOutput::text(output)) }
    });
    (tool, calls)
}

pub fn object_schema() -> Value {
    json!({"type": "object"})
}

pub fn tools(list: Vec<TestTool>) -> ToolSet {
    let mut source = StaticToolSource::native("test");
    for t in list {
        source = source.with_tool(t);
    }
    ToolSet::builder().source(source).build()
}

/// Run to the end; returns the events, the result and the model (for its
/// recorded requests).
pub async fn run(
    steps: Vec<ScriptedStep>,
    toolset: ToolSet,
    options: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> (Vec<AgentEvent>, AgentResult, ScriptedModel) {
    let model = ScriptedModel::new(steps);
    let agent = options(Agent::builder(Arc::new(model.clone())).tools(toolset)).build();
    let (events, result) = collect(agent.run("do the task")).await;
    (events, result, model)
}

/// Every event of `run` and its result, under the hang guard; checks the
/// history invariant and that `finished` came last.
pub async fn collect(mut run: loopwright_core::AgentRun) -> (Vec<AgentEvent>, AgentResult) {
    let events = tokio::time::timeout(HANG_GUARD, async {
        let mut events = Vec::new();
        while let Some(e) = run.next().await {
            events.push(e);
        }
        events
    })
    .await
    .expect("run hung");
    let result = run
        .await
        .or_else(loopwright_core::RunError::into_result)
        .expect("result");
    assert_history_invariant(&result.messages);
    assert!(
        matches!(events.last(), Some(AgentEvent::Finished { .. })),
        "Finished must be last"
    );
    (events, result)
}

/// Run one step making `calls`, then a step answering "done", with default
/// options.
pub async fn run_calls(
    calls: &[(&str, &str, &str)],
    list: Vec<TestTool>,
) -> (Vec<AgentEvent>, AgentResult, ScriptedModel) {
    run(
        vec![ScriptedStep::tool_calls(calls), ScriptedStep::text("done")],
        tools(list),
        |b: AgentBuilder| b,
    )
    .await
}

/// Every tool call has exactly one result, in the next message, in call order.
pub fn assert_history_invariant(messages: &[Message]) {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        let calls: Vec<&str> = m.tool_calls().map(|c| c.id.as_str()).collect();
        if m.role == Role::Assistant && !calls.is_empty() {
            let next = messages
                .get(i + 1)
                .expect("tool calls without a following tool message");
            assert_eq!(next.role, Role::Tool);
            let results: Vec<&str> = next
                .content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::ToolResult(r) => Some(r.call_id.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                results, calls,
                "results must answer every call once, in call order"
            );
            i += 2;
        } else {
            assert_ne!(m.role, Role::Tool, "tool message without calls before it");
            i += 1;
        }
    }
}

/// The tool names a request offered, in order.
pub fn tool_names(request: &loopwright_core::model::ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

/// The tool results of the run, by call id.
pub fn results_by_id(result: &AgentResult) -> HashMap<String, (bool, String)> {
    let mut out = HashMap::new();
    for m in &result.messages {
        for p in &m.content {
            if let ContentPart::ToolResult(r) = p {
                out.insert(r.call_id.clone(), (r.is_error, r.text()));
            }
        }
    }
    out
}

/// The limit of its own that stopped the run (its deadline, its tree's
/// budget), from its outcome.
pub fn stopped_by(result: &AgentResult) -> Option<String> {
    match &result.outcome {
        loopwright_core::Outcome::Cancelled { reason } => reason.clone(),
        loopwright_core::Outcome::BudgetExhausted { reason } => Some(reason.clone()),
        _ => None,
    }
}

/// The model's error of a run that ended with one.
pub fn model_error(result: &AgentResult) -> Option<&loopwright_core::ModelError> {
    match &result.outcome {
        loopwright_core::Outcome::ModelFailed { error } => Some(error),
        _ => None,
    }
}

/// Why the plan of a run that ended rejected was.
pub fn plan_rejection(result: &AgentResult) -> Option<&str> {
    match &result.outcome {
        loopwright_core::Outcome::PlanRejected { reason } => Some(reason),
        _ => None,
    }
}
