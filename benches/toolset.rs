#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)] // a benchmark, like a test
//! ToolSet merge and naming: 10 external sources of 100 tools each (names
//! that need sanitising and a few that clash), merged into one catalog; and
//! the rebuild after one source reports `tools/list_changed`.
//!
//! Run with `cargo bench -p loopwright-benches --bench toolset`.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use loopwright::{
    Tool, ToolDefinition, ToolError, ToolOutput, ToolSet, ToolSource, toolset::SourceKind,
    toolset::ToolSourceError,
};
use serde_json::{Value, json};
use tokio::sync::watch;

const SOURCES: usize = 10;
const TOOLS_PER_SOURCE: usize = 100;

/// A tool with a realistic schema that is never called.
struct Idle(ToolDefinition);

#[async_trait::async_trait]
impl Tool for Idle {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    async fn call(&self, _input: Value, _ctx: loopwright::ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("unused"))
    }
}

/// An external source whose list can be said to change.
struct Source {
    name: String,
    tools: Vec<Arc<dyn Tool>>,
    changes: watch::Sender<u64>,
}

#[async_trait::async_trait]
impl ToolSource for Source {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::External
    }

    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        Ok(self.tools.clone())
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changes.subscribe())
    }
}

fn source(i: usize) -> Arc<Source> {
    // Server names with dots sanitise onto other names: `srv.1` and `srv_1` clash.
    let name = if i.is_multiple_of(2) {
        format!("srv.{}", i / 2)
    } else {
        format!("srv_{}", i / 2)
    };
    let tools = (0..TOOLS_PER_SOURCE)
        .map(|t| {
            let schema = json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "A path."},
                "limit": {"type": "integer", "minimum": 1},
                "flags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
            }, "required": ["path"]});
            let def = ToolDefinition::new(format!("tool.{t}"), format!("Tool {t} of {name}."), schema);
            Arc::new(Idle(def)) as Arc<dyn Tool>
        })
        .collect();
    Arc::new(Source {
        name,
        tools,
        changes: watch::Sender::new(0),
    })
}

fn bench_toolset(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let sources: Vec<Arc<Source>> = (0..SOURCES).map(source).collect();
    let build = || {
        sources
            .iter()
            .fold(ToolSet::builder(), |b, s| {
                b.shared_source(s.clone(), Default::default())
            })
            .build()
    };
    let catalog = rt.block_on(build().catalog());
    assert_eq!(catalog.tools().len(), SOURCES * TOOLS_PER_SOURCE);
    println!(
        "{} tools, {} warnings (renamed clashes)",
        catalog.tools().len(),
        catalog.warnings().len()
    );

    let mut group = c.benchmark_group("toolset");
    group.sample_size(20);
    group.bench_function("merge_10x100", |b| {
        b.to_async(&rt)
            .iter(|| async { build().catalog().await.tools().len() });
    });
    let set = build();
    rt.block_on(set.catalog());
    group.bench_function("rebuild_after_list_changed", |b| {
        b.to_async(&rt).iter(|| {
            sources[3].changes.send_modify(|g| *g += 1);
            async { set.catalog().await.tools().len() }
        });
    });
    group.bench_function("cached_catalog", |b| {
        b.to_async(&rt)
            .iter(|| async { set.catalog().await.tools().len() });
    });
    group.finish();
}

criterion_group!(benches, bench_toolset);
criterion_main!(benches);
