//! The Tasks extension through the run (scripted model, the in-repo server
//! with `--modern`, whose tool `job` becomes a task): the task is followed
//! to its result with its status messages as progress events, a question
//! it asks on the way is asked through the run (defaults filled in), and a
//! task past its deadline is cancelled on the server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent, ContentPart, ToolSet, user_input::UserInputAnswer};
use loopwright_mcp::McpToolSource;
use loopwright_testing::{ScriptedModel, ScriptedStep};

/// One scripted call of `job` with `args`: the events and the result (is_error, text).
async fn run_job(source: McpToolSource, args: &str) -> (Vec<AgentEvent>, bool, String) {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "jobs__job", args)]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(ToolSet::builder().source(source).build())
        .tool_timeout(Duration::from_secs(30))
        .build();
    let mut run = agent.run("run the job");
    let events = tokio::time::timeout(HANG_GUARD, async {
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            if let AgentEvent::InputRequested { responder, .. } = &event {
                responder.respond(UserInputAnswer::Accept { content: None });
            }
            events.push(event);
        }
        events
    })
    .await
    .expect("run hung");
    let result = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
    let (is_error, text) = result
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .find_map(|p| match p {
            ContentPart::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .unwrap();
    (events, is_error, text)
}

fn jobs_server(log: &std::path::Path) -> loopwright_mcp::McpServerConfig {
    test_server("jobs")
        .arg("--modern")
        .env("TEST_SERVER_LOG", log.to_string_lossy())
}

#[tokio::test]
async fn a_task_is_followed_to_its_result_with_its_status_as_progress() {
    let log = temp_log("tasks-ok");
    let source = connect(jobs_server(&log)).await;
    assert_eq!(source.protocol_version().as_deref(), Some("2026-07-28"));
    let (events, is_error, text) = run_job(source.clone(), r#"{"steps": 3, "ms": 60}"#).await;
    assert_eq!((is_error, text.as_str()), (false, "done after 3 steps"));
    let progress: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { message: Some(m), .. } => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert!(progress.iter().any(|m| m.starts_with("step ")), "{progress:?}");
    source.close().await;
}

#[tokio::test]
async fn a_task_asks_through_the_run_and_gets_the_default() {
    let log = temp_log("tasks-ask");
    let source = connect(jobs_server(&log)).await;
    let (events, is_error, text) = run_job(source.clone(), r#"{"steps": 1, "ms": 10, "ask": true}"#).await;
    assert_eq!(
        (is_error, text.as_str()),
        (false, r#"done after 1 steps, color "blue""#)
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::InputRequested { .. }))
    );
    source.close().await;
}

#[tokio::test]
async fn a_task_past_its_deadline_is_cancelled_on_the_server() {
    let log = temp_log("tasks-late");
    let config = jobs_server(&log).task_timeout(Duration::from_millis(300));
    let source = connect(config).await;
    let (_, is_error, text) = run_job(source.clone(), r#"{"steps": 1000, "ms": 50}"#).await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("did not finish") && text.contains("cancelled"),
        "{text}"
    );
    assert!(
        wait_for_line(&log, "task cancelled task-").await,
        "no tasks/cancel"
    );
    source.close().await;
}
