//! [`FallbackModel`]: an ordered list of models that behaves as one.
//!
//! Invariants: every attempt gets exactly the same request; an attempt that
//! fails after streaming some output is announced with
//! [`ModelEvent::Fallback`] before the next model's events, so the agent loop
//! discards the partial output (tools run only after a step's stream
//! completed, so none runs twice); an error that the same model would give
//! again ([`ModelError::is_permanent_for_model`]: authentication, quota, an
//! invalid request, a context-length error) skips that model for the rest of
//! the call, so such a request is sent to each model at most once; when every
//! model of a cycle was rate limited, the next cycle waits for the largest
//! `retry-after` seen.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::model::{LanguageModel, ModelEvent, ModelRequest, ModelStream};
use crate::model_error::ModelError;

/// Extra cycles through the whole list after the first: enough to ride out a
/// short rate-limit window, few enough to fail in bounded time.
pub const DEFAULT_FALLBACK_RETRIES: u32 = 2;
/// Shortest wait before a cycle after one where every model was rate limited.
pub const MIN_RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);
/// Longest such wait, whatever a provider's `retry-after` says.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// Events buffered between an attempt and the caller.
const FORWARD_BUFFER: usize = 64;

/// Several models tried in order as one [`LanguageModel`].
///
/// ```
/// use std::sync::Arc;
/// use loopwright_types::{FallbackModel, LanguageModel, ModelError, ModelRequest, ModelStream};
/// # struct Named(&'static str);
/// # #[async_trait::async_trait]
/// # impl LanguageModel for Named {
/// #     fn provider(&self) -> &str { self.0 }
/// #     fn model_id(&self) -> &str { "m" }
/// #     async fn stream(&self, _: ModelRequest) -> Result<ModelStream, ModelError> {
/// #         Err(ModelError::server(None, "down"))
/// #     }
/// # }
/// # let (first, second) = (Named("first"), Named("second"));
/// let model = FallbackModel::new(vec![Arc::new(first), Arc::new(second)]).retries(1);
/// assert_eq!(model.provider(), "first");
/// ```
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<Arc<dyn LanguageModel>>,
    retries: u32,
}

impl FallbackModel {
    /// Try these models in this order.
    pub fn new(models: Vec<Arc<dyn LanguageModel>>) -> Self {
        Self {
            models,
            retries: DEFAULT_FALLBACK_RETRIES,
        }
    }

    /// Cycles through the list after the first one.
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }
}

/// `provider/model` of a model, as fallback events name it.
#[doc(hidden)]
pub fn model_label(model: &dyn LanguageModel) -> String {
    format!("{}/{}", model.provider(), model.model_id())
}

#[async_trait]
impl LanguageModel for FallbackModel {
    /// The first model's provider.
    fn provider(&self) -> &str {
        self.models.first().map_or("none", |m| m.provider())
    }

    /// The first model's id.
    fn model_id(&self) -> &str {
        self.models.first().map_or("none", |m| m.model_id())
    }

    /// Every model of the list, each as its own chain names it.
    fn chain(&self) -> Vec<String> {
        self.models.iter().flat_map(|m| m.chain()).collect()
    }

    /// What every model of the list can do (the same request goes to each).
    fn capabilities(&self) -> crate::settings::ModelCapabilities {
        let mut models = self.models.iter().map(|m| m.capabilities());
        let first = models.next().unwrap_or_default();
        models.fold(first, crate::settings::ModelCapabilities::intersect)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        if self.models.is_empty() {
            return Err(ModelError::invalid_request(
                None,
                "the fallback list has no models",
            ));
        }
        let (tx, rx) = mpsc::channel(FORWARD_BUFFER);
        let models = self.models.clone();
        let retries = self.retries;
        tokio::spawn(drive(models, retries, request, tx));
        Ok(
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
                .boxed(),
        )
    }
}

type Tx = mpsc::Sender<Result<ModelEvent, ModelError>>;

/// How one attempt ended.
enum Attempt {
    Done,
    /// The caller went away.
    Gone,
    Failed(ModelError),
}

async fn run_attempt(model: &dyn LanguageModel, request: ModelRequest, tx: &Tx) -> Attempt {
    let mut stream = match model.stream(request).await {
        Ok(s) => s,
        Err(e) => return Attempt::Failed(e),
    };
    loop {
        match stream.next().await {
            Some(Ok(event)) => {
                let last = matches!(event, ModelEvent::Finish { .. });
                if tx.send(Ok(event)).await.is_err() {
                    return Attempt::Gone;
                }
                if last {
                    return Attempt::Done;
                }
            }
            Some(Err(e)) => return Attempt::Failed(e),
            None => {
                return Attempt::Failed(ModelError::stream_cut(
                    "the model's stream ended before its finish event",
                ));
            }
        }
    }
}

async fn drive(models: Vec<Arc<dyn LanguageModel>>, retries: u32, request: ModelRequest, tx: Tx) {
    let mut skipped = vec![false; models.len()];
    let mut last_error = None;
    let mut previous: Option<(String, Duration, ModelError)> = None;
    for cycle in 0..=retries {
        let mut all_rate_limited = true;
        let mut longest_wait = Duration::ZERO;
        for (i, model) in models.iter().enumerate() {
            if skipped[i] {
                continue;
            }
            if request.cancellation.is_cancelled() {
                let _ = tx.send(Err(ModelError::Cancelled)).await;
                return;
            }
            let label = model_label(model.as_ref());
            if let Some((from, latency, error)) = previous.take() {
                let event = ModelEvent::Fallback {
                    from,
                    to: label.clone(),
                    error: error.to_string(),
                    latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
                };
                if tx.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            let started = Instant::now();
            let error = match run_attempt(model.as_ref(), request.clone(), &tx).await {
                Attempt::Done | Attempt::Gone => return,
                Attempt::Failed(ModelError::Cancelled) => {
                    let _ = tx.send(Err(ModelError::Cancelled)).await;
                    return;
                }
                Attempt::Failed(e) => e,
            };
            tracing::warn!(target: "loopwright_types::fallback", model = %label, cycle, error = %error, "model attempt failed");
            match &error {
                // This model refuses this request whatever the wait; another
                // model may accept it.
                e if e.is_permanent_for_model() => skipped[i] = true,
                ModelError::RateLimited { retry_after, .. } => {
                    longest_wait = longest_wait.max(retry_after.unwrap_or(MIN_RATE_LIMIT_WAIT));
                }
                _ => all_rate_limited = false,
            }
            // The attempt's own time, not the wait before the next cycle.
            previous = Some((label, started.elapsed(), error.clone()));
            last_error = Some(error);
        }
        if skipped.iter().all(|s| *s) {
            break;
        }
        if all_rate_limited && cycle < retries {
            let wait = longest_wait.clamp(MIN_RATE_LIMIT_WAIT, MAX_RATE_LIMIT_WAIT);
            tokio::select! {
                _ = request.cancellation.cancelled() => {
                    let _ = tx.send(Err(ModelError::Cancelled)).await;
                    return;
                }
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
    let error =
        last_error.unwrap_or_else(|| ModelError::server(None, "every model of the fallback list failed"));
    let _ = tx.send(Err(error)).await;
}
