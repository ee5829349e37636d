//! Construction from configuration and the environment, and `provider/model`
//! selectors.
//!
//! ```
//! use loopwright_providers::{Providers, ProvidersConfig};
//! let config: ProvidersConfig = serde_json::from_value(serde_json::json!({
//!     "providers": {
//!         "local": {"type": "openai-compatible", "baseUrl": "http://localhost:8000/v1",
//!                   "models": {"qwen": {"contextWindow": 32768}}},
//!         "anthropic": {"apiKey": "${MY_KEY}"}
//!     }
//! })).unwrap();
//! let env = |name: &str| (name == "MY_KEY").then(|| "sk-ant".to_owned());
//! let providers = Providers::with_env(config, env).unwrap();
//! let model = providers.model("local/qwen").unwrap();
//! assert_eq!((model.provider(), model.model_id()), ("local", "qwen"));
//! assert_eq!(providers.model_config("local/qwen").unwrap().context_window, Some(32768));
//! assert_eq!(providers.model("anthropic/claude-sonnet-4-5").unwrap().provider(), "anthropic");
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use loopwright_types::{LanguageModel, ModelError};
use serde::{Deserialize, Serialize};

use crate::settings::ProviderSettings;
use crate::{
    ANTHROPIC_BASE_URL, AnthropicModel, GEMINI_BASE_URL, GeminiModel, OLLAMA_BASE_URL, OPENAI_BASE_URL,
    OPENROUTER_BASE_URL, OllamaModel, OpenAiChatModel, OpenAiResponsesModel,
};

/// The wire format a configured provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI Chat Completions.
    Openai,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Google,
    /// OpenRouter (Chat Completions with attribution headers).
    Openrouter,
    /// Ollama's native API.
    Ollama,
    /// Any OpenAI-compatible server.
    OpenaiCompatible,
}

impl ProviderKind {
    /// The environment variables holding this kind's API key, in order.
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Self::Openai | Self::OpenaiResponses => &["OPENAI_API_KEY"],
            Self::Anthropic => &["ANTHROPIC_API_KEY"],
            Self::Google => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Self::Openrouter => &["OPENROUTER_API_KEY"],
            Self::Ollama | Self::OpenaiCompatible => &[],
        }
    }

    /// The default base URL, if this kind has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::Openai | Self::OpenaiResponses => Some(OPENAI_BASE_URL),
            Self::Anthropic => Some(ANTHROPIC_BASE_URL),
            Self::Google => Some(GEMINI_BASE_URL),
            Self::Openrouter => Some(OPENROUTER_BASE_URL),
            Self::Ollama => Some(OLLAMA_BASE_URL),
            Self::OpenaiCompatible => None,
        }
    }
}

/// Well-known provider names: the kind inferred when `type` is absent, and
/// a base URL for OpenAI-compatible services.
const WELL_KNOWN: [(&str, ProviderKind, Option<&str>); 12] = [
    ("openai", ProviderKind::Openai, None),
    ("openai-responses", ProviderKind::OpenaiResponses, None),
    ("anthropic", ProviderKind::Anthropic, None),
    ("google", ProviderKind::Google, None),
    ("gemini", ProviderKind::Google, None),
    ("openrouter", ProviderKind::Openrouter, None),
    ("ollama", ProviderKind::Ollama, None),
    (
        "groq",
        ProviderKind::OpenaiCompatible,
        Some("https://api.groq.com/openai/v1"),
    ),
    (
        "deepseek",
        ProviderKind::OpenaiCompatible,
        Some("https://api.deepseek.com/v1"),
    ),
    ("xai", ProviderKind::OpenaiCompatible, Some("https://api.x.ai/v1")),
    (
        "mistral",
        ProviderKind::OpenaiCompatible,
        Some("https://api.mistral.ai/v1"),
    ),
    (
        "together",
        ProviderKind::OpenaiCompatible,
        Some("https://api.together.xyz/v1"),
    ),
];

fn well_known(name: &str) -> Option<(ProviderKind, Option<&'static str>)> {
    WELL_KNOWN
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, k, u)| (*k, *u))
}

/// What is known about one model of a provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelConfig {
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Tokenizer name, for token counting.
    #[serde(default)]
    pub tokenizer: Option<String>,
}

/// One configured provider (`providers.<name>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    /// The wire format; inferred from a well-known name when absent.
    #[serde(default, rename = "type")]
    pub kind: Option<ProviderKind>,
    /// API key; `${VAR}` and `${VAR:-default}` are expanded. Defaults to the kind's environment variable.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Base URL with the version segment; `${VAR}` and `${VAR:-default}`
    /// are expanded.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Extra headers; `${VAR}` and `${VAR:-default}` in values are expanded.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Known models.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// Whether the server accepts `tool_choice: "required"` (OpenAI family).
    #[serde(default)]
    pub supports_required_tool_choice: Option<bool>,
    /// A JSON object merged into every request body of this provider's
    /// models, for what this library does not model.
    #[serde(default)]
    pub options: Option<serde_json::Value>,
}

/// The `providers` section of a configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvidersConfig {
    /// Providers by name.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// Why a provider or model could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A provider without `type` whose name is not well known.
    #[error("provider {0:?} has no type and its name is not a known provider")]
    UnknownType(String),
    /// A selector naming no configured or built-in provider.
    #[error("no provider named {0:?}")]
    UnknownProvider(String),
    /// A selector not of the form `provider/model`.
    #[error("model selector {0:?} is not of the form provider/model")]
    InvalidSelector(String),
    /// `${VAR}` named an unset variable.
    #[error("environment variable {var} (used by provider {provider:?}) is not set")]
    MissingVar {
        /// The provider.
        provider: String,
        /// The variable.
        var: String,
    },
    /// No API key configured nor in the environment.
    #[error("provider {provider:?} needs an API key: set apiKey or {vars}")]
    MissingApiKey {
        /// The provider.
        provider: String,
        /// The environment variables looked at.
        vars: String,
    },
    /// An OpenAI-compatible provider without a base URL.
    #[error("provider {0:?} needs a baseUrl")]
    MissingBaseUrl(String),
    /// A configured tokenizer that is not `tiktoken:<encoding>` with a known
    /// encoding (o200k_base, cl100k_base, p50k_base, r50k_base).
    #[error(
        "unknown tokenizer {0:?}: expected tiktoken:o200k_base, tiktoken:cl100k_base, tiktoken:p50k_base or tiktoken:r50k_base"
    )]
    UnknownTokenizer(String),
    /// A tokenizer's data failed to load.
    #[error("tokenizer {tokenizer:?} failed to load: {message}")]
    Tokenizer {
        /// The tokenizer.
        tokenizer: String,
        /// Why it failed.
        message: String,
    },
    /// Building the model failed (a malformed header).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// `local/NAME` names no model this build can run.
    #[error("local/{name}: {message}")]
    LocalModel {
        /// The name.
        name: String,
        /// Why not.
        message: String,
    },
}

/// A provider ready to build models: kind and resolved settings.
#[derive(Debug, Clone)]
struct Resolved {
    kind: ProviderKind,
    settings: ProviderSettings,
    models: BTreeMap<String, ModelConfig>,
    supports_required: Option<bool>,
}

/// What a model download tells as it goes: bytes done, bytes in all (the
/// embedded model's first use, feature `local`).
///
/// ```
/// let progress: loopwright_providers::DownloadProgress =
///     std::sync::Arc::new(|done, total| eprint!("\r{done}/{total}"));
/// # drop(progress);
/// ```
pub type DownloadProgress = Arc<dyn Fn(u64, u64) + Send + Sync>;

/// Configured and built-in providers, building models from `provider/model`
/// selectors.
#[derive(Debug, Clone, Default)]
pub struct Providers {
    resolved: BTreeMap<String, Resolved>,
    download: Option<Progress>,
}

/// A [`DownloadProgress`] in a struct that derives `Debug`.
#[derive(Clone)]
struct Progress(DownloadProgress);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

impl Providers {
    /// Providers from `config`, with `${VAR}` (and `${VAR:-default}`, by
    /// the rules of the configuration file and MCP servers) and default keys
    /// read from the process environment; built-in providers are available under their
    /// names (`openai`, `anthropic`, `google`, `openrouter`, `ollama`, ...).
    pub fn from_config(config: ProvidersConfig) -> Result<Self, ConfigError> {
        Self::with_env(config, |name| std::env::var(name).ok())
    }

    /// Only the built-in providers, keys from the environment
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` /
    /// `GOOGLE_API_KEY`, `OPENROUTER_API_KEY`, `OLLAMA_HOST`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_config(ProvidersConfig::default())
    }

    /// As [`Providers::from_config`], reading variables through `env`.
    pub fn with_env(
        config: ProvidersConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env: &dyn Fn(&str) -> Option<String> = &env;
        let mut resolved = BTreeMap::new();
        // Built-ins first, so that a configured entry of the same name replaces them.
        for (name, kind, url) in WELL_KNOWN {
            if kind == ProviderKind::OpenaiCompatible {
                continue;
            }
            let mut settings = ProviderSettings::new(url.or(kind.default_base_url()).unwrap_or_default());
            if kind == ProviderKind::Ollama
                && let Some(host) = env("OLLAMA_HOST").filter(|h| !h.is_empty())
            {
                settings.base_url = host;
            }
            settings.api_key = kind
                .key_vars()
                .iter()
                .find_map(|v| env(v))
                .filter(|k| !k.is_empty());
            resolved.insert(
                name.to_owned(),
                Resolved {
                    kind,
                    settings,
                    models: BTreeMap::new(),
                    supports_required: None,
                },
            );
        }
        for (name, cfg) in config.providers {
            resolved.insert(name.clone(), resolve(&name, cfg, env)?);
        }
        Ok(Self {
            resolved,
            download: None,
        })
    }

    /// Use `options` (retries, backoff, stream inactivity timeout) for every
    /// provider.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut options = loopwright_providers::HttpOptions::default();
    /// options.inactivity_timeout = Duration::from_secs(30);
    /// let providers = loopwright_providers::Providers::from_env().unwrap().http_options(options);
    /// # let _ = providers;
    /// ```
    pub fn http_options(mut self, options: crate::http::HttpOptions) -> Self {
        for provider in self.resolved.values_mut() {
            provider.settings.http = options.clone();
        }
        self
    }

    /// Set only the stream inactivity timeout of every provider, keeping
    /// their other HTTP options.
    ///
    /// ```
    /// let providers = loopwright_providers::Providers::from_env()
    ///     .unwrap()
    ///     .inactivity_timeout(std::time::Duration::from_secs(30));
    /// # let _ = providers;
    /// ```
    pub fn inactivity_timeout(mut self, timeout: std::time::Duration) -> Self {
        for provider in self.resolved.values_mut() {
            provider.settings.http.inactivity_timeout = timeout;
        }
        self
    }

    /// Tell `progress` how the download of an embedded model (`local/NAME`,
    /// feature `local`) goes, the first time one is used and not cached.
    /// Without the feature there is nothing to download and it is never
    /// called.
    ///
    /// ```
    /// let providers = loopwright_providers::Providers::from_env()
    ///     .unwrap()
    ///     .on_download(std::sync::Arc::new(|done, total| eprint!("\r{done}/{total}")));
    /// # let _ = providers;
    /// ```
    pub fn on_download(mut self, progress: DownloadProgress) -> Self {
        self.download = Some(Progress(progress));
        self
    }

    /// Add (or replace) one provider.
    ///
    /// ```
    /// use loopwright_providers::{ProviderConfig, ProviderKind, Providers};
    /// let config = ProviderConfig { kind: Some(ProviderKind::Ollama), ..ProviderConfig::default() };
    /// let providers = Providers::from_env().unwrap().with_provider("box", config).unwrap();
    /// assert!(providers.names().any(|n| n == "box"));
    /// ```
    pub fn with_provider(mut self, name: &str, config: ProviderConfig) -> Result<Self, ConfigError> {
        let resolved = resolve(name, config, &|var| std::env::var(var).ok())?;
        self.resolved.insert(name.to_owned(), resolved);
        Ok(self)
    }

    /// The provider names known.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.resolved.keys().map(String::as_str)
    }

    /// What the configuration says about the model a selector names.
    pub fn model_config(&self, selector: &str) -> Option<&ModelConfig> {
        let (provider, model) = split_selector(selector).ok()?;
        self.resolved.get(provider)?.models.get(model)
    }

    /// Build the model a `provider/model` selector names (the model part may
    /// itself contain `/`, as OpenRouter ids do).
    pub fn model(&self, selector: &str) -> Result<Arc<dyn LanguageModel>, ConfigError> {
        let (provider, model) = split_selector(selector)?;
        // `local/NAME` is the embedded model, unless a provider is named so.
        if provider == "local" && !self.resolved.contains_key(provider) {
            return embedded(model, self.download.as_ref().map(|p| p.0.clone()));
        }
        let r = self
            .resolved
            .get(provider)
            .ok_or_else(|| ConfigError::UnknownProvider(provider.to_owned()))?;
        let needs_key = !r.kind.key_vars().is_empty();
        if needs_key && r.settings.api_key.is_none() {
            return Err(ConfigError::MissingApiKey {
                provider: provider.to_owned(),
                vars: r.kind.key_vars().join(" or "),
            });
        }
        if r.settings.base_url.is_empty() {
            return Err(ConfigError::MissingBaseUrl(provider.to_owned()));
        }
        let s = r.settings.clone();
        let required = r.supports_required.unwrap_or(true);
        Ok(match r.kind {
            ProviderKind::Openai => Arc::new(
                OpenAiChatModel::openai(model)
                    .settings(s)
                    .supports_required_tool_choice(required)
                    .build()?,
            ),
            ProviderKind::OpenaiResponses => {
                Arc::new(OpenAiResponsesModel::builder(model).settings(s).build()?)
            }
            ProviderKind::Anthropic => Arc::new(AnthropicModel::builder(model).settings(s).build()?),
            ProviderKind::Google => Arc::new(GeminiModel::builder(model).settings(s).build()?),
            ProviderKind::Openrouter => Arc::new(
                OpenAiChatModel::openrouter(model)
                    .settings(s)
                    .supports_required_tool_choice(required)
                    .build()?,
            ),
            ProviderKind::Ollama => Arc::new(OllamaModel::builder(model).settings(s).build()?),
            ProviderKind::OpenaiCompatible => Arc::new(
                OpenAiChatModel::compatible(provider, s.base_url.clone(), model)
                    .settings(s)
                    .supports_required_tool_choice(required)
                    .build()?,
            ),
        })
    }

    /// The selector of the first built-in provider, in the order of
    /// [`DEFAULT_MODELS`], whose API key is set, with that provider's default
    /// model; `None` when no key is set.
    ///
    /// ```
    /// use loopwright_providers::{Providers, ProvidersConfig};
    /// let env = |name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_string());
    /// let providers = Providers::with_env(ProvidersConfig::default(), env).unwrap();
    /// assert_eq!(providers.default_selector().as_deref(), Some("anthropic/claude-sonnet-4-5"));
    /// ```
    pub fn default_selector(&self) -> Option<String> {
        DEFAULT_MODELS.iter().find_map(|(provider, model)| {
            let r = self.resolved.get(*provider)?;
            r.settings.api_key.as_ref()?;
            Some(format!("{provider}/{model}"))
        })
    }
}

/// Providers tried for a default model, in order, with the model used when
/// only a key is given: capable, tool-using and not the most expensive.
pub const DEFAULT_MODELS: [(&str, &str); 4] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-4.1-mini"),
    ("google", "gemini-2.5-flash"),
    ("openrouter", "openai/gpt-4.1-mini"),
];

pub(crate) fn split_selector(selector: &str) -> Result<(&str, &str), ConfigError> {
    match selector.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p, m)),
        _ => Err(ConfigError::InvalidSelector(selector.to_owned())),
    }
}

fn resolve(
    name: &str,
    cfg: ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ConfigError> {
    let known = well_known(name);
    let kind = match (cfg.kind, known) {
        (Some(kind), _) => kind,
        (None, Some((kind, _))) => {
            tracing::warn!(target: "loopwright_providers::config", provider = name, ?kind, "provider has no type; inferred from its name");
            kind
        }
        (None, None) => return Err(ConfigError::UnknownType(name.to_owned())),
    };
    let expand = |text: &str| {
        loopwright_types::util::expand_vars(text, env).map_err(|unset| ConfigError::MissingVar {
            provider: name.to_owned(),
            var: unset.name,
        })
    };
    let base_url = match &cfg.base_url {
        Some(url) => expand(url)?,
        None => known
            .and_then(|(k, url)| if k == kind { url } else { None })
            .or(kind.default_base_url())
            .unwrap_or_default()
            .to_owned(),
    };
    let api_key = match &cfg.api_key {
        Some(key) => Some(expand(key)?),
        None => kind.key_vars().iter().find_map(|v| env(v)),
    }
    .filter(|k| !k.is_empty());
    let mut headers = Vec::new();
    for (k, v) in &cfg.headers {
        headers.push((k.clone(), expand(v)?));
    }
    let settings = ProviderSettings {
        base_url,
        api_key,
        headers,
        body_options: cfg.options,
        ..ProviderSettings::default()
    };
    Ok(Resolved {
        kind,
        settings,
        models: cfg.models,
        supports_required: cfg.supports_required_tool_choice,
    })
}

/// `local/{name}`: the embedded model, loaded on first use.
#[cfg(feature = "local")]
fn embedded(name: &str, progress: Option<DownloadProgress>) -> Result<Arc<dyn LanguageModel>, ConfigError> {
    crate::NamedLocalModel::new(name)
        .map(|m| match progress {
            Some(progress) => m.on_download(progress),
            None => m,
        })
        .map(|m| Arc::new(m) as Arc<dyn LanguageModel>)
        .map_err(|e| ConfigError::LocalModel {
            name: name.to_owned(),
            message: e.to_string(),
        })
}

/// `local/{name}` in a build without the embedded model.
#[cfg(not(feature = "local"))]
fn embedded(name: &str, _progress: Option<DownloadProgress>) -> Result<Arc<dyn LanguageModel>, ConfigError> {
    Err(ConfigError::LocalModel {
        name: name.to_owned(),
        message:
            "this build has no embedded model (loopwright-providers' feature `local`); configure a provider \
                  named local, or build with the feature"
                .to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(
            split_selector("openrouter/anthropic/claude").unwrap(),
            ("openrouter", "anthropic/claude")
        );
        assert!(split_selector("gpt-4").is_err());
        assert!(split_selector("/m").is_err());
    }

    #[test]
    fn local_is_the_embedded_model_unless_a_provider_is_named_so() {
        let providers = Providers::with_env(ProvidersConfig::default(), |_| None).unwrap();
        let chosen = providers.model("local/models/m.gguf");
        #[cfg(feature = "local")]
        {
            let model = chosen.unwrap();
            assert_eq!((model.provider(), model.model_id()), ("local", "models/m.gguf"));
            let e = providers.model("local/gpt-7").err().unwrap().to_string();
            assert!(
                e.contains("local/gpt-7") && e.contains("known: qwen3-0.6b"),
                "{e}"
            );
        }
        #[cfg(not(feature = "local"))]
        assert!(chosen.err().unwrap().to_string().contains("feature `local`"));
        let config: ProvidersConfig = serde_json::from_value(serde_json::json!({"providers": {
            "local": {"type": "openai-compatible", "baseUrl": "http://localhost:8000/v1"}}}))
        .unwrap();
        let configured = Providers::with_env(config, |_| None).unwrap();
        assert_eq!(configured.model("local/qwen").unwrap().model_id(), "qwen");
    }
}
