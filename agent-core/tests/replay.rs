//! Record and replay (loopwright-testing) of a run through the loop: the
//! model's stream and the tools' calls written to a cassette, then served
//! from it with the live model and tools gone; misses reported with what differs; record-missing adding to the
//! cassette; malformed files named with their line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use loopwright_core::{
    Agent, AgentEvent, ExitReason, LanguageModel, ModelError, ToolOutput, ToolSet, ToolSource,
    model::ModelCapabilities, toolset::StaticToolSource,
};
use loopwright_testing::replay::{Cassette, CassetteError, ReplayMiss, ReplayMode, ReplayModel};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};

/// Events as JSON with the wall-clock fields set to 0: `duration_ms` of
/// tool results, `timestamp` and `latency_ms` of accounting entries.
fn normalised(events: &[AgentEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            if v["type"] == "tool_result" {
                v["duration_ms"] = json!(0);
            }
            if v["type"] == "accounting" {
                v["entry"]["timestamp"] = json!("");
                v["entry"]["latency_ms"] = json!(0);
            }
            v
        })
        .collect()
}

/// A source "app" with `echo` (counting its calls) and `fail`.
fn app_source(calls: Arc<AtomicUsize>) -> StaticToolSource {
    let echo = TestTool::new("echo", object_schema(), move |input, ctx| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            ctx.progress().report(1.0, Some(1.0), Some("echoing".into()));
            Ok(ToolOutput::text(input["text"].as_str().unwrap_or_default()))
        }
    });
    let fail = TestTool::new("fail", object_schema(), |_, _| async {
        Err(loopwright_core::ToolError::execution("it failed on purpose"))
    });
    StaticToolSource::native("app").with_tool(echo).with_tool(fail)
}

fn steps() -> Vec<ScriptedStep> {
    vec![
        ScriptedStep::tool_calls(&[("c1", "echo", r#"{"text":"hi"}"#), ("c2", "fail", "{}")]),
        ScriptedStep::text("echoed hi"),
    ]
}

async fn agent_with(model: Arc<dyn LanguageModel>, source: Arc<dyn ToolSource>) -> Agent {
    let tools = ToolSet::builder()
        .shared_source(source, Default::default())
        .build();
    Agent::builder(model).tools(tools).build()
}

#[tokio::test]
async fn a_recorded_run_replays_the_same_events_without_the_model_or_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let cassette = Cassette::record(dir.path()).unwrap();
    let live = Arc::new(ScriptedModel::new(steps()));
    let agent = agent_with(
        cassette.model(live),
        cassette.tool_source(Arc::new(app_source(calls.clone()))),
    )
    .await;
    let (recorded, result) = collect(agent.run("echo hi")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The cassette is JSON lines a person can read.
    let model_lines = std::fs::read_to_string(dir.path().join("model.jsonl")).unwrap();
    assert_eq!(model_lines.lines().count(), 2);
    let first: Value = serde_json::from_str(model_lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["request"]["messages"][0]["content"][0]["text"], "echo hi");
    assert_eq!(
        first["events"].as_array().unwrap().last().unwrap()["type"],
        "finish"
    );
    let tool_lines = std::fs::read_to_string(dir.path().join("tools/app.jsonl")).unwrap();
    assert!(
        tool_lines.contains(r#""outcome":{"error":"it failed on purpose"}"#),
        "{tool_lines}"
    );

    // Replay: a model that has no steps left and no live tools at all.
    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    assert_eq!(cassette.recorded_sources(), ["app"]);
    let stand_in: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![]));
    let agent = agent_with(cassette.model(stand_in), cassette.replayed_source("app").unwrap()).await;
    let (replayed, result) = collect(agent.run("echo hi")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(result.text, "echoed hi");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the live tool is not called");
    assert_eq!(normalised(&replayed), normalised(&recorded));
}

#[tokio::test]
async fn a_changed_prompt_is_a_model_error_naming_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = Cassette::record(dir.path()).unwrap();
    let live: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("noon")]));
    let agent = Agent::builder(cassette.model(live)).build();
    let _ = agent.run("What time is it?").await.unwrap();

    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    let model = ReplayModel::offline(&cassette, "scripted", "scripted-test-model");
    let agent = Agent::builder(Arc::new(model)).build();
    let (_, result) = collect(agent.run("What time is it now?")).await;
    assert_eq!(result.exit(), ExitReason::ModelError);
    let error = model_error(&result).cloned().unwrap();
    let miss = ReplayMiss::of(&error).unwrap();
    assert_eq!(miss.nearest_line, Some(1));
    assert_eq!(
        miss.difference.as_deref(),
        Some(r#"message 1 (user) text differs: recorded "What time is it?" vs "What time is it now?""#)
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn record_missing_asks_the_live_model_once_and_keeps_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let live = ScriptedModel::new(vec![ScriptedStep::text("one"), ScriptedStep::text("two")]);
    let cassette = Cassette::replay(dir.path().join("new"), ReplayMode::RecordMissing).unwrap();
    let agent = Agent::builder(cassette.model(Arc::new(live.clone()))).build();
    assert_eq!(agent.run("first").await.unwrap().text, "one");
    assert_eq!(
        agent.run("first").await.unwrap().text,
        "one",
        "served from the cassette"
    );
    assert_eq!(live.requests().len(), 1);

    // Another process, strict: both the recorded answers are there.
    let cassette = Cassette::replay(dir.path().join("new"), ReplayMode::RecordMissing).unwrap();
    let agent = Agent::builder(cassette.model(Arc::new(live.clone()))).build();
    assert_eq!(agent.run("second").await.unwrap().text, "two");
    let cassette = Cassette::replay(dir.path().join("new"), ReplayMode::Strict).unwrap();
    let stand_in: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![]));
    let agent = Agent::builder(cassette.model(stand_in)).build();
    assert_eq!(agent.run("first").await.unwrap().text, "one");
    assert_eq!(agent.run("second").await.unwrap().text, "two");
}

#[tokio::test]
async fn identical_requests_are_served_in_recorded_order_then_the_last_again() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = Cassette::record(dir.path()).unwrap();
    let live: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![
        ScriptedStep::text("heads"),
        ScriptedStep::text("tails"),
    ]));
    let agent = Agent::builder(cassette.model(live)).build();
    for _ in 0..2 {
        let _ = agent.run("flip").await.unwrap();
    }
    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    let stand_in: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![]));
    let agent = Agent::builder(cassette.model(stand_in)).build();
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(agent.run("flip").await.unwrap().text);
    }
    assert_eq!(answers, ["heads", "tails", "tails"]);
}

#[tokio::test]
async fn a_failed_call_replays_as_the_same_error() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = Cassette::record(dir.path()).unwrap();
    let live: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![
        ScriptedStep::fail(ModelError::authentication(Some(401), "bad key")),
        ScriptedStep::text("partial").without_finish(),
    ]));
    let agent = Agent::builder(cassette.model(live)).build();
    let first = agent.run("a").await.unwrap_err().to_string();
    let second = agent.run("b").await.unwrap_err().to_string();

    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    let stand_in: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![]));
    let agent = Agent::builder(cassette.model(stand_in)).build();
    assert_eq!(agent.run("a").await.unwrap_err().to_string(), first);
    assert_eq!(agent.run("b").await.unwrap_err().to_string(), second);
    assert!(second.contains("stream"), "{second}");
}

#[tokio::test]
async fn an_edited_request_is_found_under_its_new_hash() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = Cassette::record(dir.path()).unwrap();
    let live: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![ScriptedStep::text("noon")]));
    let _ = Agent::builder(cassette.model(live))
        .build()
        .run("What time is it?")
        .await
        .unwrap();
    let file = dir.path().join("model.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("What time is it?", "What time is it now?")).unwrap();

    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    let stand_in: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![]));
    let agent = Agent::builder(cassette.model(stand_in)).build();
    assert_eq!(agent.run("What time is it now?").await.unwrap().text, "noon");
}

#[test]
fn a_malformed_line_and_a_missing_cassette_are_errors_naming_where() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("tools")).unwrap();
    std::fs::write(dir.path().join("model.jsonl"), "\n").unwrap();
    std::fs::write(
        dir.path().join("tools/time.jsonl"),
        "{\"type\":\"list\",\"source\":\"time\",\"kind\":\"external\",\"tools\":[]}\n{\"type\":\"call\"\n",
    )
    .unwrap();
    match Cassette::replay(dir.path(), ReplayMode::Strict) {
        Err(CassetteError::Malformed { path, line, message }) => {
            assert!(path.ends_with("tools/time.jsonl"), "{}", path.display());
            assert_eq!(line, 2, "{message}");
        }
        other => panic!("{other:?}"),
    }
    let err = Cassette::replay(dir.path().join("nothing"), ReplayMode::Strict).unwrap_err();
    assert!(matches!(err, CassetteError::Missing { .. }), "{err}");
}

#[tokio::test]
async fn recording_again_starts_a_fresh_take() {
    let dir = tempfile::tempdir().unwrap();
    for answer in ["old", "new"] {
        let cassette = Cassette::record(dir.path()).unwrap();
        let live: Arc<dyn LanguageModel> = Arc::new(ScriptedModel::new(vec![ScriptedStep::text(answer)]));
        let _ = Agent::builder(cassette.model(live))
            .build()
            .run("q")
            .await
            .unwrap();
    }
    let text = std::fs::read_to_string(dir.path().join("model.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("new") && !text.contains("old"), "{text}");
}

#[tokio::test]
async fn an_offline_replay_claims_the_recorded_capabilities() {
    // With native structured output the request carries a response format;
    // without, a final_answer tool: the offline model must claim the same.
    let dir = tempfile::tempdir().unwrap();
    let caps = ModelCapabilities::default().structured_output(true, true);
    let live = ScriptedModel::new(vec![ScriptedStep::text(r#"{"city": "Paris"}"#)]).with_capabilities(caps);
    let spec = || {
        loopwright_core::OutputSpec::from_schema("city", json!({"type": "object", "required": ["city"]}))
            .unwrap()
    };
    let cassette = Cassette::record(dir.path()).unwrap();
    let agent = Agent::builder(cassette.model(Arc::new(live)))
        .output(spec())
        .build();
    let first = agent.run("Which city?").await.unwrap();
    assert_eq!(first.output, Some(json!({"city": "Paris"})));
    let line = std::fs::read_to_string(dir.path().join("model.jsonl")).unwrap();
    assert!(
        line.contains(r#""capabilities":{"structured_output":true"#),
        "{line}"
    );

    let cassette = Cassette::replay(dir.path(), ReplayMode::Strict).unwrap();
    let offline = ReplayModel::offline(&cassette, "scripted", "scripted-test-model");
    assert_eq!(offline.capabilities(), caps);
    let agent = Agent::builder(Arc::new(offline)).output(spec()).build();
    assert_eq!(agent.run("Which city?").await.unwrap().output, first.output);
}
