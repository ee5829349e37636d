//! Models with a dummy key and their provider's default URL, for tests
//! that only build request bodies.

use loopwright_providers::{AnthropicModel, GeminiModel, OllamaModel, OpenAiChatModel, OpenAiResponsesModel};

pub fn chat(model: &str) -> OpenAiChatModel {
    OpenAiChatModel::openai(model).api_key("k").build().unwrap()
}

pub fn responses(model: &str) -> OpenAiResponsesModel {
    OpenAiResponsesModel::builder(model).api_key("k").build().unwrap()
}

pub fn anthropic(model: &str) -> AnthropicModel {
    AnthropicModel::builder(model).api_key("k").build().unwrap()
}

pub fn gemini(model: &str) -> GeminiModel {
    GeminiModel::builder(model).api_key("k").build().unwrap()
}

pub fn ollama(model: &str) -> OllamaModel {
    OllamaModel::builder(model).build().unwrap()
}
