//! Messages with the client's own tools: a request that declares `tools`
//! is a stored turn ([`crate::stored_turn`]); a call to one of them ends
//! the message with a `tool_use` block (`stop_reason: "tool_use"`), the run
//! paused in the store; the client's next request, whose last user message
//! holds a `tool_result` per call, continues that run on any replica (its
//! stored options stand).
//!
//! Invariant: tool results that do not name this server's paused calls,
//! or name calls of two runs, are a 400 naming the result, and nothing
//! runs.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use loopwright_runs::RunSpec;
use serde_json::Value;

use super::request::{Answered, Prepared};
use super::{Blocks, SHAPE, Whole, bad, end_events, error_event, start_events, stop_reason};
use crate::error::{ApiError, Kind};
use crate::run::{Instance, Piece, Tokens, push_merged};
use crate::sse::event_stream;
use crate::stored_turn::{self, ClientOutput, Turn, TurnEnd};

/// Answer `p`, a request with client tools or their results, as message
/// `id`.
pub(super) async fn answer(instance: &Arc<Instance>, p: Prepared, id: String) -> Result<Response, ApiError> {
    let structured = p.structured();
    let turn = if p.results.is_empty() {
        let spec = RunSpec {
            agent: p.model.clone(),
            input: p.history,
            options: p.options,
            ..RunSpec::default()
        };
        stored_turn::start(instance, spec, SHAPE).await?
    } else {
        let (run, outputs) = results_of(&p.results)?;
        stored_turn::resume(instance, &run, outputs, SHAPE).await?
    };
    if p.stream {
        return Ok(stream(turn, id, p.model, structured).into_response());
    }
    let mut pieces = Vec::new();
    let end = turn
        .follow::<()>(structured, None, |piece| {
            push_merged(&mut pieces, piece);
            Vec::new()
        })
        .await;
    let whole = match end {
        Some(end) => whole_of(pieces, end)?,
        None => {
            return Err(ApiError::new(
                SHAPE,
                Kind::Upstream,
                "the run stopped without a result",
            ));
        }
    };
    Ok(axum::Json(whole.message(&id, &p.model)).into_response())
}

/// The run the results answer, and each result as its call's output.
fn results_of(results: &[Answered]) -> Result<(String, Vec<ClientOutput>), ApiError> {
    let mut run: Option<&str> = None;
    let mut outputs = Vec::with_capacity(results.len());
    for result in results {
        let id = &result.tool_use_id;
        let Some((of, call)) = crate::client_tools::parse_exposed_id(id) else {
            return Err(bad(format!(
                "the tool_result for {id:?} answers a call this server did not make (the calls it makes are its \
                 messages' tool_use blocks, ids run_...)"
            )));
        };
        if run.is_some_and(|r| r != of) {
            return Err(bad(format!(
                "the tool_result blocks answer the calls of two runs ({} and {of}): answer one message's calls",
                run.unwrap_or_default()
            )));
        }
        run = Some(of);
        outputs.push(ClientOutput {
            call_id: call.to_owned(),
            output: Value::String(result.text.clone()),
            is_error: result.is_error,
        });
    }
    Ok((run.unwrap_or_default().to_owned(), outputs))
}

/// A stored turn's end as a whole answer, or a failed run's 502.
fn whole_of(pieces: Vec<Piece>, end: TurnEnd) -> Result<Whole, ApiError> {
    Ok(match end {
        TurnEnd::Answer {
            stop, output, usage, ..
        } => Whole {
            pieces,
            output,
            calls: Vec::new(),
            stop: stop_reason(stop),
            usage,
        },
        TurnEnd::Calls(calls) => Whole {
            pieces,
            output: None,
            calls,
            stop: "tool_use",
            usage: Tokens::default(),
        },
        TurnEnd::Failed(message) => return Err(ApiError::new(SHAPE, Kind::Upstream, message)),
        // `follow` tells a pause as the client's calls.
        TurnEnd::Paused(_) => {
            return Err(ApiError::new(
                SHAPE,
                Kind::Internal,
                "the run paused unexpectedly",
            ));
        }
    })
}

/// The streamed answer of a stored turn.
fn stream(
    turn: Turn,
    id: String,
    model: String,
    structured: bool,
) -> axum::response::sse::Sse<
    impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    event_stream(move |tx| async move {
        let mut blocks = Blocks { index: 0, open: None };
        for e in start_events(&id, &model) {
            if tx.send(e).await.is_err() {
                return;
            }
        }
        let end = turn
            .follow(structured, Some(&tx), |piece| blocks.piece(piece))
            .await;
        let Some(end) = end else { return };
        let tail = match whole_of(Vec::new(), end) {
            Ok(whole) => end_events(&mut blocks, whole),
            Err(error) => vec![error_event(&error.message)],
        };
        for e in tail {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    })
}
