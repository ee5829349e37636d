//! The SQL both back ends run, written once ([`Statements`]), and the few
//! places where SQLite and PostgreSQL differ ([`Dialect`]).
//!
//! Invariant: a statement is the same text on both databases but for the
//! dialect's fragments. Parameters are `$1`, `$2`, ... everywhere (sqlx's
//! SQLite driver binds `$N` to the N-th argument, as PostgreSQL does), so a
//! statement binds its arguments in one order whichever database runs it;
//! flags are SQL booleans (`TRUE`, `NOT released`), which SQLite keeps as 1
//! and 0. What is more than a fragment (how a batch of events is appended
//! and announced, how old runs are swept, how a reader hears of appends) is
//! a method of [`SqlBackend`](crate::backend::SqlBackend), written in each
//! back end's own module.

use std::sync::Arc;

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use crate::migrations::Step;

/// What differs between the two databases' SQL.
#[derive(Debug)]
pub(crate) struct Dialect {
    /// `sqlite` or `postgres`, as errors name it.
    pub(crate) backend: &'static str,
    /// Starts a transaction that writes. SQLite's `BEGIN IMMEDIATE` takes
    /// the write lock at once, so writers (in this process or another)
    /// queue on the busy timeout instead of failing when a read lock cannot
    /// be upgraded.
    pub(crate) begin_write: &'static str,
    /// Replaces `{json}` after a JSON parameter: PostgreSQL's JSON columns
    /// are `json`, to which the text is cast; SQLite's are `TEXT`.
    pub(crate) json_in: &'static str,
    /// Replaces `{text}` after a JSON column, to read it back as text.
    pub(crate) json_out: &'static str,
    /// The 64-bit integer type of the migrations table (`INTEGER` on
    /// SQLite: its `INTEGER PRIMARY KEY` is the row id).
    pub(crate) bigint: &'static str,
    /// Run first in the migrations' transaction: on PostgreSQL, a lock that
    /// makes concurrent first opens wait for each other (SQLite's
    /// `BEGIN IMMEDIATE` does it there).
    pub(crate) migrations_lock: Option<&'static str>,
    /// Run first in a transaction that writes chains' turns: on PostgreSQL,
    /// a lock held shared by writers and exclusively by deleters, so a turn
    /// is never deleted while one continuing it is written (on SQLite every
    /// writer holds the write lock already).
    pub(crate) chains_lock: Option<ChainsLock>,
    /// The schema's migrations, in order (append-only: see
    /// [`migrations`](crate::migrations)).
    pub(crate) migrations: &'static [Step],
}

/// The statements taking the chains' lock, shared or not.
#[derive(Debug)]
pub(crate) struct ChainsLock {
    pub(crate) shared: &'static str,
    pub(crate) exclusive: &'static str,
}

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: Dialect = Dialect {
    backend: "sqlite",
    begin_write: "BEGIN IMMEDIATE",
    json_in: "",
    json_out: "",
    bigint: "INTEGER",
    migrations_lock: None,
    chains_lock: None,
    migrations: crate::migrations::SQLITE,
};

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: Dialect = Dialect {
    backend: "postgres",
    begin_write: "BEGIN",
    json_in: "::json",
    json_out: "::text",
    bigint: "BIGINT",
    // A key of our own ("loopwright" in ASCII, truncated to 63 bits).
    migrations_lock: Some("SELECT pg_advisory_xact_lock(7813577447718053746)"),
    // Another ("lwchains" in ASCII, 0x6c77_6368_6169_6e73).
    chains_lock: Some(ChainsLock {
        shared: "SELECT pg_advisory_xact_lock_shared(7815824978286833267)",
        exclusive: "SELECT pg_advisory_xact_lock(7815824978286833267)",
    }),
    migrations: crate::migrations::POSTGRES,
};

/// Declares [`Statements`], each statement with the parameters it binds (in
/// order) and what it does, in the text both dialects share.
macro_rules! statements {
    ($($(#[doc = $doc:literal])+ $name:ident = $text:expr;)+) => {
        /// Every statement of the shared logic, in one dialect.
        #[derive(Debug)]
        pub(crate) struct Statements {
            $($(#[doc = $doc])+ pub(crate) $name: SqlStr,)+
        }

        impl Statements {
            /// The statements in `dialect`.
            pub(crate) fn new(dialect: &Dialect) -> Self {
                Self { $($name: statement($text, dialect),)+ }
            }
        }
    };
}

/// The columns of a run, in the order [`sql::run`](crate::sql::run) reads
/// them.
macro_rules! select_run {
    ($($rest:literal)?) => {
        concat!(
            "SELECT id, agent, session, status, state{text}, result{text}, error{text}, owner, version, \
             created_at, updated_at FROM loopwright_runs"
            $(, " ", $rest)?
        )
    };
}

statements! {
    /// Conversation id: its turns' `(version, messages)`, in order.
    load_turns = "SELECT version, messages{text} FROM loopwright_conversation_turns WHERE conversation_id = $1 \
                  ORDER BY version";
    /// Conversation id, new version, messages, created_at, expected version:
    /// the turn is inserted only if the conversation is at the expected
    /// version (one statement, so one transaction; the primary key refuses a
    /// second writer of the same version).
    append_turn = "INSERT INTO loopwright_conversation_turns (conversation_id, version, messages, created_at) \
                   SELECT $1, $2, $3{json}, $4 WHERE (SELECT COALESCE(MAX(version), 0) \
                   FROM loopwright_conversation_turns WHERE conversation_id = $1) = $5";
    /// Conversation id: its newest version (`NULL`: none).
    turn_version = "SELECT MAX(version) FROM loopwright_conversation_turns WHERE conversation_id = $1";
    /// Limit: `(id, version, updated_at)` of each conversation, the one
    /// written last first.
    list_conversations = "SELECT conversation_id, MAX(version), MAX(created_at) \
                          FROM loopwright_conversation_turns GROUP BY conversation_id \
                          ORDER BY MAX(created_at) DESC, conversation_id LIMIT $1";
    /// Conversation id.
    delete_turns = "DELETE FROM loopwright_conversation_turns WHERE conversation_id = $1";

    /// Agent, session, status, state, result, error, owner, id, version,
    /// created_at (also the updated_at).
    create_run = "INSERT INTO loopwright_runs (agent, session, status, state, result, error, owner, id, version, \
                  created_at, updated_at) VALUES ($1, $2, $3, $4{json}, $5{json}, $6{json}, $7, $8, $9, $10, $10)";
    /// Run id.
    load_run = select_run!("WHERE id = $1");
    /// Agent, session, status, state, result, error, owner, updated_at, id,
    /// expected version: compare-and-set, bumping the version.
    update_run = "UPDATE loopwright_runs SET agent = $1, session = $2, status = $3, state = $4{json}, \
                  result = $5{json}, error = $6{json}, owner = $7, version = version + 1, updated_at = $8 \
                  WHERE id = $9 AND version = $10";
    /// Run id: its version.
    run_version = "SELECT version FROM loopwright_runs WHERE id = $1";
    /// Limit: the runs last written first.
    list_runs = select_run!("ORDER BY updated_at DESC, id LIMIT $1");
    /// Status, limit: the runs with that status last written first.
    list_runs_with_status = select_run!("WHERE status = $1 ORDER BY updated_at DESC, id LIMIT $2");
    /// Session, limit: the session's runs, the newest first.
    session_runs = select_run!("WHERE session = $1 ORDER BY created_at DESC, id DESC LIMIT $2");
    /// Run id.
    delete_run = "DELETE FROM loopwright_runs WHERE id = $1";
    /// Run id: its event log.
    delete_events = "DELETE FROM loopwright_events WHERE run_id = $1";

    /// Run id, after (a sequence number, -1 for all), limit: `(seq, event)`.
    read_events = "SELECT seq, event{text} FROM loopwright_events WHERE run_id = $1 AND seq > $2 \
                   ORDER BY seq LIMIT $3";

    /// Turn id, previous turn id (or `NULL`), messages, created_at: the
    /// turn's depth; no row when the previous turn is not stored (one
    /// statement: the previous turn read and the row written in one
    /// transaction). `CAST($2 AS TEXT)`: PostgreSQL cannot tell the type of
    /// a parameter only compared with `NULL`.
    put_turn = "INSERT INTO loopwright_chain_turns (id, previous, depth, messages, created_at) \
                SELECT $1, CAST($2 AS TEXT), COALESCE((SELECT depth FROM loopwright_chain_turns \
                WHERE id = CAST($2 AS TEXT)), 0) + 1, $3{json}, $4 WHERE CAST($2 AS TEXT) IS NULL \
                OR EXISTS (SELECT 1 FROM loopwright_chain_turns WHERE id = CAST($2 AS TEXT)) RETURNING depth";
    /// Turn id: its depth, unless released.
    chain_depth = "SELECT depth FROM loopwright_chain_turns WHERE id = $1 AND NOT released";
    /// Turn id, most turns: `(id, depth, messages)` back from the turn, the
    /// last first.
    walk_chain = "WITH RECURSIVE chain(id, previous, depth, messages, n) AS (\
                  SELECT id, previous, depth, messages, 1 FROM loopwright_chain_turns WHERE id = $1 \
                  UNION ALL SELECT t.id, t.previous, t.depth, t.messages, c.n + 1 FROM loopwright_chain_turns t \
                  JOIN chain c ON t.id = c.previous WHERE c.n < $2) \
                  SELECT id, depth, messages{text} FROM chain ORDER BY n";
    /// Turn id: marks it released (unless it was).
    release_turn = "UPDATE loopwright_chain_turns SET released = TRUE WHERE id = $1 AND NOT released";
    /// Turn id: the turn it continues (`NULL`: none) when the turn is
    /// released and no turn continues it, so that it goes; no row otherwise.
    releasable_turn = "SELECT previous FROM loopwright_chain_turns t WHERE id = $1 AND released \
                       AND NOT EXISTS (SELECT 1 FROM loopwright_chain_turns c WHERE c.previous = t.id)";
    /// Turn id.
    delete_turn = "DELETE FROM loopwright_chain_turns WHERE id = $1";
    /// Cutoff: releases the turns stored before it.
    release_turns_before = "UPDATE loopwright_chain_turns SET released = TRUE WHERE created_at < $1 \
                            AND NOT released";
    /// Deletes every released turn that no turn still held continues,
    /// directly or through released ones.
    collect_released = "WITH RECURSIVE kept(id) AS (\
                        SELECT previous FROM loopwright_chain_turns WHERE NOT released AND previous IS NOT NULL \
                        UNION SELECT t.previous FROM loopwright_chain_turns t JOIN kept k ON t.id = k.id \
                        WHERE t.previous IS NOT NULL) \
                        DELETE FROM loopwright_chain_turns WHERE released AND id NOT IN (SELECT id FROM kept)";
}

/// `text` in `dialect`, built once and shared by every call (a clone is a
/// reference count, never a copy).
fn statement(text: &str, dialect: &Dialect) -> SqlStr {
    let text = text
        .replace("{json}", dialect.json_in)
        .replace("{text}", dialect.json_out);
    AssertSqlSafe(Arc::<str>::from(text)).into_sql_str()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// Every fragment is replaced (one left would be a syntax error at the
    /// first call, on one database only).
    #[test]
    fn statements_have_no_fragment_left() {
        let left = |text: &str| text.contains("{json}") || text.contains("{text}");
        #[cfg(feature = "sqlite")]
        {
            let text = format!("{:?}", Statements::new(&SQLITE));
            assert!(!left(&text) && !text.contains("::"), "{text}");
        }
        #[cfg(feature = "postgres")]
        {
            let text = format!("{:?}", Statements::new(&POSTGRES));
            assert!(
                !left(&text) && text.contains("$3::json") && text.contains("messages::text"),
                "{text}"
            );
        }
    }
}
