//! Sub-agents: agents as tools of other agents, with scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use futures::StreamExt;
use loopwright_core::accounting::{AccountingEntry, AccountingSink};
use loopwright_core::{
    Agent, AgentEvent, AgentResult, AgentTool, ExitReason, ModelError, ToolError, ToolOutput, Usage,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use tokio::sync::Barrier;

/// Keeps every entry in memory.
#[derive(Debug, Default)]
struct Entries(Mutex<Vec<AccountingEntry>>);

#[async_trait::async_trait]
impl AccountingSink for Entries {
    async fn record(&self, entry: &AccountingEntry) -> std::io::Result<()> {
        self.0.lock().unwrap().push(entry.clone());
        Ok(())
    }
}

impl Entries {
    fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.agent_path().unwrap_or("(none)").to_owned())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

fn tokens(u: Usage) -> (u64, u64) {
    (u.input_tokens.unwrap_or(0), u.output_tokens.unwrap_or(0))
}

fn scripted(steps: Vec<ScriptedStep>) -> (Arc<ScriptedModel>, ScriptedModel) {
    let model = ScriptedModel::new(steps);
    (Arc::new(model.clone()), model)
}

/// Run `agent` on a prompt to the end, with the events.
async fn run_all(agent: &Agent) -> (Vec<AgentEvent>, AgentResult) {
    collect(agent.run("coordinate")).await
}

/// The sub-agent events by path: (path, inner event type).
fn nested(events: &[AgentEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SubAgent { path, event } => {
                let kind = serde_json::to_value(event.as_ref()).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                Some((path.clone(), kind))
            }
            _ => None,
        })
        .collect()
}

/// A child that meets the other at a barrier (in a tool call), then answers.
fn barrier_child(name: &str, barrier: Arc<Barrier>, answer: &str) -> Agent {
    let wait = TestTool::new("rendezvous", object_schema(), move |_, _| {
        let b = barrier.clone();
        async move {
            tokio::time::timeout(HANG_GUARD, b.wait())
                .await
                .map_err(|_| ToolError::execution("the other sub-agent never arrived"))?;
            Ok(ToolOutput::text("met"))
        }
    });
    let (model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("w", "rendezvous", "{}")]),
        ScriptedStep::text(answer),
    ]);
    Agent::builder(model).name(name).tools(tools(vec![wait])).build()
}

#[tokio::test]
async fn two_sub_agents_run_in_parallel_and_roll_up_usage_accounting_and_events() {
    // Both children wait for each other inside their runs: the step can only
    // end if both sub-agent calls are in flight at once.
    let barrier = Arc::new(Barrier::new(2));
    let researcher = barrier_child("researcher", barrier.clone(), "three sources");
    let coder = barrier_child("coder", barrier, "patched");
    let (model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[
            ("r", "agent__researcher", r#"{"prompt": "find sources"}"#),
            ("c", "agent__coder", r#"{"prompt": "write the patch"}"#),
        ]),
        ScriptedStep::text("all done"),
    ]);
    let sink = Arc::new(Entries::default());
    let coordinator = Agent::builder(model)
        .name("coordinator")
        .sub_agent(AgentTool::new(researcher).description("Finds sources."))
        .sub_agent(AgentTool::new(coder).description("Writes patches."))
        .accounting(sink.clone())
        .build();
    let (events, result) = run_all(&coordinator).await;

    assert_eq!(result.exit(), ExitReason::Completed);
    let results = results_by_id(&result);
    assert_eq!(results["r"], (false, "three sources".to_owned()));
    assert_eq!(results["c"], (false, "patched".to_owned()));
    // Own usage: two calls of 10 + 5; the tree adds two calls per child.
    assert_eq!(tokens(result.usage), (20, 10));
    assert_eq!(tokens(result.tree_usage), (60, 30));
    // The `finished` event carries both, for readers of the events alone.
    let Some(AgentEvent::Finished {
        usage, tree_usage, ..
    }) = events.last()
    else {
        panic!("finished is last")
    };
    assert_eq!((tokens(*usage), tokens(*tree_usage)), ((20, 10), (60, 30)));
    let finished = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(
        (
            &finished["usage"]["input_tokens"],
            &finished["tree_usage"]["input_tokens"]
        ),
        (&serde_json::json!(20), &serde_json::json!(60))
    );
    assert_eq!(
        sink.paths(),
        ["coordinator", "coordinator/coder", "coordinator/researcher"]
    );
    let nested = nested(&events);
    for path in ["coordinator/researcher", "coordinator/coder"] {
        let kinds: Vec<&str> = nested
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, k)| k.as_str())
            .collect();
        assert_eq!(kinds.first(), Some(&"run_started"), "{path}: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"finished"), "{path}: {kinds:?}");
        assert!(
            kinds.contains(&"tool_result") && kinds.contains(&"accounting"),
            "{kinds:?}"
        );
    }
    // Each child's events come before its call's result in the parent's stream.
    let position = |f: &dyn Fn(&AgentEvent) -> bool| events.iter().position(f).unwrap();
    let child_finished = position(&|e| {
        matches!(e, AgentEvent::SubAgent { path, event } if path == "coordinator/coder"
            && matches!(**event, AgentEvent::Finished { .. }))
    });
    let call_result = position(&|e| matches!(e, AgentEvent::ToolResult { call_id, .. } if call_id == "c"));
    assert!(child_finished < call_result);
}

/// root -> mid -> leaf, each answering once its sub-agent answered; the
/// root with `max_depth` and an accounting sink. Returns the leaf's model.
fn three_levels(max_depth: u32) -> (Agent, ScriptedModel, Arc<Entries>) {
    let (leaf_model, leaf_calls) = scripted(vec![ScriptedStep::text("leaf answer")]);
    let leaf = Agent::builder(leaf_model).name("leaf").build();
    let (mid_model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("l", "agent__leaf", r#"{"prompt": "go"}"#)]),
        ScriptedStep::text("mid answer"),
    ]);
    let mid = Agent::builder(mid_model)
        .name("mid")
        .sub_agent(leaf.as_tool())
        .build();
    let (root_model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("m", "agent__mid", r#"{"prompt": "go"}"#)]),
        ScriptedStep::text("root answer"),
    ]);
    let sink = Arc::new(Entries::default());
    let root = Agent::builder(root_model)
        .name("root")
        .max_depth(max_depth)
        .sub_agent(mid.as_tool())
        .accounting(sink.clone())
        .build();
    (root, leaf_calls, sink)
}

#[tokio::test]
async fn events_of_deeper_sub_agents_are_wrapped_once_with_their_full_path() {
    let (root, _, sink) = three_levels(loopwright_core::agent::DEFAULT_MAX_DEPTH);
    let (events, result) = run_all(&root).await;
    assert_eq!(result.text, "root answer");
    assert_eq!(results_by_id(&result)["m"], (false, "mid answer".to_owned()));
    assert_eq!(tokens(result.tree_usage), (50, 25));
    assert_eq!(sink.paths(), ["root", "root/mid", "root/mid/leaf"]);
    let leaf_events: Vec<_> = nested(&events)
        .into_iter()
        .filter(|(p, _)| p == "root/mid/leaf")
        .collect();
    assert!(!leaf_events.is_empty());
    // Never double-wrapped.
    for e in &events {
        if let AgentEvent::SubAgent { event, .. } = e {
            assert!(!matches!(**event, AgentEvent::SubAgent { .. }), "{e:?}");
        }
    }
}

/// The text of the first error result in `path`'s events.
fn error_result_of(events: &[AgentEvent], path: &str) -> Option<String> {
    events.iter().find_map(|e| match e {
        AgentEvent::SubAgent { path: p, event } if p == path => match event.as_ref() {
            AgentEvent::ToolResult {
                is_error: true,
                output,
                ..
            } => Some(format!("{output:?}")),
            _ => None,
        },
        _ => None,
    })
}

#[tokio::test]
async fn the_depth_limit_refuses_without_a_model_call() {
    let (root, leaf_calls, _) = three_levels(1);
    let (events, result) = run_all(&root).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(leaf_calls.requests().len(), 0, "the leaf must not call its model");
    let refused = error_result_of(&events, "root/mid");
    let refused = refused.expect("the mid agent's call of leaf gets an error result");
    assert!(
        refused.contains("root/mid/leaf would be 2 levels deep") && refused.contains("at most 1"),
        "{refused}"
    );
}

#[tokio::test]
async fn an_agent_calling_itself_through_its_callers_is_refused_without_a_model_call() {
    // a -> b -> a: b's tool for a is deferred (a is built after b).
    let (a_tool, a_slot) = AgentTool::deferred("a", "Agent a.");
    let (b_model, b_calls) = scripted(vec![
        ScriptedStep::tool_calls(&[("back", "agent__a", r#"{"prompt": "again"}"#)]),
        ScriptedStep::text("b answered"),
    ]);
    let b = Agent::builder(b_model).name("b").sub_agent(a_tool).build();
    let (a_model, a_calls) = scripted(vec![
        ScriptedStep::tool_calls(&[("to_b", "agent__b", r#"{"prompt": "help"}"#)]),
        ScriptedStep::text("a answered"),
    ]);
    let a = Agent::builder(a_model).name("a").sub_agent(b.as_tool()).build();
    assert!(a_slot.set(a.clone()));

    let (events, result) = run_all(&a).await;
    assert_eq!(result.text, "a answered");
    // a: its two calls only; b: its two calls.
    assert_eq!((a_calls.requests().len(), b_calls.requests().len()), (2, 2));
    let refused = error_result_of(&events, "a/b").expect("b's call of a gets an error result");
    assert!(
        refused.contains("would have the agent a call itself"),
        "{refused}"
    );

    // An agent offered itself directly is refused the same way.
    let (me_tool, me_slot) = AgentTool::deferred("me", "Myself.");
    let (model, calls) = scripted(vec![
        ScriptedStep::tool_calls(&[("self", "agent__me", r#"{"prompt": "recurse"}"#)]),
        ScriptedStep::text("no recursion"),
    ]);
    let me = Agent::builder(model).name("me").sub_agent(me_tool).build();
    assert!(me_slot.set(me.clone()));
    let (_, result) = run_all(&me).await;
    assert_eq!(calls.requests().len(), 2);
    let (is_error, text) = &results_by_id(&result)["self"];
    assert!(*is_error && text.contains("call itself"), "{text}");
}

#[tokio::test]
async fn a_sub_agent_that_fails_gives_an_error_result_with_its_reason_and_the_parent_goes_on() {
    let (broken_model, _) = scripted(vec![ScriptedStep::fail(ModelError::authentication(
        Some(401),
        "invalid x-api-key",
    ))]);
    let broken = Agent::builder(broken_model).name("broken").build();
    let (limited_model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("n", "noop", "{}")]),
        ScriptedStep::text("half of it"),
    ]);
    let (noop, _) = counted_tool("noop", "ok");
    let limited = Agent::builder(limited_model)
        .name("limited")
        .max_steps(1)
        .tools(tools(vec![noop]))
        .build();
    let (model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[
            ("b", "agent__broken", r#"{"prompt": "try"}"#),
            ("l", "agent__limited", r#"{"prompt": "try"}"#),
        ]),
        ScriptedStep::text("carried on"),
    ]);
    let parent = Agent::builder(model)
        .name("parent")
        .sub_agent(broken.as_tool())
        .sub_agent(limited.as_tool())
        .build();
    let (_, result) = run_all(&parent).await;
    assert_eq!(
        (result.exit(), result.text.as_str()),
        (ExitReason::Completed, "carried on")
    );
    let results = results_by_id(&result);
    let (is_error, text) = &results["b"];
    assert!(*is_error);
    assert!(
        text.contains("parent/broken did not complete: its model failed")
            && text.contains("invalid x-api-key")
            && text.contains("It wrote no answer"),
        "{text}"
    );
    let (is_error, text) = &results["l"];
    assert!(*is_error);
    assert!(
        text.contains("step limit") && text.contains("Its partial answer:\nhalf of it"),
        "{text}"
    );
}

#[tokio::test]
async fn structured_input_and_output_go_through_as_json() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Verdict {
        ok: bool,
    }
    let (model, child_calls) = scripted(vec![ScriptedStep::text(r#"{"ok": true}"#)]);
    let reviewer = Agent::builder(model)
        .name("reviewer")
        .output(
            loopwright_core::OutputSpec::of::<Verdict>().mode(loopwright_core::output::OutputMode::Native),
        )
        .build();
    let input = serde_json::json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]});
    let tool = reviewer.as_tool().input_schema(input);
    assert!(loopwright_core::Tool::definition(&tool).output_schema.is_some());
    let (parent_model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("v", "agent__reviewer", r#"{"file": "a.rs"}"#)]),
        ScriptedStep::text("reviewed"),
    ]);
    let parent = Agent::builder(parent_model).sub_agent(tool).build();
    let (_, result) = run_all(&parent).await;
    assert_eq!(results_by_id(&result)["v"], (false, r#"{"ok":true}"#.to_owned()));
    let request = &child_calls.requests()[0];
    assert_eq!(request.messages[0].text(), r#"{"file":"a.rs"}"#);
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_parent_ends_the_child_and_its_tools_within_the_grace() {
    // The child's tool ignores cancellation: only the abort after the grace
    // ends it.
    let started = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let (s, d) = (started.clone(), dropped.clone());
    let stubborn = TestTool::new("stubborn", object_schema(), move |_, _| {
        s.fetch_add(1, Ordering::SeqCst);
        let flag = DropFlag(d.clone());
        async move {
            let _flag = flag;
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        }
    });
    let (child_model, _) = scripted(vec![ScriptedStep::tool_calls(&[("s", "stubborn", "{}")])]);
    let child = Agent::builder(child_model)
        .name("child")
        .tools(tools(vec![stubborn]))
        .build();
    let (model, _) = scripted(vec![ScriptedStep::tool_calls(&[(
        "c",
        "agent__child",
        r#"{"prompt": "work"}"#,
    )])]);
    let parent = Agent::builder(model)
        .name("parent")
        .sub_agent(child.as_tool())
        .build();
    let mut run = parent.run("go");
    // Wait until the child's tool is running.
    while let Some(event) = run.next().await {
        if let AgentEvent::SubAgent { event, .. } = &event
            && matches!(**event, AgentEvent::ToolCall { .. })
        {
            break;
        }
    }
    while started.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let cancelled_at = tokio::time::Instant::now();
    run.cancel();
    let result = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    let within = loopwright_core::agent::CANCEL_GRACE + std::time::Duration::from_millis(50);
    assert!(cancelled_at.elapsed() <= within, "{:?}", cancelled_at.elapsed());
    // The child's run was aborted with the parent's call; its tool with it.
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the child's tool is still running"
    );
    assert!(cancelled_at.elapsed() <= within);
}

#[tokio::test]
async fn a_tool_keeping_its_context_in_a_task_that_outlives_the_run_does_not_hold_the_run_open() {
    // Each call hands its context to a detached task that lives until the
    // test closes `release`, after both runs ended: the root's own call and
    // the sub-agent's (whose run `AgentTool::call` waits for).
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let alive = Arc::new(AtomicUsize::new(0));
    let leaker = || {
        let (release, alive) = (release.clone(), alive.clone());
        TestTool::new("leak", object_schema(), move |_, ctx| {
            let (release, alive) = (release.clone(), alive.clone());
            alive.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let _kept = ctx;
                let _ = release.acquire().await;
                alive.fetch_sub(1, Ordering::SeqCst);
            });
            async { Ok(ToolOutput::text("leaked")) }
        })
    };
    let (child_model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("l", "leak", "{}")]),
        ScriptedStep::text("child done"),
    ]);
    let child = Agent::builder(child_model)
        .name("child")
        .tools(tools(vec![leaker()]))
        .build();
    let (model, _) = scripted(vec![
        ScriptedStep::tool_calls(&[("l", "leak", "{}"), ("c", "agent__child", r#"{"prompt": "go"}"#)]),
        ScriptedStep::text("parent done"),
    ]);
    let parent = Agent::builder(model)
        .name("parent")
        .tools(tools(vec![leaker()]))
        .sub_agent(child.as_tool())
        .build();

    // `collect` fails with "run hung" if the stream never ends.
    let (_, result) = run_all(&parent).await;
    assert_eq!(
        (result.exit(), result.text.as_str()),
        (ExitReason::Completed, "parent done")
    );
    assert_eq!(results_by_id(&result)["c"], (false, "child done".to_owned()));
    assert_eq!(
        alive.load(Ordering::SeqCst),
        2,
        "both contexts are still held when the run has finished"
    );
    release.close();
}

#[tokio::test]
async fn metrics_are_labelled_with_the_path_of_the_agent_that_made_the_call() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    // The test's runtime is single-threaded: every run's task records here.
    let _local = metrics::set_default_local_recorder(&recorder);
    let (root, _, _) = three_levels(loopwright_core::agent::DEFAULT_MAX_DEPTH);
    let (_, result) = run_all(&root).await;
    assert_eq!(result.text, "root answer");

    let snap = common::recorded::snapshot(&recorder);
    let count = |name: &str, labels: &[(&str, &str)]| common::recorded::labelled(&snap, name, labels);
    use metrics_util::debugging::DebugValue::Counter;
    // Model calls: two each for root and mid, one for the leaf.
    for (agent, calls) in [("root", 2), ("root/mid", 2), ("root/mid/leaf", 1)] {
        assert_eq!(
            count(
                "loopwright_model_calls_total",
                &[("agent", agent), ("status", "ok")]
            ),
            Some(&Counter(calls)),
            "{agent}"
        );
        assert_eq!(
            count("loopwright_tokens_total", &[("agent", agent), ("kind", "input")]),
            Some(&Counter(10 * calls)),
            "{agent}"
        );
    }
    // A sub-agent call is a tool call of its caller.
    assert_eq!(
        count(
            "loopwright_tool_calls_total",
            &[("agent", "root"), ("tool", "agent__mid")]
        ),
        Some(&Counter(1))
    );
    assert_eq!(
        count(
            "loopwright_tool_calls_total",
            &[("agent", "root/mid"), ("tool", "agent__leaf")]
        ),
        Some(&Counter(1))
    );
    // Every sample of the run's metrics names its agent.
    let unlabelled: Vec<&str> = snap
        .iter()
        .filter(|(name, labels, _)| {
            name.starts_with("agent_")
                && !name.starts_with("agent_context_guard")
                && !labels.iter().any(|(k, _)| k == "agent")
        })
        .map(|(name, _, _)| name.as_str())
        .collect();
    assert!(unlabelled.is_empty(), "{unlabelled:?}");
}
