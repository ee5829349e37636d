//! The agent loop, driven by the scripted model: concurrency, ordering, every
//! way a call can fail, truncation, the step limit and cancellation. Each test
//! checks the history invariant (one result per call, in call order).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, ExitReason, ModelError, Role, ToolError, ToolOutput, Usage,
    model::FinishReason, model::ModelEvent,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;
use tokio::sync::{Barrier, oneshot};

#[tokio::test]
async fn eight_calls_are_all_in_flight_at_once() {
    // Each call waits at a barrier for 8 parties: the step can only finish if
    // all 8 calls run at the same time.
    let barrier = Arc::new(Barrier::new(8));
    let b = barrier.clone();
    let tool = TestTool::new("wait", object_schema(), move |_, _| {
        let b = b.clone();
        async move {
            tokio::time::timeout(HANG_GUARD, b.wait())
                .await
                .map_err(|_| ToolError::execution("barrier"))?;
            Ok(ToolOutput::text("through"))
        }
    });
    let calls: Vec<(String, &str, &str)> = (0..8).map(|i| (format!("c{i}"), "wait", "{}")).collect();
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(a, b, c)| (a.as_str(), *b, *c)).collect();
    let (_, result, _) = run(
        vec![ScriptedStep::tool_calls(&calls), ScriptedStep::text("done")],
        tools(vec![tool]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let results = results_by_id(&result);
    assert_eq!(results.len(), 8);
    assert!(results.values().all(|(err, text)| !err && text == "through"));
}

#[tokio::test]
async fn concurrency_is_bounded() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (f, p) = (in_flight.clone(), peak.clone());
    let tool = TestTool::new("work", object_schema(), move |_, _| {
        let (f, p) = (f.clone(), p.clone());
        async move {
            let now = f.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            f.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::text("ok"))
        }
    });
    let ids: Vec<String> = (0..6).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids.iter().map(|id| (id.as_str(), "work", "{}")).collect();
    let (_, result, _) = run(
        vec![ScriptedStep::tool_calls(&calls), ScriptedStep::text("done")],
        tools(vec![tool]),
        |b: AgentBuilder| b.tool_concurrency(2),
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(peak.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn results_keep_call_order_while_events_follow_completion() {
    // c1 waits for c2 to finish first, so completion order is c2, c1.
    let (tx, rx) = oneshot::channel::<()>();
    let rx = Arc::new(tokio::sync::Mutex::new(Some(rx)));
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    let tool = TestTool::new("step", object_schema(), move |input, _| {
        let (rx, tx) = (rx.clone(), tx.clone());
        async move {
            if input["first"] == true {
                let r = rx.lock().await.take().unwrap();
                r.await.unwrap();
                Ok(ToolOutput::text("slow"))
            } else {
                tx.lock().unwrap().take().unwrap().send(()).unwrap();
                Ok(ToolOutput::text("fast"))
            }
        }
    });
    let (events, result, model) = run_calls(
        &[
            ("c1", "step", r#"{"first":true}"#),
            ("c2", "step", r#"{"first":false}"#),
        ],
        vec![tool],
    )
    .await;
    let done: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(done, ["c2", "c1"]);
    let tool_msg = result.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let order: Vec<String> = tool_msg
        .content
        .iter()
        .map(|p| match p {
            loopwright_core::ContentPart::ToolResult(r) => format!("{}={}", r.call_id, r.text()),
            _ => String::new(),
        })
        .collect();
    assert_eq!(order, ["c1=slow", "c2=fast"]);
    // The second request carried the results back to the model.
    assert_eq!(model.requests()[1].messages.len(), 3);
}

#[tokio::test]
async fn a_timeout_becomes_an_error_result_and_the_tool_sees_cancellation() {
    let (seen_tx, seen_rx) = oneshot::channel::<()>();
    let seen_tx = Arc::new(std::sync::Mutex::new(Some(seen_tx)));
    let tool = TestTool::new("hang", object_schema(), move |_, ctx| {
        let seen_tx = seen_tx.clone();
        async move {
            // Report from outside the call's future, which is dropped on timeout.
            let token = ctx.cancellation().clone();
            tokio::spawn(async move {
                token.cancelled().await;
                if let Some(tx) = seen_tx.lock().unwrap().take() {
                    let _ = tx.send(());
                }
            });
            std::future::pending::<()>().await;
            Ok(ToolOutput::text("never"))
        }
    });
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "hang", "{}")]),
            ScriptedStep::text("recovered"),
        ],
        tools(vec![tool]),
        |b: AgentBuilder| b.tool_timeout(Duration::from_millis(50)),
    )
    .await;
    let (is_error, text) = &results_by_id(&result)["c1"];
    assert!(is_error);
    assert_eq!(text, "tool execution timed out after 50 ms");
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(result.text, "recovered");
    tokio::time::timeout(HANG_GUARD, seen_rx).await.unwrap().unwrap();
}

#[tokio::test]
async fn schema_failure_is_reported_and_the_tool_is_not_called() {
    let called = Arc::new(AtomicUsize::new(0));
    let c = called.clone();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let tool = TestTool::new("count", schema, move |_, _| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::text("ok")) }
    });
    let (_, result, _) = run_calls(
        &[("c1", "count", r#"{"n":"three"}"#), ("c2", "count", "{}")],
        vec![tool],
    )
    .await;
    let results = results_by_id(&result);
    let (err1, text1) = &results["c1"];
    assert!(err1);
    assert!(text1.contains("Invalid arguments for tool count"), "{text1}");
    assert!(text1.contains(r#""three" is not of type "integer""#), "{text1}");
    assert!(text1.contains("/n"), "{text1}");
    let (err2, text2) = &results["c2"];
    assert!(err2);
    assert!(text2.contains(r#""n" is a required property"#), "{text2}");
    assert_eq!(called.load(Ordering::SeqCst), 0);
    assert_eq!(result.exit(), ExitReason::Completed);
}

#[tokio::test]
async fn unknown_tool_and_bad_json_become_error_results() {
    let tool = TestTool::new("known", object_schema(), |_, _| async {
        Ok(ToolOutput::text("ok"))
    });
    let (events, result, _) = run_calls(
        &[
            ("c1", "nope", "{}"),
            ("c2", "known", "{not json"),
            ("c3", "known", ""),
        ],
        vec![tool],
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(
        results["c1"],
        (true, "Unknown tool nope. Available tools: known.".to_string())
    );
    assert!(results["c2"].0);
    assert!(results["c2"].1.contains("not valid JSON"), "{}", results["c2"].1);
    // Empty arguments mean `{}`.
    assert_eq!(results["c3"], (false, "ok".to_string()));
    let unknown = events.iter().find_map(|e| match e {
        AgentEvent::ToolCall { call_id, source, .. } if call_id == "c1" => Some(source.clone()),
        _ => None,
    });
    assert_eq!(unknown, Some(None));
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let tool = TestTool::new("boom", object_schema(), |_, _| async {
        if true {
            panic!("kaboom");
        }
        Ok(ToolOutput::text("unreachable"))
    });
    let ok = TestTool::new("fine", object_schema(), |_, _| async {
        Ok(ToolOutput::text("fine"))
    });
    let (_, result, _) = run_calls(&[("c1", "boom", "{}"), ("c2", "fine", "{}")], vec![tool, ok]).await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (true, "The tool panicked: kaboom".to_string()));
    assert_eq!(results["c2"], (false, "fine".to_string()));
    assert_eq!(result.exit(), ExitReason::Completed);
}

#[tokio::test]
async fn tool_errors_and_error_outputs_reach_the_model_as_errors() {
    let failing = TestTool::new("fail", object_schema(), |_, _| async {
        Err(ToolError::execution("disk full"))
    });
    let flagged = TestTool::new("flag", object_schema(), |_, _| async {
        Ok(ToolOutput::error("bad path"))
    });
    let (_, result, _) = run_calls(
        &[("c1", "fail", "{}"), ("c2", "flag", "{}")],
        vec![failing, flagged],
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (true, "Tool error: disk full".to_string()));
    assert_eq!(results["c2"], (true, "bad path".to_string()));
}

#[tokio::test]
async fn oversized_output_is_truncated_with_the_cut_marked() {
    let big = TestTool::new("big", object_schema(), |_, _| async {
        Ok(ToolOutput::text(format!("HEAD{}TAIL", "x".repeat(10_000))))
    });
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "big", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![big]),
        |b: AgentBuilder| b.max_tool_output_bytes(1000),
    )
    .await;
    let (_, text) = &results_by_id(&result)["c1"];
    assert!(text.starts_with("HEAD") && text.ends_with("TAIL"));
    assert!(text.contains("output truncated: 10008 bytes in total"), "{text}");
    assert!(text.len() < 1200);
    // The event shows what the model sees.
    let event_text = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { output, .. } => Some(format!("{output:?}")),
        _ => None,
    });
    assert!(event_text.unwrap().contains("output truncated"));
}

#[tokio::test]
async fn dropping_the_stream_cancels_a_running_tool() {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let (cancelled_tx, cancelled_rx) = oneshot::channel::<()>();
    let slots = Arc::new(std::sync::Mutex::new((Some(started_tx), Some(cancelled_tx))));
    let tool = TestTool::new("long", object_schema(), move |_, ctx| {
        let slots = slots.clone();
        async move {
            let started = slots.lock().unwrap().0.take().unwrap();
            started.send(()).unwrap();
            ctx.cancellation().cancelled().await;
            let cancelled = slots.lock().unwrap().1.take().unwrap();
            cancelled.send(()).unwrap();
            Err(ToolError::Cancelled)
        }
    });
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[("c1", "long", "{}")])]);
    let agent = Agent::builder(Arc::new(model)).tools(tools(vec![tool])).build();
    let run = agent.run("go");
    tokio::time::timeout(HANG_GUARD, started_rx)
        .await
        .unwrap()
        .unwrap();
    drop(run);
    tokio::time::timeout(HANG_GUARD, cancelled_rx)
        .await
        .expect("tool never saw its token")
        .unwrap();
}

#[tokio::test]
async fn cancel_mid_tool_answers_every_call_and_exits_cancelled() {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    // One tool honours its token, the other ignores it and is aborted after the grace period.
    let polite = TestTool::new("polite", object_schema(), move |_, ctx| {
        let started = started.clone();
        async move {
            if let Some(tx) = started.lock().unwrap().take() {
                tx.send(()).unwrap();
            }
            ctx.cancellation().cancelled().await;
            Err(ToolError::Cancelled)
        }
    });
    let stubborn = TestTool::new("stubborn", object_schema(), |_, _| async {
        std::future::pending::<()>().await;
        Ok(ToolOutput::text("never"))
    });
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[
        ("c1", "polite", "{}"),
        ("c2", "stubborn", "{}"),
    ])]);
    let agent = Agent::builder(Arc::new(model))
        .tools(tools(vec![polite, stubborn]))
        .build();
    let run = agent.run("go");
    tokio::time::timeout(HANG_GUARD, started_rx)
        .await
        .unwrap()
        .unwrap();
    run.cancel();
    let result = tokio::time::timeout(HANG_GUARD, run)
        .await
        .unwrap()
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert_history_invariant(&result.messages);
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (true, "The tool call was cancelled.".to_string()));
    assert_eq!(results["c2"], (true, "The tool call was cancelled.".to_string()));
}

#[tokio::test]
async fn cancel_during_the_model_stream_ends_the_run() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::events(vec![ModelEvent::TextDelta {
            text: "partial".into(),
        }])
        .then_hang(),
    ]);
    let agent = Agent::builder(Arc::new(model)).build();
    let mut run = agent.run("go");
    // Wait for the first delta, then cancel.
    loop {
        match tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
            Some(AgentEvent::TextDelta { .. }) => break,
            Some(_) => continue,
            None => panic!("stream ended early"),
        }
    }
    run.cancel();
    let result = tokio::time::timeout(HANG_GUARD, run)
        .await
        .unwrap()
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert!(
        result.messages.is_empty(),
        "a cancelled step adds nothing to the history"
    );
}

#[tokio::test]
async fn a_model_error_mid_stream_discards_the_partial_step() {
    let tool = TestTool::new("t", object_schema(), |_, _| async { Ok(ToolOutput::text("ok")) });
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "t", "{}")]),
            ScriptedStep::events(vec![ModelEvent::TextDelta {
                text: "half an ans".into(),
            }])
            .then_error(ModelError::network("connection reset")),
        ],
        tools(vec![tool]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::ModelError);
    assert!(matches!(model_error(&result), Some(ModelError::Network { .. })));
    // First step's assistant + tool messages only; the partial text is gone.
    assert_eq!(result.messages.len(), 2);
    assert!(result.messages.iter().all(|m| !m.text().contains("half")));
    match events.last() {
        Some(AgentEvent::Finished { exit, error, .. }) => {
            assert_eq!(*exit, ExitReason::ModelError);
            assert_eq!(error.as_deref(), Some("network error: connection reset"));
        }
        other => panic!("{other:?}"),
    }
}

/// A provider that saw the run's cancellation first (or a wrapper that
/// cancelled the call) ends its stream with `ModelError::Cancelled`: the run
/// was cancelled, its model did not fail.
#[tokio::test]
async fn a_model_call_ended_by_cancellation_is_a_cancelled_run() {
    let (_, result, _) = run(
        vec![
            ScriptedStep::events(vec![ModelEvent::TextDelta { text: "Hal".into() }])
                .then_error(ModelError::Cancelled),
        ],
        tools(vec![]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert!(model_error(&result).is_none(), "{:?}", result.outcome);
}

#[tokio::test]
async fn a_stream_without_finish_is_a_model_error() {
    let (_, result, _) = run(
        vec![ScriptedStep::text("cut off").without_finish()],
        tools(vec![]),
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::ModelError);
    assert!(matches!(model_error(&result), Some(ModelError::StreamCut { .. })));
    assert!(result.messages.is_empty());
}

#[tokio::test]
async fn progress_reports_become_events() {
    let tool = TestTool::new("slow", object_schema(), |_, ctx| async move {
        ctx.progress().report(1.0, Some(2.0), Some("half".into()));
        ctx.progress().report(2.0, Some(2.0), None);
        // Give the loop a moment to forward them before the result.
        tokio::task::yield_now().await;
        Ok(ToolOutput::text("ok"))
    });
    let (events, _, _) = run_calls(&[("c1", "slow", "{}")], vec![tool]).await;
    let progress: Vec<(f64, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress {
                call_id,
                progress,
                message,
                ..
            } if call_id == "c1" => Some((*progress, message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(progress, vec![(1.0, Some("half".into())), (2.0, None)]);
}

#[tokio::test]
async fn reasoning_with_signature_is_kept_and_usage_adds_up() {
    let tool = TestTool::new("t", object_schema(), |_, _| async { Ok(ToolOutput::text("ok")) });
    let mut first = vec![
        ModelEvent::ReasoningDelta {
            text: "Let me ".into(),
        },
        ModelEvent::ReasoningDelta {
            text: "think.".into(),
        },
        ModelEvent::ReasoningDone {
            signature: Some("sig-1".into()),
            provider_data: None,
        },
        ModelEvent::TextDelta {
            text: "Checking.".into(),
        },
        ModelEvent::ToolCallComplete {
            id: "c1".into(),
            name: "t".into(),
            input_json: "{}".into(),
            provider_data: Some(json!({"thoughtSignature": "abc"})),
        },
    ];
    first.push(ModelEvent::Finish {
        reason: FinishReason::ToolCalls,
        usage: Usage::new(100, 20).with_reasoning(Some(7)),
    });
    let (events, result, model) = run(
        vec![ScriptedStep::events(first), ScriptedStep::text("The answer.")],
        tools(vec![tool]),
        |b: AgentBuilder| b,
    )
    .await;
    let assistant = &result.messages[0];
    match &assistant.content[0] {
        loopwright_core::ContentPart::Reasoning(r) => {
            assert_eq!(r.text, "Let me think.");
            assert_eq!(r.signature.as_deref(), Some("sig-1"));
        }
        other => panic!("{other:?}"),
    }
    let call = assistant.tool_calls().next().unwrap();
    assert_eq!(call.provider_data, Some(json!({"thoughtSignature": "abc"})));
    // Replayed to the model in the next request.
    assert_eq!(model.requests()[1].messages[1], *assistant);
    assert_eq!(result.usage.input_tokens, Some(110));
    assert_eq!(result.usage.output_tokens, Some(25));
    assert_eq!(result.usage.reasoning_tokens, Some(7));
    assert_eq!(result.steps.len(), 2);
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Let me think.");
}

#[tokio::test]
async fn events_serialise_tagged_snake_case() {
    let tool = TestTool::new("t", object_schema(), |_, _| async { Ok(ToolOutput::text("ok")) });
    let (events, _, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "t", r#"{"a":1}"#)]),
            ScriptedStep::text("hi"),
        ],
        tools(vec![tool]),
        |b: AgentBuilder| b,
    )
    .await;
    let types: Vec<String> = events
        .iter()
        .filter(|e| !matches!(e, AgentEvent::Accounting { .. }))
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "run_started",
            "step_started",
            "step_finished",
            "tool_call",
            "tool_result",
            "step_started",
            "text_delta",
            "step_finished",
            "finished"
        ]
    );
    let call = events
        .iter()
        .find(|e| matches!(e, AgentEvent::ToolCall { .. }))
        .unwrap();
    let call = serde_json::to_value(call).unwrap();
    assert_eq!(
        call,
        json!({"type": "tool_call", "call_id": "c1", "tool": "t", "source": "test", "original_name": "t", "input": {"a": 1}})
    );
    let finished = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(finished["exit"], "completed");
    assert_eq!(finished["steps"], 2);
    assert_eq!(finished["text"], "hi");
}

/// A tool that enforces its own timeout, longer than the loop's.
struct OwnTimeout(loopwright_core::ToolDefinition);

#[async_trait::async_trait]
impl loopwright_core::Tool for OwnTimeout {
    fn definition(&self) -> &loopwright_core::ToolDefinition {
        &self.0
    }
    async fn call(
        &self,
        _: serde_json::Value,
        _: loopwright_core::ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(ToolOutput::text("finished in its own time"))
    }
    fn timeout_for(&self, input: &serde_json::Value) -> Option<Duration> {
        input["timeout_ms"].as_u64().map(Duration::from_millis)
    }
}

#[tokio::test]
async fn a_tool_with_its_own_timeout_outlasts_the_loop_timeout() {
    let tool = OwnTimeout(loopwright_core::ToolDefinition::new(
        "build",
        "Build.",
        object_schema(),
    ));
    let set = loopwright_core::ToolSet::builder()
        .source(loopwright_core::toolset::StaticToolSource::native("app").with_tool(tool))
        .build();
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "build", r#"{"timeout_ms": 5000}"#), ("c2", "build", "{}")]),
            ScriptedStep::text("done"),
        ],
        set,
        |b: AgentBuilder| b.tool_timeout(Duration::from_millis(10)),
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (false, "finished in its own time".to_string()));
    // Without a timeout of its own the loop's 10 ms applies.
    assert_eq!(
        results["c2"],
        (true, "tool execution timed out after 10 ms".to_string())
    );
}

#[tokio::test]
async fn calls_queued_behind_the_concurrency_bound_do_not_start_after_cancel() {
    let started = Arc::new(AtomicUsize::new(0));
    let (first_tx, first_rx) = oneshot::channel::<()>();
    let first_tx = Arc::new(std::sync::Mutex::new(Some(first_tx)));
    let s = started.clone();
    let tool = TestTool::new("work", object_schema(), move |_, ctx| {
        let (s, first_tx) = (s.clone(), first_tx.clone());
        async move {
            s.fetch_add(1, Ordering::SeqCst);
            if let Some(tx) = first_tx.lock().unwrap().take() {
                tx.send(()).unwrap();
            }
            ctx.cancellation().cancelled().await;
            Err(ToolError::Cancelled)
        }
    });
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[
        ("c1", "work", "{}"),
        ("c2", "work", "{}"),
        ("c3", "work", "{}"),
    ])]);
    let agent = Agent::builder(Arc::new(model))
        .tools(tools(vec![tool]))
        .tool_concurrency(1)
        .build();
    let run = agent.run("go");
    tokio::time::timeout(HANG_GUARD, first_rx).await.unwrap().unwrap();
    run.cancel();
    let result = tokio::time::timeout(HANG_GUARD, run)
        .await
        .unwrap()
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "queued calls must not start once the run is cancelled"
    );
    assert_history_invariant(&result.messages);
    assert_eq!(results_by_id(&result).len(), 3);
}

/// A source whose tool list changes and whose next listing never answers.
struct StuckSource {
    tx: tokio::sync::watch::Sender<u64>,
}

#[async_trait::async_trait]
impl loopwright_core::ToolSource for StuckSource {
    fn name(&self) -> &str {
        "stuck"
    }
    async fn tools(
        &self,
    ) -> Result<Vec<Arc<dyn loopwright_core::Tool>>, loopwright_core::toolset::ToolSourceError> {
        if *self.tx.borrow() > 0 {
            std::future::pending::<()>().await;
        }
        Ok(Vec::new())
    }
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.tx.subscribe())
    }
}

#[tokio::test]
async fn cancel_ends_a_run_stuck_listing_tools() {
    let (tx, _) = tokio::sync::watch::channel(0u64);
    let source = Arc::new(StuckSource { tx });
    let bump = source.clone();
    let changer = TestTool::new("change", object_schema(), move |_, _| {
        let bump = bump.clone();
        async move {
            bump.tx.send_modify(|g| *g += 1);
            Ok(ToolOutput::text("changed"))
        }
    });
    let set = loopwright_core::ToolSet::builder()
        .source(loopwright_core::toolset::StaticToolSource::native("app").with_tool(changer))
        .shared_source(source, loopwright_core::toolset::SourceOptions::default())
        .build();
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[("c1", "change", "{}")])]);
    let agent = Agent::builder(Arc::new(model)).tools(set).build();
    let mut run = agent.run("go");
    // After the tool result, the next step's catalog rebuild hangs.
    loop {
        match tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
            Some(AgentEvent::ToolResult { .. }) => break,
            Some(_) => continue,
            None => panic!("ended early"),
        }
    }
    run.cancel();
    let result = tokio::time::timeout(HANG_GUARD, run)
        .await
        .unwrap()
        .or_else(loopwright_core::RunError::into_result)
        .unwrap();
    assert_eq!(result.exit(), ExitReason::Cancelled);
    assert_history_invariant(&result.messages);
}
