//! An embedded model (feature `local`): a GGUF file run in this process on
//! the CPU with candle, pure Rust, with no model server and no key. Its
//! tokenizer and chat template come from the file, so one `.gguf` is
//! enough; the tools are rendered as the template expects them and the
//! model's Hermes-style `<tool_call>` blocks become the loop's tool calls.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use loopwright_providers::LocalModel;
//! let model = LocalModel::load("SmolLM2-135M-Instruct.Q4_1.gguf").await?;
//! # drop(model); Ok(()) }
//! ```
//!
//! Invariants: loading and generating run on blocking threads, never on
//! the runtime's; one generation at a time per loaded model (the others
//! wait their turn); the engine picks, at run time, only the instructions
//! this CPU and its operating system allow (candle's runtime detection),
//! so a binary built for one x86-64 machine runs on any; a request is
//! answered deterministically for a given seed (temperature 0: the most
//! likely token each time).

mod generate;
pub mod hub;
mod named;
mod split;
mod template;
mod weights;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use loopwright_types::{LanguageModel, ModelError};
use loopwright_types::{ModelRequest, ModelStream};
use tokio::sync::mpsc;

pub use named::{DEFAULT_LOCAL_MODEL, KNOWN_LOCAL_MODELS, LOCAL_MODEL_ENV, NamedLocalModel, QWEN3_0_6B};

/// Answers generated when a request does not limit them.
pub const DEFAULT_LOCAL_MAX_TOKENS: usize = 1024;

/// Why a model file could not be used.
///
/// ```
/// let e = loopwright_providers::LocalModelError::Invalid { path: "m.gguf".into(), message: "not a GGUF file".into() };
/// assert_eq!(e.to_string(), "local model m.gguf: not a GGUF file");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalModelError {
    /// The file could not be read.
    #[error("local model {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a model this provider runs, named.
    #[error("local model {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// A GGUF model file loaded in this process.
pub struct LocalModel {
    id: String,
    loaded: Arc<Mutex<weights::Loaded>>,
    template: String,
    context: usize,
    seed: u64,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("id", &self.id)
            .field("context", &self.context)
            .finish()
    }
}

impl LocalModel {
    /// Load `path` (on a blocking thread); its id is the file's stem.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_providers::LocalModelError> {
    /// let model = loopwright_providers::LocalModel::load("/models/SmolLM2-135M-Instruct.Q4_1.gguf").await?;
    /// # drop(model); Ok(()) }
    /// ```
    pub async fn load(path: impl AsRef<Path>) -> Result<Self, LocalModelError> {
        let path = path.as_ref().to_path_buf();
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "local".to_owned());
        let opened = path.clone();
        let loaded = tokio::task::spawn_blocking(move || weights::load(&opened))
            .await
            .map_err(|e| LocalModelError::Invalid {
                path: path.clone(),
                message: format!("loading stopped: {e}"),
            })??;
        Ok(Self {
            id,
            template: loaded.template.clone(),
            context: loaded.context,
            loaded: Arc::new(Mutex::new(loaded)),
            seed: 0,
        })
    }

    /// The same model named `id` (`local/{id}`).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_providers::LocalModelError> {
    /// let model = loopwright_providers::LocalModel::load("m.gguf").await?.with_id("smollm2");
    /// # drop(model); Ok(()) }
    /// ```
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The sampling seed when the temperature is above 0 (default 0).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_providers::LocalModelError> {
    /// let model = loopwright_providers::LocalModel::load("m.gguf").await?.with_seed(42);
    /// # drop(model); Ok(()) }
    /// ```
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many tokens the model attends to (from its file).
    ///
    /// ```no_run
    /// # async fn demo(model: loopwright_providers::LocalModel) {
    /// println!("{} tokens", model.context_length());
    /// # }
    /// ```
    pub fn context_length(&self) -> usize {
        self.context
    }

    /// The prompt `request` renders to with the model's own template.
    ///
    /// ```no_run
    /// # fn demo(model: loopwright_providers::LocalModel) -> Result<(), loopwright_types::ModelError> {
    /// let request = loopwright_types::ModelRequest::new(vec![loopwright_types::Message::user("Hi")]);
    /// println!("{}", model.prompt(&request)?);
    /// # Ok(()) }
    /// ```
    pub fn prompt(&self, request: &ModelRequest) -> Result<String, ModelError> {
        template::render(&self.template, request).map_err(|e| ModelError::invalid_request(None, e))
    }

    /// `text` as the model's tokens (special tokens written in it, such as
    /// `<|im_start|>`, are one token each).
    ///
    /// ```no_run
    /// # fn demo(model: loopwright_providers::LocalModel) -> Result<(), loopwright_types::ModelError> {
    /// assert_eq!(model.tokens("<|im_start|>")?.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn tokens(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        loaded
            .tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| ModelError::invalid_request(None, format!("the local model's tokenizer: {e}")))
    }

    /// How many tokens `text` is.
    ///
    /// ```no_run
    /// # fn demo(model: loopwright_providers::LocalModel) -> Result<(), loopwright_types::ModelError> {
    /// println!("{} tokens", model.count_tokens("Hello, world")?);
    /// # Ok(()) }
    /// ```
    pub fn count_tokens(&self, text: &str) -> Result<usize, ModelError> {
        self.tokens(text).map(|t| t.len())
    }
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn provider(&self) -> &str {
        "local"
    }

    fn model_id(&self) -> &str {
        &self.id
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let asked = generate::Asked {
            prompt: self.prompt(&request)?,
            max_tokens: request
                .max_output_tokens
                .map_or(DEFAULT_LOCAL_MAX_TOKENS, |n| n as usize),
            temperature: f64::from(request.temperature.unwrap_or(0.0)),
            seed: self.seed,
            cancel: request.cancellation.clone(),
        };
        let (tx, rx) = mpsc::channel(64);
        let loaded = self.loaded.clone();
        tokio::task::spawn_blocking(move || {
            let mut model = loaded.lock().unwrap_or_else(|p| p.into_inner());
            generate::generate(&mut model, asked, &tx);
        });
        Ok(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) }).boxed())
    }
}
