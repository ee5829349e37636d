//! The schema's migrations, built in code (no `migrate!` macro, no files
//! read at run time), recorded in the table `loopwright_migrations`.
//!
//! Invariant: a released migration's SQL never changes (its checksum is
//! stored, and a changed one is refused); a database with a migration this
//! version does not know is left alone ([`StoreError::NewerSchema`]).

use sqlx::SqlSafeStr;
use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType};

use crate::error::{StoreError, from_sqlx};

/// The table recording applied migrations.
pub(crate) const TABLE: &str = "loopwright_migrations";

/// A migration: version, description, SQL.
pub(crate) type Step = (i64, &'static str, &'static str);

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: &[Step] = &[(1, "init", include_str!("migrations/sqlite/0001_init.sql"))];

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: &[Step] = &[(1, "init", include_str!("migrations/postgres/0001_init.sql"))];

/// The migrations of `steps`.
fn migrations(steps: &[Step]) -> Vec<Migration> {
    steps
        .iter()
        .map(|(version, description, sql)| {
            Migration::new(
                *version,
                (*description).into(),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect()
}

/// The newest version in `steps`.
pub(crate) fn newest(steps: &[Step]) -> i64 {
    steps.iter().map(|(version, ..)| *version).max().unwrap_or(0)
}

/// Brings the schema on `connection` up to date: takes the back end's
/// migration lock (PostgreSQL: an advisory lock; SQLite: none, so callers
/// retry a migration that lost a race), applies each migration not applied
/// yet in its own transaction, releases the lock.
///
/// This is `Migrator::run` written out over the public `Migrate` trait: a
/// future of `Migrator::run` is not `Send` for every lifetime the compiler
/// asks about, so `open()` could not be spawned.
pub(crate) async fn run<C: Migrate + Send>(
    backend: &'static str,
    connection: &mut C,
    steps: &[Step],
) -> Result<(), StoreError> {
    connection.lock().await.map_err(|e| error(backend, steps, e))?;
    let applied = apply(connection, steps).await;
    let unlocked = connection.unlock().await;
    applied.map_err(|e| error(backend, steps, e))?;
    unlocked.map_err(|e| error(backend, steps, e))
}

async fn apply<C: Migrate + Send>(connection: &mut C, steps: &[Step]) -> Result<(), MigrateError> {
    connection.ensure_migrations_table(TABLE).await?;
    if let Some(version) = connection.dirty_version(TABLE).await? {
        return Err(MigrateError::Dirty(version));
    }
    let applied = connection.list_applied_migrations(TABLE).await?;
    let known = migrations(steps);
    if let Some(unknown) = applied
        .iter()
        .find(|a| !known.iter().any(|m| m.version == a.version))
    {
        return Err(MigrateError::VersionMissing(unknown.version));
    }
    for migration in &known {
        match applied.iter().find(|a| a.version == migration.version) {
            Some(done) if done.checksum != migration.checksum => {
                return Err(MigrateError::VersionMismatch(migration.version));
            }
            Some(_) => {}
            None => {
                connection.apply(TABLE, migration).await?;
            }
        }
    }
    Ok(())
}

/// Sorts a migration error into a [`StoreError`].
pub(crate) fn error(backend: &'static str, steps: &[Step], error: MigrateError) -> StoreError {
    match error {
        MigrateError::VersionMissing(found) => StoreError::NewerSchema {
            backend,
            found,
            supported: newest(steps),
        },
        MigrateError::Execute(error) | MigrateError::ExecuteMigration(error, _) => from_sqlx(backend, error),
        MigrateError::VersionMismatch(version) => StoreError::corrupt(
            format!("{TABLE} row {version}"),
            "the migration applied to this database differs from this loopwright-store's",
        ),
        other => StoreError::Backend {
            backend,
            source: Box::new(other),
        },
    }
}
