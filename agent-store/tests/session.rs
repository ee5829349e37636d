//! `Session`: a conversation kept in a store by id, against memory, SQLite
//! and PostgreSQL, with a scripted model (this tests the session's
//! bookkeeping, not a model).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::Fixture;
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent};
use loopwright_store::{Session, SessionError};
use loopwright_testing::{ScriptedModel, ScriptedStep};

per_backend!(
    a_session_stores_each_turn,
    a_session_that_lost_a_race_keeps_its_result_and_retries,
    a_streamed_turn_is_stored_and_a_dropped_one_goes_with_the_next,
);

fn agent(answers: &[&str]) -> Agent {
    let steps = answers.iter().map(|a| ScriptedStep::text(*a)).collect();
    Agent::builder(Arc::new(ScriptedModel::new(steps))).build()
}

async fn a_session_stores_each_turn(mut fixture: Fixture) {
    let store = fixture.open().await;
    let agent = agent(&["Hello Ada.", "Your name is Ada."]);
    let mut chat = Session::load(store.clone(), "ada").await.unwrap();
    assert_eq!((chat.version(), chat.messages().len()), (0, 0));
    let first = chat.send(&agent, "My name is Ada.").await.unwrap();
    assert_eq!(first.text, "Hello Ada.");
    assert_eq!(chat.version(), 1);
    let _ = chat.send(&agent, "What is my name?").await.unwrap();
    assert_eq!(
        (chat.version(), chat.messages().len(), chat.unsaved().len()),
        (2, 4, 0)
    );

    // Loaded elsewhere (another pool, as another process would).
    let other = Session::load(fixture.open().await, "ada").await.unwrap();
    assert_eq!(other.version(), 2);
    assert_eq!(other.messages(), chat.messages());
    assert_eq!(other.messages()[3].text(), "Your name is Ada.");
}

async fn a_session_that_lost_a_race_keeps_its_result_and_retries(mut fixture: Fixture) {
    let mut mine = Session::load(fixture.open().await, "shared").await.unwrap();
    let mut theirs = Session::load(fixture.open().await, "shared").await.unwrap();
    let _ = theirs.send(&agent(&["theirs"]), "from them").await.unwrap();

    let error = mine.send(&agent(&["mine"]), "from me").await.unwrap_err();
    assert!(error.is_conflict(), "{error}");
    assert_eq!(
        error.result().map(|r| r.text.as_str()),
        Some("mine"),
        "the turn's result is kept"
    );
    assert!(matches!(error, SessionError::Store { .. }));
    assert_eq!(mine.unsaved().len(), 2, "the turn stays in memory, unsaved");
    assert_eq!(mine.version(), 0);

    mine.reload().await.unwrap();
    assert_eq!(mine.messages(), theirs.messages());
    let _ = mine.send(&agent(&["mine again"]), "from me").await.unwrap();
    assert_eq!(mine.version(), 2);

    let stored = fixture
        .open()
        .await
        .load_conversation("shared")
        .await
        .unwrap()
        .unwrap();
    let texts: Vec<String> = stored.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["from them", "theirs", "from me", "mine again"]);
}

async fn a_streamed_turn_is_stored_and_a_dropped_one_goes_with_the_next(mut fixture: Fixture) {
    let store = fixture.open().await;
    let agent = agent(&["one", "two", "three"]);
    let mut chat = Session::load(store.clone(), "s").await.unwrap();

    let mut turn = chat.send(&agent, "first");
    let mut text = String::new();
    let mut finished = false;
    while let Some(event) = turn.next().await {
        match event {
            AgentEvent::TextDelta { text: delta } => text.push_str(&delta),
            AgentEvent::Finished { .. } => finished = true,
            _ => {}
        }
    }
    assert!(finished);
    assert_eq!(text, "one");
    let _ = turn.await.unwrap();
    assert_eq!(chat.version(), 1);

    // Read to the end and dropped: in memory, not stored.
    let mut turn = chat.send(&agent, "second");
    while turn.next().await.is_some() {}
    drop(turn);
    assert_eq!(chat.unsaved().len(), 2);
    assert_eq!(store.load_conversation("s").await.unwrap().unwrap().version, 1);

    // The next turn stores both.
    let _ = chat.send(&agent, "third").await.unwrap();
    assert_eq!((chat.version(), chat.unsaved().len()), (2, 0));
    let stored = store.load_conversation("s").await.unwrap().unwrap();
    let texts: Vec<String> = stored.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["first", "one", "second", "two", "third", "three"]);
}
