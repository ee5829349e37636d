//! Structured final output through the loop: native and tool modes, tools on
//! earlier steps, validation against the schema, retries with the
//! validator's message, the typed result, and the error when the answer
//! never validates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{assert_history_invariant, counted_tool, results_by_id, tool_names};
use futures::StreamExt;
use loopwright_core::output::FINAL_ANSWER_TOOL;
use loopwright_core::{
    Agent, AgentEvent, ExitReason, OutputSpec, RunError, ToolChoice, model::ModelCapabilities,
    model::ResponseFormat, output::OutputMode,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// Degrees Celsius.
    celsius: f64,
    /// One line.
    summary: String,
}

const VALID: &str = r#"{"celsius": 21.5, "summary": "mild"}"#;

fn native() -> ModelCapabilities {
    ModelCapabilities::default().structured_output(true, true)
}

fn agent(model: &ScriptedModel, mode: OutputMode) -> (Agent, Arc<std::sync::atomic::AtomicUsize>) {
    let (tool, calls) = counted_tool("weather", "sunny, 21.5 C");
    let agent = Agent::builder(Arc::new(model.clone()))
        .tool(tool)
        .output(OutputSpec::of::<Forecast>().mode(mode))
        .build();
    (agent, calls)
}

#[tokio::test]
async fn native_mode_tools_first_then_a_validated_typed_answer() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "weather", "{}")]),
        ScriptedStep::text(VALID),
    ])
    .with_capabilities(native());
    let (agent, calls) = agent(&model, OutputMode::Auto);
    let mut run = agent.run("Weather in Lisbon?");
    let mut events = Vec::new();
    while let Some(e) = run.next().await {
        events.push(e);
    }
    let result = run.await.unwrap();
    assert!(matches!(
        &events[0],
        AgentEvent::RunStarted {
            output_mode: Some(OutputMode::Native),
            ..
        }
    ));
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let forecast: Forecast = result.output().unwrap();
    assert_eq!(
        forecast,
        Forecast {
            celsius: 21.5,
            summary: "mild".into()
        }
    );
    assert_eq!(result.text, VALID, "the raw answer stays the run's text");
    // Every request asked for the schema natively; no synthetic tool.
    for request in model.requests() {
        assert!(matches!(
            &request.response_format,
            Some(ResponseFormat::JsonSchema { name, .. }) if name == "Forecast"
        ));
        assert_eq!(tool_names(&request), ["weather"]);
    }
    // The value is an event of its own, just before `finished`.
    let n = events.len();
    assert!(matches!(&events[n - 2], AgentEvent::Output { value } if value["celsius"] == 21.5));
    assert!(matches!(
        events[n - 1],
        AgentEvent::Finished {
            exit: ExitReason::Completed,
            ..
        }
    ));
}

#[tokio::test]
async fn tool_mode_ends_the_run_when_the_final_answer_tool_is_called() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::streamed_tool_calls(&[("c1", "weather", "{}")]),
        ScriptedStep::streamed_tool_calls(&[("c2", FINAL_ANSWER_TOOL, VALID)]),
    ]);
    // The scripted model claims no native support: auto picks the tool mode.
    let (agent, _) = agent(&model, OutputMode::Auto);
    let mut run = agent.run("Weather?");
    let mut events = Vec::new();
    while let Some(e) = run.next().await {
        events.push(e);
    }
    let result = run.await.unwrap();
    // The mode is said at the start, and the final-answer call is not shown
    // as a tool call: its answer is the `output` event.
    assert!(matches!(
        &events[0],
        AgentEvent::RunStarted {
            output_mode: Some(OutputMode::Tool),
            ..
        }
    ));
    let shown: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolInputDelta { call_id, .. }
            | AgentEvent::ToolCall { call_id, .. }
            | AgentEvent::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, ["c1", "c1", "c1"], "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Output { value } if value["celsius"] == 21.5))
    );
    assert_eq!(result.output::<Forecast>().unwrap().celsius, 21.5);
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_history_invariant(&result.messages);
    assert_eq!(
        results_by_id(&result)["c2"],
        (false, "Final answer recorded.".to_string())
    );
    let requests = model.requests();
    assert!(requests.iter().all(|r| r.response_format.is_none()));
    let tool = requests[0]
        .tools
        .iter()
        .find(|d| d.name == FINAL_ANSWER_TOOL)
        .unwrap();
    assert_eq!(tool.input_schema["required"], json!(["celsius", "summary"]));
}

#[tokio::test]
async fn invalid_json_then_a_schema_violation_then_a_valid_answer() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::text("Sunny and mild."),
        ScriptedStep::text(r#"{"celsius": "warm", "summary": "mild"}"#),
        ScriptedStep::text(format!("```json\n{VALID}\n```")),
    ])
    .with_capabilities(native());
    let (agent, _) = agent(&model, OutputMode::Native);
    let result = agent.run("Weather?").await.unwrap();
    assert_eq!(result.output::<Forecast>().unwrap().summary, "mild");
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "two retries");
    let told = |i: usize| requests[i].messages.last().unwrap().text();
    assert!(told(1).contains("not JSON"), "{}", told(1));
    assert!(
        told(2).contains("\"warm\" is not of type \"number\"") && told(2).contains("/celsius"),
        "{}",
        told(2)
    );
    assert_history_invariant(&result.messages);
}

#[tokio::test]
async fn an_answer_that_never_validates_is_a_typed_error_keeping_the_raw_text() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::text(r#"{"celsius": 1}"#),
        ScriptedStep::text(r#"{"celsius": 2}"#),
        ScriptedStep::text(r#"{"celsius": 3}"#),
        ScriptedStep::text("never asked"),
    ])
    .with_capabilities(native());
    let (agent, _) = agent(&model, OutputMode::Native);
    let err = agent.run("Weather?").await.unwrap_err();
    match &err {
        RunError::Output { error, result } => {
            assert!(
                error.message.contains("\"summary\" is a required property"),
                "{}",
                error.message
            );
            assert_eq!(error.raw, r#"{"celsius": 3}"#);
            assert_eq!(result.exit(), ExitReason::OutputInvalid);
            assert!(result.output.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        model.requests().len(),
        3,
        "one answer and max_output_retries (2) retries"
    );
    assert!(
        err.to_string()
            .starts_with("the answer does not match the output schema")
    );
}

#[tokio::test]
async fn tool_mode_retries_through_the_final_answer_results_and_text_answers() {
    let model = ScriptedModel::new(vec![
        // Text instead of the tool: told to call it.
        ScriptedStep::text("It is mild."),
        // The tool with a wrong argument: its result says what to fix.
        ScriptedStep::tool_calls(&[("c1", FINAL_ANSWER_TOOL, r#"{"celsius": 21.5}"#)]),
        ScriptedStep::tool_calls(&[("c2", FINAL_ANSWER_TOOL, VALID)]),
    ]);
    let (agent, _) = agent(&model, OutputMode::Tool);
    let result = agent.run("Weather?").await.unwrap();
    assert_eq!(result.output::<Forecast>().unwrap().celsius, 21.5);
    let requests = model.requests();
    assert!(
        requests[1]
            .messages
            .last()
            .unwrap()
            .text()
            .contains(FINAL_ANSWER_TOOL)
    );
    let results = results_by_id(&result);
    assert!(results["c1"].0 && results["c1"].1.contains("\"summary\" is a required property"));
    assert_history_invariant(&result.messages);
}

#[tokio::test]
async fn at_the_step_limit_the_concluding_call_must_use_the_final_answer_tool() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "weather", "{}")]),
        ScriptedStep::tool_calls(&[("c2", FINAL_ANSWER_TOOL, VALID)]),
    ]);
    let (tool, _) = counted_tool("weather", "sunny");
    let agent = Agent::builder(Arc::new(model.clone()))
        .tool(tool)
        .max_steps(1)
        .output(OutputSpec::of::<Forecast>().mode(OutputMode::Tool))
        .build();
    let result = agent.run("Weather?").await.unwrap();
    assert_eq!(result.output::<Forecast>().unwrap().summary, "mild");
    let last = model.requests().pop().unwrap();
    assert_eq!(
        last.tool_choice,
        ToolChoice::Tool {
            name: FINAL_ANSWER_TOOL.into()
        }
    );
}

#[tokio::test]
async fn a_typed_output_reads_as_the_type() {
    let model = ScriptedModel::new(vec![ScriptedStep::text(VALID)]).with_capabilities(native());
    let agent = Agent::builder(Arc::new(model.clone()))
        .output(OutputSpec::of::<Forecast>())
        .build();
    let forecast: Forecast = agent.run("Weather?").await.unwrap().output().unwrap();
    assert_eq!(forecast.celsius, 21.5);
    assert!(model.requests()[0].response_format.is_some());
}

#[tokio::test]
async fn a_non_object_schema_travels_wrapped_and_comes_back_bare() {
    let model = ScriptedModel::new(vec![ScriptedStep::tool_calls(&[(
        "c1",
        FINAL_ANSWER_TOOL,
        r#"{"value": ["red", "green"]}"#,
    )])]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .output(OutputSpec::of::<Vec<String>>())
        .build();
    let colors: Vec<String> = agent.run("Colors?").await.unwrap().output().unwrap();
    assert_eq!(colors, ["red", "green"]);
    let sent = &model.requests()[0].tools[0].input_schema;
    assert_eq!(sent["properties"]["value"]["type"], "array");
}
