//! A scripted [`LanguageModel`] for unit tests of the loop. It is a test
//! double: it plays back steps written in the test and records the requests
//! it got. It is never a default.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;

use loopwright_types::ModelCapabilities;
use loopwright_types::model_error::ModelError;
use loopwright_types::{FinishReason, Usage};
use loopwright_types::{LanguageModel, ModelEvent, ModelRequest, ModelStream};

/// One scripted step: the events (or errors) the stream yields in order.
#[derive(Debug, Clone, Default)]
pub struct ScriptedStep {
    events: Vec<Result<ModelEvent, ModelError>>,
    /// When set, the stream waits for cancellation after its events instead
    /// of ending (to test cancellation of a model call).
    hang: bool,
    /// When set, `stream()` itself fails with this error.
    fail: Option<ModelError>,
}

impl ScriptedStep {
    /// A step that yields these events.
    pub fn events(events: Vec<ModelEvent>) -> Self {
        Self {
            events: events.into_iter().map(Ok).collect(),
            hang: false,
            fail: None,
        }
    }

    /// A step answering `text` and finishing with `stop`.
    ///
    /// ```
    /// let step = loopwright_testing::ScriptedStep::text("hello");
    /// # let _ = step;
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self::events(vec![
            ModelEvent::TextDelta { text: text.into() },
            ModelEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage::new(10, 5),
            },
        ])
    }

    /// A step calling tools `(id, name, input JSON text)` and finishing with
    /// `tool_calls`.
    ///
    /// ```
    /// let step = loopwright_testing::ScriptedStep::tool_calls(&[("c1", "echo", r#"{"x":1}"#)]);
    /// # let _ = step;
    /// ```
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        Self::calls(calls, false)
    }

    /// Like [`tool_calls`](Self::tool_calls), each call's input also
    /// streamed as one argument delta before the call completes (as
    /// providers stream them), so the run's `ToolCallDelta` handling and
    /// its events are exercised.
    ///
    /// ```
    /// let step = loopwright_testing::ScriptedStep::streamed_tool_calls(&[("c1", "echo", r#"{"x":1}"#)]);
    /// # let _ = step;
    /// ```
    pub fn streamed_tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        Self::calls(calls, true)
    }

    fn calls(calls: &[(&str, &str, &str)], streamed: bool) -> Self {
        let mut events = Vec::new();
        for (id, name, input) in calls {
            events.push(ModelEvent::ToolCallStart {
                id: (*id).into(),
                name: (*name).into(),
            });
            if streamed {
                events.push(ModelEvent::ToolCallDelta {
                    id: (*id).into(),
                    delta: (*input).into(),
                });
            }
            events.push(ModelEvent::ToolCallComplete {
                id: (*id).into(),
                name: (*name).into(),
                input_json: (*input).into(),
                provider_data: None,
            });
        }
        events.push(ModelEvent::Finish {
            reason: FinishReason::ToolCalls,
            usage: Usage::new(10, 5),
        });
        Self::events(events)
    }

    /// A call that fails before any event (as an HTTP error status would).
    ///
    /// ```
    /// let step = loopwright_testing::ScriptedStep::fail(loopwright_types::ModelError::authentication(Some(401), "bad key"));
    /// # let _ = step;
    /// ```
    pub fn fail(error: ModelError) -> Self {
        Self {
            fail: Some(error),
            ..Self::default()
        }
    }

    /// Append an error after the events (a stream failing mid-way).
    pub fn then_error(mut self, error: ModelError) -> Self {
        self.events.push(Err(error));
        self
    }

    /// Drop the final event (a stream ending before its finish event).
    pub fn without_finish(mut self) -> Self {
        self.events.pop();
        self
    }

    /// Keep the stream open after the events until the request is cancelled.
    pub fn then_hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

/// A [`LanguageModel`] that plays back [`ScriptedStep`]s, one per call, and
/// records every request. When the script runs out it fails with a provider
/// error saying so.
///
/// ```
/// use loopwright_testing::{ScriptedModel, ScriptedStep};
/// let model = ScriptedModel::new(vec![ScriptedStep::text("hi")]);
/// assert_eq!(model.requests().len(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ScriptedModel {
    steps: Arc<Mutex<VecDeque<ScriptedStep>>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
    capabilities: ModelCapabilities,
}

impl ScriptedModel {
    /// A model that plays these steps in order.
    pub fn new(steps: Vec<ScriptedStep>) -> Self {
        Self {
            steps: Arc::new(Mutex::new(steps.into())),
            requests: Arc::default(),
            capabilities: ModelCapabilities::default(),
        }
    }

    /// The same model claiming these capabilities.
    ///
    /// ```
    /// use loopwright_types::{LanguageModel, ModelCapabilities};
    /// let m = loopwright_testing::ScriptedModel::new(vec![])
    ///     .with_capabilities(ModelCapabilities::default().structured_output(true, true));
    /// assert!(m.capabilities().structured_output);
    /// ```
    pub fn with_capabilities(mut self, capabilities: ModelCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model_id(&self) -> &str {
        "scripted-test-model"
    }

    fn capabilities(&self) -> ModelCapabilities {
        self.capabilities
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let cancel = request.cancellation.clone();
        if let Ok(mut r) = self.requests.lock() {
            r.push(request);
        }
        let step = self
            .steps
            .lock()
            .ok()
            .and_then(|mut s| s.pop_front())
            .ok_or_else(|| ModelError::invalid_request(None, "the scripted model has no more steps"))?;
        if let Some(error) = step.fail {
            return Err(error);
        }
        let events = futures::stream::iter(step.events);
        if step.hang {
            let wait = futures::stream::once(async move {
                cancel.cancelled().await;
                Err(ModelError::Cancelled)
            });
            Ok(events.chain(wait).boxed())
        } else {
            Ok(events.boxed())
        }
    }
}
