//! Remote agents made with A2A's official Python SDK (tests/clients/
//! a2a_server.py) called as tools by a loopwright agent whose model is an
//! OpenAI Chat server replaying the calls: an approval the remote task
//! asks for, answered through the run's `input_requested` event; a task
//! cancelled with the run; a card naming another origin refused; an agent
//! that does not stream, read until its task ends, a failure, and a
//! conversation that goes on in its context.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use loopwright_a2a::{A2aAgent, A2aAgents};
use loopwright_core::{Agent, AgentEvent, ToolOutputPart, ToolSet, ToolSource};
use loopwright_providers::OpenAiChatModel;
use loopwright_test_support::model_server::{ModelServer, sse};
use loopwright_types::{UserInputAnswer, UserInputKind};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const HANG_GUARD: Duration = Duration::from_secs(60);

/// The remote agent, `stream`ing or not; its URL and where it leaves marks.
struct Remote {
    url: String,
    marks: tempfile::TempDir,
    _child: tokio::process::Child,
}

async fn remote(mode: &str) -> Remote {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let marks = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(root.join("../tests-deps/python/clients/.venv/bin/python"))
        .arg(root.join("tests/clients/a2a_server.py"))
        .arg(mode)
        .arg(marks.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .expect("the A2A server never started")
        .unwrap()
        .expect("the A2A server ended");
    let url = serde_json::from_str::<Value>(&line).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    Remote {
        url,
        marks,
        _child: child,
    }
}

fn agent(model: &ModelServer, remote: &str) -> Agent {
    loopwright_providers::install_tls_provider();
    let provider = OpenAiChatModel::openai("gpt-4.1-nano")
        .base_url(model.base_url())
        .api_key("sk-test")
        .build()
        .unwrap();
    let clerk = A2aAgents::new().agent(A2aAgent::new("clerk", remote));
    Agent::builder(Arc::new(provider))
        .tools(ToolSet::builder().source(clerk).build())
        .build()
}

fn text(output: &[ToolOutputPart]) -> String {
    output
        .iter()
        .map(|p| match p {
            ToolOutputPart::Text { text } => text.clone(),
            ToolOutputPart::Json { value } => value.to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_tasks_question_is_answered_through_the_run_and_its_answer_comes_back() {
    let remote = remote("stream").await;
    let model = ModelServer::start(vec![
        sse::tool_call("a2a__clerk", json!({"message": "delete notes.txt"})).into(),
        sse::answer("The clerk deleted it.").into(),
    ])
    .await;
    let agent = agent(&model, &remote.url);
    let mut run = agent.run("Delete notes.txt through the clerk.");
    let mut asked = None;
    let mut result = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        match event {
            AgentEvent::InputRequested {
                request, responder, ..
            } => {
                asked = Some(request.clone());
                responder.respond(UserInputAnswer::Accept {
                    content: Some(json!({"approve": true})),
                });
            }
            AgentEvent::ToolResult { output, is_error, .. } => result = Some((is_error, text(&output))),
            _ => {}
        }
    }
    let outcome = run.await.unwrap();
    assert_eq!(outcome.text, "The clerk deleted it.");
    let asked = asked.expect("the remote task's question reached the run");
    assert_eq!(asked.source, "clerk");
    assert!(asked.message.contains("Approve deleting notes.txt?"), "{asked:?}");
    assert!(matches!(asked.kind, UserInputKind::Form { .. }));
    let (is_error, said) = result.unwrap();
    assert!(!is_error, "{said}");
    let said: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(said["answer"], "Deleted notes.txt.", "{said}");
    assert!(said["context_id"].is_string());
    // The tool the model saw: the card's description and skills.
    let tools = &model.bodies()[0]["tools"];
    assert_eq!(tools[0]["function"]["name"], "a2a__clerk", "{tools}");
    let description = tools[0]["function"]["description"].as_str().unwrap();
    assert!(description.contains("asks before deleting") && description.contains("file: Files a note."));
}

/// Wait until the remote agent wrote mark `name`; its text.
async fn mark(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    tokio::time::timeout(HANG_GUARD, async {
        loop {
            if let Ok(text) = std::fs::read_to_string(&path)
                && !text.is_empty()
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no mark {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_cancels_the_remote_task() {
    let remote = remote("stream").await;
    let model = ModelServer::start(vec![
        sse::tool_call("a2a__clerk", json!({"message": "slow"})).into(),
    ])
    .await;
    let agent = agent(&model, &remote.url);
    let mut run = agent.run("Take your time.");
    let mut task = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        if let AgentEvent::ToolProgress {
            message: Some(message),
            ..
        } = &event
            && message.contains("TASK_STATE_WORKING")
        {
            task = message
                .split(':')
                .next()
                .map(|t| t.trim_start_matches("task ").to_owned());
            run.cancel();
        }
    }
    let task = task.expect("the remote task's progress reached the run");
    assert_eq!(mark(remote.marks.path(), "cancelled").await.trim(), task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_naming_another_origin_is_refused() {
    let remote = remote("stream").await;
    let agents = A2aAgents::new().agent(A2aAgent::new("clerk", format!("{}/elsewhere", remote.url)));
    let e = agents.tools().await.err().unwrap().to_string();
    assert!(
        e.contains("another origin") && e.contains("http://localhost:"),
        "{e}"
    );
    let agents = A2aAgents::new().agent(A2aAgent::new("clerk", "http://127.0.0.1:9/nobody"));
    let e = agents.tools().await.err().unwrap().to_string();
    assert!(
        e.contains("clerk") && e.contains("http://127.0.0.1:9/nobody/.well-known/agent-card.json"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_does_not_stream_is_read_until_its_task_ends() {
    let remote = remote("poll").await;
    let model = ModelServer::start(vec![
        sse::tool_call("a2a__clerk", json!({"message": "file the memo"})).into(),
        sse::tool_call("a2a__clerk", json!({"message": "deny"})).into(),
        sse::answer("Done.").into(),
    ])
    .await;
    let agent = agent(&model, &remote.url);
    let mut run = agent.run("File the memo.");
    let mut results = Vec::new();
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        if let AgentEvent::ToolResult { output, is_error, .. } = event {
            results.push((is_error, text(&output)));
        }
    }
    assert_eq!(run.await.unwrap().text, "Done.");
    let first: Value = serde_json::from_str(&results[0].1).unwrap_or_else(|_| panic!("{results:?}"));
    assert_eq!(first["answer"], "Echo: file the memo (turn 1)", "{results:?}");
    assert!(results[1].0, "a failed task is an error result: {results:?}");
    assert!(
        results[1].1.contains("TASK_STATE_FAILED") && results[1].1.contains("No access to that."),
        "{results:?}"
    );

    // The context goes on: the remote agent counts this as turn 2.
    let model = ModelServer::start(vec![
        sse::tool_call(
            "a2a__clerk",
            json!({"message": "again", "context_id": first["context_id"]}),
        )
        .into(),
        sse::answer("Again.").into(),
    ])
    .await;
    let agent = self::agent(&model, &remote.url);
    let mut run = agent.run("Again.");
    let mut again = None;
    while let Some(event) = tokio::time::timeout(HANG_GUARD, run.next()).await.unwrap() {
        if let AgentEvent::ToolResult { output, .. } = event {
            again = Some(text(&output));
        }
    }
    let again: Value = serde_json::from_str(&again.unwrap()).unwrap();
    assert_eq!(again["answer"], "Echo: again (turn 2)");
}
