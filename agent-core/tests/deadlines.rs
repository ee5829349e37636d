//! `search_tools` takes a bounded query (a 20,000-word query over 500
//! tools took 26 s, blocking a runtime worker, and no timeout cut it): the
//! model is told to shorten it, only its first words are scored, and the
//! search runs off the async workers, so its deadline reaches it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use loopwright_core::tool_search::{SEARCH_TOOLS_NAME, ToolSearch};
use loopwright_core::{
    AgentBuilder, ExitReason, ToolDefinition, ToolOutput, ToolSet, toolset::SourceKind,
    toolset::StaticToolSource,
};
use loopwright_testing::ScriptedStep;
use serde_json::json;

/// 500 tools behind tool search.
fn many_tools() -> ToolSet {
    let mut source = StaticToolSource::new("many", SourceKind::External);
    for i in 0..500 {
        let def = ToolDefinition::new(
            format!("tool_{i}"),
            format!("Does thing number {i} with files, issues and pages."),
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        );
        source = source.with_shared_tool(Arc::new(StaticTool(def)));
    }
    ToolSet::builder().source(source).build()
}

struct StaticTool(ToolDefinition);

#[async_trait::async_trait]
impl loopwright_core::Tool for StaticTool {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: loopwright_core::ToolContext,
    ) -> Result<ToolOutput, loopwright_core::ToolError> {
        Ok(ToolOutput::text("done"))
    }
}

#[tokio::test]
async fn a_huge_search_query_is_refused_with_what_to_fix() {
    let query = (0..20_000)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let input = json!({"query": query}).to_string();
    let options = |b: AgentBuilder| {
        b.tool_search(ToolSearch::default().max_tools(10))
            .tool_timeout(Duration::from_secs(2))
    };
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("s1", SEARCH_TOOLS_NAME, &input)]),
            ScriptedStep::text("ok"),
        ],
        many_tools(),
        options,
    )
    .await;
    let (is_error, text) = &results_by_id(&result)["s1"];
    assert!(is_error, "{text}");
    assert!(text.contains("longer than 1000 characters"), "{text}");
    assert!(text.contains("fix the arguments"), "{text}");
    assert_eq!(result.exit(), ExitReason::Completed);
}
