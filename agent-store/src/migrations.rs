//! The schema's migrations, built in code (no files read at run time, no
//! `migrate!` macro), recorded in the table `loopwright_migrations`
//! (version, description, checksum, installed_at). sqlx's `Migrator` is not
//! used: it applies each migration in a transaction of its own without a
//! lock on SQLite, and its `run` future is not `Send` for every lifetime, so
//! `open()` could not be spawned.
//!
//! Invariant: all pending migrations and their records are applied in one
//! transaction that first takes the database's write lock (SQLite: `BEGIN
//! IMMEDIATE`; PostgreSQL: a transaction-scoped advisory lock), so concurrent
//! first opens wait for each other and the schema is whole or untouched. A
//! released migration's SQL never changes (its checksum is stored, and a
//! changed one is refused); a database with a migration this version does
//! not know is left alone ([`StoreError::NewerSchema`]).

// Every SQL text becomes an `SqlStr` before it reaches sqlx: a `&'static
// str` there makes the generic future fail the `Send` check `open()` needs.
use sqlx::{AssertSqlSafe, Connection, Database, Executor, IntoArguments, Row, SqlSafeStr};

use crate::dialect::Dialect;
use crate::error::{StoreError, from_sqlx};

/// The table recording applied migrations.
pub(crate) const TABLE: &str = "loopwright_migrations";

/// A migration: version, description, SQL (several statements).
pub(crate) type Step = (i64, &'static str, &'static str);

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: &[Step] = &[
    (1, "init", include_str!("migrations/sqlite/0001_init.sql")),
    (2, "chains", include_str!("migrations/sqlite/0002_chains.sql")),
    (
        3,
        "session runs",
        include_str!("migrations/sqlite/0003_session_runs.sql"),
    ),
];

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: &[Step] = &[
    (1, "init", include_str!("migrations/postgres/0001_init.sql")),
    (2, "chains", include_str!("migrations/postgres/0002_chains.sql")),
    (
        3,
        "session runs",
        include_str!("migrations/postgres/0003_session_runs.sql"),
    ),
];

/// Records an applied migration: version, description, checksum,
/// installed_at.
const RECORD: &str = "INSERT INTO loopwright_migrations (version, description, checksum, installed_at) \
                      VALUES ($1, $2, $3, $4)";

/// The newest version in `steps`.
pub(crate) fn newest(steps: &[Step]) -> i64 {
    steps.iter().map(|(version, ..)| *version).max().unwrap_or(0)
}

/// A stable checksum of a migration's SQL (FNV-1a, 64 bits, in hex): it
/// tells an edited migration from the one applied, nothing more.
fn checksum(sql: &str) -> String {
    let hash = sql.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Brings the schema on `connection` up to date (see the module's
/// invariant). A failure rolls back everything.
pub(crate) async fn run<DB>(connection: &mut DB::Connection, dialect: &Dialect) -> Result<(), StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    i64: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB>,
    String: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    for<'a> &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    let backend = dialect.backend;
    let mut transaction = connection
        .begin_with(dialect.begin_write.into_sql_str())
        .await
        .map_err(|e| from_sqlx(backend, e))?;
    // Dropped on an error: rolled back.
    apply::<DB>(&mut transaction, dialect).await?;
    transaction.commit().await.map_err(|e| from_sqlx(backend, e))
}

async fn apply<DB>(connection: &mut DB::Connection, dialect: &Dialect) -> Result<(), StoreError>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    i64: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB>,
    String: for<'r> sqlx::Decode<'r, DB> + sqlx::Type<DB>,
    for<'a> &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    let (backend, steps) = (dialect.backend, dialect.migrations);
    let fail = |e: sqlx::Error| from_sqlx(backend, e);
    if let Some(lock) = dialect.migrations_lock {
        connection.execute(lock.into_sql_str()).await.map_err(fail)?;
    }
    let int = dialect.bigint;
    let create_table = format!(
        "CREATE TABLE IF NOT EXISTS loopwright_migrations (version {int} PRIMARY KEY, \
         description TEXT NOT NULL, checksum TEXT NOT NULL, installed_at {int} NOT NULL)"
    );
    connection
        .execute(AssertSqlSafe(create_table).into_sql_str())
        .await
        .map_err(fail)?;
    let rows =
        sqlx::query("SELECT version, checksum FROM loopwright_migrations ORDER BY version".into_sql_str())
            .fetch_all(&mut *connection)
            .await
            .map_err(fail)?;
    let mut applied = Vec::with_capacity(rows.len());
    for row in &rows {
        let version: i64 = row
            .try_get(0)
            .map_err(|e| StoreError::corrupt(TABLE, e.to_string()))?;
        let sum: String = row
            .try_get(1)
            .map_err(|e| StoreError::corrupt(TABLE, e.to_string()))?;
        applied.push((version, sum));
    }
    if let Some((found, _)) = applied
        .iter()
        .find(|(version, _)| !steps.iter().any(|(v, ..)| v == version))
    {
        return Err(StoreError::NewerSchema {
            backend,
            found: *found,
            supported: newest(steps),
        });
    }
    for (version, description, sql) in steps {
        match applied.iter().find(|(v, _)| v == version) {
            Some((_, sum)) if *sum != checksum(sql) => {
                return Err(StoreError::corrupt(
                    format!("{TABLE} row {version}"),
                    "the migration applied to this database differs from this loopwright-store's",
                ));
            }
            Some(_) => {}
            None => {
                sqlx::raw_sql(sql.into_sql_str())
                    .execute(&mut *connection)
                    .await
                    .map_err(fail)?;
                sqlx::query(RECORD.into_sql_str())
                    .bind(*version)
                    .bind(*description)
                    .bind(checksum(sql).as_str())
                    .bind(crate::record::now_millis())
                    .execute(&mut *connection)
                    .await
                    .map_err(fail)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn checksums_are_stable() {
        // FNV-1a's published test vectors: a changed function would be
        // refused by every database migrated before.
        assert_eq!(super::checksum(""), "cbf29ce484222325");
        assert_eq!(super::checksum("a"), "af63dc4c8601ec8c");
        assert_eq!(super::checksum("foobar"), "85944171f73967e8");
    }
}
