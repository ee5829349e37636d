//! Bad input and faults: PostgreSQL stopped mid-use (a server of the test's
//! own, stopped and started again), a server that is not there, corrupt
//! rows, a schema from a newer version, a file that is not a database.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use loopwright_core::Agent;
use loopwright_store::{RunRecord, Session, SessionError, Store, StoreBuilder, StoreError};
use loopwright_test_support::TempPostgres;
use loopwright_testing::{ScriptedModel, ScriptedStep};
use serde_json::json;

fn turn(n: usize) -> Vec<loopwright_core::Message> {
    vec![
        loopwright_core::Message::user(format!("q{n}")),
        loopwright_core::Message::assistant(format!("a{n}")),
    ]
}

async fn open_quick(url: &str) -> Arc<dyn Store> {
    StoreBuilder::new(url)
        .acquire_timeout(Duration::from_secs(1))
        .open()
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_mid_use_is_unavailable_then_works_again() {
    let mut server = TempPostgres::start();
    let db = server.database();
    let store = open_quick(db.url()).await;
    let tail_store = open_quick(db.url()).await;
    store.append_turn("c", 0, &turn(1)).await.unwrap();
    store.create_run(&RunRecord::new("r", "agent")).await.unwrap();
    let mut tail = tail_store.subscribe_events("r").await.unwrap();
    let agent = Agent::builder(Arc::new(ScriptedModel::new(vec![ScriptedStep::text("kept")]))).build();
    let mut session = Session::load(store.clone(), "chat").await.unwrap();

    server.stop();
    for error in [
        store.append_turn("c", 1, &turn(2)).await.unwrap_err(),
        store.load_conversation("c").await.unwrap_err(),
        store.load_run("r").await.unwrap_err(),
        store.append_events("r", &[(1, json!(1))]).await.unwrap_err(),
        store.read_events("r", None, 10).await.unwrap_err(),
    ] {
        assert!(error.is_unavailable(), "{error:?}");
        assert!(
            error.to_string().starts_with("the postgres store is unavailable"),
            "{error}"
        );
    }
    // A turn whose store write fails says so and keeps its result.
    match session.send(&agent, "hello").await {
        Err(SessionError::Store { error, result }) => {
            assert!(error.is_unavailable(), "{error}");
            assert_eq!(result.text, "kept");
        }
        other => panic!("expected a store error, got {other:?}"),
    }
    assert_eq!(session.unsaved().len(), 2);

    server.restart();
    // Nothing half-written: the failed append is not there, the same one works now.
    assert_eq!(store.load_conversation("c").await.unwrap().unwrap().version, 1);
    assert_eq!(store.append_turn("c", 1, &turn(2)).await.unwrap(), 2);
    assert_eq!(session.save().await.unwrap(), 1);
    assert_eq!(
        store
            .load_conversation("chat")
            .await
            .unwrap()
            .unwrap()
            .messages
            .len(),
        2
    );
    // The other handle's listener is back: it hears this append.
    store
        .append_events("r", &[(1, json!({"type": "finished"}))])
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if !tail_store
                .read_events("r", None, 10)
                .await
                .map(|e| e.is_empty())
                .unwrap_or(true)
            {
                break;
            }
            tail.wait().await;
        }
    })
    .await
    .expect("the subscription woke after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_server_that_is_not_there_is_unavailable_at_open() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://postgres:secret@127.0.0.1:{port}/none");
    let error = StoreBuilder::new(&url)
        .acquire_timeout(Duration::from_secs(1))
        .open()
        .await
        .unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(!format!("{error:?}{error}").contains("secret"), "{error}");
}

#[tokio::test]
async fn bad_urls_are_typed_errors_that_say_what_is_wrong() {
    for (url, says) in [
        ("", "expected `memory:`"),
        ("redis://localhost", "unknown scheme \"redis\""),
        ("sqlite:", "no file"),
        ("postgres://u:pw@[::1/x", "invalid store URL"),
    ] {
        match loopwright_store::open(url).await {
            Err(error @ StoreError::InvalidUrl { .. }) => {
                assert!(error.to_string().contains(says), "{url}: {error}");
                assert!(!error.to_string().contains(":pw@"), "{error}");
            }
            other => panic!("{url}: {other:?}"),
        }
    }
}

/// Executes raw SQL against the database behind a store URL (to damage it).
async fn raw(url: &str, statements: &[&str]) {
    if let Some(path) = url.strip_prefix("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{path}"))
            .await
            .unwrap();
        for sql in statements {
            sqlx::raw_sql(sqlx::AssertSqlSafe(*sql))
                .execute(&pool)
                .await
                .unwrap();
        }
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        for sql in statements {
            sqlx::raw_sql(sqlx::AssertSqlSafe(*sql))
                .execute(&pool)
                .await
                .unwrap();
        }
        pool.close().await;
    }
}

async fn corrupt_rows_name_the_row(url: &str, postgres: bool) {
    let store = open_quick(url).await;
    store.append_turn("c1", 0, &turn(1)).await.unwrap();
    store.create_run(&RunRecord::new("r1", "agent")).await.unwrap();
    store.create_run(&RunRecord::new("r2", "agent")).await.unwrap();
    // A message of another shape (valid JSON, so PostgreSQL's json type
    // takes it); on SQLite also truncated JSON.
    let mut damage = vec![
        "INSERT INTO loopwright_conversation_turns VALUES ('c1', 2, '[{\"role\": \"martian\"}]', 0)",
        "UPDATE loopwright_runs SET status = 'exploded' WHERE id = 'r1'",
    ];
    if !postgres {
        damage.push("UPDATE loopwright_runs SET state = '{\"messages\": [1, 2' WHERE id = 'r2'");
        damage.push("INSERT INTO loopwright_events VALUES ('r1', 7, 'not json', 0)");
    }
    raw(url, &damage).await;

    let error = store.load_conversation("c1").await.unwrap_err();
    assert!(error.is_corrupt(), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("loopwright_conversation_turns row (conversation \"c1\", version 2)"),
        "{error}"
    );
    let error = store.load_run("r1").await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("loopwright_runs row \"r1\" (column status)"),
        "{error}"
    );
    assert!(error.to_string().contains("exploded"), "{error}");
    let error = store.list_runs(None, 10).await.unwrap_err();
    assert!(error.is_corrupt(), "{error}");
    if !postgres {
        let error = store.load_run("r2").await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("loopwright_runs row \"r2\" (column state)"),
            "{error}"
        );
        let error = store.read_events("r1", None, 10).await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("loopwright_events row (run \"r1\", seq 7)"),
            "{error}"
        );
    }
    // Other rows still read.
    assert!(store.load_conversation("other").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_corrupt_rows_are_typed_errors_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    corrupt_rows_name_the_row(&format!("sqlite:{}", dir.path().join("s.db").display()), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_corrupt_rows_are_typed_errors_naming_the_row() {
    let db = loopwright_test_support::database();
    corrupt_rows_name_the_row(db.url(), true).await;
}

async fn a_newer_schema_is_left_alone(url: &str, backend: &str) {
    open_quick(url).await;
    let sql = "INSERT INTO loopwright_migrations (version, description, checksum, installed_at) \
               VALUES (99, 'from the future', '0000000000000000', 0)";
    raw(url, &[sql]).await;
    match StoreBuilder::new(url).open().await {
        Err(StoreError::NewerSchema {
            backend: b,
            found: 99,
            supported: 3,
        }) => assert_eq!(b, backend),
        other => panic!("{other:?}"),
    }
    // A migration applied with other SQL than this version's: refused, named.
    raw(
        url,
        &[
            "DELETE FROM loopwright_migrations WHERE version = 99",
            "UPDATE loopwright_migrations SET checksum = 'x'",
        ],
    )
    .await;
    let error = StoreBuilder::new(url).open().await.unwrap_err();
    assert!(
        error.is_corrupt() && error.to_string().contains("loopwright_migrations row 1"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_schema_from_a_newer_version_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    a_newer_schema_is_left_alone(&format!("sqlite:{}", dir.path().join("s.db").display()), "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_schema_from_a_newer_version_is_a_typed_error() {
    let db = loopwright_test_support::database();
    a_newer_schema_is_left_alone(db.url(), "postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_sqlite_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(200)).unwrap();
    let error = loopwright_store::open(&format!("sqlite:{}", path.display()))
        .await
        .unwrap_err();
    assert!(error.is_corrupt(), "{error:?}");
    assert!(error.to_string().contains(&path.display().to_string()), "{error}");

    let missing = dir.path().join("no/such/dir/s.db");
    let error = loopwright_store::open(&format!("sqlite:{}", missing.display()))
        .await
        .unwrap_err();
    assert!(error.is_unavailable(), "{error:?}");
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );
}

/// Many first opens of one new file at once: all succeed, the schema is
/// made once (the migrations wait for each other's write lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_opens_of_a_sqlite_file_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("new.db").display());
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                loopwright_store::open(&url).await
            })
        })
        .collect();
    for open in opens {
        let store = open.await.unwrap().unwrap_or_else(|e| panic!("{e:?}"));
        store.load_conversation("c").await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_opens_of_a_postgres_database_all_succeed() {
    let db = loopwright_test_support::database();
    let barrier = Arc::new(tokio::sync::Barrier::new(6));
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let (url, barrier) = (db.url().to_owned(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                loopwright_store::open(&url).await
            })
        })
        .collect();
    for open in opens {
        let store = open.await.unwrap().unwrap_or_else(|e| panic!("{e:?}"));
        store.load_conversation("c").await.unwrap();
    }
}
