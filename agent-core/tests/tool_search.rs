//! Tool search: above the threshold a step offers `search_tools` and the
//! always-on tools; the tools found are offered from the next step on (in
//! the run and across a conversation's turns); below it, nothing changes.
//! Also: reshaping a source's tools (overrides, transforms) and the
//! `tool_input_delta` events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::tool_search::{SEARCH_TOOLS_NAME, ToolSearch};
use loopwright_core::toolset::{ToolOverride, ToolOverrides};
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, ContentPart, Conversation, ExitReason, ToolDefinition, ToolOutput,
    ToolOutputPart, ToolSet, Usage, model::FinishReason, model::ModelEvent, toolset::NameFilter,
    toolset::SourceKind, toolset::SourceOptions, toolset::StaticToolSource,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

/// An external source (as an MCP server) with `n` tools `tool_0`..., one
/// of them a weather tool.
fn catalog_of(n: usize) -> StaticToolSource {
    let mut source = StaticToolSource::new("big", SourceKind::External);
    for i in 0..n {
        let (name, description, param) = if i == 7 {
            (
                "get_forecast".to_owned(),
                "The weather forecast for a city.",
                "city",
            )
        } else {
            (format!("tool_{i}"), "Does numbered thing.", "value")
        };
        let schema =
            json!({"type": "object", "properties": {param: {"type": "string"}}, "required": [param]});
        let tool = TestTool::new(&name, schema, move |input, _| async move {
            Ok(ToolOutput::text(format!("ran with {input}")))
        });
        source = source.with_tool(tool.describe(description));
    }
    source
}

fn big_set(n: usize) -> ToolSet {
    let native = StaticToolSource::native("app").with_tool(counted_tool("note", "noted").0);
    ToolSet::builder().source(native).source(catalog_of(n)).build()
}

#[tokio::test]
async fn a_big_catalog_is_searched_and_found_tools_are_offered_next() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("s1", SEARCH_TOOLS_NAME, r#"{"query": "weather forecast"}"#)]),
        ScriptedStep::tool_calls(&[("c1", "big__get_forecast", r#"{"city": "Porto"}"#)]),
        ScriptedStep::text("Sunny."),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(big_set(100))
        .tool_search(ToolSearch::default())
        .build();
    let (events, result) = collect(agent.run("Weather in Porto?")).await;
    assert_eq!(result.exit(), ExitReason::Completed);
    let requests = model.requests();
    // First step: the search tool and the native tool, the rest held back.
    assert_eq!(tool_names(&requests[0]), ["note", SEARCH_TOOLS_NAME]);
    assert_eq!(requests[0].deferred_tools.len(), 100);
    // The search found the forecast tool first and referenced it.
    let found = results_by_id(&result)["s1"].1.clone();
    assert!(found.starts_with("Found"), "{found}");
    assert!(
        found.contains("- big__get_forecast: The weather forecast for a city. Parameters: city (required)."),
        "{found}"
    );
    let references: Vec<String> = result
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some(r.parts.iter().filter_map(|p| match p {
                ToolOutputPart::ToolReference { tool } => Some(tool.clone()),
                _ => None,
            })),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(references[0], "big__get_forecast");
    // Next step: the found tools are offered, with their full definitions.
    let second = tool_names(&requests[1]);
    assert!(second.contains(&"big__get_forecast".to_owned()), "{second:?}");
    assert_eq!(requests[1].tools.len() + requests[1].deferred_tools.len(), 102);
    assert_eq!(
        results_by_id(&result)["c1"],
        (false, "ran with {\"city\":\"Porto\"}".to_owned())
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { tool, source: Some(s), .. }
        if tool == SEARCH_TOOLS_NAME && s == "tool_search"))
    );
}

#[tokio::test]
async fn a_catalog_under_the_threshold_is_offered_whole() {
    let (_, _, model) = run(vec![ScriptedStep::text("ok")], big_set(20), |b: AgentBuilder| {
        b.tool_search(ToolSearch::default())
    })
    .await;
    let request = &model.requests()[0];
    assert_eq!(request.tools.len(), 21);
    assert!(request.deferred_tools.is_empty());
    assert!(!tool_names(request).contains(&SEARCH_TOOLS_NAME.to_owned()));
}

#[tokio::test]
async fn loaded_tools_stay_offered_in_the_next_turn_and_always_on_ones_from_the_start() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("s1", SEARCH_TOOLS_NAME, r#"{"query": "tool_3"}"#)]),
        ScriptedStep::text("Found it."),
        ScriptedStep::text("Still here."),
    ]);
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(big_set(80))
        .tool_search(ToolSearch::default().always_on("big__tool_5"))
        .build();
    let mut chat = Conversation::new();
    let _ = chat.send(&agent, "find tool 3").await.unwrap();
    let _ = chat.send(&agent, "again").await.unwrap();
    let requests = model.requests();
    assert!(tool_names(&requests[0]).contains(&"big__tool_5".to_owned()));
    let last = tool_names(&requests[2]);
    assert!(last.contains(&"big__tool_3".to_owned()), "{last:?}");
    let search = agent.tools().catalog().await;
    assert!(
        search.get(SEARCH_TOOLS_NAME).is_none(),
        "the search tool is the run's, not the set's"
    );
}

#[tokio::test]
async fn overrides_rename_rewrite_and_carry_provider_options_while_calls_reach_the_tool() {
    let overrides = ToolOverrides::default()
        .rule(
            "tool_*",
            ToolOverride::default().description("[Numbers] {description}"),
        )
        .rule(
            "tool_1",
            ToolOverride::default()
                .name("first")
                .provider_options("openai", json!({"strict": true}))
                .always_on(true),
        );
    let set = ToolSet::builder()
        .source_with(
            catalog_of(3),
            SourceOptions::default()
                .filter(NameFilter::default().deny("tool_2"))
                .shared_transform(overrides.transform()),
        )
        .source_with(
            catalog_of(1),
            SourceOptions::default().transform(|_: &ToolDefinition| None),
        )
        .build();
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "big__first", r#"{"value": "x"}"#)]),
        ScriptedStep::text("done"),
    ]);
    let agent = Agent::builder(Arc::new(model.clone())).tools(set).build();
    let (events, result) = collect(agent.run("go")).await;
    let request = &model.requests()[0];
    assert_eq!(tool_names(request), ["big__first", "big__tool_0"]);
    let first = &request.tools[0];
    assert_eq!(first.description, "[Numbers] Does numbered thing.");
    assert_eq!(first.provider_options["openai"], json!({"strict": true}));
    assert!(first.always_on);
    assert_eq!(results_by_id(&result)["c1"].1, "ran with {\"value\":\"x\"}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolCall { original_name: Some(raw), .. } if raw == "tool_1"))
    );
}

#[tokio::test]
async fn tool_input_deltas_come_in_order_before_their_call() {
    let step = ScriptedStep::events(vec![
        ModelEvent::ToolCallStart {
            id: "c1".into(),
            name: "note".into(),
        },
        ModelEvent::ToolCallDelta {
            id: "c1".into(),
            delta: "{\"te".into(),
        },
        ModelEvent::ToolCallDelta {
            id: "c1".into(),
            delta: "xt\": \"hi\"}".into(),
        },
        ModelEvent::ToolCallComplete {
            id: "c1".into(),
            name: "note".into(),
            input_json: "{\"text\": \"hi\"}".into(),
            provider_data: None,
        },
        ModelEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Usage::default(),
        },
    ]);
    let (events, _, _) = run(
        vec![step, ScriptedStep::text("ok")],
        tools(vec![counted_tool("note", "noted").0]),
        |b: AgentBuilder| b,
    )
    .await;
    let seen: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolInputDelta { call_id, delta, .. } => Some(format!("{call_id}:{delta}")),
            AgentEvent::ToolCall { call_id, .. } => Some(format!("call {call_id}")),
            _ => None,
        })
        .collect();
    assert_eq!(seen, ["c1:{\"te", "c1:xt\": \"hi\"}", "call c1"]);
}
