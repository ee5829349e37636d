//! Choosing the model of a run from a configuration: the selectors asked
//! for, else `defaults.model`, else the first provider whose API key is in
//! the environment, else a local Ollama or OpenAI-compatible server that
//! answers, else (feature `local`) the embedded model `local/qwen3-0.6b`.
//! Several usable selectors make a [`FallbackModel`] chain.
//!
//! Invariant: one unusable selector (its provider's key or variable is
//! missing, the provider is unknown) is skipped and reported, never fatal
//! while another selector is usable; only a chain with nothing usable left
//! is an error, and that error names every selector with its reason.

use std::sync::Arc;
use std::time::Duration;

use loopwright_core::{ContextBudget, FallbackModel, LanguageModel};
use loopwright_providers::{DownloadProgress, Providers, detect_local_server};

use super::AgentConfig;

/// What to tell a user who has configured no model. Front ends add how to
/// name a model on their own surface (`--model`, an environment variable).
pub const NO_MODEL_HELP: &str = "no model is configured. Do one of:
  - set an API key: ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY) or OPENROUTER_API_KEY;
  - name a model as provider/model (for example ollama/qwen3) in LOOPWRIGHT_MODEL, or set \"defaults\": {\"model\": ...} in ./.ai-agent.json or ~/.ai-agent.json;
  - start a local server: Ollama (OLLAMA_HOST, default http://localhost:11434) or an OpenAI-compatible one on port 8000, 1234 or 8080;
  - or build with loopwright's feature `local`, and the embedded model local/qwen3-0.6b (a 397 MB download, once) answers.";

/// Why no model could be chosen.
///
/// ```
/// let err = loopwright_config::config::ModelChoiceError::NoneUsable {
///     skipped: vec![("work/gpt-4.1".into(), "environment variable WORK_KEY is not set".into())],
/// };
/// assert_eq!(err.to_string(), "no usable model: work/gpt-4.1 (environment variable WORK_KEY is not set)");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelChoiceError {
    /// Nothing names a model, no key is set and no local server answers.
    #[error("{NO_MODEL_HELP}")]
    NoModel,
    /// The `providers` section could not be resolved.
    #[error("providers: {0}")]
    Providers(String),
    /// Every selector was unusable.
    #[error("no usable model: {}", list(skipped))]
    NoneUsable {
        /// Each selector with why it was skipped.
        skipped: Vec<(String, String)>,
    },
}

fn list(skipped: &[(String, String)]) -> String {
    skipped
        .iter()
        .map(|(selector, why)| format!("{selector} ({why})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The model of a run, and how it was chosen.
#[derive(Clone)]
#[non_exhaustive]
pub struct ChosenModel {
    /// The model: a [`FallbackModel`] over [`Self::selectors`] when there
    /// are several.
    pub model: Arc<dyn LanguageModel>,
    /// The usable selectors, in fallback order.
    pub selectors: Vec<String>,
    /// Selectors left out, each with why (worth a warning).
    pub skipped: Vec<(String, String)>,
    /// The providers the models came from (budgets, more models).
    pub providers: Providers,
    /// Set when nothing named a model and the embedded one was chosen
    /// (feature `local`): what to tell the user before the run.
    pub embedded: Option<EmbeddedFallback>,
}

/// The embedded model chosen as the model of last resort, and the download
/// its first use makes (if the file is not cached yet); its `Display` is
/// the line to show the user.
///
/// ```
/// let fallback = loopwright_config::config::EmbeddedFallback {
///     selector: "local/qwen3-0.6b".into(),
///     file: None,
///     download: None,
/// };
/// assert!(fallback.to_string().starts_with("no API key, configured model or local model server was found: \
///     using the embedded model local/qwen3-0.6b"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedFallback {
    /// `local/NAME`.
    pub selector: String,
    /// The file it runs instead of the named model's, from
    /// `LOOPWRIGHT_LOCAL_MODEL`.
    pub file: Option<std::path::PathBuf>,
    /// The file fetched on first use, when it is not in the cache yet.
    pub download: Option<PendingDownload>,
}

/// A model file about to be fetched.
///
/// ```
/// let pending = loopwright_config::config::PendingDownload {
///     url: "https://huggingface.co/org/m/resolve/rev/m.gguf".into(),
///     size: 396_705_472,
///     cache: "/home/me/.cache/huggingface/hub".into(),
/// };
/// assert_eq!(pending.size / 1_000_000, 396);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingDownload {
    /// Where from.
    pub url: String,
    /// How many bytes.
    pub size: u64,
    /// The Hugging Face cache it goes into.
    pub cache: std::path::PathBuf,
}

impl std::fmt::Display for EmbeddedFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no API key, configured model or local model server was found: using the embedded model {}, run \
             on this machine's CPU",
            self.selector
        )?;
        if let Some(file) = &self.file {
            write!(f, " (the file {}, from LOOPWRIGHT_LOCAL_MODEL)", file.display())?;
        }
        if let Some(pending) = &self.download {
            write!(
                f,
                ". First it downloads {} ({} MB, once) into {} (LOOPWRIGHT_LOCAL_MODEL=/path/model.gguf uses a \
                 file you have instead)",
                pending.url,
                pending.size.div_ceil(1_000_000),
                pending.cache.display()
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for ChosenModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChosenModel")
            .field("selectors", &self.selectors)
            .field("skipped", &self.skipped)
            .field("embedded", &self.embedded)
            .finish_non_exhaustive()
    }
}

impl ChosenModel {
    /// The context budget that holds for every model of the chain (the
    /// smallest), with this output reservation and buffer; `None` (and a
    /// warning in the log) when a selector's tokenizer cannot be built.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = loopwright_config::config::AgentConfig::default();
    /// let chosen = config.choose_model(&["openai/gpt-4.1".into(), "openai/gpt-4o".into()], None).await?;
    /// let budget = chosen.budget(Some(8_192), None);
    /// # let _ = budget; Ok(()) }
    /// ```
    pub fn budget(
        &self,
        max_output_tokens: Option<u32>,
        buffer_tokens: Option<u64>,
    ) -> Option<ContextBudget> {
        match self
            .providers
            .chain_budget(&self.selectors, max_output_tokens, buffer_tokens)
        {
            Ok(budget) => budget,
            Err(e) => {
                tracing::warn!(error = %e, "no context budget");
                None
            }
        }
    }
}

impl AgentConfig {
    /// Choose the model (see the module docs): `requested` selectors (a
    /// fallback order), else `defaults.model`, else the first provider whose
    /// key is set, else a local server that answers. `llm_timeout` (else
    /// `defaults.llmTimeout`) becomes every provider's stream inactivity
    /// timeout.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_config::config::ModelChoiceError> {
    /// let config = loopwright_config::config::AgentConfig::default(); // the environment alone
    /// let chosen = config.choose_model(&[], None).await?;
    /// for (selector, why) in &chosen.skipped {
    ///     eprintln!("warning: model {selector} left out: {why}");
    /// }
    /// println!("using {}", chosen.selectors.join(", then "));
    /// # Ok(()) }
    /// ```
    pub async fn choose_model(
        &self,
        requested: &[String],
        llm_timeout: Option<Duration>,
    ) -> Result<ChosenModel, ModelChoiceError> {
        self.choose_model_with(requested, llm_timeout, None).await
    }

    /// As [`AgentConfig::choose_model`], telling `on_download` how the
    /// embedded model's first download goes (a progress bar:
    /// `loopwright_providers::hub::terminal_progress`).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_config::config::ModelChoiceError> {
    /// let config = loopwright_config::config::AgentConfig::default();
    /// let progress = std::sync::Arc::new(|done: u64, total: u64| eprint!("\r{done}/{total}"));
    /// let chosen = config.choose_model_with(&[], None, Some(progress)).await?;
    /// if let Some(fallback) = &chosen.embedded {
    ///     eprintln!("{fallback}"); // what is about to be downloaded, and how big it is
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn choose_model_with(
        &self,
        requested: &[String],
        llm_timeout: Option<Duration>,
        on_download: Option<DownloadProgress>,
    ) -> Result<ChosenModel, ModelChoiceError> {
        let mut providers = Providers::from_config(self.providers.clone())
            .map_err(|e| ModelChoiceError::Providers(e.to_string()))?;
        if let Some(progress) = on_download {
            providers = providers.on_download(progress);
        }
        let mut selectors: Vec<String> = if requested.is_empty() {
            self.defaults.model.clone()
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
                    .map_err(|e| ModelChoiceError::Providers(format!("local server: {e}")))?;
                selectors.push(local.selector());
            }
        }
        let embedded = if selectors.is_empty() {
            let fallback = embedded_fallback().ok_or(ModelChoiceError::NoModel)?;
            selectors.push(fallback.selector.clone());
            Some(fallback)
        } else {
            None
        };
        if let Some(timeout) = llm_timeout.or(self.defaults.llm_timeout) {
            providers = providers.inactivity_timeout(timeout);
        }
        let mut models = Vec::with_capacity(selectors.len());
        let mut usable = Vec::with_capacity(selectors.len());
        let mut skipped = Vec::new();
        for selector in selectors {
            let built = match self.provider_problem(&selector) {
                Some(problem) => Err(problem.to_string()),
                None => providers.model(&selector).map_err(|e| e.to_string()),
            };
            match built {
                Ok(model) => {
                    models.push(model);
                    usable.push(selector);
                }
                Err(why) => skipped.push((selector, why)),
            }
        }
        let model = match models.len() {
            0 => return Err(ModelChoiceError::NoneUsable { skipped }),
            1 => models.remove(0),
            _ => Arc::new(FallbackModel::new(models)) as Arc<dyn LanguageModel>,
        };
        Ok(ChosenModel {
            model,
            selectors: usable,
            skipped,
            providers,
            embedded,
        })
    }
}

/// The embedded default model, and what its first use downloads.
#[cfg(feature = "local")]
fn embedded_fallback() -> Option<EmbeddedFallback> {
    use loopwright_providers::{DEFAULT_LOCAL_MODEL, NamedLocalModel, hub};
    let model = NamedLocalModel::new(DEFAULT_LOCAL_MODEL).ok()?;
    let cache = hub::cache_dir();
    let download = model
        .hub_file()
        .filter(|file| file.cached(&cache).is_none())
        .map(|file| PendingDownload {
            url: file.url(&hub::endpoint()),
            size: file.size,
            cache,
        });
    Some(EmbeddedFallback {
        selector: format!("local/{DEFAULT_LOCAL_MODEL}"),
        file: model.file().map(std::path::Path::to_path_buf),
        download,
    })
}

/// Without the embedded model there is no model of last resort.
#[cfg(not(feature = "local"))]
fn embedded_fallback() -> Option<EmbeddedFallback> {
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn config(text: &str) -> AgentConfig {
        AgentConfig::parse(text, "c.json", &|name| (name == "SET").then(|| "k".to_string())).unwrap()
    }

    #[tokio::test]
    async fn an_unusable_selector_is_skipped_and_the_chain_goes_on() {
        let config = config(
            r#"{"providers": {"work": {"type": "openai", "apiKey": "${UNSET_KEY}"},
                              "home": {"type": "openai", "apiKey": "${SET}"}},
                "defaults": {"model": ["work/gpt-4.1", "home/gpt-4.1", "nowhere/x"]}}"#,
        );
        let chosen = config.choose_model(&[], None).await.unwrap();
        assert_eq!(chosen.selectors, ["home/gpt-4.1"]);
        let skipped: Vec<&str> = chosen.skipped.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(skipped, ["work/gpt-4.1", "nowhere/x"]);
        assert!(chosen.skipped[0].1.contains("UNSET_KEY"), "{:?}", chosen.skipped);
    }

    #[tokio::test]
    async fn nothing_usable_names_every_selector() {
        let config = config(r#"{"providers": {"work": {"type": "openai", "apiKey": "${UNSET_KEY}"}}}"#);
        let err = config
            .choose_model(&["work/gpt-4.1".into()], None)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("no usable model: work/gpt-4.1 ("), "{text}");
        assert!(text.contains("UNSET_KEY"), "{text}");
    }

    #[tokio::test]
    async fn requested_selectors_win_over_the_defaults_and_the_budget_fits_the_smallest() {
        let config = config(
            r#"{"providers": {"a": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1",
                                    "models": {"big": {"contextWindow": 100000}, "small": {"contextWindow": 5000}}}},
                "defaults": {"model": "a/big"}}"#,
        );
        let chosen = config
            .choose_model(&["a/big".into(), "a/small".into()], None)
            .await
            .unwrap();
        assert_eq!(chosen.selectors, ["a/big", "a/small"]);
        let budget = chosen.budget(Some(1_000), Some(0)).unwrap();
        assert_eq!(budget.limit(), 4_000);
    }
}
