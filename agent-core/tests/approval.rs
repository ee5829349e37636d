//! Approval of tool calls: tiers, the approver and the event channel, denial,
//! timeout, and a pending approval not holding up its sibling.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, ApprovalDecision, Approvals, ExitReason, ToolSet,
    approval::ApprovalPolicy, approval::ApprovalRequest, approval::ApprovalSession, approval::ApprovalTier,
    approval::Approver, tool::ToolAnnotations, toolset::StaticToolSource,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

fn read_only() -> ToolAnnotations {
    ToolAnnotations::default().read_only(true).idempotent(true)
}
fn destructive() -> ToolAnnotations {
    ToolAnnotations::default().destructive(true)
}
fn plain() -> ToolAnnotations {
    ToolAnnotations::default()
}

/// Answers from a script and records what it was asked.
struct Scripted {
    answers: std::sync::Mutex<Vec<ApprovalDecision>>,
    asked: Arc<std::sync::Mutex<Vec<(String, ApprovalTier)>>>,
}

#[async_trait::async_trait]
impl Approver for Scripted {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked
            .lock()
            .unwrap()
            .push((request.tool.clone(), request.tier));
        self.answers.lock().unwrap().remove(0)
    }
}

fn toolset(tools: Vec<TestTool>) -> ToolSet {
    let mut source = StaticToolSource::native("app");
    for t in tools {
        source = source.with_tool(t);
    }
    ToolSet::builder().source(source).build()
}

#[tokio::test]
async fn tiers_auto_session_and_always() {
    let (reads, writes, deletes) = (Arc::default(), Arc::default(), Arc::default());
    let tools = toolset(vec![
        counted("read", read_only(), Arc::clone(&reads)),
        counted("write", plain(), Arc::clone(&writes)),
        counted("delete", destructive(), Arc::clone(&deletes)),
    ]);
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    // "For the session" to everything: remembered for write (tier session),
    // while delete (tier always) is asked again anyway.
    let approver = Scripted {
        answers: std::sync::Mutex::new(vec![ApprovalDecision::ApproveForSession; 3]),
        asked: asked.clone(),
    };
    let session = ApprovalSession::default();
    let approvals = Approvals::with_approver(approver).session(session.clone());
    let step = |p: &str| {
        let ids = [format!("{p}r"), format!("{p}w"), format!("{p}d")];
        ScriptedStep::tool_calls(&[
            (&ids[0], "read", "{}"),
            (&ids[1], "write", "{}"),
            (&ids[2], "delete", "{}"),
        ])
    };
    let (_, result, _) = run(
        vec![step("a"), step("b"), ScriptedStep::text("done")],
        tools,
        |b: AgentBuilder| b.approvals(approvals),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    // Every call ran; write was asked once (then remembered), delete twice, read never.
    for counter in [&reads, &writes, &deletes] {
        assert_eq!(counter.load(Ordering::SeqCst), 2);
    }
    let mut asked = asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(
        asked,
        [
            ("delete".to_string(), ApprovalTier::Always),
            ("delete".to_string(), ApprovalTier::Always),
            ("write".to_string(), ApprovalTier::Session)
        ]
    );
    assert!(session.is_approved("write"));
}

#[tokio::test]
async fn a_denied_call_is_not_run_and_the_model_is_told_why() {
    let runs = Arc::new(AtomicUsize::new(0));
    let approver = Scripted {
        answers: std::sync::Mutex::new(vec![ApprovalDecision::Deny {
            reason: "not on Fridays".into(),
        }]),
        asked: Arc::default(),
    };
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "delete", "{}")]),
            ScriptedStep::text("ok, I will not"),
        ],
        toolset(vec![counted("delete", destructive(), runs.clone())]),
        |b: AgentBuilder| b.approvals(Approvals::with_approver(approver)),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (is_error, text) = &results_by_id(&result)["c1"];
    assert!(is_error);
    assert!(
        text.contains("denied") && text.contains("not on Fridays"),
        "{text}"
    );
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::ApprovalResolved { call_id, approved: false, reason: Some(r) } if call_id == "c1" && r == "not on Fridays")));
    assert_eq!(result.exit(), ExitReason::Completed);
}

#[tokio::test]
async fn no_answer_in_time_is_a_denial() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "delete", "{}")]),
            ScriptedStep::text("done"),
        ],
        toolset(vec![counted("delete", destructive(), runs.clone())]),
        // Events channel, and the test never answers.
        |b: AgentBuilder| b.approvals(Approvals::via_events().timeout(Duration::from_millis(50))),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (is_error, text) = &results_by_id(&result)["c1"];
    assert!(*is_error && text.contains("no answer within 50ms"), "{text}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { call_id, .. } if call_id == "c1"))
    );
}

#[tokio::test]
async fn without_approvals_every_tier_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "delete", "{}")]),
            ScriptedStep::text("done"),
        ],
        toolset(vec![counted("delete", destructive(), runs.clone())]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!results_by_id(&result)["c1"].0);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { .. }))
    );
}

#[tokio::test]
async fn approval_through_events_while_the_sibling_runs() {
    let (deletes, reads) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "delete", "{}"), ("c2", "read", "{}")]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(toolset(vec![
            counted("delete", destructive(), deletes.clone()),
            counted("read", read_only(), reads.clone()),
        ]))
        .approvals(Approvals::via_events().policy(ApprovalPolicy::default().tier("read", ApprovalTier::Auto)))
        .build();
    let mut run = agent.run("go");
    let mut pending = None;
    let mut order = Vec::new();
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        match event {
            AgentEvent::ApprovalRequested {
                call_id, responder, ..
            } => {
                order.push(format!("asked {call_id}"));
                pending = Some(responder);
            }
            AgentEvent::ToolResult { call_id, .. } => {
                order.push(format!("result {call_id}"));
                // The sibling finished while c1 still waits: now approve c1.
                if call_id == "c2" {
                    assert!(pending.take().unwrap().respond(ApprovalDecision::Approve));
                }
            }
            AgentEvent::ApprovalResolved {
                call_id, approved, ..
            } => order.push(format!("resolved {call_id} {approved}")),
            _ => {}
        }
    }
    assert_eq!(order, ["asked c1", "result c2", "resolved c1 true", "result c1"]);
    let result = run.await.unwrap();
    assert_history_invariant(&result.messages);
    assert_eq!(
        (deletes.load(Ordering::SeqCst), reads.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[test]
fn approval_events_serialise_without_the_responder() {
    let (responder, _rx) = loopwright_core::approval::ApprovalResponder::new();
    let e = AgentEvent::ApprovalRequested {
        call_id: "c1".into(),
        tool: "Bash".into(),
        input: serde_json::json!({"command": "ls"}),
        responder,
    };
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        serde_json::json!({"type": "approval_requested", "call_id": "c1", "tool": "Bash", "input": {"command": "ls"}})
    );
}

/// `Approvals::via_events()` with nobody answering: the run is awaited
/// without reading its events, or the reader ignores `approval_requested`.
/// Either way nobody can answer, so the call is denied at once, saying so,
/// instead of stalling for the approval timeout. Virtual time shows it: a
/// wait for the timeout would advance the paused clock by a minute.
#[tokio::test(start_paused = true)]
async fn with_nobody_to_answer_an_approval_is_denied_at_once() {
    for read_events in [false, true] {
        let deletes = Arc::new(AtomicUsize::new(0));
        let model = ScriptedModel::new(vec![
            ScriptedStep::tool_calls(&[("c1", "delete", "{}")]),
            ScriptedStep::text("done"),
        ]);
        let agent = Agent::builder(Arc::new(model))
            .tools(toolset(vec![counted("delete", destructive(), deletes.clone())]))
            .approvals(Approvals::via_events())
            .build();
        let started = tokio::time::Instant::now();
        let mut run = agent.run("go");
        if read_events {
            // A reader that does not know about approvals drops the event.
            while run.next().await.is_some() {}
        }
        let result = run.await.unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "waited {:?} for an answer nobody could give",
            started.elapsed()
        );
        assert_eq!(deletes.load(Ordering::SeqCst), 0);
        let (is_error, text) = &results_by_id(&result)["c1"];
        assert!(*is_error);
        assert!(text.contains("nobody can answer"), "{text}");
    }
}

/// With an approver installed, a dropped event does not deny: the approver
/// still answers.
#[tokio::test(start_paused = true)]
async fn an_approver_still_answers_when_the_event_is_dropped() {
    let deletes = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "delete", "{}")]),
        ScriptedStep::text("done"),
    ]);
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let agent = Agent::builder(Arc::new(model))
        .tools(toolset(vec![counted("delete", destructive(), deletes.clone())]))
        .approvals(Approvals::with_approver(Scripted {
            answers: std::sync::Mutex::new(vec![ApprovalDecision::Approve]),
            asked: asked.clone(),
        }))
        .build();
    let result = agent.run("go").await.unwrap();
    assert_eq!(deletes.load(Ordering::SeqCst), 1);
    assert!(!results_by_id(&result)["c1"].0);
}
