//! Client tools: a call to a tool the client runs pauses the run with it
//! pending; the client's output resumes it, and the model reads that
//! output as the call's one result beside the results of the calls that
//! ran here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use loopwright_core::agent::{ClientTool, PendingKind, ResumeError};
use loopwright_core::{
    Agent, AgentEvent, Approvals, ContentPart, ExitReason, Role, RunState, ToolDefinition, ToolOutput,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

fn location() -> ClientTool {
    ClientTool::new(ToolDefinition::new(
        "get_location",
        "The user's location, from the browser.",
        serde_json::json!({"type": "object", "properties": {"precise": {"type": "boolean"}}}),
    ))
}

/// A run that called `read` (run here) and `get_location` (the client's)
/// in one step, paused on the second, its state read back from JSON.
async fn paused(agent: &Agent) -> RunState {
    let (events, result) = collect(agent.run("Where am I, and what is in the notes?")).await;
    assert_eq!(result.exit(), ExitReason::AwaitingApproval, "{events:?}");
    let state = result.state().expect("a paused run has a state");
    let pending = state.pending();
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].kind, PendingKind::ClientTool);
    assert_eq!(
        (pending[0].call_id.as_str(), pending[0].tool.as_str()),
        ("c2", "get_location")
    );
    assert_eq!(pending[0].arguments, serde_json::json!({"precise": true}));
    // The client learns of the call through its `tool_call` event.
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::ToolCall { call_id, tool, .. } if call_id == "c2" && tool == "get_location")
    ));
    RunState::from_json(&state.to_json()).unwrap()
}

fn agent(model: &ScriptedModel, read: TestTool) -> Agent {
    // No approvals installed: a client tool pauses the run without them.
    Agent::builder(Arc::new(model.clone()))
        .name("lead")
        .tool(read)
        .tool(location())
        .build()
}

fn two_calls() -> ScriptedStep {
    ScriptedStep::tool_calls(&[
        ("c1", "read", "{}"),
        ("c2", "get_location", r#"{"precise": true}"#),
    ])
}

#[tokio::test]
async fn a_client_tool_pauses_the_run_and_its_output_resumes_it() {
    let model = ScriptedModel::new(vec![two_calls(), ScriptedStep::text("You are in Paris.")]);
    let (read, reads) = counted_tool("read", "notes: bring an umbrella");
    let lead = agent(&model, read);
    let state = paused(&lead).await;
    assert_eq!(
        reads.load(Ordering::SeqCst),
        1,
        "the server's tool ran before the pause"
    );
    let run = lead
        .resume(state)
        .output("c2", ToolOutput::text(r#"{"city": "Paris"}"#))
        .run()
        .await
        .unwrap();
    let (events, result) = collect(run).await;
    assert_eq!(result.exit(), ExitReason::Completed, "{events:?}");
    assert_eq!(result.text, "You are in Paris.");
    assert_eq!(reads.load(Ordering::SeqCst), 1, "nothing ran twice");
    // The model reads both results, in its order, the client's as given.
    let requests = model.requests();
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
    assert_eq!(
        answered,
        [
            ("c1".to_owned(), false, "notes: bring an umbrella".to_owned()),
            ("c2".to_owned(), false, r#"{"city": "Paris"}"#.to_owned())
        ]
    );
    // The client's output is told as the call's result.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolResult { call_id, is_error: false, .. } if call_id == "c2"))
    );
}

#[tokio::test]
async fn a_client_tool_call_is_answered_by_its_output_or_a_denial_never_an_approval() {
    let model = ScriptedModel::new(vec![two_calls(), ScriptedStep::text("Fine.")]);
    let (read, _) = counted_tool("read", "notes");
    let lead = agent(&model, read);
    let state = paused(&lead).await;
    // Nothing here can run it: approving it is refused, naming the call.
    let refused = lead
        .resume(state.clone())
        .approve("c2")
        .run()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&refused, ResumeError::Mismatched { call_id, .. } if call_id == "c2"),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("its output"), "{refused}");
    // A denial is the client declining: the model reads why.
    let run = lead
        .resume(state)
        .deny("c2", "the user would not share it")
        .run()
        .await
        .unwrap();
    let (_, result) = collect(run).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let requests = model.requests();
    let last = requests[1].messages.last().unwrap();
    let ContentPart::ToolResult(denied) = &last.content[1] else {
        panic!("{last:?}")
    };
    assert!(
        denied.is_error && denied.text().contains("would not share it"),
        "{denied:?}"
    );
}

#[tokio::test]
async fn with_deferred_approvals_a_client_tool_asks_no_approval_of_its_own() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "get_location", "{}")]),
        ScriptedStep::text("Paris it is."),
    ]);
    let lead = Agent::builder(Arc::new(model.clone()))
        .tool(location())
        .approvals(Approvals::defer())
        .build();
    let (events, result) = collect(lead.run("Where am I?")).await;
    let state = result.state().unwrap();
    assert_eq!(state.pending()[0].kind, PendingKind::ClientTool);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::ApprovalRequested { .. })),
        "{events:?}"
    );
    let run = lead
        .resume(state.clone())
        .output("c1", ToolOutput::error("location permission denied"))
        .run()
        .await
        .unwrap();
    let (_, result) = collect(run).await;
    assert_eq!(result.text, "Paris it is.");
    let requests = model.requests();
    let ContentPart::ToolResult(given) = &requests[1].messages.last().unwrap().content[0] else {
        panic!()
    };
    assert!(
        given.is_error && given.text() == "location permission denied",
        "{given:?}"
    );
}

#[tokio::test]
async fn a_client_tool_named_like_one_of_the_agents_own_is_left_out() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "read", "{}")]),
        ScriptedStep::text("Read."),
    ]);
    let (read, reads) = counted_tool("read", "notes");
    let declared = [
        ToolDefinition::new(
            "read",
            "The client's read.",
            serde_json::json!({"type": "object"}),
        ),
        location().definition().clone(),
    ];
    let lead = Agent::builder(Arc::new(model.clone()))
        .tool(read)
        .build()
        .to_builder()
        .client_tools(declared)
        .build();
    let catalog = lead.tools().catalog().await;
    assert_eq!(catalog.get("read").unwrap().source, "app");
    assert_eq!(
        catalog.get("get_location").unwrap().source,
        loopwright_core::agent::CLIENT_SOURCE
    );
    let (_, result) = collect(lead.run("Read the notes.")).await;
    assert_eq!(result.exit(), ExitReason::Completed, "the agent's own read ran");
    assert_eq!(reads.load(Ordering::SeqCst), 1);
}
