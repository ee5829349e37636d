//! The store's behaviour, the same test bodies against memory, SQLite and a
//! real PostgreSQL server (loopwright-test-support).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, turn};
use loopwright_core::{ContentPart, Message, Role, ToolCall, ToolOutputPart, ToolResult};
use loopwright_store::{RunRecord, RunStatus, StoreError};
use serde_json::{Value, json};
use tokio::sync::Barrier;

per_backend!(
    conversations_append_and_load,
    a_stale_version_is_a_conflict_and_writes_nothing,
    concurrent_appends_one_wins_none_lost,
    conversations_are_deleted,
    conversations_are_listed_last_written_first,
    runs_are_created_once_and_updated_by_compare_and_set,
    runs_are_listed_by_status_newest_first,
    a_sessions_runs_are_listed_newest_first,
    runs_are_deleted_with_their_events,
    a_large_run_state_round_trips,
    events_are_read_from_any_sequence_number,
    an_event_batch_with_a_taken_sequence_number_writes_nothing,
    a_reader_tails_events_appended_by_another_handle,
    values_beyond_the_databases_range_are_refused,
);

async fn conversations_append_and_load(mut fixture: Fixture) {
    let store = fixture.open().await;
    assert!(store.load_conversation("c1").await.unwrap().is_none());
    let call = ToolCall::new("call_1", "weather", json!({"city": "Lisbon"}));
    let result = ToolResult {
        call_id: "call_1".into(),
        parts: vec![ToolOutputPart::text("Sunny")],
        is_error: false,
    };
    let tricky = vec![
        Message::user("NUL \u{0} byte, emoji 🦀, quote \" and backslash \\"),
        Message::new(Role::Assistant, vec![ContentPart::ToolCall(call)]),
        Message::new(Role::Tool, vec![ContentPart::ToolResult(result)]),
        Message::assistant("It is sunny."),
    ];
    assert_eq!(store.append_turn("c1", 0, &tricky).await.unwrap(), 1);
    assert_eq!(store.append_turn("c1", 1, &turn(2)).await.unwrap(), 2);
    assert_eq!(store.append_turn("c2", 0, &turn(9)).await.unwrap(), 1);

    // Another handle (another pool, as another process) reads the same.
    let other = fixture.open().await;
    let chat = other.load_conversation("c1").await.unwrap().unwrap();
    assert_eq!(chat.id, "c1");
    assert_eq!(chat.version, 2);
    let mut expected = tricky.clone();
    expected.extend(turn(2));
    assert_eq!(chat.messages, expected);
    assert_eq!(
        other.load_conversation("c2").await.unwrap().unwrap().messages,
        turn(9)
    );
}

async fn a_stale_version_is_a_conflict_and_writes_nothing(mut fixture: Fixture) {
    let store = fixture.open().await;
    store.append_turn("c", 0, &turn(1)).await.unwrap();
    // Loaded version 0 too: refused.
    let error = store.append_turn("c", 0, &turn(2)).await.unwrap_err();
    assert!(error.is_conflict(), "{error}");
    assert!(
        error.to_string().contains("expected version 0, the store has 1"),
        "{error}"
    );
    // A version from the future: refused too (never a gap).
    let error = store.append_turn("c", 5, &turn(2)).await.unwrap_err();
    assert!(error.is_conflict(), "{error}");
    // A conversation that does not exist has version 0.
    let error = store.append_turn("new", 1, &turn(2)).await.unwrap_err();
    assert!(error.to_string().contains("the store has none"), "{error}");

    let chat = store.load_conversation("c").await.unwrap().unwrap();
    assert_eq!((chat.version, chat.messages), (1, turn(1)));
    assert!(store.load_conversation("new").await.unwrap().is_none());
}

/// Eight writers load the same version, wait for each other at a barrier,
/// then append: exactly one wins; the others reload and retry until their
/// turn is in. Every turn is stored exactly once.
async fn concurrent_appends_one_wins_none_lost(mut fixture: Fixture) {
    const WRITERS: usize = 8;
    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = fixture.open().await;
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            let loaded = store
                .load_conversation("shared")
                .await
                .unwrap()
                .map_or(0, |c| c.version);
            barrier.wait().await;
            let first = store.append_turn("shared", loaded, &turn(writer)).await;
            let won = first.is_ok();
            if let Err(error) = first {
                assert!(error.is_conflict(), "{error}");
                loop {
                    let version = store
                        .load_conversation("shared")
                        .await
                        .unwrap()
                        .map_or(0, |c| c.version);
                    match store.append_turn("shared", version, &turn(writer)).await {
                        Ok(_) => break,
                        Err(error) if error.is_conflict() => continue,
                        Err(error) => panic!("{error}"),
                    }
                }
            }
            won
        }));
    }
    let mut winners = 0;
    for task in tasks {
        winners += usize::from(task.await.unwrap());
    }
    assert_eq!(winners, 1, "exactly one writer of version 1");
    let chat = fixture
        .open()
        .await
        .load_conversation("shared")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(chat.version, WRITERS as u64);
    let mut answers: Vec<String> = chat.messages.chunks(2).map(|pair| pair[1].text()).collect();
    answers.sort();
    let mut expected: Vec<String> = (0..WRITERS).map(|n| format!("answer {n}")).collect();
    expected.sort();
    assert_eq!(answers, expected, "each turn exactly once, each turn whole");
}

async fn conversations_are_deleted(mut fixture: Fixture) {
    let store = fixture.open().await;
    store.append_turn("c", 0, &turn(1)).await.unwrap();
    store.append_turn("c", 1, &turn(2)).await.unwrap();
    assert!(store.delete_conversation("c").await.unwrap());
    assert!(!store.delete_conversation("c").await.unwrap());
    assert!(store.load_conversation("c").await.unwrap().is_none());
    // A writer that loaded it before the delete is refused; a new one starts at 0.
    assert!(
        store
            .append_turn("c", 2, &turn(3))
            .await
            .unwrap_err()
            .is_conflict()
    );
    assert_eq!(store.append_turn("c", 0, &turn(3)).await.unwrap(), 1);
}

async fn conversations_are_listed_last_written_first(mut fixture: Fixture) {
    let store = fixture.open().await;
    assert!(store.list_conversations(10).await.unwrap().is_empty());
    // Writes a few milliseconds apart, so each has a time of its own.
    for (id, version) in [("a", 0), ("b", 0), ("a", 1), ("c", 0)] {
        store.append_turn(id, version, &turn(1)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let listed = fixture.open().await.list_conversations(10).await.unwrap();
    let seen: Vec<(&str, u64)> = listed.iter().map(|c| (c.id.as_str(), c.version)).collect();
    assert_eq!(seen, [("c", 1), ("a", 2), ("b", 1)]);
    assert!(listed[0].updated_at >= listed[1].updated_at && listed[1].updated_at > listed[2].updated_at);
    assert_eq!(store.list_conversations(1).await.unwrap().len(), 1);
}

async fn runs_are_deleted_with_their_events(mut fixture: Fixture) {
    let store = fixture.open().await;
    store.create_run(&RunRecord::new("r1", "support")).await.unwrap();
    store.create_run(&RunRecord::new("r2", "support")).await.unwrap();
    for run in ["r1", "r2"] {
        store
            .append_events(
                run,
                &[
                    (0, json!({"type": "run_started"})),
                    (1, json!({"type": "finished"})),
                ],
            )
            .await
            .unwrap();
    }
    assert!(store.delete_run("r1").await.unwrap());
    assert!(!store.delete_run("r1").await.unwrap());
    assert!(store.load_run("r1").await.unwrap().is_none());
    assert!(store.read_events("r1", None, 10).await.unwrap().is_empty());
    // A writer that loaded it before is refused; the other run is untouched.
    let stale = RunRecord::new("r1", "support").with_status(RunStatus::Completed);
    assert!(store.update_run(&stale, 1).await.unwrap_err().is_conflict());
    assert!(store.load_run("r2").await.unwrap().is_some());
    assert_eq!(store.read_events("r2", None, 10).await.unwrap().len(), 2);
}

async fn runs_are_created_once_and_updated_by_compare_and_set(mut fixture: Fixture) {
    let store = fixture.open().await;
    let run = RunRecord::new("r1", "support")
        .with_session("c1")
        .with_owner("worker-1")
        .with_state(json!({"step": 1}));
    store.create_run(&run).await.unwrap();
    let error = store.create_run(&run).await.unwrap_err();
    assert!(
        error.is_conflict() && error.to_string().contains("exists already"),
        "{error}"
    );

    let loaded = store.load_run("r1").await.unwrap().unwrap();
    assert_eq!(loaded.version, 1);
    assert_eq!(
        (loaded.agent.as_str(), loaded.session.as_deref()),
        ("support", Some("c1"))
    );
    assert_eq!(loaded.state, Some(json!({"step": 1})));
    assert_eq!(loaded.status, RunStatus::Running);
    assert!(loaded.created_at > 0 && loaded.updated_at >= loaded.created_at);

    let mut next = loaded
        .clone()
        .with_status(RunStatus::AwaitingApproval)
        .with_state(json!({"step": 2}));
    assert_eq!(store.update_run(&next, 1).await.unwrap(), 2);
    // Another writer that read version 1 is refused and changes nothing.
    next.status = RunStatus::Cancelled;
    let error = store.update_run(&next, 1).await.unwrap_err();
    assert!(
        error.to_string().contains("expected version 1, the store has 2"),
        "{error}"
    );
    let stored = store.load_run("r1").await.unwrap().unwrap();
    assert_eq!((stored.version, stored.status), (2, RunStatus::AwaitingApproval));
    assert_eq!(stored.state, Some(json!({"step": 2})));
    assert_eq!(stored.created_at, loaded.created_at, "created_at is kept");

    let mut done = stored.with_status(RunStatus::Completed);
    done.state = None;
    done.result = Some(json!({"text": "done"}));
    assert_eq!(store.update_run(&done, 2).await.unwrap(), 3);
    let finished = store.load_run("r1").await.unwrap().unwrap();
    assert_eq!(
        (finished.state, finished.result),
        (None, Some(json!({"text": "done"})))
    );

    let missing = RunRecord::new("nope", "a");
    assert!(store.update_run(&missing, 1).await.unwrap_err().is_conflict());
    assert!(store.load_run("nope").await.unwrap().is_none());
}

async fn runs_are_listed_by_status_newest_first(mut fixture: Fixture) {
    let store = fixture.open().await;
    for (id, status) in [
        ("a", RunStatus::Running),
        ("b", RunStatus::AwaitingApproval),
        ("c", RunStatus::AwaitingApproval),
        ("d", RunStatus::Completed),
    ] {
        store.create_run(&RunRecord::new(id, "agent")).await.unwrap();
        if status != RunStatus::Running {
            let run = store.load_run(id).await.unwrap().unwrap().with_status(status);
            store.update_run(&run, 1).await.unwrap();
        }
        // Distinct milliseconds, so "newest first" is defined.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let waiting: Vec<String> = store
        .list_runs(Some(RunStatus::AwaitingApproval), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(waiting, ["c", "b"]);
    let all: Vec<String> = store
        .list_runs(None, 3)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(all, ["d", "c", "b"]);
    assert!(
        store
            .list_runs(Some(RunStatus::Failed), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_sessions_runs_are_listed_newest_first(mut fixture: Fixture) {
    let store = fixture.open().await;
    for (id, session) in [
        ("a", Some("chat-1")),
        ("b", None),
        ("c", Some("chat-2")),
        ("d", Some("chat-1")),
    ] {
        let mut run = RunRecord::new(id, "agent");
        if let Some(session) = session {
            run = run.with_session(session);
        }
        store.create_run(&run).await.unwrap();
        // Distinct milliseconds, so "newest first" is defined.
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    // Updating an older run does not make it newer: creation orders them.
    let a = store.load_run("a").await.unwrap().unwrap();
    store
        .update_run(&a.with_status(RunStatus::Completed), 1)
        .await
        .unwrap();
    let ids = |runs: Vec<RunRecord>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(store.session_runs("chat-1", 10).await.unwrap()), ["d", "a"]);
    assert_eq!(ids(store.session_runs("chat-1", 1).await.unwrap()), ["d"]);
    assert_eq!(ids(store.session_runs("chat-2", 10).await.unwrap()), ["c"]);
    assert!(store.session_runs("chat-9", 10).await.unwrap().is_empty());
}

/// A state of about 20 KB, shaped like a paused run's.
pub fn big_state() -> Value {
    let messages: Vec<Value> = (0..40)
        .map(|i| {
            json!({
                "role": if i % 2 == 0 { "user" } else { "assistant" },
                "content": [{"type": "text", "text": format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(16))}],
            })
        })
        .collect();
    json!({
        "format": 1,
        "messages": messages,
        "pending": [{"id": "call_7", "name": "bash", "input": {"command": "rm -rf build"}}],
        "usage": {"input_tokens": 12345, "output_tokens": 678},
        "step": 7,
    })
}

async fn a_large_run_state_round_trips(mut fixture: Fixture) {
    let store = fixture.open().await;
    let state = big_state();
    assert!(serde_json::to_string(&state).unwrap().len() > 18_000);
    store
        .create_run(&RunRecord::new("big", "agent").with_state(state.clone()))
        .await
        .unwrap();
    assert_eq!(store.load_run("big").await.unwrap().unwrap().state, Some(state));
}

async fn events_are_read_from_any_sequence_number(mut fixture: Fixture) {
    let store = fixture.open().await;
    let events: Vec<(u64, Value)> = (1..=10)
        .map(|n| (n, json!({"type": "text_delta", "n": n})))
        .collect();
    store.append_events("r", &events[..4]).await.unwrap();
    store.append_events("r", &events[4..]).await.unwrap();
    store.append_events("other", &[(1, json!("x"))]).await.unwrap();
    store.append_events("r", &[]).await.unwrap();

    assert_eq!(store.read_events("r", None, 100).await.unwrap(), events);
    assert_eq!(store.read_events("r", Some(7), 100).await.unwrap(), events[7..]);
    assert_eq!(store.read_events("r", Some(2), 3).await.unwrap(), events[2..5]);
    assert!(store.read_events("r", Some(10), 100).await.unwrap().is_empty());
    assert!(store.read_events("none", None, 100).await.unwrap().is_empty());
    // Sequence numbers need not be contiguous; 0 is one too.
    store
        .append_events("gaps", &[(0, json!(0)), (5, json!(5)), (9, json!(9))])
        .await
        .unwrap();
    let after_zero: Vec<u64> = store
        .read_events("gaps", Some(0), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(after_zero, [5, 9]);
}

async fn an_event_batch_with_a_taken_sequence_number_writes_nothing(mut fixture: Fixture) {
    let store = fixture.open().await;
    store
        .append_events("r", &[(1, json!(1)), (2, json!(2))])
        .await
        .unwrap();
    let error = store
        .append_events("r", &[(3, json!(3)), (2, json!("again")), (4, json!(4))])
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error}");
    let error = store
        .append_events("r", &[(5, json!(5)), (5, json!(5))])
        .await
        .unwrap_err();
    assert!(
        error.is_conflict(),
        "a batch repeating a sequence number: {error}"
    );
    assert_eq!(
        store.read_events("r", None, 10).await.unwrap(),
        [(1, json!(1)), (2, json!(2))]
    );
}

/// A reader subscribed on one handle sees what another handle appends (on
/// PostgreSQL through NOTIFY, on SQLite by its poll), in order, each event
/// once, and stops at `finished`.
async fn a_reader_tails_events_appended_by_another_handle(mut fixture: Fixture) {
    let reader_store = fixture.open().await;
    let writer_store = fixture.open().await;
    let mut subscription = reader_store.subscribe_events("live").await.unwrap();
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut last = None;
        loop {
            for (seq, event) in reader_store.read_events("live", last, 100).await.unwrap() {
                last = Some(seq);
                seen.push(seq);
                if event["type"] == "finished" {
                    return seen;
                }
            }
            subscription.wait().await;
        }
    });
    for batch in [vec![1, 2], vec![3], vec![4, 5, 6]] {
        let events: Vec<(u64, Value)> = batch
            .iter()
            .map(|&n| (n, json!({"type": if n == 6 { "finished" } else { "text_delta" }})))
            .collect();
        writer_store.append_events("live", &events).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the reader saw `finished`")
        .unwrap();
    assert_eq!(seen, [1, 2, 3, 4, 5, 6]);
    // The plain wait resolves too (a wake or the poll).
    tokio::time::timeout(Duration::from_secs(30), async {
        let waiting = writer_store.wait_for_events("live");
        tokio::pin!(waiting);
        tokio::select! {
            () = &mut waiting => {}
            () = async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                writer_store.append_events("live", &[(7, json!({}))]).await.unwrap();
                std::future::pending::<()>().await
            } => {}
        }
    })
    .await
    .expect("wait_for_events resolved");
}

async fn values_beyond_the_databases_range_are_refused(mut fixture: Fixture) {
    let store = fixture.open().await;
    let error = store
        .append_events("r", &[(u64::MAX, json!(1))])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::Invalid(_)), "{error}");
    let error = store.append_turn("", 0, &turn(1)).await.unwrap_err();
    assert!(matches!(error, StoreError::Invalid(_)), "{error}");
    assert!(store.read_events("r", None, 10).await.unwrap().is_empty());
}
