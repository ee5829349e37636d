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

use super::request::Prepared;
use super::{Blocks, SHAPE, Whole, end_events, error_event, start_events, stop_reason};
use crate::error::{ApiError, Kind};
use crate::run::{Instance, Piece, Tokens, push_merged};
use crate::sse::event_stream;
use crate::stored_turn::{self, Turn, TurnEnd};

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
        let (run, outputs) = stored_turn::named_outputs(
            p.results
                .iter()
                .map(|r| (r.tool_use_id.clone(), r.text.clone(), r.is_error)),
            "the tool_result",
            SHAPE,
        )?;
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
