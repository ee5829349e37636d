//! Schemas from outside within limits: an MCP server's (or any external
//! source's) tool whose input schema would make validation exponential is
//! hidden with a warning naming it, and the other tools stay; an output
//! schema like it is refused when the run is configured.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::schema::SchemaError;
use loopwright_core::{
    AgentBuilder, ExitReason, OutputSpec, ToolDefinition, ToolOutput, ToolSet, toolset::SourceKind,
    toolset::StaticToolSource,
};
use loopwright_testing::ScriptedStep;
use serde_json::{Map, Value, json};

fn exponential(depth: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..depth {
        let next = json!({"$ref": format!("#/$defs/l{}", i + 1)});
        defs.insert(format!("l{i}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert(format!("l{depth}"), json!(false));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs})
}

struct Fixed(ToolDefinition);

#[async_trait::async_trait]
impl loopwright_core::Tool for Fixed {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(
        &self,
        _input: Value,
        _ctx: loopwright_core::ToolContext,
    ) -> Result<ToolOutput, loopwright_core::ToolError> {
        Ok(ToolOutput::text("ran"))
    }
}

#[tokio::test]
async fn a_tool_whose_schema_multiplies_is_hidden_and_named() {
    let hostile = ToolDefinition::new("trap", "A tool.", exponential(24));
    let fine = ToolDefinition::new("fine", "Another.", json!({"type": "object"}));
    let source = StaticToolSource::new("server", SourceKind::External)
        .with_shared_tool(Arc::new(Fixed(hostile)))
        .with_shared_tool(Arc::new(Fixed(fine)));
    let set = ToolSet::builder().source(source).build();
    let (events, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "server__fine", "{}")]),
            ScriptedStep::text("done"),
        ],
        set,
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(result.exit(), ExitReason::Completed);
    assert_eq!(results_by_id(&result)["c1"], (false, "ran".to_owned()));
    assert_eq!(tool_names(&model.requests()[0]), ["server__fine"]);
    let warned = events.iter().any(|e| {
        matches!(e, loopwright_core::AgentEvent::Warning { message }
            if message.contains("tool trap from server is hidden") && message.contains("too complex"))
    });
    assert!(warned, "{events:?}");
}

#[test]
fn an_output_schema_that_multiplies_is_refused() {
    let err = OutputSpec::from_schema("out", exponential(24)).unwrap_err();
    assert!(matches!(err.error, SchemaError::TooComplex { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("output schema out: the schema is too complex"),
        "{err}"
    );
}
