//! Model fallback and accounting through the loop, with scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::testing::{ScriptedModel, ScriptedStep};
use agent_core::{
    AccountingEntry, Agent, AgentEvent, AgentOptions, EntryStatus, ExitReason, FallbackModel, JsonlSink,
    LanguageModel, ModelError, ModelEvent, ToolOutput,
};
use common::*;
use futures::StreamExt;

struct Named(ScriptedModel, &'static str);

#[async_trait::async_trait]
impl LanguageModel for Named {
    fn provider(&self) -> &str {
        self.1
    }
    fn model_id(&self) -> &str {
        "m"
    }
    async fn stream(&self, r: agent_core::ModelRequest) -> Result<agent_core::ModelStream, ModelError> {
        self.0.stream(r).await
    }
}

async fn run_model(
    model: FallbackModel,
    toolset: agent_core::ToolSet,
    options: AgentOptions,
) -> (Vec<AgentEvent>, agent_core::AgentResult) {
    let agent = Agent::builder(Arc::new(model))
        .tools(toolset)
        .options(options)
        .build();
    let mut run = agent.prompt("go");
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        events.push(e);
    }
    let result = run.into_result().await.unwrap();
    assert_history_invariant(&result.messages);
    (events, result)
}

fn llm_entries(events: &[AgentEvent]) -> Vec<(String, EntryStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Accounting {
                entry: AccountingEntry::Llm(l),
            } => Some((l.provider.clone(), l.status)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_error_before_streaming_moves_to_the_next_model() {
    let first = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::Provider {
        status: 500,
        message: "down".into(),
    })]);
    let second = ScriptedModel::new(vec![ScriptedStep::text("from the second")]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second.clone(), "b")),
    ]);
    let (events, result) = run_model(model, tools(vec![]), AgentOptions::default()).await;
    assert_eq!(result.exit, ExitReason::Completed);
    assert_eq!(result.text, "from the second");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ModelFallback { from, to, .. } if from == "a/m" && to == "b/m"))
    );
    assert_eq!(
        llm_entries(&events),
        [("a".into(), EntryStatus::Error), ("b".into(), EntryStatus::Ok)]
    );
    // Both attempts got exactly the same request.
    assert_eq!(first.requests()[0].messages, second.requests()[0].messages);
}

#[tokio::test]
async fn auth_errors_skip_the_model_for_good() {
    let first = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::Auth {
        message: "bad key".into(),
    })]);
    let second = ScriptedModel::new(vec![ScriptedStep::text("ok")]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second, "b")),
    ]);
    let (_, result) = run_model(model, tools(vec![]), AgentOptions::default()).await;
    assert_eq!(result.text, "ok");
    assert_eq!(first.requests().len(), 1);
}

#[tokio::test]
async fn a_failure_mid_stream_discards_partial_output_and_runs_no_tool_twice() {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = TestTool::new("t", object_schema(), move |_, _| {
        r.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::text("ran")) }
    });
    // The first model streams text and a whole tool call, then dies.
    let dying = ScriptedStep::events(vec![
        ModelEvent::TextDelta {
            text: "partial answer".into(),
        },
        ModelEvent::ToolCallComplete {
            id: "x1".into(),
            name: "t".into(),
            input_json: "{}".into(),
            provider_data: None,
        },
    ])
    .then_error(ModelError::Network("connection reset".into()));
    let first = ScriptedModel::new(vec![dying]);
    let second = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "t", "{}")]),
        ScriptedStep::text("final from the second"),
    ]);
    let model = FallbackModel::new(vec![Arc::new(Named(first, "a")), Arc::new(Named(second, "b"))]);
    let (events, result) = run_model(model, tools(vec![tool]), AgentOptions::default()).await;
    assert_eq!(result.exit, ExitReason::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let history = serde_json::to_string(&result.messages).unwrap();
    assert!(
        !history.contains("partial answer") && !history.contains("x1"),
        "{history}"
    );
    assert_eq!(result.text, "final from the second");
    let fallbacks = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ModelFallback { .. }))
        .count();
    // Step 1 (mid-stream failure) and step 2 (the first model's script is exhausted).
    assert_eq!(fallbacks, 2);
}

#[tokio::test(start_paused = true)]
async fn rate_limits_in_every_model_wait_then_give_up() {
    let limited = || {
        ScriptedStep::fail(ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow".into(),
        })
    };
    let first = ScriptedModel::new(vec![limited(), limited()]);
    let second = ScriptedModel::new(vec![limited(), limited()]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second.clone(), "b")),
    ])
    .retries(1);
    let started = tokio::time::Instant::now();
    let (events, result) = run_model(model, tools(vec![]), AgentOptions::default()).await;
    assert_eq!(result.exit, ExitReason::ModelError);
    assert!(matches!(result.error, Some(ModelError::RateLimited { .. })));
    assert_eq!((first.requests().len(), second.requests().len()), (2, 2));
    // One wait of the largest retry-after between the two cycles (virtual time).
    assert!(started.elapsed() >= Duration::from_secs(7));
    assert_eq!(llm_entries(&events).len(), 4);
}

#[tokio::test]
async fn accounting_jsonl_has_one_whole_line_per_attempt_and_call() {
    let dir = std::env::temp_dir().join(format!("agent-acct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("acct.jsonl");
    // A torn line from an earlier crash is cut on open.
    std::fs::write(&path, "{\"type\":\"llm\"}\n{\"type\":\"to").unwrap();
    let sink = Arc::new(JsonlSink::open(&path).unwrap());
    let ok = TestTool::new("ok", object_schema(), |_, _| async {
        Ok(ToolOutput::text("fine"))
    });
    let (events, result, _) = run(
        vec![
            ScriptedStep::tool_calls(&[("c1", "ok", r#"{"a":1}"#), ("c2", "missing", "{}")]),
            ScriptedStep::text("done"),
        ],
        tools(vec![ok]),
        AgentOptions::default().accounting(sink),
    )
    .await;
    assert!(result.completed());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(text.ends_with('\n'));
    // The earlier whole line, 2 model attempts and 2 tool calls.
    assert_eq!(lines.len(), 5);
    let entries: Vec<AccountingEntry> = lines[1..]
        .iter()
        .map(|l| serde_json::from_value(l.clone()).unwrap())
        .collect();
    let from_events: Vec<AccountingEntry> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Accounting { entry } => Some(entry.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(entries, from_events);
    let tools: Vec<_> = entries
        .iter()
        .filter_map(|e| match e {
            AccountingEntry::Tool(t) => Some(t),
            _ => None,
        })
        .collect();
    let c1 = tools.iter().find(|t| t.tool == "ok").unwrap();
    assert_eq!(
        (c1.status, c1.source.as_str(), c1.characters_in, c1.characters_out),
        (EntryStatus::Ok, "test", 7, 4)
    );
    let c2 = tools.iter().find(|t| t.tool == "missing").unwrap();
    assert_eq!(
        (c2.status, c2.details.as_deref()),
        (EntryStatus::Error, Some("unknown_tool"))
    );
    let llm: Vec<_> = entries
        .iter()
        .filter_map(|e| match e {
            AccountingEntry::Llm(l) => Some(l),
            _ => None,
        })
        .collect();
    assert_eq!(llm[0].stop_reason.as_deref(), Some("tool_calls"));
    assert_eq!(llm[0].tokens.input, 10);
    assert_eq!(
        (llm[0].provider.as_str(), llm[0].model.as_str()),
        ("scripted", "scripted-test-model")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
