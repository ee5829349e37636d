//! Picking a real model for the examples: `AGENT_MODEL` (`provider/model`),
//! else the first provider whose API key is in the environment, else a local
//! Ollama or OpenAI-compatible server that answers.

use std::sync::Arc;

use agent_sdk::LanguageModel;
use agent_sdk::providers::Providers;

/// What to tell a user who has configured no model.
pub const NO_MODEL_HELP: &str = "No model. Set one provider's API key (ANTHROPIC_API_KEY, OPENAI_API_KEY, \
GEMINI_API_KEY or OPENROUTER_API_KEY), or AGENT_MODEL=provider/model (for example AGENT_MODEL=ollama/qwen3), or \
start a local Ollama server (OLLAMA_HOST, default http://localhost:11434) or an OpenAI-compatible one on port \
8000, 1234 or 8080.";

/// The model and its selector, or the message to print (exit status 2).
pub async fn model_from_env() -> Result<(Arc<dyn LanguageModel>, String), String> {
    let mut providers = Providers::from_env().map_err(|e| format!("provider configuration: {e}"))?;
    let mut selector = std::env::var("AGENT_MODEL")
        .ok()
        .or_else(|| providers.default_selector());
    if selector.is_none() {
        let host = std::env::var("OLLAMA_HOST").ok();
        if let Some(local) = agent_sdk::providers::detect_local_server(host.as_deref()).await {
            providers = providers
                .with_provider(&local.provider, local.config.clone())
                .map_err(|e| format!("local server: {e}"))?;
            selector = Some(local.selector());
        }
    }
    let selector = selector.ok_or_else(|| NO_MODEL_HELP.to_owned())?;
    let model = providers
        .model(&selector)
        .map_err(|e| format!("model {selector}: {e}"))?;
    Ok((model, selector))
}
