//! The back ends every store test runs against, and a macro that makes one
//! test per back end from one generic test body.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use loopwright_core::Message;
use loopwright_store::{Store, StoreBuilder};
use loopwright_test_support::TempDatabase;

/// A fresh, empty store of one back end. `open()` gives another handle on
/// the same data (a new connection pool for SQL, as another process would
/// have; the same store for memory).
pub struct Fixture {
    pub url: String,
    memory: Option<Arc<dyn Store>>,
    _dir: Option<tempfile::TempDir>,
    _db: Option<TempDatabase>,
}

impl Fixture {
    pub fn memory() -> Self {
        Self {
            url: "memory:".into(),
            memory: None,
            _dir: None,
            _db: None,
        }
    }

    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            url: format!("sqlite:{}", dir.path().join("store.db").display()),
            memory: None,
            _dir: Some(dir),
            _db: None,
        }
    }

    pub fn postgres() -> Self {
        let db = loopwright_test_support::database();
        Self {
            url: db.url().to_owned(),
            memory: None,
            _dir: None,
            _db: Some(db),
        }
    }

    pub fn is_memory(&self) -> bool {
        self.url == "memory:"
    }

    pub async fn open(&mut self) -> Arc<dyn Store> {
        if self.is_memory() {
            return self
                .memory
                .get_or_insert_with(|| Arc::new(loopwright_store::MemoryStore::new()))
                .clone();
        }
        StoreBuilder::new(&self.url)
            .max_connections(4)
            .open()
            .await
            .unwrap_or_else(|e| panic!("open {}: {e}", self.url))
    }
}

/// `body(fixture)` for memory, SQLite and PostgreSQL: `mod memory`, `mod
/// sqlite` and `mod postgres`, each with one test per name.
#[macro_export]
macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::common::Fixture::memory()).await
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::common::Fixture::sqlite()).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::common::Fixture::postgres()).await
                }
            )*
        }
    };
}

/// A turn: a prompt and an answer.
pub fn turn(n: usize) -> Vec<Message> {
    vec![
        Message::user(format!("question {n}")),
        Message::assistant(format!("answer {n}")),
    ]
}
