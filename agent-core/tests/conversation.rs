//! A conversation across turns: the history grows by each turn, survives a
//! JSON round trip between turns, and a turn that ended badly or was dropped
//! keeps the history's invariants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::{HANG_GUARD, TestTool, assert_history_invariant, object_schema};
use futures::StreamExt;
use loopwright_core::{Agent, AgentEvent, Conversation, ModelError, Role, RunError, ToolOutput};
use loopwright_testing::{ScriptedModel, ScriptedStep};

fn agent(model: &ScriptedModel) -> Agent {
    let tool = TestTool::new("note", object_schema(), |_, _| async {
        Ok(ToolOutput::text("noted"))
    });
    Agent::builder(Arc::new(model.clone())).tool(tool).build()
}

/// The conversation as the application would keep it between turns.
fn persisted(chat: &Conversation) -> Conversation {
    let json = serde_json::to_string(chat).unwrap();
    serde_json::from_str(&json).unwrap()
}

#[tokio::test]
async fn three_turns_saved_and_loaded_between_turns() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::text("Hello Ada."),
        ScriptedStep::tool_calls(&[("c1", "note", "{}")]),
        ScriptedStep::text("Noted."),
        ScriptedStep::text("Your name is Ada."),
    ]);
    let agent = agent(&model);
    let mut chat = Conversation::new();
    let first = chat.send(&agent, "My name is Ada.").await.unwrap();
    assert_eq!(first.text, "Hello Ada.");
    let mut chat = persisted(&chat);
    let second = chat.send(&agent, "Note that down.").await.unwrap();
    assert_eq!(second.text, "Noted.");
    let mut chat = persisted(&chat);
    let third = chat.send(&agent, "What is my name?").await.unwrap();
    assert_eq!(third.text, "Your name is Ada.");

    assert_eq!(chat.turns(), 3);
    // user, assistant | user, assistant(call), tool, assistant | user, assistant
    let roles: Vec<Role> = chat.messages().iter().map(|m| m.role).collect();
    use Role::{Assistant, Tool, User};
    assert_eq!(
        roles,
        [User, Assistant, User, Assistant, Tool, Assistant, User, Assistant]
    );
    assert_history_invariant(chat.messages());
    // Each request carried the whole history so far.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[3].messages.len(), 7);
    assert_eq!(requests[3].messages[0].text(), "My name is Ada.");
    assert_eq!(chat.usage().input_tokens, Some(40));
    assert_eq!(persisted(&chat), chat);
}

#[tokio::test]
async fn a_turn_read_as_a_stream_joins_the_conversation_when_it_ends() {
    let model = ScriptedModel::new(vec![ScriptedStep::text("Streamed.")]);
    let agent = agent(&model);
    let mut chat = Conversation::new();
    let mut turn = chat.send(&agent, "Hi");
    let mut text = String::new();
    while let Some(event) = tokio::time::timeout(HANG_GUARD, turn.next()).await.unwrap() {
        if let AgentEvent::TextDelta { text: t } = event {
            text.push_str(&t);
        }
    }
    // The result is still there to take after the stream ended.
    let result = turn.await.unwrap();
    assert_eq!((text.as_str(), result.text.as_str()), ("Streamed.", "Streamed."));
    assert_eq!(chat.turns(), 1);
    assert_eq!(chat.messages().len(), 2);

    // Without taking the result: ending the stream is enough.
    let model = ScriptedModel::new(vec![ScriptedStep::text("Again.")]);
    let agent = self::agent(&model);
    let mut turn = chat.send(&agent, "Again?");
    while turn.next().await.is_some() {}
    drop(turn);
    assert_eq!(chat.turns(), 2);
    assert_eq!(chat.messages().last().unwrap().text(), "Again.");
}

#[tokio::test]
async fn a_turn_that_failed_before_any_answer_leaves_the_history_to_send_again() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::text("Hello."),
        ScriptedStep::fail(ModelError::authentication(Some(401), "bad key")),
        ScriptedStep::text("Now it works."),
    ]);
    let agent = agent(&model);
    let mut chat = Conversation::new();
    let _ = chat.send(&agent, "Hi").await.unwrap();
    let before = chat.clone();
    let err = chat.send(&agent, "Still there?").await.unwrap_err();
    assert!(matches!(err, RunError::Model { .. }));
    assert_eq!(
        chat.messages(),
        before.messages(),
        "nothing happened, nothing is kept"
    );
    let again = chat.send(&agent, "Still there?").await.unwrap();
    assert_eq!(again.text, "Now it works.");
    assert_eq!(chat.turns(), 2);
    // The retried prompt is in the history once.
    let prompts = chat
        .messages()
        .iter()
        .filter(|m| m.text() == "Still there?")
        .count();
    assert_eq!(prompts, 1);
}

#[tokio::test]
async fn a_turn_that_failed_after_a_tool_ran_keeps_what_happened() {
    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "note", "{}")]),
        ScriptedStep::fail(ModelError::server(Some(500), "down")),
    ]);
    let agent = agent(&model);
    let mut chat = Conversation::new();
    let err = chat.send(&agent, "Note it.").await.unwrap_err();
    assert_eq!(err.result().unwrap().messages.len(), 2);
    // The tool ran: the history says so (prompt, call, result).
    assert_eq!(chat.messages().len(), 3);
    assert_history_invariant(chat.messages());
}

#[tokio::test]
async fn a_dropped_turn_leaves_the_conversation_as_it_was() {
    let model = ScriptedModel::new(vec![ScriptedStep::events(vec![]).then_hang()]);
    let agent = agent(&model);
    let mut chat = Conversation::new();
    let turn = chat.send(&agent, "Hi");
    drop(turn);
    assert!(chat.messages().is_empty());
    assert_eq!(chat.turns(), 0);
}
