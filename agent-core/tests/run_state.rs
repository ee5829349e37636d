//! Pausing a run on a question and resuming it from its serialised state:
//! deferred approvals, decisions, a sub-agent's question pausing the tree,
//! deferred plans, and every way a resume is refused before anything runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use loopwright_core::preflight::Preflight;
use loopwright_core::{
    Agent, AgentEvent, AgentTool, ApprovalDecision, Approvals, ContentPart, ExitReason, Role, RunState,
    ToolSet, agent::PendingKind, agent::ResumeError, approval::ApprovalPolicy, approval::ApprovalTier,
    tool::ToolAnnotations, toolset::StaticToolSource,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

struct Counts {
    read: Arc<AtomicUsize>,
    write: Arc<AtomicUsize>,
    delete: Arc<AtomicUsize>,
}

fn tools() -> (ToolSet, Counts) {
    let counts = Counts {
        read: Arc::default(),
        write: Arc::default(),
        delete: Arc::default(),
    };
    let source = StaticToolSource::native("app")
        .with_tool(counted(
            "read",
            ToolAnnotations::default().read_only(true),
            counts.read.clone(),
        ))
        .with_tool(counted("write", ToolAnnotations::default(), counts.write.clone()))
        .with_tool(counted(
            "delete",
            ToolAnnotations::default().destructive(true),
            counts.delete.clone(),
        ));
    (ToolSet::builder().source(source).build(), counts)
}

fn agent(model: &ScriptedModel, tools: ToolSet) -> Agent {
    Agent::builder(Arc::new(model.clone()))
        .name("lead")
        .tools(tools)
        .approvals(Approvals::defer())
        .build()
}

fn three_calls() -> ScriptedStep {
    ScriptedStep::tool_calls(&[
        ("c1", "read", "{}"),
        ("c2", "write", "{}"),
        ("c3", "delete", "{}"),
    ])
}

/// A run of `agent` paused on c2 and c3 (c1 ran), serialised and read back.
async fn paused(agent: &Agent) -> RunState {
    let (events, result) = collect(agent.run("tidy up")).await;
    assert_eq!(result.exit(), ExitReason::AwaitingApproval);
    assert!(result.messages.is_empty(), "a paused run commits nothing");
    let state = result.state().expect("a paused run has a state");
    let Some(AgentEvent::AwaitingApproval { state_id, pending }) = events
        .iter()
        .rev()
        .find(|e| matches!(e, AgentEvent::AwaitingApproval { .. }))
    else {
        panic!("no awaiting_approval event: {events:?}")
    };
    assert_eq!(state_id, &state.id);
    let ids: Vec<&str> = pending.iter().map(|p| p.call_id.as_str()).collect();
    assert_eq!(ids, ["c2", "c3"]);
    assert!(
        pending
            .iter()
            .all(|p| p.agent_path == "lead" && p.kind == PendingKind::ToolCall)
    );
    // Plain data: through JSON and back, as another process would read it.
    RunState::from_json(&state.to_json()).unwrap()
}

#[tokio::test]
async fn deferred_calls_pause_the_run_and_resume_runs_each_decided_call_once() {
    let model = ScriptedModel::new(vec![three_calls(), ScriptedStep::text("Tidied.")]);
    let (tools, counts) = tools();
    let lead = agent(&model, tools);
    let state = paused(&lead).await;
    // The read-only call ran before the pause; the others did not.
    assert_eq!(
        (
            counts.read.load(Ordering::SeqCst),
            counts.write.load(Ordering::SeqCst)
        ),
        (1, 0)
    );
    let run = lead
        .resume(state)
        .approve("c2")
        .deny("c3", "not on a Friday")
        .run()
        .await
        .unwrap();
    let (events, result) = collect(run).await;
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(result.text, "Tidied.");
    assert_eq!(
        (
            counts.read.load(Ordering::SeqCst),
            counts.write.load(Ordering::SeqCst),
            counts.delete.load(Ordering::SeqCst)
        ),
        (1, 1, 0)
    );
    // The model's second request answers every call once, in its order.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    let answered: Vec<(String, bool, String)> = last
        .content
        .iter()
        .map(|p| match p {
            ContentPart::ToolResult(r) => (r.call_id.clone(), r.is_error, r.text()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(answered[0], ("c1".into(), false, "ran".into()));
    assert_eq!(answered[1], ("c2".into(), false, "ran".into()));
    assert_eq!(answered[2].0, "c3");
    assert!(
        answered[2].1 && answered[2].2.contains("not on a Friday"),
        "{answered:?}"
    );
    // The resumed result holds the whole turn, so a conversation keeps it.
    assert_eq!(result.messages.len(), 3, "{:?}", result.messages);
    assert!(result.state().is_none());
    // The paused calls were announced before the pause: the resumed run
    // tells their decisions and results, not their `tool_call` again.
    let announced: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert!(announced.is_empty(), "{announced:?}");
    let mut results: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    results.sort_unstable();
    assert_eq!(results, ["c2", "c3"]);
}

#[tokio::test]
async fn a_resume_is_refused_before_anything_runs_when_it_cannot_be_exact() {
    let model = ScriptedModel::new(vec![
        three_calls(),
        ScriptedStep::text("x"),
        ScriptedStep::text("y"),
    ]);
    let (tools, counts) = tools();
    let lead = agent(&model, tools);
    let state = paused(&lead).await;
    let err = |r: Result<_, ResumeError>| r.err().expect("refused");
    let e = err(lead.resume(state.clone()).approve("c2").run().await);
    assert!(matches!(e, ResumeError::Undecided { .. }), "{e}");
    assert!(e.to_string().contains("lead:c3"), "{e}");
    let e = err(lead
        .resume(state.clone())
        .approve("c2")
        .approve("c3")
        .approve("c9")
        .run()
        .await);
    assert!(matches!(e, ResumeError::NotPending { .. }), "{e}");
    // An agent without the pending call's tool.
    let (other_tools, _) = {
        let source = StaticToolSource::native("app").with_tool(counted(
            "read",
            ToolAnnotations::default(),
            Arc::default(),
        ));
        (ToolSet::builder().source(source).build(), ())
    };
    let bare = agent(&model, other_tools);
    let e = err(bare.resume(state.clone()).approve("c2").approve("c3").run().await);
    assert_eq!(
        e.to_string(),
        "the agent at lead has no tool write, which the paused run's call c2 names"
    );
    assert_eq!(counts.write.load(Ordering::SeqCst), 0);
    // Resumed once; the same state again is refused.
    let run = lead
        .resume(state.clone())
        .approve("c2")
        .approve("c3")
        .run()
        .await
        .unwrap();
    let (_, result) = collect(run).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let e = err(lead.resume(state).approve("c2").approve("c3").run().await);
    assert!(matches!(e, ResumeError::AlreadyResumed { .. }), "{e}");
    assert_eq!(counts.write.load(Ordering::SeqCst), 1, "no tool ran twice");
}

#[tokio::test]
async fn a_question_inside_a_sub_agent_pauses_the_tree_and_the_child_resumes_first() {
    let worker_model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("w1", "write", "{}")]),
        ScriptedStep::text("written"),
    ]);
    let (worker_tools, counts) = tools();
    let worker = agent(&worker_model, worker_tools)
        .to_builder()
        .name("worker")
        .build();
    let lead_model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("l1", "agent__worker", r#"{"prompt": "write it"}"#)]),
        ScriptedStep::text("The worker wrote it."),
    ]);
    let lead = Agent::builder(Arc::new(lead_model.clone()))
        .name("lead")
        .sub_agent(AgentTool::new(worker).description("Writes."))
        // Handing work to the worker needs no approval; its own calls do.
        .approvals(Approvals::defer().policy(ApprovalPolicy::default().tier("agent__*", ApprovalTier::Auto)))
        .build();
    let (_, result) = collect(lead.run("go")).await;
    assert_eq!(result.exit(), ExitReason::AwaitingApproval);
    let state = RunState::from_json(&result.state().unwrap().to_json()).unwrap();
    let pending = state.pending();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].agent_path.as_str(), pending[0].call_id.as_str()),
        ("lead/worker", "w1")
    );
    assert_eq!(counts.write.load(Ordering::SeqCst), 0);
    let run = lead.resume(state).approve("w1").run().await.unwrap();
    let (_, result) = collect(run).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(result.text, "The worker wrote it.");
    assert_eq!(counts.write.load(Ordering::SeqCst), 1);
    // The lead's call got the worker's answer.
    let answer = lead_model.requests()[1].messages.last().unwrap().clone();
    assert!(format!("{answer:?}").contains("written"), "{answer:?}");
    // Usage: the lead's two calls and the worker's two, each counted once.
    assert_eq!(result.tree_usage.input_tokens, Some(40));
}

#[tokio::test]
async fn a_deferred_plan_pauses_before_any_tool_and_resumes_approved_or_rejected() {
    let plan = r#"{"steps": [{"description": "Write", "tool": "write", "risk": "low"}], "warnings": []}"#;
    for approve in [true, false] {
        let model = ScriptedModel::new(vec![
            ScriptedStep::text(plan),
            ScriptedStep::tool_calls(&[("c1", "write", "{}")]),
            ScriptedStep::text("done"),
        ]);
        let (tools, counts) = tools();
        let lead = Agent::builder(Arc::new(model.clone()))
            .name("lead")
            .tools(tools)
            .preflight(Preflight::defer())
            .build();
        let (_, result) = collect(lead.run("go")).await;
        assert_eq!(result.exit(), ExitReason::AwaitingApproval);
        let state = result.state().unwrap();
        let pending = state.pending();
        assert_eq!(
            (pending[0].kind, pending[0].call_id.as_str()),
            (PendingKind::Plan, "plan")
        );
        let resume = lead.resume(state.clone());
        let resume = if approve {
            resume.approve("plan")
        } else {
            resume.decide("plan", ApprovalDecision::deny("too risky"))
        };
        let (_, result) = collect(resume.run().await.unwrap()).await;
        if approve {
            assert_eq!(result.exit(), ExitReason::Completed);
            assert_eq!(counts.write.load(Ordering::SeqCst), 1);
        } else {
            assert_eq!(result.exit(), ExitReason::PlanRejected);
            assert_eq!(plan_rejection(&result), Some("too risky"));
            assert_eq!(counts.write.load(Ordering::SeqCst), 0);
        }
    }
}
