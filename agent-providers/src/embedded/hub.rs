//! Model files from the Hugging Face Hub, kept in its standard cache (the
//! layout `huggingface_hub` and `hf-hub` use, so a file either of them
//! fetched is found here and the other way round), pinned by revision and
//! SHA-256, fetched with this crate's own HTTP client.
//!
//! Layout, under [`cache_dir`]: `models--{org}--{name}/blobs/{sha256}` holds
//! the bytes; `snapshots/{revision}/{file}` is a relative link to it. A
//! download goes to `blobs/{sha256}.incomplete` first.
//!
//! Invariants: a file is in the cache whole and verified, or not at all (a
//! download whose SHA-256 differs is removed and refused, naming both
//! digests); a cut download goes on from where it stopped when the server
//! takes a range, else starts again; every failure names the URL, the cache
//! path and how to do without the download (`LOOPWRIGHT_LOCAL_MODEL`,
//! `HF_HOME`, `HF_ENDPOINT`).

use std::path::{Path, PathBuf};

use futures::StreamExt;
use tokio::io::AsyncWriteExt;

/// One file of a Hub repository, pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubFile {
    /// `org/name`.
    pub repo: &'static str,
    /// The commit.
    pub revision: &'static str,
    /// The file's path in the repository.
    pub file: &'static str,
    /// Its SHA-256, hex.
    pub sha256: &'static str,
    /// Its size in bytes.
    pub size: u64,
}

/// Why a model file could not be had.
#[derive(Debug, thiserror::Error)]
#[error(
    "the model file {url} could not be downloaded into {}: {message}. Point LOOPWRIGHT_LOCAL_MODEL at a \
     .gguf file you have, set HF_HOME to a writable cache, or HF_ENDPOINT to a mirror",
    cache.display()
)]
#[non_exhaustive]
pub struct DownloadError {
    /// What was fetched.
    pub url: String,
    /// Where it was to be kept.
    pub cache: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// The Hub cache: `HF_HUB_CACHE`, `HUGGINGFACE_HUB_CACHE`, `$HF_HOME/hub`,
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (the
/// account's home when `HOME` is unset).
///
/// ```
/// println!("{}", loopwright_providers::hub::cache_dir().display());
/// ```
pub fn cache_dir() -> PathBuf {
    cache_dir_from(&|name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

fn cache_dir_from(var: &dyn Fn(&str) -> Option<PathBuf>) -> PathBuf {
    if let Some(dir) = var("HF_HUB_CACHE").or_else(|| var("HUGGINGFACE_HUB_CACHE")) {
        return dir;
    }
    if let Some(home) = var("HF_HOME") {
        return home.join("hub");
    }
    // Without HOME, the account's home (never a folder relative to
    // wherever the process happens to run).
    let home = || {
        var("HOME")
            .or_else(std::env::home_dir)
            .unwrap_or_else(std::env::temp_dir)
    };
    let cache = var("XDG_CACHE_HOME").unwrap_or_else(|| home().join(".cache"));
    cache.join("huggingface").join("hub")
}

/// Where the Hub is: `HF_ENDPOINT`, else huggingface.co.
///
/// ```
/// assert!(loopwright_providers::hub::endpoint().starts_with("http"));
/// ```
pub fn endpoint() -> String {
    std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "https://huggingface.co".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// A progress bar for [`HubFile::fetch`] (and
/// [`Providers::on_download`](crate::Providers::on_download)) on standard
/// error, redrawn in place at each whole percent, when standard error is a
/// terminal; silent otherwise (a log is no place for a bar).
///
/// ```
/// let bar = loopwright_providers::hub::terminal_progress("Qwen3-0.6B-Q4_K_M.gguf");
/// bar(198_352_736, 396_705_472); // "Qwen3-0.6B-Q4_K_M.gguf [###############               ] 198.4 / 396.7 MB  50%"
/// ```
pub fn terminal_progress(label: impl Into<String>) -> crate::DownloadProgress {
    use std::io::IsTerminal;
    let label = label.into();
    let terminal = std::io::stderr().is_terminal();
    let shown = std::sync::atomic::AtomicU64::new(u64::MAX);
    std::sync::Arc::new(move |done, total| {
        let percent = (done.saturating_mul(100))
            .checked_div(total)
            .unwrap_or(100)
            .min(100);
        if !terminal || shown.swap(percent, std::sync::atomic::Ordering::Relaxed) == percent {
            return;
        }
        eprint!("\r{}", bar_line(&label, done, total, percent));
        if percent == 100 {
            eprintln!();
        }
    })
}

fn bar_line(label: &str, done: u64, total: u64, percent: u64) -> String {
    const WIDTH: u64 = 30;
    let filled = (percent * WIDTH / 100) as usize;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    format!(
        "{label} [{}{}] {:.1} / {:.1} MB {percent:>3}%",
        "#".repeat(filled),
        " ".repeat(WIDTH as usize - filled),
        mb(done),
        mb(total)
    )
}

impl HubFile {
    fn folder(&self, cache: &Path) -> PathBuf {
        cache.join(format!("models--{}", self.repo.replace('/', "--")))
    }

    /// Where the file is once cached (`snapshots/{revision}/{file}`).
    ///
    /// ```
    /// let path = loopwright_providers::QWEN3_0_6B.snapshot(std::path::Path::new("/c"));
    /// assert!(path.ends_with("snapshots/50968a4468ef4233ed78cd7c3de230dd1d61a56b/Qwen3-0.6B-Q4_K_M.gguf"));
    /// ```
    pub fn snapshot(&self, cache: &Path) -> PathBuf {
        self.folder(cache)
            .join("snapshots")
            .join(self.revision)
            .join(self.file)
    }

    /// The resolve URL of the file at its revision on `endpoint`.
    ///
    /// ```
    /// let url = loopwright_providers::QWEN3_0_6B.url("https://huggingface.co");
    /// assert!(url.starts_with("https://huggingface.co/unsloth/Qwen3-0.6B-GGUF/resolve/"));
    /// ```
    pub fn url(&self, endpoint: &str) -> String {
        format!("{endpoint}/{}/resolve/{}/{}", self.repo, self.revision, self.file)
    }

    /// The cached file, if it is there.
    ///
    /// ```
    /// assert!(loopwright_providers::QWEN3_0_6B.cached(std::path::Path::new("/nowhere")).is_none());
    /// ```
    pub fn cached(&self, cache: &Path) -> Option<PathBuf> {
        let path = self.snapshot(cache);
        std::fs::metadata(&path)
            .ok()
            .filter(|m| m.len() == self.size)
            .map(|_| path)
    }

    /// The file, from the cache or fetched from `endpoint` into it;
    /// `progress(done, total)` is told as bytes arrive.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), loopwright_providers::hub::DownloadError> {
    /// use loopwright_providers::hub;
    /// let client = loopwright_providers::default_client();
    /// let path = loopwright_providers::QWEN3_0_6B
    ///     .fetch(&client, &hub::cache_dir(), &hub::endpoint(), &mut |done, total| eprint!("\r{done}/{total}"))
    ///     .await?;
    /// # drop(path); Ok(()) }
    /// ```
    pub async fn fetch(
        &self,
        client: &reqwest::Client,
        cache: &Path,
        endpoint: &str,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<PathBuf, DownloadError> {
        if let Some(path) = self.cached(cache) {
            return Ok(path);
        }
        let url = self.url(endpoint);
        let fail = |message: String| DownloadError {
            url: url.clone(),
            cache: cache.to_path_buf(),
            message,
        };
        let blobs = self.folder(cache).join("blobs");
        tokio::fs::create_dir_all(&blobs)
            .await
            .map_err(|e| fail(format!("the cache {} cannot be written ({e})", blobs.display())))?;
        let blob = blobs.join(self.sha256);
        let partial = blobs.join(format!("{}.incomplete", self.sha256));
        self.download(client, &url, &partial, progress)
            .await
            .map_err(fail)?;
        tokio::fs::rename(&partial, &blob)
            .await
            .map_err(|e| fail(format!("the download could not be kept ({e})")))?;
        let snapshot = self.snapshot(cache);
        link(&snapshot, &blob)
            .map_err(|e| fail(format!("{} could not be linked ({e})", snapshot.display())))?;
        Ok(snapshot)
    }

    /// Fetch into `partial` (going on from what it holds when the server
    /// takes a range), then check its digest.
    async fn download(
        &self,
        client: &reqwest::Client,
        url: &str,
        partial: &Path,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<(), String> {
        let have = tokio::fs::metadata(partial).await.map(|m| m.len()).unwrap_or(0);
        let mut request = client.get(url);
        if let Ok(token) = std::env::var("HF_TOKEN") {
            request = request.bearer_auth(token);
        }
        if have > 0 && have < self.size {
            request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
        }
        let response = request.send().await.map_err(|e| format!("no answer ({e})"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {status}"));
        }
        let resumed = status == reqwest::StatusCode::PARTIAL_CONTENT && have > 0;
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(resumed)
            .truncate(!resumed)
            .open(partial)
            .await
            .map_err(|e| format!("{} cannot be written ({e})", partial.display()))?;
        let mut done = if resumed { have } else { 0 };
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| {
                format!(
                    "the download was cut after {done} of {} bytes ({e}); run again to go on",
                    self.size
                )
            })?;
            file.write_all(&chunk)
                .await
                .map_err(|e| format!("{} cannot be written ({e})", partial.display()))?;
            done += chunk.len() as u64;
            progress(done, self.size);
        }
        file.flush()
            .await
            .map_err(|e| format!("{} cannot be written ({e})", partial.display()))?;
        drop(file);
        let digest = sha256_of(partial)
            .await
            .map_err(|e| format!("{} cannot be read ({e})", partial.display()))?;
        if digest != self.sha256 {
            let removed = match tokio::fs::remove_file(partial).await {
                Ok(()) => "the file was removed".to_owned(),
                Err(e) => format!("{} could not be removed ({e})", partial.display()),
            };
            return Err(format!(
                "its SHA-256 is {digest}, not the pinned {}: {removed}",
                self.sha256
            ));
        }
        Ok(())
    }
}

/// `snapshot` as a relative link to `blob` (a copy where links cannot be
/// made).
fn link(snapshot: &Path, blob: &Path) -> std::io::Result<()> {
    let Some(dir) = snapshot.parent() else {
        return Err(std::io::Error::other("no folder"));
    };
    std::fs::create_dir_all(dir)?;
    if snapshot.symlink_metadata().is_ok() {
        std::fs::remove_file(snapshot)?;
    }
    #[cfg(unix)]
    {
        let depth = snapshot
            .strip_prefix(blob.parent().and_then(Path::parent).unwrap_or(dir))
            .map(|p| p.components().count().saturating_sub(1))
            .unwrap_or(2);
        let mut target = PathBuf::new();
        for _ in 0..depth {
            target.push("..");
        }
        target.push("blobs");
        target.push(blob.file_name().unwrap_or_default());
        std::os::unix::fs::symlink(target, snapshot)
    }
    #[cfg(not(unix))]
    {
        std::fs::copy(blob, snapshot).map(|_| ())
    }
}

/// The SHA-256 of the file at `path`, hex.
async fn sha256_of(path: &Path) -> std::io::Result<String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            context.update(&buffer[..n]);
        }
        Ok(context
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_bar_shows_megabytes_and_the_share_done() {
        assert_eq!(
            bar_line("m.gguf", 198_352_736, 396_705_472, 50),
            "m.gguf [###############               ] 198.4 / 396.7 MB  50%"
        );
        assert_eq!(
            bar_line("m.gguf", 1, 1, 100),
            format!("m.gguf [{}] 0.0 / 0.0 MB 100%", "#".repeat(30))
        );
    }

    #[test]
    fn the_cache_is_where_hugging_faces_tools_keep_it() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                set.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| PathBuf::from(v))
            }
        };
        assert_eq!(
            cache_dir_from(&vars(&[("HOME", "/h")])),
            PathBuf::from("/h/.cache/huggingface/hub")
        );
        assert_eq!(
            cache_dir_from(&vars(&[("HOME", "/h"), ("HF_HOME", "/hf")])),
            PathBuf::from("/hf/hub")
        );
        assert_eq!(
            cache_dir_from(&vars(&[("HF_HOME", "/hf"), ("HF_HUB_CACHE", "/c")])),
            PathBuf::from("/c")
        );
        let file = HubFile {
            repo: "org/m",
            revision: "abc",
            file: "m.gguf",
            sha256: "00",
            size: 1,
        };
        assert_eq!(
            file.snapshot(Path::new("/c")),
            PathBuf::from("/c/models--org--m/snapshots/abc/m.gguf")
        );
        assert_eq!(file.url("http://h"), "http://h/org/m/resolve/abc/m.gguf");
    }
}
