//! A model that answers "hi" at once: what the serving benches run, so
//! what they measure is the serving path, not a model.

use futures::StreamExt;
use loopwright::{
    LanguageModel, ModelError, Usage, model::FinishReason, model::ModelEvent, model::ModelRequest,
    model::ModelStream,
};

/// Answers "hi" (10 tokens in, 1 out) as soon as it is asked.
pub struct InstantModel;

#[async_trait::async_trait]
impl LanguageModel for InstantModel {
    fn provider(&self) -> &str {
        "bench"
    }
    fn model_id(&self) -> &str {
        "instant"
    }
    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        Ok(futures::stream::iter(vec![
            Ok(ModelEvent::TextDelta { text: "hi".into() }),
            Ok(ModelEvent::Finish {
                reason: FinishReason::Stop,
                usage: Usage::new(10, 1),
            }),
        ])
        .boxed())
    }
}
