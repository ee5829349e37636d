//! The durable seam: steps journaled by an engine are not run again, an
//! interrupted step runs again with the same idempotency key and sends its
//! events again after `resumed` with its attempt, replayed steps send no
//! events again, every call gets exactly one result, approvals wait for
//! durable decisions, a sub-agent's calls get keys of their own, and a run
//! with an id but no engine only shows its tools the id.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use futures::{FutureExt, StreamExt};
use loopwright_core::durable::{
    DecisionKey, Durability, DurableError, DurableRun, StepFn, StepKey, StepRecord, Waiting,
};
use loopwright_core::{
    Agent, AgentEvent, ApprovalDecision, Approvals, ExitReason, ToolOutput, Usage, approval::ApprovalPolicy,
    approval::ApprovalTier, model::FinishReason, model::ModelEvent,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// What outlives a process: the journal and the decisions.
#[derive(Default)]
struct Journal {
    steps: Mutex<HashMap<String, Value>>,
    decisions: Mutex<HashMap<String, Value>>,
    decided: Notify,
    /// Keys whose closure ran, in order.
    ran: Mutex<Vec<String>>,
}

/// One execution's engine over a shared journal. Once `crashed` (its
/// process died), it journals nothing more and never answers.
struct MemoryEngine {
    journal: Arc<Journal>,
    crashed: AtomicBool,
    /// Which execution of the run this engine carries (from 1).
    attempt: u32,
}

impl Default for MemoryEngine {
    fn default() -> Self {
        Self {
            journal: Arc::default(),
            crashed: AtomicBool::new(false),
            attempt: 1,
        }
    }
}

impl MemoryEngine {
    fn decide(&self, call_id: &str, decision: ApprovalDecision) {
        self.decide_at(1, call_id, decision);
    }

    fn decide_at(&self, step: u32, call_id: &str, decision: ApprovalDecision) {
        self.journal.decisions.lock().unwrap().insert(
            DecisionKey::approval(step, call_id).to_string(),
            serde_json::to_value(decision).unwrap(),
        );
        self.journal.decided.notify_waiters();
    }

    /// This execution's process dies; the next one's engine.
    fn next_execution(&self) -> Arc<MemoryEngine> {
        self.crashed.store(true, Ordering::SeqCst);
        Arc::new(MemoryEngine {
            journal: self.journal.clone(),
            crashed: AtomicBool::new(false),
            attempt: self.attempt + 1,
        })
    }

    fn ran(&self) -> Vec<String> {
        self.journal.ran.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Durability for MemoryEngine {
    async fn step(&self, key: StepKey, run: StepFn<'_>) -> Result<StepRecord, DurableError> {
        let name = key.to_string();
        if let Some(value) = self.journal.steps.lock().unwrap().get(&name) {
            return Ok(StepRecord::Replayed(value.clone()));
        }
        self.journal.ran.lock().unwrap().push(name.clone());
        let value = run().await?;
        if self.crashed.load(Ordering::SeqCst) {
            return std::future::pending().await;
        }
        self.journal.steps.lock().unwrap().insert(name, value.clone());
        Ok(StepRecord::Ran(value))
    }

    async fn decision(
        &self,
        key: &DecisionKey,
        _request: Value,
        mut waiting: Waiting,
    ) -> Result<Value, DurableError> {
        loop {
            let notified = self.journal.decided.notified();
            if let Some(value) = self.journal.decisions.lock().unwrap().get(&key.to_string()) {
                return Ok(value.clone());
            }
            waiting.now();
            notified.await;
        }
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }
}

/// A first step that says something, then calls `work` once.
fn thinking_then_work() -> ScriptedStep {
    ScriptedStep::events(vec![
        ModelEvent::TextDelta {
            text: "thinking".into(),
        },
        ModelEvent::ToolCallComplete {
            id: "c1".into(),
            name: "work".into(),
            input_json: "{}".into(),
            provider_data: None,
        },
        ModelEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Usage::new(10, 5),
        },
    ])
}

fn durable_agent(model: &ScriptedModel, list: Vec<TestTool>, engine: &Arc<MemoryEngine>) -> Agent {
    Agent::builder(Arc::new(model.clone()))
        .tools(tools(list))
        .build()
        .to_builder()
        .durable(DurableRun::new("run-1").engine(engine.clone()))
        .build()
}

fn text_deltas(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn completed_steps_come_from_the_journal() {
    let engine = Arc::new(MemoryEngine::default());
    let (work, calls) = counted_tool("work", "42");
    let model = ScriptedModel::new(vec![thinking_then_work(), ScriptedStep::text("done")]);
    let (first, result) = collect(durable_agent(&model, vec![work], &engine).run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(text_deltas(&first), ["thinking", "done"]);
    assert!(!first.iter().any(|e| matches!(e, AgentEvent::Resumed { .. })));
    assert_eq!(engine.ran(), ["model-1", "tool-1-0", "model-2"]);

    // The same run executed again: every step is journaled.
    let (work, again) = counted_tool("work", "42");
    let idle = ScriptedModel::new(vec![]);
    let (second, replayed) = collect(durable_agent(&idle, vec![work], &engine).run("go")).await;
    assert_eq!(replayed.exit(), ExitReason::Completed);
    assert_eq!(replayed.text, "done");
    assert_eq!(replayed.messages, result.messages);
    assert_eq!((idle.requests().len(), again.load(Ordering::SeqCst)), (0, 0));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(text_deltas(&second).is_empty(), "{second:?}");
    assert!(!second.iter().any(|e| matches!(e, AgentEvent::ToolCall { .. })));
    assert_eq!(engine.ran().len(), 3);
}

#[tokio::test]
async fn an_interrupted_step_runs_again_with_the_same_key() {
    let engine = Arc::new(MemoryEngine::default());
    let keys = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(Notify::new());
    let tool = |crash: bool| {
        let (keys, started) = (keys.clone(), started.clone());
        TestTool::new("work", object_schema(), move |_, ctx| {
            let (keys, started) = (keys.clone(), started.clone());
            async move {
                keys.lock().unwrap().push(ctx.idempotency_key().unwrap());
                if crash {
                    started.notify_one();
                    std::future::pending::<()>().await;
                }
                Ok(ToolOutput::text("42"))
            }
        })
    };
    let model = ScriptedModel::new(vec![thinking_then_work()]);
    let mut first = durable_agent(&model, vec![tool(true)], &engine).run("go");
    let seen = until(&started, &mut first).await;
    // The process dies in the middle of the tool.
    let engine = engine.next_execution();
    drop(first);
    assert_eq!(text_deltas(&seen), ["thinking"]);

    let model2 = ScriptedModel::new(vec![ScriptedStep::text("done")]);
    let (events, result) = collect(durable_agent(&model2, vec![tool(false)], &engine).run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    // Model call 1 was journaled: only call 2 reached the model again.
    assert_eq!((model.requests().len(), model2.requests().len()), (1, 1));
    assert_eq!(*keys.lock().unwrap(), ["run-1/1/c1", "run-1/1/c1"]);
    // The retried step's events go out again; the replayed step's delta does not.
    assert_eq!(text_deltas(&events), ["done"]);
    let calls: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCall { .. } | AgentEvent::ToolResult { .. }))
        .collect();
    assert_eq!(calls.len(), 2, "{events:?}");
    // The execution announces itself, then the interrupted step's events.
    assert!(
        matches!(events.first(), Some(AgentEvent::Resumed { attempt: 2 })),
        "{events:?}"
    );
    assert!(
        matches!(events.get(1), Some(AgentEvent::StepFinished { step: 1, .. })),
        "{events:?}"
    );
    assert_history_invariant(&result.messages);
}

/// Run `run` until `started` fires (the first execution's process then
/// dies), keeping the events it sent until then.
async fn until(started: &Notify, run: &mut loopwright_core::AgentRun) -> Vec<AgentEvent> {
    let mut seen = Vec::new();
    tokio::select! {
        () = started.notified() => {}
        () = async { while let Some(e) = run.next().await { seen.push(e) } } => panic!("the run ended: {seen:?}"),
    }
    while let Some(Some(e)) = run.next().now_or_never() {
        seen.push(e);
    }
    seen
}

#[tokio::test]
async fn an_interrupted_model_call_reaches_the_model_again_and_streams_again() {
    let engine = Arc::new(MemoryEngine::default());
    let model = ScriptedModel::new(vec![
        ScriptedStep::events(vec![ModelEvent::TextDelta { text: "half".into() }]).then_hang(),
    ]);
    let mut first = durable_agent(&model, vec![], &engine).run("go");
    let mut seen = Vec::new();
    while let Some(event) = first.next().await {
        let delta = matches!(event, AgentEvent::TextDelta { .. });
        seen.push(event);
        if delta {
            break;
        }
    }
    // The process dies while the model streams: nothing was journaled.
    let engine = engine.next_execution();
    drop(first);
    assert_eq!(text_deltas(&seen), ["half"]);

    let model2 = ScriptedModel::new(vec![ScriptedStep::text("whole")]);
    let (events, result) = collect(durable_agent(&model2, vec![], &engine).run("go")).await;
    assert_eq!(
        (result.exit(), result.text.as_str()),
        (ExitReason::Completed, "whole")
    );
    assert_eq!((model.requests().len(), model2.requests().len()), (1, 1));
    assert_eq!(engine.ran(), ["model-1", "model-1"]);
    // Attempt 2 sends the run from its start again, after `resumed`.
    assert!(
        matches!(events.first(), Some(AgentEvent::Resumed { attempt: 2 })),
        "{events:?}"
    );
    assert!(
        matches!(events.get(1), Some(AgentEvent::RunStarted { .. })),
        "{events:?}"
    );
    assert!(events.contains(&AgentEvent::StepStarted { step: 1 }));
    assert_eq!(text_deltas(&events), ["whole"]);
}

#[tokio::test]
async fn every_call_of_an_interrupted_batch_gets_exactly_one_result() {
    let engine = Arc::new(MemoryEngine::default());
    let keys = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(Notify::new());
    let tool = |name: &str, hang: bool| {
        let (keys, started, name_owned) = (keys.clone(), started.clone(), name.to_owned());
        TestTool::new(name, object_schema(), move |_, ctx| {
            let (keys, started, name) = (keys.clone(), started.clone(), name_owned.clone());
            async move {
                keys.lock()
                    .unwrap()
                    .push((name.clone(), ctx.idempotency_key().unwrap()));
                if hang {
                    started.notify_one();
                    std::future::pending::<()>().await;
                }
                Ok(ToolOutput::text(format!("{name} done")))
            }
        })
    };
    let batch = || ScriptedStep::tool_calls(&[("c1", "fast", "{}"), ("c2", "slow", "{}")]);
    let model = ScriptedModel::new(vec![batch()]);
    let mut first = durable_agent(&model, vec![tool("fast", false), tool("slow", true)], &engine).run("go");
    until(&started, &mut first).await;
    let engine = engine.next_execution();
    drop(first);

    let model2 = ScriptedModel::new(vec![ScriptedStep::text("done")]);
    let agent2 = durable_agent(&model2, vec![tool("fast", false), tool("slow", false)], &engine);
    let (events, result) = collect(agent2.run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    // Each call is a step: `fast` (the first call, ended) was journaled and
    // is not run again; `slow` (interrupted) runs again, with the same key.
    assert_eq!(
        engine.ran(),
        ["model-1", "tool-1-0", "tool-1-1", "tool-1-1", "model-2"]
    );
    let mut keys = keys.lock().unwrap().clone();
    keys.sort();
    let key = |name: &str, id: &str| (name.to_owned(), format!("run-1/1/{id}"));
    assert_eq!(keys, [key("fast", "c1"), key("slow", "c2"), key("slow", "c2")]);
    // Only the call that ran again sends its events again.
    let calls: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { call_id, .. } | AgentEvent::ToolResult { call_id, .. } => {
                Some(call_id.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls, ["c2", "c2"], "{events:?}");
    // One result per call in the history, the second execution's.
    assert_history_invariant(&result.messages);
    let results = results_by_id(&result);
    assert_eq!(results.len(), 2);
    assert_eq!(results["c1"], (false, "fast done".to_owned()));
    assert_eq!(results["c2"], (false, "slow done".to_owned()));
    let history = serde_json::to_string(&result.messages).unwrap();
    assert_eq!(history.matches("slow done").count(), 1, "{history}");
    // The second model call saw the results once.
    assert_eq!(
        serde_json::to_string(&*model2.requests()[0].messages)
            .unwrap()
            .matches("fast done")
            .count(),
        1
    );
}

/// Run id and idempotency key each call saw.
type SeenKeys = Arc<Mutex<Vec<(Option<String>, Option<String>)>>>;

/// A tool `work` that records the run id and idempotency key of its calls.
fn key_recorder() -> (TestTool, SeenKeys) {
    let keys = SeenKeys::default();
    let seen = keys.clone();
    let tool = TestTool::new("work", object_schema(), move |_, ctx| {
        seen.lock()
            .unwrap()
            .push((ctx.run_id().map(str::to_owned), ctx.idempotency_key()));
        async { Ok(ToolOutput::text("42")) }
    });
    (tool, keys)
}

#[tokio::test]
async fn a_sub_agents_calls_have_keys_under_the_call_that_started_it() {
    let engine = Arc::new(MemoryEngine::default());
    let (tool, keys) = key_recorder();
    // Both the parent and the child number their calls from c1.
    let child_model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "work", "{}")]),
        ScriptedStep::text("child done"),
    ]);
    let child = Agent::builder(Arc::new(child_model))
        .name("worker")
        .tools(tools(vec![tool]))
        .build();
    let parent_model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "agent__worker", r#"{"prompt": "work"}"#)]),
        ScriptedStep::text("done"),
    ]);
    let parent = Agent::builder(Arc::new(parent_model))
        .name("boss")
        .sub_agent(loopwright_core::AgentTool::new(child).description("Works."))
        .build()
        .to_builder()
        .durable(DurableRun::new("run-1").engine(engine.clone()))
        .build();
    let (_, result) = collect(parent.run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(
        *keys.lock().unwrap(),
        [(Some("run-1".to_owned()), Some("run-1/1/c1/1/c1".to_owned()))]
    );
    // Only the root journals: the child runs inside its tool step.
    assert_eq!(engine.ran(), ["model-1", "tool-1-0", "model-2"]);
}

fn destructive_work(runs: &Arc<AtomicUsize>) -> TestTool {
    counted(
        "work",
        loopwright_core::tool::ToolAnnotations::default().destructive(true),
        runs.clone(),
    )
}

#[tokio::test]
async fn an_approval_waits_for_a_durable_decision() {
    let engine = Arc::new(MemoryEngine::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![thinking_then_work()]);
    let approvals = Approvals::defer().policy(ApprovalPolicy::default().default_tier(ApprovalTier::Always));
    let agent = durable_agent(&model, vec![destructive_work(&runs)], &engine)
        .to_builder()
        .approvals(approvals.clone())
        .build();
    let mut first = agent.run("go");
    // The request goes out (it is not held) and the run waits.
    loop {
        match first.next().await {
            Some(AgentEvent::ApprovalRequested { call_id, .. }) => {
                assert_eq!(call_id, "c1");
                break;
            }
            Some(_) => {}
            None => panic!("the run ended without asking"),
        }
    }
    // The process dies while the run waits; another execution asks again.
    let engine = engine.next_execution();
    drop(first);
    let model2 = ScriptedModel::new(vec![ScriptedStep::text("done")]);
    let agent2 = durable_agent(&model2, vec![destructive_work(&runs)], &engine)
        .to_builder()
        .approvals(approvals.clone())
        .build();
    let mut second = agent2.run("go");
    let decider = engine.clone();
    let mut events = Vec::new();
    while let Some(event) = second.next().await {
        if matches!(event, AgentEvent::ApprovalRequested { .. }) {
            decider.decide("c1", ApprovalDecision::Approve);
        }
        events.push(event);
    }
    let result = second
        .await
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(model.requests().len() + model2.requests().len(), 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalResolved { approved: true, .. }))
    );
}

/// A step that calls `name` as call `id`.
fn calling(id: &str, name: &str) -> ScriptedStep {
    ScriptedStep::events(vec![
        ModelEvent::ToolCallComplete {
            id: id.into(),
            name: name.into(),
            input_json: "{}".into(),
            provider_data: None,
        },
        ModelEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Usage::new(10, 5),
        },
    ])
}

#[tokio::test]
async fn a_decision_replayed_from_the_journal_sends_nothing_again() {
    let engine = Arc::new(MemoryEngine::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Notify::new());
    let block = |crash: bool| {
        let started = started.clone();
        TestTool::new("block", object_schema(), move |_, _| {
            let started = started.clone();
            async move {
                if crash {
                    started.notify_one();
                    std::future::pending::<()>().await;
                }
                Ok(ToolOutput::text("unblocked"))
            }
        })
    };
    let approvals = Approvals::defer().policy(ApprovalPolicy::default().default_tier(ApprovalTier::Always));
    // Step 1 asks for `work` (approved), step 2's `block` (approved) is
    // where the first execution dies.
    let model = ScriptedModel::new(vec![calling("c1", "work"), calling("c2", "block")]);
    let agent = durable_agent(&model, vec![destructive_work(&runs), block(true)], &engine)
        .to_builder()
        .approvals(approvals.clone())
        .build();
    let mut first = agent.run("go");
    let decider = engine.clone();
    let mut step = 0;
    tokio::select! {
        () = started.notified() => {}
        () = async {
            while let Some(event) = first.next().await {
                match event {
                    AgentEvent::StepStarted { step: s } => step = s,
                    AgentEvent::ApprovalRequested { call_id, .. } => {
                        decider.decide_at(step, &call_id, ApprovalDecision::Approve);
                    }
                    _ => {}
                }
            }
        } => panic!("the first execution ended"),
    }
    let engine = engine.next_execution();
    drop(first);

    let model2 = ScriptedModel::new(vec![ScriptedStep::text("done")]);
    let agent2 = durable_agent(&model2, vec![destructive_work(&runs), block(false)], &engine)
        .to_builder()
        .approvals(approvals.clone())
        .build();
    let (events, result) = collect(agent2.run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved work ran once");
    assert_eq!(model2.requests().len(), 1, "two model calls replayed");
    // Step 1 (its approval, its tool) is not sent again; step 2, whose
    // tool was interrupted, is, with its approval.
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequested { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["c2"], "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::StepStarted { step: 1 })),
        "{events:?}"
    );
    assert_history_invariant(&result.messages);
}

#[tokio::test]
async fn a_denied_decision_is_the_calls_result() {
    let engine = Arc::new(MemoryEngine::default());
    engine.decide("c1", ApprovalDecision::deny("not today"));
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![thinking_then_work(), ScriptedStep::text("ok")]);
    let approvals =
        Approvals::via_events().policy(ApprovalPolicy::default().default_tier(ApprovalTier::Always));
    let agent = durable_agent(&model, vec![destructive_work(&runs)], &engine)
        .to_builder()
        .approvals(approvals)
        .build();
    let (_, result) = collect(agent.run("go")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let denied = serde_json::to_string(&result.messages).unwrap();
    assert!(denied.contains("not today"), "{denied}");
}

#[tokio::test]
async fn a_run_id_without_an_engine_reaches_the_tools_only() {
    let (tool, keys) = key_recorder();
    let model = ScriptedModel::new(vec![thinking_then_work(), ScriptedStep::text("done")]);
    let agent = Agent::builder(Arc::new(model))
        .tools(tools(vec![tool]))
        .build()
        .to_builder()
        .durable(DurableRun::new("run-9"))
        .build();
    let (events, _) = collect(agent.run("go")).await;
    assert_eq!(
        *keys.lock().unwrap(),
        [(Some("run-9".to_owned()), Some("run-9/1/c1".to_owned()))]
    );
    assert_eq!(text_deltas(&events), ["thinking", "done"]);
    assert_eq!(
        json!(DurableRun::new("x").idempotency_key(2, "y")),
        json!("x/2/y")
    );
}

#[tokio::test]
async fn cancelling_a_durable_run_reaches_the_running_tool() {
    let engine = Arc::new(MemoryEngine::default());
    let started = Arc::new(Notify::new());
    let noticed = Arc::new(AtomicBool::new(false));
    let (signal, flag) = (started.clone(), noticed.clone());
    let tool = TestTool::new("work", object_schema(), move |_, ctx| {
        let (signal, flag) = (signal.clone(), flag.clone());
        async move {
            signal.notify_one();
            ctx.cancellation().cancelled().await;
            flag.store(true, Ordering::SeqCst);
            Ok(ToolOutput::text("stopped"))
        }
    });
    let model = ScriptedModel::new(vec![thinking_then_work()]);
    let mut run = durable_agent(&model, vec![tool], &engine).run("go");
    until(&started, &mut run).await;
    run.cancel();
    let result = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert!(
        noticed.load(Ordering::SeqCst),
        "the tool never saw the cancellation"
    );
    assert_history_invariant(&result.messages);
}

/// An engine that cannot journal: every step fails.
struct Down;

#[async_trait::async_trait]
impl Durability for Down {
    async fn step(&self, _key: StepKey, _run: StepFn<'_>) -> Result<StepRecord, DurableError> {
        Err(DurableError::engine("the journal is unreachable"))
    }

    async fn decision(
        &self,
        _key: &DecisionKey,
        _request: Value,
        _waiting: Waiting,
    ) -> Result<Value, DurableError> {
        Err(DurableError::engine("the journal is unreachable"))
    }
}

#[tokio::test]
async fn an_engine_that_cannot_journal_stops_the_run_saying_why() {
    let model = ScriptedModel::new(vec![ScriptedStep::text("never")]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .build()
        .to_builder()
        .durable(DurableRun::new("run-1").engine(Arc::new(Down)))
        .build();
    let (events, result) = collect(agent.run("go")).await;
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert!(model.requests().is_empty());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { message } if message.contains("unreachable"))),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(AgentEvent::Finished { .. })));
}

#[tokio::test]
async fn a_call_id_used_again_in_a_later_step_gets_a_key_of_its_own() {
    // Providers without call ids number them afresh each step.
    let engine = Arc::new(MemoryEngine::default());
    let (tool, keys) = key_recorder();
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("call_0", "work", "{}")]),
        ScriptedStep::tool_calls(&[("call_0", "work", "{}")]),
        ScriptedStep::text("done"),
    ]);
    let (_, result) = collect(durable_agent(&model, vec![tool], &engine).run("go")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let keys: Vec<_> = keys
        .lock()
        .unwrap()
        .iter()
        .map(|(_, k)| k.clone().unwrap())
        .collect();
    assert_eq!(keys, ["run-1/1/call_0", "run-1/2/call_0"]);
}
