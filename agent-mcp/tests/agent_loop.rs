//! MCP sources driven through loopwright-core's loop (scripted model, real
//! servers): namespaced names, original names on the wire, progress events,
//! a crashed server, the agent's tool timeout, a run's idempotency keys in
//! the request `_meta`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent, AgentResult, ContentPart, ExitReason, ToolSet};
use loopwright_mcp::McpToolSource;
use loopwright_testing::{ScriptedModel, ScriptedStep};

/// Run a prompt to the end, collecting the events.
pub async fn run_agent(
    source: McpToolSource,
    steps: Vec<ScriptedStep>,
    timeout: Duration,
) -> (Vec<AgentEvent>, AgentResult) {
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model))
        .tools(ToolSet::builder().source(source).build())
        .tool_timeout(timeout)
        .build();
    let mut run = agent.run("use the tools");
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
    (events, result)
}

/// (is_error, text) of every tool result, by call id order of appearance.
pub fn tool_results(result: &AgentResult) -> Vec<(String, bool, String)> {
    result
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some((r.call_id.clone(), r.is_error, r.text())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn namespaced_calls_reach_the_server_under_their_original_names() {
    let source = connect(test_server("test")).await;
    let (events, result) = run_agent(
        source.clone(),
        vec![
            ScriptedStep::tool_calls(&[
                ("c1", "test__echo", r#"{"text": "hello"}"#),
                ("c2", "test__add", r#"{"a": 1, "b": 2}"#),
                ("c3", "test__progress", r#"{"steps": 2}"#),
            ]),
            ScriptedStep::text("done"),
        ],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let tools = match &events[0] {
        AgentEvent::RunStarted { tools, .. } => tools.clone(),
        other => panic!("first event {other:?}"),
    };
    assert!(tools.contains(&"test__echo".to_string()), "{tools:?}");
    assert_eq!(
        tool_results(&result),
        [
            ("c1".to_string(), false, "hello".to_string()),
            ("c2".to_string(), false, "3".to_string()),
            ("c3".to_string(), false, "did 2 steps".to_string()),
        ]
    );
    let originals: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall {
                source,
                original_name,
                ..
            } => Some((source.clone(), original_name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(originals[0], (Some("test".into()), Some("echo".into())));
    let progress: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress {
                call_id,
                progress,
                total,
                ..
            } => Some((call_id.clone(), *progress, *total)),
            _ => None,
        })
        .collect();
    assert_eq!(
        progress,
        [
            ("c3".to_string(), 1.0, Some(2.0)),
            ("c3".to_string(), 2.0, Some(2.0))
        ]
    );
    source.close().await;
}

#[tokio::test]
async fn a_crashed_server_gives_an_error_result_naming_it_and_the_run_goes_on() {
    let source = connect(test_server("fragile")).await;
    let (_, result) = run_agent(
        source.clone(),
        vec![
            ScriptedStep::tool_calls(&[("c1", "fragile__crash", "{}")]),
            ScriptedStep::tool_calls(&[("c2", "fragile__echo", r#"{"text": "again"}"#)]),
            ScriptedStep::text("done"),
        ],
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let results = tool_results(&result);
    assert!(results[0].1, "crash must be an error result");
    assert!(results[0].2.contains("mcp server fragile"), "{}", results[0].2);
    assert_eq!(results[1], ("c2".to_string(), false, "again".to_string()));
    source.close().await;
}

#[tokio::test]
async fn the_agents_tool_timeout_cancels_the_call_on_the_server() {
    let log = temp_log("agent-timeout");
    let source = connect(test_server("test").env("TEST_SERVER_LOG", log.to_string_lossy())).await;
    let (_, result) = run_agent(
        source.clone(),
        vec![
            ScriptedStep::tool_calls(&[("c1", "test__slow", r#"{"ms": 600000}"#)]),
            ScriptedStep::text("done"),
        ],
        Duration::from_millis(300),
    )
    .await;
    let results = tool_results(&result);
    assert!(results[0].1, "a timed-out call is an error result");
    assert!(
        wait_for_line(&log, "cancelled slow").await,
        "server never saw notifications/cancelled"
    );
    source.close().await;
}

#[tokio::test]
async fn a_server_call_timeout_replaces_the_agents_tool_timeout() {
    // Longer than the agent's timeout: the call may finish.
    let patient = connect(test_server("patient").call_timeout(Duration::from_secs(60))).await;
    let (_, result) = run_agent(
        patient.clone(),
        vec![
            ScriptedStep::tool_calls(&[("c1", "patient__slow", r#"{"ms": 800}"#)]),
            ScriptedStep::text("done"),
        ],
        Duration::from_millis(100),
    )
    .await;
    assert_eq!(
        tool_results(&result)[0],
        ("c1".to_string(), false, "slept 800 ms".to_string())
    );
    patient.close().await;

    // Shorter than the agent's timeout: our own timeout answers, naming the server.
    let hasty = connect(test_server("hasty").call_timeout(Duration::from_millis(200))).await;
    let (_, result) = run_agent(
        hasty.clone(),
        vec![
            ScriptedStep::tool_calls(&[("c1", "hasty__slow", r#"{"ms": 600000}"#)]),
            ScriptedStep::text("done"),
        ],
        Duration::from_secs(60),
    )
    .await;
    let (_, is_error, text) = &tool_results(&result)[0];
    assert!(is_error);
    assert!(
        text.contains("mcp server hasty") && text.contains("timed out"),
        "{text}"
    );
    hasty.close().await;
}

#[tokio::test]
async fn instructions_reach_the_system_prompt_and_a_changed_list_the_next_step() {
    let source = connect(test_server("test")).await;
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "test__add_tool", "{}")]),
        ScriptedStep::tool_calls(&[("c2", "test__extra", "{}")]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(ToolSet::builder().source(source.clone()).build())
        .build();
    let result = tokio::time::timeout(HANG_GUARD, agent.run("go"))
        .await
        .expect("run hung")
        .expect("result");
    assert_eq!(result.exit(), ExitReason::Completed);
    let results = tool_results(&result);
    assert_eq!(results[1], ("c2".to_string(), false, "extra ran".to_string()));

    let requests = model.requests();
    let system = requests[0].system.clone().unwrap_or_default();
    assert!(system.contains("## TOOLS' INSTRUCTIONS"), "{system}");
    assert!(
        system.contains("## TOOL test INSTRUCTIONS\n\nTest server: call echo to check the connection."),
        "{system}"
    );
    assert!(
        !system.contains("properties"),
        "schemas must not be pasted into the prompt"
    );
    let names = |i: usize| {
        requests[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect::<Vec<_>>()
    };
    assert!(!names(0).contains(&"test__extra".to_string()));
    assert!(names(1).contains(&"test__extra".to_string()), "{:?}", names(1));
    source.close().await;
}

#[tokio::test]
async fn mcp_connected_reports_who_is_in_and_the_run_goes_on_without_the_failed() {
    let configs = vec![
        test_server("good"),
        test_server("locked").env("TOKEN", "${AGENT_MCP_TEST_SURELY_UNSET_VAR}"),
        test_server("stuck")
            .args(["--slow-init", "600000"])
            .connect_timeout(Duration::from_millis(300)),
    ];
    let connected = loopwright_mcp::connect_all(configs).await;
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "good__echo", r#"{"text": "in"}"#)]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(connected.add_to(ToolSet::builder()).build())
        .build();
    let mut run = agent.run("go");
    let mut events = Vec::new();
    tokio::time::timeout(HANG_GUARD, async {
        while let Some(e) = run.next().await {
            events.push(e);
        }
    })
    .await
    .expect("run hung");
    let result = run.await.unwrap();
    assert_eq!(result.exit(), ExitReason::Completed);
    assert!(matches!(events[0], AgentEvent::RunStarted { .. }));
    let AgentEvent::McpConnected { servers, failed } = &events[1] else {
        panic!("second event is not mcp_connected: {:?}", events[1]);
    };
    assert_eq!(servers, &["good"]);
    let mut failed_names: Vec<_> = failed.iter().map(|f| f.server.as_str()).collect();
    failed_names.sort();
    assert_eq!(failed_names, ["locked", "stuck"]);
    let locked = failed.iter().find(|f| f.server == "locked").unwrap();
    assert!(
        locked.error.contains("AGENT_MCP_TEST_SURELY_UNSET_VAR"),
        "{}",
        locked.error
    );
    // Serialised as the issue names it.
    let json = serde_json::to_value(&events[1]).unwrap();
    assert_eq!(json["type"], "mcp_connected");
    assert_eq!(json["failed"].as_array().unwrap().len(), 2);
    // Each failure is also a warning.
    let warnings = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Warning { message } if message.contains("is not connected")))
        .count();
    assert_eq!(warnings, 2);
    assert_eq!(
        tool_results(&result),
        [("c1".to_string(), false, "in".to_string())]
    );
    connected.close_all().await;
}

#[tokio::test]
async fn a_run_with_an_id_sends_each_calls_idempotency_key_in_meta() {
    let source = connect(test_server("test")).await;
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("call_7", "test__meta", "{}")]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model))
        .tools(ToolSet::builder().source(source.clone()).build())
        .durable(loopwright_core::durable::DurableRun::new("run-3"))
        .build();
    let result = agent
        .run("use the tools")
        .await
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    let results = tool_results(&result);
    assert_eq!(results.len(), 1, "{results:?}");
    let meta: serde_json::Value = serde_json::from_str(&results[0].2).unwrap();
    assert_eq!(
        meta[loopwright_core::durable::MCP_META_IDEMPOTENCY_KEY],
        "run-3/1/call_7",
        "{meta}"
    );

    // A run without an id sends none.
    let steps = vec![
        ScriptedStep::tool_calls(&[("call_7", "test__meta", "{}")]),
        ScriptedStep::text("done"),
    ];
    let (_, result) = run_agent(source.clone(), steps, Duration::from_secs(10)).await;
    let meta = &tool_results(&result)[0].2;
    assert!(
        !meta.contains(loopwright_core::durable::MCP_META_IDEMPOTENCY_KEY),
        "{meta}"
    );
    source.close().await;
}
