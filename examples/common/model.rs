//! Picking a real model for the examples as the `loopwright` command does:
//! `LOOPWRIGHT_MODEL` (`provider/model`, or several separated by commas for
//! a fallback order), else the configuration the command reads
//! (`./.ai-agent.json`, then `~/.ai-agent.json`: its `providers` and
//! `defaults.model`), else what
//! `loopwright::config::AgentConfig::choose_model` finds: the first provider
//! whose API key is in the environment, else a local Ollama or
//! OpenAI-compatible server that answers.

use std::sync::Arc;

use loopwright::LanguageModel;
use loopwright::config::{AgentConfig, ModelChoiceError};

/// The model and its selector(s), or the message to print (exit status 2).
pub async fn model_from_env() -> Result<(Arc<dyn LanguageModel>, String), String> {
    let requested: Vec<String> = std::env::var("LOOPWRIGHT_MODEL")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let config = AgentConfig::from_default_location().map_err(|e| format!("config {e}"))?;
    for warning in &config.warnings {
        eprintln!("warning: {warning}");
    }
    let chosen = config.choose_model(&requested, None).await.map_err(|e| match e {
        ModelChoiceError::NoModel => format!(
            "{e}\n  (the examples read the same configuration and LOOPWRIGHT_MODEL as the loopwright command)"
        ),
        other => other.to_string(),
    })?;
    for (selector, why) in &chosen.skipped {
        eprintln!("warning: model {selector} left out: {why}");
    }
    Ok((chosen.model, chosen.selectors.join(", then ")))
}
