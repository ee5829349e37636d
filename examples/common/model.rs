//! Picking a real model for the examples: `AGENT_MODEL` (`provider/model`,
//! or several separated by commas for a fallback order), else what
//! `agent_sdk::config::AgentConfig::choose_model` finds: the first provider
//! whose API key is in the environment, else a local Ollama or
//! OpenAI-compatible server that answers.

use std::sync::Arc;

use agent_sdk::LanguageModel;
use agent_sdk::config::{AgentConfig, ModelChoiceError};

/// The model and its selector(s), or the message to print (exit status 2).
pub async fn model_from_env() -> Result<(Arc<dyn LanguageModel>, String), String> {
    let requested: Vec<String> = std::env::var("AGENT_MODEL")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let chosen = AgentConfig::default()
        .choose_model(&requested, None)
        .await
        .map_err(|e| match e {
            ModelChoiceError::NoModel => format!("{e}\n  (for the examples: AGENT_MODEL=provider/model)"),
            other => other.to_string(),
        })?;
    for (selector, why) in &chosen.skipped {
        eprintln!("warning: model {selector} left out: {why}");
    }
    Ok((chosen.model, chosen.selectors.join(", then ")))
}
