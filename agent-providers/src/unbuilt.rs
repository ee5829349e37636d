//! Provider builders as [`IntoModel`]: a builder goes to
//! `Agent::builder(..)` as it is, and is built there.
//!
//! Invariant: a builder whose `build()` fails is not lost and does not panic.
//! It becomes a model whose every call fails with that build error (the
//! reqwest `RequestBuilder` way: the error is reported where the request is
//! made), so the run ends with the typed [`ModelError`] that names what was
//! wrong. Call `build()` yourself to see the error before any run.

use std::sync::Arc;

use async_trait::async_trait;
use loopwright_types::{IntoModel, LanguageModel, ModelError, ModelRequest, ModelStream};

use crate::{AnthropicBuilder, GeminiBuilder, OllamaBuilder, OpenAiChatBuilder, OpenAiResponsesBuilder};

/// A model whose builder failed: every call returns the build's error.
struct Unbuilt {
    provider: String,
    model: String,
    error: ModelError,
}

#[async_trait]
impl LanguageModel for Unbuilt {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        Err(self.error.clone())
    }
}

/// The built model, or a model reporting why it could not be built.
fn built<M: LanguageModel + 'static>(
    provider: &str,
    model: &str,
    result: Result<M, ModelError>,
) -> Arc<dyn LanguageModel> {
    match result {
        Ok(model) => Arc::new(model),
        Err(error) => Arc::new(Unbuilt {
            provider: provider.to_owned(),
            model: model.to_owned(),
            error,
        }),
    }
}

macro_rules! into_model {
    ($builder:ty, |$b:ident| $provider:expr) => {
        impl IntoModel for $builder {
            /// [`Self::build`]; a build error is returned by the model's
            /// first call instead (see the module docs).
            fn into_model(self) -> Arc<dyn LanguageModel> {
                let $b = &self;
                let (provider, model) = ($provider.to_owned(), self.model.clone());
                built(&provider, &model, self.build())
            }
        }
    };
}

into_model!(AnthropicBuilder, |_b| "anthropic");
into_model!(GeminiBuilder, |_b| "google");
into_model!(OllamaBuilder, |_b| "ollama");
into_model!(OpenAiChatBuilder, |b| b.provider.as_str());
into_model!(OpenAiResponsesBuilder, |_b| "openai");

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;
    use crate::{AnthropicModel, OpenAiChatModel};
    use futures::StreamExt;

    #[tokio::test]
    async fn a_builder_is_a_model_and_a_failed_build_fails_its_calls() {
        let good = OpenAiChatModel::openai("gpt-4.1-mini")
            .api_key("sk-x")
            .into_model();
        assert_eq!((good.provider(), good.model_id()), ("openai", "gpt-4.1-mini"));
        // A header value cannot hold a newline: `build()` fails, and so does
        // every call of the model the builder became.
        let bad = AnthropicModel::builder("claude-x").api_key("bad\nkey");
        let expected = bad.clone().build().err().map(|e| e.to_string());
        let bad = bad.into_model();
        assert_eq!((bad.provider(), bad.model_id()), ("anthropic", "claude-x"));
        for _ in 0..2 {
            let error = match bad.stream(ModelRequest::default()).await {
                Ok(mut s) => panic!("streamed: {:?}", s.next().await.is_some()),
                Err(e) => e.to_string(),
            };
            assert_eq!(Some(error), expected);
        }
    }
}
