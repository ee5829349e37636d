//! Picking a real model for the examples as the `loopwright` command does:
//! `LOOPWRIGHT_MODEL` (`provider/model`, or several separated by commas for
//! a fallback order), else the configuration the command reads
//! (`./.ai-agent.json`, then `~/.ai-agent.json`: its `providers` and
//! `defaults.model`), else what
//! `loopwright::config::AgentConfig::choose_model` finds: the first provider
//! whose API key is in the environment, else a local Ollama or
//! OpenAI-compatible server that answers, else the embedded model
//! `local/qwen3-0.6b`, run in this process (said before its one download,
//! with a progress bar on a terminal).

use std::sync::Arc;

use loopwright::config::{AgentConfig, ChosenModel, ModelChoiceError};
use loopwright::{LanguageModel, agent::AgentOptions};

/// The model and its selector(s), or the message to print (exit status 2).
#[allow(dead_code)] // Each example includes this file; not all use both functions.
pub async fn model_from_env() -> Result<(Arc<dyn LanguageModel>, String), String> {
    let (_, chosen) = chosen_from_env().await?;
    Ok((chosen.model, chosen.selectors.join(", then ")))
}

/// The model, with the run options the configuration gives it (as the
/// `loopwright` command's: its context budget, compaction and tool search
/// on unless the file turns them off) laid under `adjust`, and its
/// selector(s); or the message to print (exit status 2).
#[allow(dead_code)]
pub async fn model_and_options(
    adjust: impl FnOnce(AgentOptions) -> AgentOptions,
) -> Result<(Arc<dyn LanguageModel>, AgentOptions, String), String> {
    let (config, chosen) = chosen_from_env().await?;
    let options = config.agent_options(&chosen, adjust).map_err(|e| e.to_string())?;
    Ok((chosen.model.clone(), options, chosen.selectors.join(", then ")))
}

/// The configuration and the model chosen from it.
async fn chosen_from_env() -> Result<(AgentConfig, ChosenModel), String> {
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
    let progress = loopwright::providers::hub::terminal_progress("downloading the model");
    let chosen = config.choose_model_with(&requested, None, Some(progress)).await.map_err(|e| match e {
        ModelChoiceError::NoModel => format!(
            "{e}\n  (the examples read the same configuration and LOOPWRIGHT_MODEL as the loopwright command)"
        ),
        other => other.to_string(),
    })?;
    for (selector, why) in &chosen.skipped {
        eprintln!("warning: model {selector} left out: {why}");
    }
    if let Some(fallback) = &chosen.embedded {
        eprintln!("note: {fallback}");
    }
    Ok((config, chosen))
}
