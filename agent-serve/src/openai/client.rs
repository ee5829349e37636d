//! Chat Completions with the client's own tools: a request that declares
//! `tools` is a stored turn ([`crate::stored_turn`]); a call to one of them
//! ends the completion with `tool_calls` (`finish_reason: "tool_calls"`),
//! the run paused in the store; the client's next request, ending with a
//! `tool` message per call, continues that run on any replica (its stored
//! options stand; the request's conversation before those results is the
//! client's copy of what the run holds).
//!
//! Invariant: tool results that do not name this server's paused calls,
//! or name calls of two runs, are a 400 naming the result, and nothing
//! runs.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use loopwright_runs::RunSpec;

use super::request::Prepared;
use super::{Answer, Meta, SHAPE, Tail, error_event, finish_reason, first_chunk, piece_chunk};
use crate::error::{ApiError, Kind};
use crate::run::Instance;
use crate::run::{Piece, Tokens, push_merged};
use crate::sse::event_stream;
use crate::stored_turn::{self, Turn, TurnEnd};

/// Answer `p`, a request with client tools or their results.
pub(super) async fn answer(instance: &Arc<Instance>, p: Prepared, meta: Meta) -> Result<Response, ApiError> {
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
                .map(|(id, text)| (id.clone(), text.clone(), false)),
            "the tool message",
            SHAPE,
        )?;
        stored_turn::resume(instance, &run, outputs, SHAPE).await?
    };
    if p.stream {
        return Ok(stream(turn, meta, structured, p.include_usage).into_response());
    }
    let mut pieces = Vec::new();
    let end = turn
        .follow::<()>(structured, None, |piece| {
            push_merged(&mut pieces, piece);
            Vec::new()
        })
        .await;
    let answer = match end {
        Some(end) => answer_of(pieces, end)?,
        None => {
            return Err(ApiError::new(
                SHAPE,
                Kind::Upstream,
                "the run stopped without a result",
            ));
        }
    };
    Ok(axum::Json(answer.completion(&meta)).into_response())
}

/// A stored turn's end as a whole answer, or a failed run's 502.
fn answer_of(pieces: Vec<Piece>, end: TurnEnd) -> Result<Answer, ApiError> {
    Ok(match end {
        TurnEnd::Answer {
            stop,
            output,
            refusal,
            usage,
        } => Answer {
            pieces,
            output,
            refusal,
            calls: Vec::new(),
            finish: finish_reason(stop),
            usage,
        },
        TurnEnd::Calls(calls) => Answer {
            pieces,
            output: None,
            refusal: None,
            calls,
            finish: "tool_calls",
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
    meta: Meta,
    structured: bool,
    include_usage: bool,
) -> axum::response::sse::Sse<
    impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
> {
    event_stream(move |tx| async move {
        if tx.send(first_chunk(&meta)).await.is_err() {
            return;
        }
        let end = turn
            .follow(structured, Some(&tx), |piece| vec![piece_chunk(&meta, piece)])
            .await;
        let Some(end) = end else { return };
        let tail = match answer_of(Vec::new(), end) {
            Ok(answer) => Tail {
                output: answer.output,
                refusal: answer.refusal,
                calls: answer.calls,
                finish: answer.finish,
                usage: include_usage.then_some(answer.usage),
            }
            .events(&meta),
            Err(error) => vec![error_event(&error.message)],
        };
        for e in tail {
            if tx.send(e).await.is_err() {
                return;
            }
        }
    })
}
