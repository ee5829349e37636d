//! Multi-round-trip requests (SEP-2322, protocol 2026-07-28): a server
//! answers `tools/call` or `resources/read` with an `input_required`
//! result instead of sending requests of its own; the client fulfils its
//! input requests (elicitation, sampling, roots) and sends the request
//! again with the answers and the server's opaque request state.
//!
//! Invariants:
//! - each round is a new request (a new JSON-RPC id) through the source's
//!   request path (timeout, cancellation, progress, tracing);
//! - the request state is echoed byte for byte, and only when the server
//!   sent one; answers go only to the request that asked for them, never to
//!   a later or another call;
//! - at most [`MAX_INPUT_ROUNDS`] rounds, then the call fails saying so;
//!   rounds that only carry state (no input requests) wait a little longer
//!   each time, so a server polling through request state cannot spin us.

#![allow(deprecated)] // rmcp marks roots deprecated (SEP-2577); servers still ask for them.

use std::time::Duration;

use loopwright_types::ToolContext;
use rmcp::model::{ClientRequest, InputRequest, InputRequiredResult, InputResponses, ServerResult};

use crate::request::RequestError;
use crate::source::SourceInner;
use crate::trace::What;

/// Rounds of `input_required` answered for one call before it fails (what
/// the other SDKs use).
pub const MAX_INPUT_ROUNDS: usize = 10;

/// First wait before resending a round that carried only request state;
/// doubles each such round in a row.
const STATE_ONLY_BACKOFF: Duration = Duration::from_millis(50);
/// Longest wait between state-only rounds.
const STATE_ONLY_MAX_DELAY: Duration = Duration::from_secs(2);

/// What goes back with a round: the answers and the state to echo.
#[derive(Debug, Clone, Default)]
pub(crate) struct Round {
    /// Answers to the previous round's input requests, by the server's keys.
    pub(crate) input_responses: Option<InputResponses>,
    /// The previous round's request state, unchanged.
    pub(crate) request_state: Option<String>,
}

impl SourceInner {
    /// Send the request `make` builds for each round until the server's
    /// answer is not `input_required`.
    pub(crate) async fn request_with_input(
        &self,
        what: What<'_>,
        make: &(dyn Fn(&Round) -> ClientRequest + Send + Sync),
        ctx: &ToolContext,
    ) -> Result<ServerResult, RequestError> {
        let mut round = Round::default();
        let mut state_only = 0u32;
        for _ in 0..MAX_INPUT_ROUNDS {
            let this = round.clone();
            let build = move || make(&this);
            match self.request(what, &build, ctx).await? {
                ServerResult::InputRequiredResult(asked) => {
                    let had_requests = asked.input_requests.as_ref().is_some_and(|r| !r.is_empty());
                    round = self.fulfil(asked, ctx).await?;
                    if had_requests {
                        state_only = 0;
                    } else {
                        let wait = STATE_ONLY_BACKOFF.saturating_mul(1 << state_only.min(8));
                        state_only += 1;
                        tokio::select! {
                            () = tokio::time::sleep(wait.min(STATE_ONLY_MAX_DELAY)) => {}
                            () = ctx.cancellation().cancelled() => return Err(RequestError::Cancelled),
                        }
                    }
                }
                other => return Ok(other),
            }
        }
        Err(RequestError::Failed(format!(
            "the server still asked for input after {MAX_INPUT_ROUNDS} rounds"
        )))
    }

    /// Answer one `input_required` result: every input request, concurrently.
    pub(crate) async fn fulfil(
        &self,
        asked: InputRequiredResult,
        ctx: &ToolContext,
    ) -> Result<Round, RequestError> {
        let requests = asked.input_requests.unwrap_or_default();
        let answers = futures::future::try_join_all(
            requests
                .into_iter()
                .map(|(key, request)| async move { Ok((key, self.answer(request, ctx).await?)) }),
        )
        .await?;
        Ok(Round {
            input_responses: (!answers.is_empty()).then(|| answers.into_iter().collect()),
            request_state: asked.request_state,
        })
    }

    /// The client's result for one input request, as JSON.
    async fn answer(
        &self,
        request: InputRequest,
        ctx: &ToolContext,
    ) -> Result<serde_json::Value, RequestError> {
        let to_json = |value: Result<serde_json::Value, serde_json::Error>| {
            value.map_err(|e| RequestError::Failed(format!("cannot encode an input response: {e}")))
        };
        match request {
            InputRequest::Elicitation(request) => {
                let result = crate::elicitation::elicit(&self.shared, Some(ctx), request.params).await;
                to_json(serde_json::to_value(result))
            }
            InputRequest::ListRoots(_) => to_json(serde_json::to_value(rmcp::model::ListRootsResult::new(
                self.shared.options.roots().to_vec(),
            ))),
            InputRequest::CreateMessage(request) => match self.shared.options.sampling_handler() {
                Some(handler) => match handler.create_message(&self.shared.server, request.params).await {
                    Ok(result) => to_json(serde_json::to_value(result)),
                    Err(e) => Err(RequestError::Failed(format!(
                        "the server asked for sampling and the sampling handler failed: {}",
                        e.message
                    ))),
                },
                None => Err(RequestError::Failed(
                    "the server asked for sampling (a model completion), which this client does not offer"
                        .into(),
                )),
            },
            // A kind of input request this version does not know.
            #[allow(unreachable_patterns)]
            _ => Err(RequestError::Failed(
                "the server asked for a kind of input this client does not know".into(),
            )),
        }
    }
}
