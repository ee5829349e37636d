//! `local/NAME`: a model chosen by name, loaded (and fetched into the Hub
//! cache, the first time) when it is first asked for, so choosing it costs
//! nothing until it is used.
//!
//! Invariants: `LOOPWRIGHT_LOCAL_MODEL=/path/model.gguf` makes every
//! `local/...` that file; a name that is a path to a `.gguf` file is that
//! file; a known name is its pinned Hub file; anything else is refused
//! naming the known ones. Concurrent first requests load the model once.

use std::path::PathBuf;

use async_trait::async_trait;
use loopwright_types::{LanguageModel, ModelError, ModelRequest, ModelStream};

use super::hub::{self, HubFile};
use super::{LocalModel, LocalModelError};
use crate::DownloadProgress;

/// The variable that points every `local/...` at a file.
pub const LOCAL_MODEL_ENV: &str = "LOOPWRIGHT_LOCAL_MODEL";

/// The default local model: Qwen3-0.6B at 4 bits (Q4_K_M, 397 MB), which
/// calls tools well for its size (thinking off), in unsloth's GGUF
/// conversion (Qwen's own repository has only Q8_0).
pub const QWEN3_0_6B: HubFile = HubFile {
    repo: "unsloth/Qwen3-0.6B-GGUF",
    revision: "50968a4468ef4233ed78cd7c3de230dd1d61a56b",
    file: "Qwen3-0.6B-Q4_K_M.gguf",
    sha256: "ac2d97712095a558e31573f62f466a3f9d93990898b0ec79d7c974c1780d524a",
    size: 396_705_472,
};

/// The names `local/NAME` knows, and their files.
pub const KNOWN_LOCAL_MODELS: &[(&str, HubFile)] = &[(DEFAULT_LOCAL_MODEL, QWEN3_0_6B)];

/// The local model used when nothing else is configured: `local/qwen3-0.6b`.
///
/// ```
/// let (name, file) = loopwright_providers::KNOWN_LOCAL_MODELS[0];
/// assert_eq!((name, file.size), (loopwright_providers::DEFAULT_LOCAL_MODEL, 396_705_472));
/// ```
pub const DEFAULT_LOCAL_MODEL: &str = "qwen3-0.6b";

/// Where a named model comes from.
#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Hub(HubFile),
}

/// A local model by name, loaded on first use.
pub struct NamedLocalModel {
    id: String,
    source: Source,
    ready: tokio::sync::OnceCell<LocalModel>,
    progress: Option<DownloadProgress>,
}

impl std::fmt::Debug for NamedLocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedLocalModel")
            .field("id", &self.id)
            .field("source", &self.source)
            .finish()
    }
}

impl NamedLocalModel {
    /// `local/{name}`, from the environment's `LOOPWRIGHT_LOCAL_MODEL`, a
    /// `.gguf` path, or a known name.
    ///
    /// ```
    /// let model = loopwright_providers::NamedLocalModel::new("/models/m.gguf").unwrap();
    /// assert!(model.hub_file().is_none());
    /// assert!(loopwright_providers::NamedLocalModel::new("gpt-7").is_err());
    /// ```
    pub fn new(name: &str) -> Result<Self, LocalModelError> {
        let env = std::env::var_os(LOCAL_MODEL_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self::from_parts(name, env)
    }

    fn from_parts(name: &str, env: Option<PathBuf>) -> Result<Self, LocalModelError> {
        let source = match env {
            Some(path) => Source::File(path),
            None if name.ends_with(".gguf") => Source::File(PathBuf::from(name)),
            None => match KNOWN_LOCAL_MODELS.iter().find(|(known, _)| *known == name) {
                Some((_, file)) => Source::Hub(*file),
                None => {
                    let known: Vec<&str> = KNOWN_LOCAL_MODELS.iter().map(|(n, _)| *n).collect();
                    return Err(LocalModelError::Invalid {
                        path: PathBuf::from(name),
                        message: format!(
                            "no local model is named so (known: {}); give a .gguf file's path, or set \
                             {LOCAL_MODEL_ENV}=/path/model.gguf",
                            known.join(", ")
                        ),
                    });
                }
            },
        };
        Ok(Self {
            id: name.to_owned(),
            source,
            ready: tokio::sync::OnceCell::new(),
            progress: None,
        })
    }

    /// Told the download's progress (bytes done, bytes in all).
    ///
    /// ```
    /// let model = loopwright_providers::NamedLocalModel::new("qwen3-0.6b")
    ///     .unwrap()
    ///     .on_download(std::sync::Arc::new(|done, total| eprint!("\r{done}/{total}")));
    /// # drop(model);
    /// ```
    pub fn on_download(mut self, progress: DownloadProgress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The Hub file it fetches, when it is one (to say what is about to be
    /// downloaded, and how big it is).
    ///
    /// ```
    /// # if std::env::var_os("LOOPWRIGHT_LOCAL_MODEL").is_none() {
    /// let model = loopwright_providers::NamedLocalModel::new("qwen3-0.6b").unwrap();
    /// assert_eq!(model.hub_file().unwrap().size, 396_705_472);
    /// # }
    /// ```
    pub fn hub_file(&self) -> Option<HubFile> {
        match self.source {
            Source::Hub(file) => Some(file),
            Source::File(_) => None,
        }
    }

    /// The file it runs, when it is one (`LOOPWRIGHT_LOCAL_MODEL`, or a
    /// name that is a path).
    ///
    /// ```
    /// let model = loopwright_providers::NamedLocalModel::new("/models/m.gguf").unwrap();
    /// assert_eq!(model.file(), Some(std::path::Path::new("/models/m.gguf")));
    /// ```
    pub fn file(&self) -> Option<&std::path::Path> {
        match &self.source {
            Source::File(path) => Some(path),
            Source::Hub(_) => None,
        }
    }

    /// The model, loaded (fetched first when it is a Hub file not cached).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_types::ModelError> {
    /// let model = loopwright_providers::NamedLocalModel::new("qwen3-0.6b").unwrap();
    /// println!("{} tokens of context", model.ready().await?.context_length());
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self) -> Result<&LocalModel, ModelError> {
        self.ready
            .get_or_try_init(|| async {
                let path = match &self.source {
                    Source::File(path) => path.clone(),
                    Source::Hub(file) => {
                        crate::install_tls_provider();
                        let client = crate::default_client();
                        let progress = self.progress.clone();
                        let mut tell = move |done, total| {
                            if let Some(progress) = &progress {
                                progress(done, total);
                            }
                        };
                        file.fetch(&client, &hub::cache_dir(), &hub::endpoint(), &mut tell)
                            .await
                            .map_err(|e| ModelError::network(e.to_string()).with_source(e))?
                    }
                };
                LocalModel::load(&path)
                    .await
                    .map(|m| m.with_id(self.id.clone()))
                    .map_err(|e| ModelError::invalid_request(None, e.to_string()).with_source(e))
            })
            .await
    }
}

#[async_trait]
impl LanguageModel for NamedLocalModel {
    fn provider(&self) -> &str {
        "local"
    }

    fn model_id(&self) -> &str {
        &self.id
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.ready().await?.stream(request).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::path::Path;

    #[test]
    fn a_name_is_the_environments_file_a_path_or_a_known_model() {
        let named = |name: &str, env: Option<&str>| NamedLocalModel::from_parts(name, env.map(PathBuf::from));
        assert!(
            matches!(named("qwen3-0.6b", Some("/m/x.gguf")).unwrap().source, Source::File(p) if p == Path::new("/m/x.gguf"))
        );
        assert!(matches!(
            named("/m/y.gguf", None).unwrap().source,
            Source::File(_)
        ));
        assert_eq!(named("qwen3-0.6b", None).unwrap().hub_file(), Some(QWEN3_0_6B));
        let e = named("gpt-7", None).unwrap_err().to_string();
        assert!(
            e.contains("known: qwen3-0.6b") && e.contains(LOCAL_MODEL_ENV),
            "{e}"
        );
    }
}
