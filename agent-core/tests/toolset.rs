//! Merging tool sources: priority, namespacing, clashes, filters, routing by
//! original name, list changes and instructions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use loopwright_core::toolset::{INSTRUCTIONS_HEADING, is_valid_tool_name};
use loopwright_core::{
    AgentBuilder, AgentEvent, ExitReason, Tool, ToolOutput, ToolSet, ToolSource, tool_fn,
    toolset::NameFilter, toolset::Naming, toolset::SourceKind, toolset::SourceOptions,
    toolset::StaticToolSource, toolset::ToolSourceError,
};
use loopwright_testing::ScriptedStep;
use tokio::sync::watch;

fn echo_named(name: &str, reply: &'static str) -> TestTool {
    TestTool::new(name, object_schema(), move |_, _| async move {
        Ok(ToolOutput::text(reply))
    })
}

#[tokio::test]
async fn native_tools_win_clashes_and_the_loser_is_reported() {
    let native = StaticToolSource::native("coding").with_tool(echo_named("Read", "native"));
    let mcp = StaticToolSource::new("fs", SourceKind::External)
        .with_tool(echo_named("Read", "mcp"))
        .with_tool(echo_named("write.file", "mcp-write"));
    // The MCP server asks for bare names, so its Read clashes with the native one.
    let set = ToolSet::builder()
        .source_with(mcp, SourceOptions::default().naming(Naming::Bare))
        .source(native)
        .build();
    let catalog = set.catalog().await;
    assert_eq!(catalog.names(), ["Read", "write_file"]);
    assert_eq!(catalog.get("Read").unwrap().source, "coding");
    let exposed = catalog.get("write_file").unwrap();
    assert_eq!(
        (exposed.source.as_str(), exposed.original_name.as_str()),
        ("fs", "write.file")
    );
    assert_eq!(catalog.warnings().len(), 1);
    assert!(
        catalog.warnings()[0].contains("Read from fs is hidden"),
        "{:?}",
        catalog.warnings()
    );
}

#[tokio::test]
async fn a_name_renamed_to_avoid_a_clash_is_reported() {
    // `my.srv` and `my_srv` sanitise to the same prefix.
    let a = StaticToolSource::new("my.srv", SourceKind::External).with_tool(echo_named("echo", "a"));
    let b = StaticToolSource::new("my_srv", SourceKind::External).with_tool(echo_named("echo", "b"));
    let catalog = ToolSet::builder().source(a).source(b).build().catalog().await;
    let names = catalog.names();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"my_srv__echo"), "{names:?}");
    let renamed = names.iter().find(|n| **n != "my_srv__echo").unwrap();
    assert!(
        renamed.starts_with("my_srv__echo_") && is_valid_tool_name(renamed),
        "{renamed}"
    );
    assert_eq!(catalog.warnings().len(), 1, "{:?}", catalog.warnings());
    let warning = &catalog.warnings()[0];
    assert!(
        warning.contains(renamed) && warning.contains("my_srv__echo is taken"),
        "{warning}"
    );
}

#[tokio::test]
async fn external_sources_are_namespaced_and_calls_route_by_original_name() {
    let mcp = StaticToolSource::new("my.server", SourceKind::External).with_tool(TestTool::new(
        "get-time",
        object_schema(),
        |_, ctx| async move { Ok(ToolOutput::text(format!("time for {}", ctx.call_id()))) },
    ));
    let set = ToolSet::builder().source(mcp).build();
    let catalog = set.catalog().await;
    assert_eq!(catalog.names(), ["my_server__get-time"]);
    assert_eq!(catalog.definitions()[0].name, "my_server__get-time");
    let (events, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "my_server__get-time", "{}")]),
            ScriptedStep::text("ok"),
        ],
        set,
        |b: AgentBuilder| b,
    )
    .await;
    assert_eq!(results_by_id(&result)["c1"], (false, "time for c1".to_string()));
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::ToolCall { source: Some(s), original_name: Some(o), .. } if s == "my.server" && o == "get-time")));
    // Tool definitions sent to the model use exposed names.
    assert_eq!(model.requests()[0].tools[0].name, "my_server__get-time");
}

#[tokio::test]
async fn filters_apply_per_source_and_over_exposed_names() {
    let git = StaticToolSource::new("git", SourceKind::External)
        .with_tool(echo_named("git_status", "s"))
        .with_tool(echo_named("git_push", "p"))
        .with_tool(echo_named("git_log", "l"));
    let other = StaticToolSource::new("web", SourceKind::External)
        .with_tool(echo_named("fetch", "f"))
        .with_tool(echo_named("delete_cache", "d"));
    let set = ToolSet::builder()
        .source_with(
            git,
            SourceOptions::default().filter(NameFilter::default().allow("git_*").deny("git_push")),
        )
        .source(other)
        .filter(NameFilter::default().deny("*__delete_*"))
        .build();
    assert_eq!(
        set.catalog().await.names(),
        ["git__git_log", "git__git_status", "web__fetch"]
    );
}

#[tokio::test]
async fn custom_naming_and_long_names_stay_valid() {
    let long = "a_tool_with_a_really_long_name_that_goes_on_and_on_past_the_limit";
    let src = StaticToolSource::new("srv", SourceKind::External).with_tool(echo_named(long, "x"));
    let set = ToolSet::builder()
        .source_with(
            src,
            SourceOptions::default().naming(Naming::custom(|s, t| format!("{s}::{t}"))),
        )
        .build();
    let catalog = set.catalog().await;
    let name = catalog.names()[0].to_owned();
    assert!(is_valid_tool_name(&name), "{name}");
    assert!(name.starts_with("srv__a_tool"), "{name}");
    assert_eq!(catalog.get(&name).unwrap().original_name, long);
    // Deterministic: a fresh set gives the same name.
    let src = StaticToolSource::new("srv", SourceKind::External).with_tool(echo_named(long, "x"));
    let again = ToolSet::builder()
        .source_with(
            src,
            SourceOptions::default().naming(Naming::custom(|s, t| format!("{s}::{t}"))),
        )
        .build();
    assert_eq!(again.catalog().await.names(), [name.as_str()]);
}

/// A source whose tool list (and what it warns about) changes, like an MCP
/// server sending `tools/list_changed`.
struct Changing {
    tools: std::sync::Mutex<Vec<Arc<dyn Tool>>>,
    warnings: std::sync::Mutex<Vec<String>>,
    tx: watch::Sender<u64>,
}

#[async_trait::async_trait]
impl ToolSource for Changing {
    fn name(&self) -> &str {
        "live"
    }
    async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
        Ok(self.tools.lock().unwrap().clone())
    }
    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.tx.subscribe())
    }
    fn instructions(&self) -> Option<String> {
        Some("Call add_tool before using new tools.".into())
    }
    fn warnings(&self) -> Vec<String> {
        self.warnings.lock().unwrap().clone()
    }
}

impl Changing {
    fn new() -> Self {
        Self {
            tools: std::sync::Mutex::new(Vec::new()),
            warnings: std::sync::Mutex::new(Vec::new()),
            tx: watch::channel(0u64).0,
        }
    }
}

#[tokio::test]
async fn a_changed_tool_list_is_seen_from_the_next_step() {
    let live = Arc::new(Changing::new());
    let live2 = live.clone();
    // The tool that changes the list, from the native side.
    let adder = TestTool::new("add_tool", object_schema(), move |_, _| {
        let live = live2.clone();
        async move {
            live.tools
                .lock()
                .unwrap()
                .push(Arc::new(echo_named("fresh", "fresh result")));
            live.tx.send_modify(|g| *g += 1);
            Ok(ToolOutput::text("added"))
        }
    });
    let set = ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(adder))
        .shared_source(live, SourceOptions::default())
        .build();
    let (_, result, model) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "add_tool", "{}")]),
            ScriptedStep::tool_calls(&[("c2", "live__fresh", "{}")]),
            ScriptedStep::text("done"),
        ],
        set,
        |b: AgentBuilder| b.system("Base prompt."),
    )
    .await;
    let requests = model.requests();
    let names = |i: usize| tool_names(&requests[i]);
    assert_eq!(names(0), ["add_tool"]);
    assert_eq!(names(1), ["add_tool", "live__fresh"]);
    assert_eq!(results_by_id(&result)["c2"], (false, "fresh result".to_string()));
    // Instructions reach the system prompt once, under the heading.
    let system = requests[0].system.clone().unwrap();
    assert!(system.starts_with("Base prompt.\n\n"));
    assert_eq!(system.matches(INSTRUCTIONS_HEADING).count(), 1);
    assert!(system.contains("## TOOL live INSTRUCTIONS\n\nCall add_tool before using new tools."));
}

#[tokio::test]
async fn a_failing_source_is_a_warning_and_the_others_still_work() {
    struct Broken;
    #[async_trait::async_trait]
    impl ToolSource for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSourceError> {
            Err(ToolSourceError::new("broken", "connection refused"))
        }
    }
    let set = ToolSet::builder()
        .source(Broken)
        .source(StaticToolSource::native("app").with_tool(echo_named("ok", "fine")))
        .build();
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "ok", "{}")]),
            ScriptedStep::text("done"),
        ],
        set,
        |b: AgentBuilder| b,
    )
    .await;
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::Warning { message } if message.contains("tool source broken: connection refused"))));
    assert!(result.exit() == ExitReason::Completed);
}

#[tokio::test]
async fn a_sources_own_warnings_are_read_with_every_listing_and_reported_by_runs() {
    let live = Arc::new(Changing::new());
    live.warnings.lock().unwrap().push("live: first".into());
    let set = ToolSet::builder()
        .shared_source(live.clone(), SourceOptions::default())
        .build();
    assert_eq!(set.catalog().await.warnings(), ["live: first"]);
    // As an MCP source decides again what it leaves out when its list changes.
    *live.warnings.lock().unwrap() = vec!["live: second".into()];
    assert_eq!(set.catalog().await.warnings(), ["live: first"], "cached");
    live.tx.send_modify(|g| *g += 1);
    assert_eq!(set.catalog().await.warnings(), ["live: second"]);
    let (events, result, _) = run(vec![ScriptedStep::text("done")], set, |b: AgentBuilder| b).await;
    let warned = |text: &str| {
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { message } if message == text))
    };
    assert!(warned("live: second") && !warned("live: first"));
    let told = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Warning { message } if message == "live: second"))
        .count();
    assert_eq!(told, 1, "told once per run");
    assert!(result.exit() == ExitReason::Completed);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// First number.
    a: i64,
    /// Second number.
    b: i64,
}

#[tokio::test]
async fn a_typed_tool_is_validated_and_called() {
    let add = tool_fn("add", "Add two integers.", |args: AddArgs| async move {
        Ok(args.a + args.b)
    });
    let schema = add.definition().input_schema.clone();
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(schema["properties"]["a"]["description"], "First number.");
    let set = ToolSet::builder()
        .source(StaticToolSource::native("app").with_tool(add))
        .build();
    let (_, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[
                ("c1", "add", r#"{"a": 2, "b": 40}"#),
                ("c2", "add", r#"{"a": 2}"#),
            ]),
            ScriptedStep::text("42"),
        ],
        set,
        |b: AgentBuilder| b,
    )
    .await;
    let results = results_by_id(&result);
    assert_eq!(results["c1"], (false, "42".to_string()));
    assert!(results["c2"].0 && results["c2"].1.contains(r#""b" is a required property"#));
}
