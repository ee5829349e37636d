//! Hooks into a run: `prepare_step` changes the next request, `stop_when`
//! ends the run after a step, `on_tool_result` rewrites a result before the
//! model sees it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::{Arc, Mutex};

use common::{TestTool, object_schema, results_by_id, run, tool_names, tools};
use loopwright_core::{AgentBuilder, AgentEvent, ExitReason, ToolChoice, ToolOutput};
use loopwright_testing::ScriptedStep;

fn echo(name: &'static str) -> TestTool {
    TestTool::new(name, object_schema(), move |_, _| async move {
        Ok(ToolOutput::text(format!("{name} says password=hunter2")))
    })
}

#[tokio::test]
async fn prepare_step_changes_tools_choice_system_and_settings_per_step() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let options = |b: AgentBuilder| {
        b.system("Base.")
            .temperature(0.7)
            .prepare_step(move |ctx, settings| {
                s.lock()
                    .unwrap()
                    .push((ctx.step, ctx.steps.len(), ctx.messages.len()));
                if ctx.step == 1 {
                    settings.active_tools = Some(vec!["search".into()]);
                    settings.tool_choice = ToolChoice::Required;
                    settings.system = Some(format!(
                        "{} Search first.",
                        settings.system.as_deref().unwrap_or("")
                    ));
                    settings.temperature = Some(0.0);
                    settings.max_output_tokens = Some(64);
                    settings
                        .provider_options
                        .insert("openai".into(), serde_json::json!({"store": false}));
                }
            })
    };
    let (_, result, model) = run(
        vec![
            // Step 1 offers only `search`; the call to `write` is refused.
            ScriptedStep::tool_calls(&[("c1", "search", "{}"), ("c2", "write", "{}")]),
            ScriptedStep::tool_calls(&[("c3", "write", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![echo("search"), echo("write")]),
        options,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let requests = model.requests();
    let names = |i: usize| tool_names(&requests[i]);
    assert_eq!(names(0), ["search"]);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    assert_eq!(requests[0].system.as_deref(), Some("Base. Search first."));
    assert_eq!(requests[0].temperature, Some(0.0));
    assert_eq!(requests[0].max_output_tokens, Some(64));
    assert_eq!(requests[0].options_for("openai").unwrap()["store"], false);
    // A change lasts one step.
    assert_eq!(names(1), ["search", "write"]);
    assert_eq!(requests[1].tool_choice, ToolChoice::Auto);
    assert_eq!(requests[1].system.as_deref(), Some("Base."));
    assert_eq!(requests[1].temperature, Some(0.7));
    assert!(requests[1].provider_options.is_empty());
    let results = results_by_id(&result);
    assert!(!results["c1"].0);
    assert!(results["c2"].0, "a tool not offered this step does not run");
    assert!(
        results["c2"].1.contains("not available in this step"),
        "{}",
        results["c2"].1
    );
    assert!(!results["c3"].0);
    // The hook saw each step with the steps before it.
    assert_eq!(*seen.lock().unwrap(), [(1, 0, 1), (2, 1, 3), (3, 2, 5)]);
}

#[tokio::test]
async fn stop_when_ends_the_run_after_the_step_it_names() {
    let options = |b: AgentBuilder| {
        b.stop_when(|steps| {
            steps
                .last()
                .is_some_and(|s| s.tool_calls.iter().any(|c| c.name == "submit"))
        })
    };
    let (events, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "search", "{}")]),
            ScriptedStep::tool_calls(&[("c2", "submit", "{}")]),
            ScriptedStep::text("never asked"),
        ],
        tools(vec![echo("search"), echo("submit")]),
        options,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Stopped);
    assert_eq!(result.steps.len() as u32, 2);
    assert_eq!(model.requests().len(), 2);
    // The submit call ran and its result is in the history.
    assert!(!results_by_id(&result)["c2"].0);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Finished {
            exit: ExitReason::Stopped,
            ..
        })
    ));
}

#[tokio::test]
async fn stop_when_sees_each_step_with_its_results() {
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let s = sizes.clone();
    let options = |b: AgentBuilder| {
        b.stop_when(move |steps| {
            let last = steps.last().unwrap();
            s.lock()
                .unwrap()
                .push((last.step, last.tool_calls.len(), last.tool_results.len()));
            steps.len() >= 2
        })
    };
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "search", "{}"), ("c2", "search", "{}")]),
            ScriptedStep::tool_calls(&[("c3", "search", "{}")]),
            ScriptedStep::text("never asked"),
        ],
        tools(vec![echo("search")]),
        options,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Stopped);
    assert_eq!(*sizes.lock().unwrap(), [(1, 2, 2), (2, 1, 1)]);
}

#[tokio::test]
async fn on_tool_result_rewrites_what_the_model_and_the_events_see() {
    // Error results (an unknown tool) pass through the hook too.
    let options = |b: AgentBuilder| {
        b.on_tool_result(|ctx, output| {
            if ctx.call.name == "missing" {
                assert_eq!(ctx.source, None);
                return output.map_text(|t| format!("[rewritten] {t}"));
            }
            assert_eq!((ctx.source, ctx.original_name), (Some("test"), Some("search")));
            output.map_text(|t| t.replace("hunter2", "[redacted]"))
        })
    };
    let (events, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "search", "{}"), ("c2", "missing", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![echo("search")]),
        options,
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"].1, "search says password=[redacted]");
    assert!(results["c2"].0 && results["c2"].1.starts_with("[rewritten] Unknown tool"));
    let second = &model.requests()[1];
    assert!(!format!("{:?}", second.messages).contains("hunter2"));
    let event_texts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult { output, .. } => Some(format!("{output:?}")),
            _ => None,
        })
        .collect();
    assert!(
        event_texts.iter().all(|t| !t.contains("hunter2")),
        "{event_texts:?}"
    );
}
