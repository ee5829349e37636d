//! Finding a model server on this machine when nothing is configured: an
//! Ollama server (at `OLLAMA_HOST`, else its default port) or an
//! OpenAI-compatible one on a well-known port, each asked for its models.
//!
//! Probes run concurrently, each bounded by [`LOCAL_PROBE_TIMEOUT`]; the
//! first server in [`local_candidates`] order that answers with at least one
//! model wins.

use std::time::Duration;

use serde_json::Value;

use crate::OLLAMA_BASE_URL;
use crate::config::{ProviderConfig, ProviderKind};
use crate::ollama::ollama_api_root;

/// How long one probe may take: a local server answers in milliseconds.
pub const LOCAL_PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// Default ports of OpenAI-compatible servers, in the order they are
/// preferred: vLLM, LM Studio, llama.cpp's server.
pub const OPENAI_COMPATIBLE_PORTS: [u16; 3] = [8000, 1234, 8080];

/// A server found on this machine: the provider entry to add and the model
/// it serves first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalServer {
    /// Provider name (`ollama` or `local`).
    pub provider: String,
    /// Its configuration.
    pub config: ProviderConfig,
    /// The first model it lists.
    pub model: String,
}

impl LocalServer {
    /// `provider/model`.
    pub fn selector(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }
}

/// The servers probed: (provider name, kind, base URL), in order.
///
/// ```
/// let c = loopwright_providers::local_candidates(Some("http://10.0.0.5:11434"));
/// assert_eq!(c[0].2, "http://10.0.0.5:11434");
/// assert_eq!(c[1].2, "http://127.0.0.1:8000/v1");
/// ```
pub fn local_candidates(ollama_host: Option<&str>) -> Vec<(&'static str, ProviderKind, String)> {
    let ollama = ollama_host
        .filter(|h| !h.trim().is_empty())
        .unwrap_or(OLLAMA_BASE_URL);
    let mut out = vec![("ollama", ProviderKind::Ollama, ollama.to_owned())];
    out.extend(OPENAI_COMPATIBLE_PORTS.iter().map(|port| {
        (
            "local",
            ProviderKind::OpenaiCompatible,
            format!("http://127.0.0.1:{port}/v1"),
        )
    }));
    out
}

/// The first local server that answers (see the module docs); `None` when
/// none does.
///
/// ```no_run
/// # async fn demo() {
/// if let Some(server) = loopwright_providers::detect_local_server(std::env::var("OLLAMA_HOST").ok().as_deref()).await {
///     println!("using {}", server.selector());
/// }
/// # }
/// ```
pub async fn detect_local_server(ollama_host: Option<&str>) -> Option<LocalServer> {
    let client = crate::http::client_builder()
        .timeout(LOCAL_PROBE_TIMEOUT)
        .build()
        .ok()?;
    let probes = local_candidates(ollama_host)
        .into_iter()
        .map(|(provider, kind, base)| {
            let client = client.clone();
            async move {
                let model = first_model(&client, kind, &base).await?;
                Some(LocalServer {
                    provider: provider.to_owned(),
                    config: ProviderConfig {
                        kind: Some(kind),
                        base_url: Some(base),
                        ..ProviderConfig::default()
                    },
                    model,
                })
            }
        });
    futures::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .next()
}

/// The first model a server lists (Ollama's `/api/tags`, or `/models`).
async fn first_model(client: &reqwest::Client, kind: ProviderKind, base: &str) -> Option<String> {
    let (url, list, field) = match kind {
        ProviderKind::Ollama => (format!("{}/tags", ollama_api_root(base)), "models", "name"),
        _ => (format!("{}/models", base.trim_end_matches('/')), "data", "id"),
    };
    let body: Value = client
        .get(url)
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()?;
    body.get(list)?
        .as_array()?
        .iter()
        .find_map(|m| m.get(field)?.as_str().map(str::to_owned))
}
