//! Chains of turns and deleting by age, the same test bodies against
//! memory, SQLite and a real PostgreSQL server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Fixture, turn};
use loopwright_store::{RunRecord, RunStatus, StoreError};
use serde_json::json;
use tokio::sync::Barrier;

per_backend!(
    chains_are_stored_once_and_read_back_whole,
    a_released_turn_stays_while_a_later_turn_reads_it,
    turns_expire_by_age_and_stay_while_a_later_turn_reads_them,
    runs_expire_by_age_with_their_logs_and_never_while_running,
    two_sweepers_at_once_delete_each_row_once,
);

fn now() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// A time after every write so far, and before every write from now on.
fn cutoff() -> i64 {
    let before = now();
    while now() <= before {
        std::thread::yield_now();
    }
    let cutoff = now();
    while now() <= cutoff {
        std::thread::yield_now();
    }
    cutoff
}

async fn chains_are_stored_once_and_read_back_whole(mut fixture: Fixture) {
    let store = fixture.open().await;
    assert_eq!(store.put_turn("r1", None, &turn(1)).await.unwrap(), 1);
    assert_eq!(store.put_turn("r2", Some("r1"), &turn(2)).await.unwrap(), 2);
    assert_eq!(store.put_turn("r3", Some("r2"), &turn(3)).await.unwrap(), 3);
    // A second chain from the same turn.
    assert_eq!(store.put_turn("b2", Some("r1"), &turn(9)).await.unwrap(), 2);
    let other = fixture.open().await;
    let chain = other.load_chain("r3", 100).await.unwrap().unwrap();
    assert_eq!((chain.id.as_str(), chain.turns), ("r3", 3));
    assert_eq!(chain.messages, [turn(1), turn(2), turn(3)].concat());
    assert_eq!(
        other.load_chain("b2", 100).await.unwrap().unwrap().messages,
        [turn(1), turn(9)].concat()
    );
    assert!(store.load_chain("nobody", 100).await.unwrap().is_none());
    // Bounded: a longer chain is refused, not read.
    let error = store.load_chain("r3", 2).await.unwrap_err();
    assert!(
        matches!(error, StoreError::Invalid(_)) && error.to_string().contains("3 turns"),
        "{error}"
    );
    // An id taken, a previous turn that is not there: conflicts, nothing written.
    assert!(
        store
            .put_turn("r2", Some("r1"), &turn(4))
            .await
            .unwrap_err()
            .is_conflict()
    );
    let error = store.put_turn("x", Some("missing"), &turn(4)).await.unwrap_err();
    assert!(
        error.is_conflict() && error.to_string().contains("\"missing\""),
        "{error}"
    );
    assert!(store.load_chain("x", 100).await.unwrap().is_none());
    assert!(matches!(
        store.put_turn("y", Some("y"), &turn(4)).await.unwrap_err(),
        StoreError::Invalid(_)
    ));
    assert!(matches!(
        store.put_turn("", None, &turn(4)).await.unwrap_err(),
        StoreError::Invalid(_)
    ));
    // Chains and conversations are apart: no id reaches the other.
    assert!(store.load_conversation("r1").await.unwrap().is_none());
    assert!(!store.delete_conversation("r1").await.unwrap());
    store.append_turn("c1", 0, &turn(5)).await.unwrap();
    assert!(store.load_chain("c1", 100).await.unwrap().is_none());
    assert_eq!(
        store.load_chain("r1", 100).await.unwrap().unwrap().messages,
        turn(1)
    );
}

async fn a_released_turn_stays_while_a_later_turn_reads_it(mut fixture: Fixture) {
    let store = fixture.open().await;
    store.put_turn("r1", None, &turn(1)).await.unwrap();
    store.put_turn("r2", Some("r1"), &turn(2)).await.unwrap();
    store.put_turn("r3", Some("r2"), &turn(3)).await.unwrap();
    store.put_turn("r4", Some("r2"), &turn(4)).await.unwrap();
    // A middle turn released: no chain's end any more, still read by the
    // chains that continue it.
    assert!(store.release_turn("r2").await.unwrap());
    assert!(!store.release_turn("r2").await.unwrap());
    assert!(store.load_chain("r2", 100).await.unwrap().is_none());
    assert_eq!(
        store.load_chain("r3", 100).await.unwrap().unwrap().messages,
        [turn(1), turn(2), turn(3)].concat()
    );
    // One of its continuations released: r2 stays for the other.
    assert!(store.release_turn("r3").await.unwrap());
    assert!(store.load_chain("r3", 100).await.unwrap().is_none());
    assert_eq!(
        store.load_chain("r4", 100).await.unwrap().unwrap().messages,
        [turn(1), turn(2), turn(4)].concat()
    );
    // The last one: r4 and r2 go; r1, held, stays.
    assert!(store.release_turn("r4").await.unwrap());
    let error = store.put_turn("r5", Some("r2"), &turn(5)).await.unwrap_err();
    assert!(error.is_conflict(), "r2 is deleted: {error}");
    assert_eq!(
        store.load_chain("r1", 100).await.unwrap().unwrap().messages,
        turn(1)
    );
    assert_eq!(store.expire_turns(0).await.unwrap(), 0, "nothing left to collect");
    assert!(store.release_turn("r1").await.unwrap());
    assert!(!store.release_turn("r1").await.unwrap(), "deleted");
    assert!(!store.release_turn("never").await.unwrap());
}

async fn turns_expire_by_age_and_stay_while_a_later_turn_reads_them(mut fixture: Fixture) {
    let store = fixture.open().await;
    store.put_turn("alone", None, &turn(0)).await.unwrap();
    store.put_turn("r1", None, &turn(1)).await.unwrap();
    store.put_turn("r2", Some("r1"), &turn(2)).await.unwrap();
    let cutoff = cutoff();
    store.put_turn("r3", Some("r2"), &turn(3)).await.unwrap();
    // Old turns: the one nothing continues goes; r1 and r2 stay for r3.
    assert_eq!(store.expire_turns(cutoff).await.unwrap(), 1);
    assert!(store.load_chain("alone", 100).await.unwrap().is_none());
    assert!(
        store.load_chain("r2", 100).await.unwrap().is_none(),
        "expired: no chain's end"
    );
    assert_eq!(
        store.load_chain("r3", 100).await.unwrap().unwrap().messages,
        [turn(1), turn(2), turn(3)].concat()
    );
    // Once r3 expires, the whole chain goes.
    assert_eq!(store.expire_turns(cutoff).await.unwrap(), 0);
    assert_eq!(store.expire_turns(self::cutoff()).await.unwrap(), 3);
    assert!(store.load_chain("r3", 100).await.unwrap().is_none());
    assert!(
        store
            .put_turn("r4", Some("r1"), &turn(4))
            .await
            .unwrap_err()
            .is_conflict()
    );
}

async fn runs_expire_by_age_with_their_logs_and_never_while_running(mut fixture: Fixture) {
    let store = fixture.open().await;
    for (id, status) in [
        ("done", RunStatus::Completed),
        ("failed", RunStatus::Failed),
        ("paused", RunStatus::AwaitingApproval),
        ("going", RunStatus::Running),
    ] {
        store.create_run(&RunRecord::new(id, "agent")).await.unwrap();
        store
            .update_run(&RunRecord::new(id, "agent").with_status(status), 1)
            .await
            .unwrap();
        store
            .append_events(id, &[(0, json!({"type": "step_started"}))])
            .await
            .unwrap();
    }
    let cutoff = cutoff();
    store
        .create_run(&RunRecord::new("new", "agent").with_status(RunStatus::Completed))
        .await
        .unwrap();
    // At most `limit` at a time, oldest first.
    assert_eq!(store.expire_runs(cutoff, 2).await.unwrap(), 2);
    assert_eq!(store.expire_runs(cutoff, 2).await.unwrap(), 1);
    assert_eq!(store.expire_runs(cutoff, 2).await.unwrap(), 0);
    for gone in ["done", "failed", "paused"] {
        assert!(store.load_run(gone).await.unwrap().is_none(), "{gone}");
        assert!(
            store.read_events(gone, None, 10).await.unwrap().is_empty(),
            "{gone}"
        );
    }
    assert_eq!(store.read_events("going", None, 10).await.unwrap().len(), 1);
    assert!(store.load_run("going").await.unwrap().is_some());
    assert!(store.load_run("new").await.unwrap().is_some());
}

async fn two_sweepers_at_once_delete_each_row_once(mut fixture: Fixture) {
    const RUNS: usize = 40;
    const CHAINS: usize = 10;
    const DEPTH: usize = 4;
    let first = fixture.open().await;
    let second = fixture.open().await;
    for i in 0..RUNS {
        let id = format!("run-{i}");
        first
            .create_run(&RunRecord::new(&id, "agent").with_status(RunStatus::Completed))
            .await
            .unwrap();
        first
            .append_events(&id, &[(0, json!({"n": i})), (1, json!({"n": i}))])
            .await
            .unwrap();
    }
    for chain in 0..CHAINS {
        for depth in 0..DEPTH {
            let previous = (depth > 0).then(|| format!("c{chain}-{}", depth - 1));
            first
                .put_turn(&format!("c{chain}-{depth}"), previous.as_deref(), &turn(depth))
                .await
                .unwrap();
        }
    }
    let cutoff = cutoff();
    let start = Arc::new(Barrier::new(2));
    let sweep = |store: Arc<dyn loopwright_store::Store>, start: Arc<Barrier>| async move {
        start.wait().await;
        let (mut runs, mut turns) = (0, 0);
        loop {
            let n = store.expire_runs(cutoff, 7).await.unwrap();
            runs += n;
            turns += store.expire_turns(cutoff).await.unwrap();
            if n < 7 {
                return (runs, turns);
            }
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(sweep(first.clone(), start.clone())),
        tokio::spawn(sweep(second, start))
    );
    let ((runs_a, turns_a), (runs_b, turns_b)) = (a.unwrap(), b.unwrap());
    assert_eq!(runs_a + runs_b, RUNS as u64);
    assert_eq!(turns_a + turns_b, (CHAINS * DEPTH) as u64);
    assert!(first.list_runs(None, 100).await.unwrap().is_empty());
    for i in 0..RUNS {
        assert!(
            first
                .read_events(&format!("run-{i}"), None, 10)
                .await
                .unwrap()
                .is_empty()
        );
    }
    assert!(first.load_chain("c0-3", 100).await.unwrap().is_none());
}
