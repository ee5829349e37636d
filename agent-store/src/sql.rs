//! What the SQL back ends share: reading their rows into the codec's shapes
//! and sorting the outcome of a conditional write.
//!
//! Invariant: a column that does not have the type it should is
//! [`StoreError::Corrupt`] naming its table, row and column, like a value
//! that does not decode.

use serde_json::Value;
use sqlx::query::Query;
use sqlx::{ColumnIndex, Database, Decode, Encode, Row, Type};

use crate::codec::{self, CHAIN_TURNS, ChainRow, EVENTS, RUNS, RunJson, RunRow, TURNS, TurnRow};
use crate::error::{StoreError, is_unique_violation};
use crate::record::{ConversationSummary, RunRecord};

/// A column of `row`.
fn column<'r, R, T>(row: &'r R, index: usize, location: impl FnOnce() -> String) -> Result<T, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    T: Decode<'r, R::Database> + Type<R::Database>,
{
    row.try_get(index)
        .map_err(|e| StoreError::corrupt(location(), e.to_string()))
}

/// Rows of `(version, messages)` of conversation `id`.
pub(crate) fn turns<R>(id: &str, rows: &[R]) -> Result<Vec<TurnRow>, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let location = || format!("{TURNS} row (conversation {id:?})");
    rows.iter()
        .map(|row| {
            Ok(TurnRow {
                version: column(row, 0, location)?,
                messages: column(row, 1, location)?,
            })
        })
        .collect()
}

/// Rows of `(id, version, updated_at)` of conversations.
pub(crate) fn conversations<R>(rows: &[R]) -> Result<Vec<ConversationSummary>, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let location = || format!("{TURNS} row (a conversation's summary)");
    rows.iter()
        .map(|row| {
            let version: i64 = column(row, 1, location)?;
            Ok(ConversationSummary::new(
                column::<R, String>(row, 0, location)?,
                u64::try_from(version).map_err(|e| StoreError::corrupt(location(), e.to_string()))?,
                column(row, 2, location)?,
            ))
        })
        .collect()
}

/// Rows of `(id, depth, messages)` of the chain of turn `id`.
pub(crate) fn chain_rows<R>(id: &str, rows: &[R]) -> Result<Vec<ChainRow>, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let location = || format!("{CHAIN_TURNS} row (the chain of turn {id:?})");
    rows.iter()
        .map(|row| {
            Ok(ChainRow {
                id: column(row, 0, location)?,
                depth: column(row, 1, location)?,
                messages: column(row, 2, location)?,
            })
        })
        .collect()
}

/// Rows of `(seq, event)` of run `run_id`.
pub(crate) fn events<R>(run_id: &str, rows: &[R]) -> Result<Vec<(u64, Value)>, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let location = || format!("{EVENTS} row (run {run_id:?})");
    rows.iter()
        .map(|row| {
            codec::event(
                run_id,
                column(row, 0, location)?,
                &column::<_, String>(row, 1, location)?,
            )
        })
        .collect()
}

/// A row of the columns `id, agent, session, status, state, result, error,
/// owner, version, created_at, updated_at`, the JSON ones as text.
pub(crate) fn run<R>(row: &R) -> Result<RunRow, StoreError>
where
    R: Row,
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    let id: String = column(row, 0, || format!("{RUNS} row (column id)"))?;
    let at = |name: &str| format!("{RUNS} row {id:?} (column {name})");
    Ok(RunRow {
        agent: column(row, 1, || at("agent"))?,
        session: column(row, 2, || at("session"))?,
        status: column(row, 3, || at("status"))?,
        state: column(row, 4, || at("state"))?,
        result: column(row, 5, || at("result"))?,
        error: column(row, 6, || at("error"))?,
        owner: column(row, 7, || at("owner"))?,
        version: column(row, 8, || at("version"))?,
        created_at: column(row, 9, || at("created_at"))?,
        updated_at: column(row, 10, || at("updated_at"))?,
        id,
    })
}

/// How a write that is conditional on a version (or a key) went.
pub(crate) enum Written {
    /// One row written.
    Done,
    /// The condition did not hold, or a unique key refused the row: another
    /// writer got there first.
    Conflict,
    /// Any other error.
    Failed(sqlx::Error),
}

impl Written {
    /// Sorts the rows a statement affected (or its error).
    pub(crate) fn of(result: Result<u64, sqlx::Error>) -> Self {
        match result {
            Ok(1) => Written::Done,
            Ok(_) => Written::Conflict,
            Err(e) if is_unique_violation(&e) => Written::Conflict,
            Err(e) => Written::Failed(e),
        }
    }
}

/// Binds a run's columns `agent, session, status, state, result, error,
/// owner`, in that order (the statements of both back ends take them so).
pub(crate) fn bind_run<'q, DB>(
    query: Query<'q, DB, DB::Arguments>,
    run: &RunRecord,
    json: &RunJson,
) -> Query<'q, DB, DB::Arguments>
where
    DB: Database,
    for<'a> &'a str: Encode<'a, DB> + Type<DB>,
    for<'a> Option<&'a str>: Encode<'a, DB> + Type<DB>,
{
    query
        .bind(run.agent.as_str())
        .bind(run.session.as_deref())
        .bind(run.status.as_str())
        .bind(json.state.as_deref())
        .bind(json.result.as_deref())
        .bind(json.error.as_deref())
        .bind(run.owner.as_deref())
}
