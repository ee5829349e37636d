//! Elicitation through the run (scripted model, real servers): a server's
//! question becomes an `input_requested` event whose responder answers it,
//! over 2026-07-28 (the Python SDK 2.x server's multi-round-trip
//! `input_required` result) and over 2025-11-25 (server-everything's
//! `elicitation/create`, form and URL mode); the schema's defaults are
//! filled in, declining is answered as declining, and an unanswered
//! question times out to decline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::{
    Agent, AgentEvent, AgentResult, ContentPart, ToolSet, user_input::UserInputAnswer,
    user_input::UserInputKind,
};
use loopwright_mcp::{McpClientOptions, McpServerConfig, McpToolSource};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

/// Run one scripted call of `tool`, answering every question with `answer`
/// (`None`: hold the question unanswered); the events and the call's result
/// text.
async fn run_call(
    source: McpToolSource,
    tool: &str,
    args: &str,
    answer: impl Fn(&AgentEvent) -> Option<UserInputAnswer>,
) -> (Vec<AgentEvent>, String) {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", tool, args)]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(ToolSet::builder().source(source).build())
        .tool_timeout(Duration::from_secs(30))
        .build();
    let mut run = agent.run("book it");
    let mut held = Vec::new();
    let events = tokio::time::timeout(HANG_GUARD, async {
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            if let AgentEvent::InputRequested { responder, .. } = &event {
                match answer(&event) {
                    Some(a) => assert!(responder.respond(a)),
                    None => held.push(responder.clone()),
                }
            }
            events.push(event);
        }
        events
    })
    .await
    .expect("run hung");
    let result: AgentResult = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
    let text = result
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|p| match p {
            ContentPart::ToolResult(r) => Some(r.text()),
            _ => None,
        })
        .unwrap();
    (events, text)
}

fn python_elicit_server() -> McpServerConfig {
    McpServerConfig::stdio("py", python("mcp2"))
        .args([py_path("mcp2", "elicit_server.py"), "stdio".into()])
        .connect_timeout(PYTHON_START)
}

fn resolved(events: &[AgentEvent]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::InputResolved { action, reason, .. } => Some((action.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_2026_server_asks_through_the_run_and_gets_the_answer_or_a_decline() {
    let source = connect(python_elicit_server()).await;
    assert_eq!(source.protocol_version().as_deref(), Some("2026-07-28"));
    let (events, text) = run_call(source.clone(), "py__book_table", "{}", |event| {
        let AgentEvent::InputRequested { request, .. } = event else {
            unreachable!()
        };
        assert_eq!(request.source, "py");
        assert_eq!(request.message, "Who is the table for?");
        let UserInputKind::Form { schema } = &request.kind else {
            panic!("{request:?}")
        };
        assert_eq!(schema["properties"]["party"]["default"], 2);
        Some(UserInputAnswer::Accept {
            content: Some(json!({"name": "Grace"})),
        })
    })
    .await;
    assert_eq!(text, "booked for Grace, party of 2 (2026-07-28)");
    assert_eq!(resolved(&events), [("accept".to_string(), None)]);

    let (events, text) = run_call(source.clone(), "py__book_table", "{}", |_| {
        Some(UserInputAnswer::Decline)
    })
    .await;
    assert_eq!(text, "not booked: decline (2026-07-28)");
    assert_eq!(resolved(&events), [("decline".to_string(), None)]);
    source.close().await;
}

#[tokio::test]
async fn an_unanswered_question_times_out_to_decline() {
    let options = McpClientOptions::default().with_elicitation_timeout(Duration::from_millis(300));
    let source = McpToolSource::connect_with(python_elicit_server(), options)
        .await
        .unwrap();
    let (events, text) = run_call(source.clone(), "py__book_table", "{}", |_| None).await;
    assert_eq!(text, "not booked: decline (2026-07-28)");
    assert_eq!(
        resolved(&events),
        [("decline".to_string(), Some("timeout".to_string()))]
    );
    source.close().await;
}

#[tokio::test]
async fn a_2025_server_asks_in_form_and_url_mode_and_defaults_are_filled_in() {
    let source = connect(everything_stdio()).await;
    assert_eq!(source.protocol_version().as_deref(), Some("2025-11-25"));
    // The person gives the required fields only; the schema's defaults
    // (firstLine, integer, the enums...) are the library's to fill in.
    let (_, text) = run_call(
        source.clone(),
        "everything__trigger-elicitation-request",
        "{}",
        |_| {
            Some(UserInputAnswer::Accept {
                content: Some(json!({"name": "Ada", "check": true, "email": "ada@example.com"})),
            })
        },
    )
    .await;
    assert!(text.contains("It was a dark and stormy night."), "{text}");
    assert!(
        text.contains("\"integer\": 42") || text.contains("\"integer\":42"),
        "{text}"
    );
    let args = r#"{"url": "https://example.com/consent", "message": "Consent, please"}"#;
    let (events, text) = run_call(
        source.clone(),
        "everything__trigger-url-elicitation",
        args,
        |event| {
            let AgentEvent::InputRequested { request, .. } = event else {
                unreachable!()
            };
            assert!(
                matches!(&request.kind, UserInputKind::Url { url, .. } if url.starts_with("http")),
                "{request:?}"
            );
            Some(UserInputAnswer::Cancel)
        },
    )
    .await;
    assert_eq!(resolved(&events), [("cancel".to_string(), None)]);
    assert!(text.to_lowercase().contains("cancel"), "{text}");
    source.close().await;
}
