//! `PausedRuns`: a run paused on its approvals, parked in a store, claimed
//! once by one of two processes racing for it (a barrier starts them
//! together), resumed from the stored state, finished or parked again;
//! against memory, SQLite and PostgreSQL, with a scripted model (this
//! tests the bookkeeping, not a model).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::Fixture;
use loopwright_core::approval::{ApprovalPolicy, ApprovalTier};
use loopwright_core::{Agent, Approvals, RunError, RunState, tool_fn};
use loopwright_store::{PausedError, PausedRuns, RunStatus};
use loopwright_testing::{ScriptedModel, ScriptedStep};

per_backend!(
    a_parked_run_is_claimed_once_and_resumed_from_the_store,
    a_run_that_asks_again_is_parked_again_and_a_release_gives_it_back,
);

#[derive(serde::Deserialize, loopwright_core::schemars::JsonSchema)]
#[schemars(crate = "loopwright_core::schemars")]
struct Note {
    text: String,
}

/// An agent whose `note` tool always asks, over `steps`; the tool's runs.
fn agent(steps: Vec<ScriptedStep>) -> (Agent, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let note = tool_fn("note", "Keep a note.", move |note: Note| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, loopwright_core::ToolError>(format!("noted {}", note.text))
        }
    });
    let approvals = Approvals::defer().policy(ApprovalPolicy::default().default_tier(ApprovalTier::Always));
    let model = ScriptedModel::new(steps);
    let agent = Agent::builder(Arc::new(model))
        .name("notes")
        .tool(note)
        .approvals(approvals)
        .build();
    (agent, runs)
}

fn note_call(id: &str) -> ScriptedStep {
    ScriptedStep::tool_calls(&[(id, "note", r#"{"text": "green"}"#)])
}

/// Run `agent` until it pauses; its state.
async fn paused(agent: &Agent) -> RunState {
    match agent.run("note it").await {
        Err(RunError::AwaitingApproval { state, .. }) => *state,
        other => panic!("{:?}", other.map(|r| r.text)),
    }
}

async fn a_parked_run_is_claimed_once_and_resumed_from_the_store(mut fixture: Fixture) {
    let (agent, runs) = agent(vec![note_call("c1"), ScriptedStep::text("Noted.")]);
    let state = paused(&agent).await;
    let id = PausedRuns::new(fixture.open().await)
        .park("notes", &state)
        .await
        .unwrap();

    // Another process reads what it waits for, then two race to claim it.
    let elsewhere = PausedRuns::new(fixture.open().await);
    assert_eq!(elsewhere.load(&id).await.unwrap().pending()[0].call_id, "c1");
    let start = Arc::new(tokio::sync::Barrier::new(2));
    let racers: Vec<_> = (0..2)
        .map(|_| {
            let (paused, start, id) = (elsewhere.clone(), start.clone(), id.clone());
            tokio::spawn(async move {
                start.wait().await;
                paused.claim(&id).await
            })
        })
        .collect();
    let mut claims = Vec::new();
    for racer in racers {
        claims.push(racer.await.unwrap());
    }
    let (won, lost): (Vec<_>, Vec<_>) = claims.into_iter().partition(Result::is_ok);
    assert_eq!((won.len(), lost.len()), (1, 1));
    assert!(matches!(lost[0], Err(PausedError::Taken { .. })), "{:?}", lost[0]);
    let claimed = won.into_iter().next().unwrap().unwrap();
    assert_eq!(claimed.state(), &state, "the state parked is the state resumed");

    let resumed = agent
        .resume(claimed.state().clone())
        .approve("c1")
        .run()
        .await
        .unwrap();
    let result = resumed.await.unwrap();
    claimed.finish(&result).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved call ran once");
    let store = fixture.open().await;
    let record = store.load_run(&id).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Completed);
    assert_eq!(record.result.unwrap()["text"], "Noted.");
    assert!(record.state.is_none());
    // Finished: nothing to claim any more.
    let again = elsewhere.claim(&id).await.unwrap_err();
    assert!(
        matches!(
            again,
            PausedError::NotPaused {
                status: RunStatus::Completed,
                ..
            }
        ),
        "{again}"
    );
    assert!(matches!(
        elsewhere.claim("run_none").await,
        Err(PausedError::NotFound { .. })
    ));
}

async fn a_run_that_asks_again_is_parked_again_and_a_release_gives_it_back(mut fixture: Fixture) {
    let (agent, runs) = agent(vec![
        note_call("c1"),
        note_call("c2"),
        ScriptedStep::text("Both noted."),
    ]);
    let paused_runs = PausedRuns::new(fixture.open().await);
    let id = paused_runs.park("notes", &paused(&agent).await).await.unwrap();

    // A claim given back is claimable again.
    paused_runs.claim(&id).await.unwrap().release().await.unwrap();
    let claimed = paused_runs.claim(&id).await.unwrap();
    let resumed = agent
        .resume(claimed.state().clone())
        .approve("c1")
        .run()
        .await
        .unwrap();
    let result = resumed.await.or_else(RunError::into_result).unwrap();
    claimed.finish(&result).await.unwrap();

    // It asked about c2: parked again under the same id, with the new state.
    let state = paused_runs.load(&id).await.unwrap();
    assert_eq!(state.pending()[0].call_id, "c2");
    let claimed = paused_runs.claim(&id).await.unwrap();
    let resumed = agent
        .resume(claimed.state().clone())
        .approve("c2")
        .run()
        .await
        .unwrap();
    claimed.finish(&resumed.await.unwrap()).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let record = fixture.open().await.load_run(&id).await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.result.unwrap()["text"].clone()),
        (RunStatus::Completed, "Both noted.".into())
    );
}
