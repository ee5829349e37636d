//! Choosing the model: `--model`, else the config's `defaults.model`, else
//! the first provider whose key is in the environment, else a local
//! Ollama or OpenAI-compatible server that answers; several selectors make
//! a fallback chain.

use std::sync::Arc;
use std::time::Duration;

use agent_sdk::config::AgentConfig;
use agent_sdk::providers::{HttpOptions, Providers, detect_local_server};
use agent_sdk::{FallbackModel, LanguageModel};

use crate::exit::Failure;

/// What to tell a user who has configured no model.
pub const NO_MODEL_HELP: &str = "no model is configured. Do one of:
  - set an API key: ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY) or OPENROUTER_API_KEY;
  - pass --model provider/model (for example --model ollama/qwen3), or set \"defaults\": {\"model\": ...} in ./.ai-agent.json or ~/.ai-agent.json;
  - start a local server: Ollama (OLLAMA_HOST, default http://localhost:11434) or an OpenAI-compatible one on port 8000, 1234 or 8080.";

/// The chosen model and how to reach its provider again (for the budget).
pub struct Chosen {
    /// The model (a fallback chain when several were given).
    pub model: Arc<dyn LanguageModel>,
    /// The selectors, in fallback order.
    pub selectors: Vec<String>,
    /// The providers the model came from.
    pub providers: Providers,
}

/// Choose the model (see the module docs).
pub async fn choose(
    requested: &[String],
    config: &AgentConfig,
    llm_timeout: Option<Duration>,
) -> Result<Chosen, Failure> {
    let mut providers = Providers::from_config(config.providers.clone())
        .map_err(|e| Failure::usage(format!("providers: {e}")))?;
    let mut selectors: Vec<String> = if requested.is_empty() {
        config.defaults.model.clone()
    } else {
        requested.to_vec()
    };
    if selectors.is_empty()
        && let Some(selector) = providers.default_selector()
    {
        selectors.push(selector);
    }
    if selectors.is_empty() {
        let host = std::env::var("OLLAMA_HOST").ok();
        if let Some(local) = detect_local_server(host.as_deref()).await {
            tracing::info!(selector = %local.selector(), "using a local model server");
            providers = providers
                .with_provider(&local.provider, local.config.clone())
                .map_err(|e| Failure::usage(format!("local server: {e}")))?;
            selectors.push(local.selector());
        }
    }
    if selectors.is_empty() {
        return Err(Failure::usage(NO_MODEL_HELP));
    }
    if let Some(timeout) = llm_timeout {
        providers = providers.http_options(HttpOptions {
            inactivity_timeout: timeout,
            ..HttpOptions::default()
        });
    }
    let mut models = Vec::with_capacity(selectors.len());
    for selector in &selectors {
        if let Some(problem) = config.provider_problem(selector) {
            return Err(Failure::usage(format!("model {selector}: {problem}")));
        }
        models.push(
            providers
                .model(selector)
                .map_err(|e| Failure::usage(format!("model {selector}: {e}")))?,
        );
    }
    let model = if models.len() == 1 {
        models.remove(0)
    } else {
        Arc::new(FallbackModel::new(models)) as Arc<dyn LanguageModel>
    };
    Ok(Chosen {
        model,
        selectors,
        providers,
    })
}
