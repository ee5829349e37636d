//! Choosing the model: `loopwright::config::AgentConfig::choose_model` (the
//! command line's `--model` selectors, else the configuration's, else a key
//! in the environment, else a local server, else the embedded model, said
//! before its download, which draws a progress bar on a terminal), with the
//! command line's words for what to do when there is none.

use std::time::Duration;

use loopwright::config::{AgentConfig, ChosenModel, ModelChoiceError};

use crate::exit::Failure;

/// How to name a model on this command line, added to the library's help.
const NAME_A_MODEL: &str = "  (on the command line: --model provider/model, several for a fallback order)";

/// Choose the model; unusable selectors become warnings while another one
/// is usable.
pub async fn choose(
    requested: &[String],
    config: &AgentConfig,
    llm_timeout: Option<Duration>,
) -> Result<ChosenModel, Failure> {
    let progress = loopwright::providers::hub::terminal_progress("downloading the model");
    let chosen = config
        .choose_model_with(requested, llm_timeout, Some(progress))
        .await
        .map_err(|e| match e {
            ModelChoiceError::NoModel => Failure::usage(format!("{e}\n{NAME_A_MODEL}")),
            other => Failure::usage(other.to_string()),
        })?;
    for (selector, why) in &chosen.skipped {
        eprintln!("warning: model {selector} left out: {why}");
    }
    if let Some(fallback) = &chosen.embedded {
        eprintln!("note: {fallback}");
    }
    Ok(chosen)
}
