//! Model fallback and accounting through the loop, with scripted models.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use futures::StreamExt;
use loopwright_core::accounting::{AccountingEntry, EntryStatus};
use loopwright_core::{
    Agent, AgentBuilder, AgentEvent, ExitReason, FallbackModel, LanguageModel, ModelError, ToolOutput,
    accounting::JsonlSink, model::ModelEvent,
};
use loopwright_testing::{ScriptedModel, ScriptedStep};

struct Named(ScriptedModel, &'static str);

#[async_trait::async_trait]
impl LanguageModel for Named {
    fn provider(&self) -> &str {
        self.1
    }
    fn model_id(&self) -> &str {
        "m"
    }
    async fn stream(
        &self,
        r: loopwright_core::model::ModelRequest,
    ) -> Result<loopwright_core::model::ModelStream, ModelError> {
        self.0.stream(r).await
    }
}

async fn run_model(
    model: FallbackModel,
    toolset: loopwright_core::ToolSet,
    options: impl FnOnce(AgentBuilder) -> AgentBuilder,
) -> (Vec<AgentEvent>, loopwright_core::AgentResult) {
    let agent = options(Agent::builder(Arc::new(model)).tools(toolset)).build();
    let mut run = agent.run("go");
    let mut events = Vec::new();
    while let Some(e) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        events.push(e);
    }
    let result = run.await.or_else(loopwright_core::RunError::into_result).unwrap();
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
    let first = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::server(Some(500), "down"))]);
    let second = ScriptedModel::new(vec![ScriptedStep::text("from the second")]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second.clone(), "b")),
    ]);
    let (events, result) = run_model(model, tools(vec![]), |b: AgentBuilder| b).await;
    assert_eq!(result.exit(), ExitReason::Completed);
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
    let first = ScriptedModel::new(vec![ScriptedStep::fail(ModelError::authentication(
        Some(401),
        "bad key",
    ))]);
    let second = ScriptedModel::new(vec![ScriptedStep::text("ok")]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second, "b")),
    ]);
    let (_, result) = run_model(model, tools(vec![]), |b: AgentBuilder| b).await;
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
    .then_error(ModelError::network("connection reset"));
    let first = ScriptedModel::new(vec![dying]);
    let second = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "t", "{}")]),
        ScriptedStep::text("final from the second"),
    ]);
    let model = FallbackModel::new(vec![Arc::new(Named(first, "a")), Arc::new(Named(second, "b"))]);
    let (events, result) = run_model(model, tools(vec![tool]), |b: AgentBuilder| b).await;
    assert_eq!(result.exit(), ExitReason::Completed);
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
    let limited = || ScriptedStep::fail(ModelError::rate_limited("slow", Some(Duration::from_secs(7))));
    let first = ScriptedModel::new(vec![limited(), limited()]);
    let second = ScriptedModel::new(vec![limited(), limited()]);
    let model = FallbackModel::new(vec![
        Arc::new(Named(first.clone(), "a")),
        Arc::new(Named(second.clone(), "b")),
    ])
    .retries(1);
    let started = tokio::time::Instant::now();
    let (events, result) = run_model(model, tools(vec![]), |b: AgentBuilder| b).await;
    assert_eq!(result.exit(), ExitReason::ModelError);
    assert!(matches!(
        model_error(&result),
        Some(ModelError::RateLimited { .. })
    ));
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
        |b: AgentBuilder| b.accounting(sink),
    )
    .await;
    assert!(result.exit() == ExitReason::Completed);
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

/// The JSONL sink writes off the async threads: with the file's writes
/// blocked (a FIFO nobody reads, whose pipe buffer fills), a current-thread
/// runtime keeps running its other tasks while records wait. The runtime
/// runs on its own thread, watched from here, so a blocked runtime fails the
/// test instead of hanging it.
#[test]
fn a_blocked_accounting_file_does_not_block_the_runtime() {
    use loopwright_core::accounting::AccountingSink;
    let dir = tempfile_dir();
    let fifo = dir.join("accounting.jsonl");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    // Read-write open of a FIFO does not wait for a reader on Linux.
    let sink = Arc::new(JsonlSink::open(&fifo).unwrap());
    let line: AccountingEntry = serde_json::from_value(serde_json::json!({
        "type": "llm", "timestamp": "2026-01-01T00:00:00.000Z", "status": "ok", "provider": "p",
        "model": "m", "latency_ms": 1, "tokens": {"input": 1, "output": 1, "cached": 0, "reasoning": 0, "total": 2},
        "stop_reason": "x".repeat(4096)
    }))
    .unwrap();
    let (ticked_tx, ticked_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime_thread = {
        let sink = sink.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                // 64 KiB of pipe buffer fills after ~16 lines; then writes block.
                let writer = tokio::spawn(async move {
                    for _ in 0..64 {
                        sink.record(&line).await.unwrap();
                    }
                });
                for _ in 0..5 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                ticked_tx.send(writer.is_finished()).unwrap();
                release_rx.await.unwrap();
                writer.await.unwrap();
            });
        })
    };
    let writer_done_early = ticked_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the runtime was blocked by an accounting write");
    assert!(
        !writer_done_early,
        "the writes should still be blocked on the full pipe"
    );
    // Drain the pipe so the blocked writes finish.
    let mut reader = std::fs::File::open(&fifo).unwrap();
    let drain = std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    release_tx.send(()).unwrap();
    runtime_thread.join().unwrap();
    drop(sink);
    let copied = drain.join().unwrap().unwrap();
    assert!(copied > 64 * 4096, "every line was written ({copied} bytes)");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "loopwright-core-fifo-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
