//! Pre-flight plans: proposed by one model call without tools, approved,
//! edited or rejected through an approver or the event's responder, and
//! what the run does with each answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{HANG_GUARD, collect, counted_tool, plan_rejection, run, tools};
use futures::StreamExt;
use loopwright_core::preflight::{Plan, PlanDecision, PlanStep, Preflight, Risk};
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, ExitReason, Role, RunError, ToolChoice, model::ModelCapabilities,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

const PLAN: &str = r#"{"steps": [
    {"description": "Look up the weather", "tool": "weather", "risk": "low"},
    {"description": "Delete the cache", "tool": "wipe", "risk": "high"}
], "warnings": ["Deleting the cache cannot be undone."]}"#;

fn approve_all() -> Preflight {
    Preflight::with_approver(|_: &Plan| PlanDecision::Approve)
}

/// A `plan_resolved` event's fields: approved, edited, plan, reason.
type Resolved<'a> = (bool, bool, &'a Plan, Option<&'a String>);

fn plan_events(events: &[AgentEvent]) -> (Vec<&Plan>, Vec<Resolved<'_>>) {
    let proposed = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PlanProposed { plan, .. } => Some(plan),
            _ => None,
        })
        .collect();
    let resolved = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::PlanResolved {
                approved,
                edited,
                plan,
                reason,
            } => Some((*approved, *edited, plan, reason.as_ref())),
            _ => None,
        })
        .collect();
    (proposed, resolved)
}

#[tokio::test]
async fn an_approved_plan_joins_the_conversation_before_the_first_tool_runs() {
    let (weather, calls) = counted_tool("weather", "sunny");
    let (events, result, model) = run(
        vec![
            ScriptedStep::text(PLAN),
            ScriptedStep::tool_calls(&[("c1", "weather", "{}")]),
            ScriptedStep::text("It is sunny."),
        ],
        tools(vec![weather]),
        |b: AgentBuilder| b.preflight(approve_all()),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    // The plan call: no tools declared, told to plan (with the tool names),
    // its text not streamed to the application.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].tools.is_empty());
    assert_eq!(requests[0].tool_choice, ToolChoice::None);
    let instruction = requests[0].messages.last().unwrap().text();
    assert!(instruction.starts_with(loopwright_core::preflight::PLAN_INSTRUCTION));
    assert!(
        instruction.contains("- weather: test tool weather"),
        "{instruction}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::TextDelta { text } if text.contains("steps")))
    );

    // The event carries the plan; it was resolved before any tool call.
    let (proposed, resolved) = plan_events(&events);
    assert_eq!(proposed.len(), 1);
    assert_eq!(proposed[0].steps.len(), 2);
    assert_eq!(proposed[0].steps[1].risk, Risk::High);
    assert_eq!(proposed[0].warnings, ["Deleting the cache cannot be undone."]);
    assert_eq!(resolved, [(true, false, proposed[0], None)]);
    let at = |pred: &dyn Fn(&AgentEvent) -> bool| events.iter().position(pred).unwrap();
    assert!(
        at(&|e| matches!(e, AgentEvent::PlanResolved { .. }))
            < at(&|e| matches!(e, AgentEvent::ToolCall { .. }))
    );

    // The next request holds the prompt, then the approved plan; the run's
    // messages keep it (a conversation's next turn sees it too).
    let second = &requests[1].messages;
    assert_eq!(second.len(), 2);
    assert_eq!(second[1].role, Role::User);
    assert!(second[1].text().starts_with("The user approved this plan."));
    assert!(
        second[1]
            .text()
            .contains("2. Delete the cache (tool: wipe, risk: high)")
    );
    assert_eq!(result.messages[0].text(), second[1].text());
    // The plan call's usage counts; it is not a step.
    assert_eq!(result.steps.len() as u32, 2);
    assert_eq!(result.usage.input_tokens, Some(30));
}

#[tokio::test]
async fn an_edited_plan_is_the_one_the_model_is_told_to_follow() {
    let (weather, _) = counted_tool("weather", "sunny");
    let edited = Plan::new(vec![
        PlanStep::new("Look up the weather", Risk::Low).tool("weather"),
    ]);
    let keep = edited.clone();
    let (events, result, model) = run(
        vec![ScriptedStep::text(PLAN), ScriptedStep::text("Done.")],
        tools(vec![weather]),
        |b: AgentBuilder| {
            b.preflight(Preflight::with_approver(move |_: &Plan| PlanDecision::Edit {
                plan: keep.clone(),
            }))
        },
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let (_, resolved) = plan_events(&events);
    assert_eq!(resolved, [(true, true, &edited, None)]);
    let told = model.requests()[1].messages[1].text();
    assert!(told.starts_with("The user edited your plan"), "{told}");
    assert!(
        told.contains("1. Look up the weather") && !told.contains("Delete"),
        "{told}"
    );
}

#[tokio::test]
async fn a_rejected_plan_ends_the_run_after_one_model_call_and_no_tool_call() {
    let (wipe, calls) = counted_tool("wipe", "wiped");
    let model = ScriptedModel::new(vec![
        ScriptedStep::text(PLAN),
        ScriptedStep::tool_calls(&[("c1", "wipe", "{}")]),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(tools(vec![wipe]))
        .preflight(Preflight::with_approver(|plan: &Plan| {
            if plan.highest_risk() == Some(Risk::High) {
                PlanDecision::reject("no high-risk steps")
            } else {
                PlanDecision::Approve
            }
        }))
        .build();
    let (events, result) = collect(agent.run("clean up")).await;
    assert_eq!(result.exit(), ExitReason::PlanRejected);
    assert_eq!(plan_rejection(&result), Some("no high-risk steps"));
    assert_eq!(model.requests().len(), 1);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(result.messages.is_empty());
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ToolCall { .. })));
    let (_, resolved) = plan_events(&events);
    assert_eq!(resolved.len(), 1);
    assert!(!resolved[0].0);
    assert!(
        matches!(events.last(), Some(AgentEvent::Finished { exit: ExitReason::PlanRejected, error: Some(e), .. })
        if e == "the plan was rejected: no high-risk steps")
    );

    // Awaited, it is a typed error carrying the reason.
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN)]);
    let agent = Agent::builder(Arc::new(model))
        .preflight(Preflight::with_approver(|_: &Plan| {
            PlanDecision::reject("not today")
        }))
        .build();
    match agent.run("clean up").await {
        Err(RunError::PlanRejected { reason, result }) => {
            assert_eq!(reason, "not today");
            assert_eq!(result.exit(), ExitReason::PlanRejected);
        }
        other => panic!("expected PlanRejected, got {other:?}"),
    }
}

#[tokio::test]
async fn the_event_responder_answers_when_there_is_no_approver() {
    let (weather, calls) = counted_tool("weather", "sunny");
    let model = ScriptedModel::new(vec![
        ScriptedStep::text(PLAN),
        ScriptedStep::tool_calls(&[("c1", "weather", "{}")]),
        ScriptedStep::text("Sunny."),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(tools(vec![weather]))
        .preflight(Preflight::via_events())
        .build();
    let mut run = agent.run("weather?");
    let mut saw = false;
    tokio::time::timeout(HANG_GUARD, async {
        while let Some(event) = run.next().await {
            if let AgentEvent::PlanProposed { responder, .. } = event {
                saw = true;
                assert!(responder.respond(PlanDecision::Approve));
            }
        }
    })
    .await
    .expect("run hung");
    assert!(saw);
    let result = run.await.unwrap();
    assert_eq!(result.text, "Sunny.");
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn no_answer_is_a_rejection_at_the_timeout_or_at_once_when_nobody_can_answer() {
    // Events read but the plan left unanswered: rejected at the timeout.
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN)]);
    let agent = Agent::builder(Arc::new(model))
        .preflight(Preflight::via_events().timeout(Duration::from_secs(30)))
        .build();
    let mut run = agent.run("x");
    let mut held = Vec::new();
    while let Some(event) = run.next().await {
        held.push(event); // keeps the responder alive, unanswered
    }
    let result = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
    assert_eq!(result.exit(), ExitReason::PlanRejected);
    assert_eq!(plan_rejection(&result), Some("no answer within 30s"));

    // Awaited without reading events and no approver: nobody can answer.
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN)]);
    let agent = Agent::builder(Arc::new(model))
        .preflight(Preflight::via_events())
        .build();
    let started = tokio::time::Instant::now();
    let Err(RunError::PlanRejected { reason, .. }) = agent.run("x").await else {
        panic!("expected a rejection");
    };
    assert!(reason.starts_with("nobody can answer"), "{reason}");
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "rejected at once, not at the timeout"
    );
}

#[tokio::test]
async fn a_plan_that_never_matches_the_schema_is_rejected_after_the_retries() {
    let (weather, calls) = counted_tool("weather", "sunny");
    let (_, result, model) = run(
        vec![
            ScriptedStep::text("I will check the weather."),
            ScriptedStep::text(r#"{"steps": [{"description": "x", "risk": "extreme"}]}"#),
        ],
        tools(vec![weather]),
        |b: AgentBuilder| b.preflight(approve_all()).max_output_retries(1),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::PlanRejected);
    let reason = plan_rejection(&result).unwrap();
    assert!(
        reason.contains("did not match the plan schema") && reason.contains("extreme"),
        "{reason}"
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The retry told the model what was wrong with its first answer.
    let retry = model.requests()[1].messages.last().unwrap().text();
    assert!(
        retry.starts_with("Your plan does not match the required JSON schema"),
        "{retry}"
    );
}

#[tokio::test]
async fn a_model_that_can_asks_for_the_plan_natively() {
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN), ScriptedStep::text("ok")])
        .with_capabilities(ModelCapabilities::default().structured_output(true, true));
    let agent = Agent::builder(Arc::new(model.clone()))
        .preflight(approve_all())
        .build();
    let _ = agent.run("x").await.unwrap();
    let format = model.requests()[0]
        .response_format
        .clone()
        .expect("a response format");
    let json = serde_json::to_value(&format).unwrap();
    assert!(json.to_string().contains("\"risk\""), "{json}");
    assert!(model.requests()[1].response_format.is_none());
}

#[tokio::test]
async fn cancelling_while_the_plan_waits_ends_the_run_cancelled() {
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN)]);
    let agent = Agent::builder(Arc::new(model))
        .preflight(Preflight::via_events())
        .build();
    let mut run = agent.run("x");
    let mut held = Vec::new();
    let result = tokio::time::timeout(HANG_GUARD, async {
        while let Some(event) = run.next().await {
            if matches!(event, AgentEvent::PlanProposed { .. }) {
                run.cancel();
            }
            held.push(event);
        }
        run.await.or_else(loopwright_core::RunError::into_result).unwrap()
    })
    .await
    .expect("run hung");
    assert_eq!(result.exit(), ExitReason::Cancelled);
}

#[tokio::test]
async fn a_history_with_tool_calls_gets_its_tools_declared_but_withheld_on_the_plan_call() {
    // A later turn: the history holds a call and its result, which some
    // providers refuse without the tools declared.
    let (weather, _) = counted_tool("weather", "sunny");
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN), ScriptedStep::text("Still sunny.")]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(tools(vec![weather]))
        .preflight(approve_all())
        .build();
    let call = loopwright_core::ToolCall::new("c0", "weather", serde_json::json!({}));
    let history = vec![
        loopwright_core::Message::user("weather?"),
        loopwright_core::Message::new(
            Role::Assistant,
            vec![loopwright_core::ContentPart::ToolCall(call)],
        ),
        loopwright_core::Message::new(
            Role::Tool,
            vec![loopwright_core::ContentPart::ToolResult(
                loopwright_core::ToolResult {
                    call_id: "c0".into(),
                    parts: vec![loopwright_core::ToolOutputPart::text("sunny")],
                    is_error: false,
                },
            )],
        ),
        loopwright_core::Message::user("and now?"),
    ];
    let result = agent.run(history).await.unwrap();
    assert_eq!(result.text, "Still sunny.");
    let plan_call = &model.requests()[0];
    assert_eq!(common::tool_names(plan_call), ["weather"]);
    assert_eq!(plan_call.tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn a_panicking_approver_rejects_the_plan() {
    let model = ScriptedModel::new(vec![ScriptedStep::text(PLAN)]);
    let agent = Agent::builder(Arc::new(model))
        .preflight(Preflight::with_approver(|_: &Plan| -> PlanDecision {
            panic!("approver bug")
        }))
        .build();
    let Err(RunError::PlanRejected { reason, .. }) = agent.run("x").await else {
        panic!("expected a rejection");
    };
    assert_eq!(reason, "the plan approver panicked");
}
