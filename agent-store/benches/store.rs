//! What a store costs: appending a turn and loading a conversation of 10,
//! 100 and 1,000 messages, saving and loading a run state of about 20 KB, on
//! SQLite (a file in a temporary directory) and PostgreSQL (a throwaway
//! server on loopback, `fsync=off` as the tests run it: see BENCHMARKS.md);
//! and a whole turn of a conversation kept in memory against one kept in a
//! store (a scripted model: no network).
//!
//! `append_turn/N`: one turn (a prompt and an answer) appended to a
//! conversation of N messages; only the append is timed, and the turn is
//! deleted again untimed, so every append sees N messages. Run with
//! `cargo bench -p loopwright-store --bench store`, then
//! `python3 scripts/bench-summary.py store/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use loopwright_core::{Agent, Conversation, Message};
use loopwright_store::{RunRecord, Session, Store, StoreBuilder};
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

const LENGTHS: [usize; 3] = [10, 100, 1_000];

fn message(n: usize) -> Message {
    if n.is_multiple_of(2) {
        Message::user(format!(
            "Question {n}: what does the function on line {n} of src/lib.rs return when the input is empty?"
        ))
    } else {
        Message::assistant(format!(
            "Answer {n}: {}",
            "It returns an empty vector, because the loop never runs and the accumulator starts empty. "
                .repeat(6)
        ))
    }
}

/// `n` messages as turns of two (a prompt and an answer).
async fn fill(store: &dyn Store, id: &str, n: usize) {
    let messages: Vec<Message> = (0..n).map(message).collect();
    let mut version = 0;
    for pair in messages.chunks(2) {
        version = store.append_turn(id, version, pair).await.unwrap();
    }
}

/// A paused run's state of about 20 KB.
fn state() -> Value {
    let messages: Vec<Value> = (0..40)
        .map(|i| json!({"role": "assistant", "content": [{"type": "text", "text": format!("step {i}: {}", "the build failed in the linker stage; ".repeat(12))}]}))
        .collect();
    json!({"format": 1, "messages": messages, "pending": [{"id": "call_7", "name": "bash", "input": {"command": "cargo build"}}], "step": 7})
}

/// Deletes the turns after a version of a conversation (untimed).
type Trim = Box<dyn Fn(&Runtime, &str, u64) + Send + Sync>;

struct Backend {
    name: &'static str,
    store: Arc<dyn Store>,
    trim: Trim,
    _keep: Box<dyn std::any::Any>,
}

fn backends(rt: &Runtime) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite_url = format!("sqlite:{}", dir.path().join("bench.db").display());
    let sqlite_path = dir.path().join("bench.db");
    let sqlite = rt.block_on(loopwright_store::open(&sqlite_url)).unwrap();
    let raw_sqlite = rt
        .block_on(sqlx::SqlitePool::connect(&format!(
            "sqlite://{}",
            sqlite_path.display()
        )))
        .unwrap();

    let db = loopwright_test_support::database();
    let postgres = rt.block_on(StoreBuilder::new(db.url()).open()).unwrap();
    let raw_postgres = rt.block_on(sqlx::PgPool::connect(db.url())).unwrap();

    vec![
        Backend {
            name: "sqlite",
            store: sqlite,
            trim: Box::new(move |rt, id, version| {
                rt.block_on(
                    sqlx::query(
                        "DELETE FROM loopwright_conversation_turns WHERE conversation_id = ? AND version > ?",
                    )
                    .bind(id)
                    .bind(version as i64)
                    .execute(&raw_sqlite),
                )
                .unwrap();
            }),
            _keep: Box::new(dir),
        },
        Backend {
            name: "postgres",
            store: postgres,
            trim: Box::new(move |rt, id, version| {
                rt.block_on(
                    sqlx::query("DELETE FROM loopwright_conversation_turns WHERE conversation_id = $1 AND version > $2")
                        .bind(id)
                        .bind(version as i64)
                        .execute(&raw_postgres),
                )
                .unwrap();
            }),
            _keep: Box::new(db),
        },
    ]
}

fn bench_store(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backends = backends(&rt);
    let turn = [message(0), message(1)];

    let mut group = c.benchmark_group("store/append_turn");
    for backend in &backends {
        for n in LENGTHS {
            let id = format!("append-{n}");
            rt.block_on(fill(&*backend.store, &id, n));
            let version = (n / 2) as u64;
            group.bench_with_input(BenchmarkId::new(backend.name, n), &n, |b, _| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        rt.block_on(backend.store.append_turn(&id, version, &turn))
                            .unwrap();
                        timed += start.elapsed();
                        (backend.trim)(&rt, &id, version);
                    }
                    timed
                });
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("store/load_conversation");
    for backend in &backends {
        for n in LENGTHS {
            let id = format!("load-{n}");
            rt.block_on(fill(&*backend.store, &id, n));
            group.bench_with_input(BenchmarkId::new(backend.name, n), &n, |b, &n| {
                b.to_async(&rt).iter(|| async {
                    let chat = backend.store.load_conversation(&id).await.unwrap().unwrap();
                    assert_eq!(chat.messages.len(), n);
                    chat
                });
            });
        }
    }
    group.finish();

    let state = state();
    let mut group = c.benchmark_group("store/run_state");
    for backend in &backends {
        let run = RunRecord::new(format!("run-{}", backend.name), "bench").with_state(state.clone());
        rt.block_on(backend.store.create_run(&run)).unwrap();
        let version = std::sync::atomic::AtomicU64::new(1);
        group.bench_function(BenchmarkId::new("save", backend.name), |b| {
            b.to_async(&rt).iter(|| async {
                let expected = version.load(std::sync::atomic::Ordering::Relaxed);
                let next = backend.store.update_run(&run, expected).await.unwrap();
                version.store(next, std::sync::atomic::Ordering::Relaxed);
            });
        });
        group.bench_function(BenchmarkId::new("load", backend.name), |b| {
            b.to_async(&rt)
                .iter(|| async { backend.store.load_run(&run.id).await.unwrap().unwrap() });
        });
    }
    group.finish();

    // A whole turn (scripted model) on a conversation of 10 messages, in
    // memory and stored: what the store adds to a turn.
    let history: Vec<Message> = (0..10).map(message).collect();
    let agent = || Agent::builder(Arc::new(ScriptedModel::new(vec![ScriptedStep::text("Done.")]))).build();
    let mut group = c.benchmark_group("store/turn");
    group.bench_function("memory", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let (agent, mut chat) = (agent(), Conversation::from_messages(history.clone()));
                let start = Instant::now();
                std::hint::black_box(
                    rt.block_on(async { chat.send(&agent, "And the next one?").await })
                        .unwrap()
                        .steps,
                );
                timed += start.elapsed();
            }
            timed
        });
    });
    for backend in &backends {
        let next = std::sync::atomic::AtomicU64::new(0);
        group.bench_function(backend.name, |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let id = format!("turn-{}", next.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                    let agent = agent();
                    let mut chat = rt.block_on(async {
                        backend.store.append_turn(&id, 0, &history).await.unwrap();
                        Session::load(backend.store.clone(), id).await.unwrap()
                    });
                    let start = Instant::now();
                    std::hint::black_box(
                        rt.block_on(async { chat.send(&agent, "And the next one?").await })
                            .unwrap()
                            .steps,
                    );
                    timed += start.elapsed();
                }
                timed
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = bench_store
}
criterion_main!(benches);
