//! Where OAuth credentials live between runs: the [`TokenStore`] trait,
//! [`FileTokenStore`] (the default: one JSON file, mode 0600, under the
//! user's config directory) and [`MemoryTokenStore`].
//!
//! Invariants:
//! - entries are keyed by the server's URL (the protected resource) and
//!   carry the issuer that minted them; rmcp uses stored credentials only
//!   with that issuer (a server whose authorization server changed gets a
//!   new sign-in, its old tokens discarded);
//! - the file is written whole (a temporary file renamed over it) with mode
//!   0600 from its creation, and its directory is created 0700;
//! - no token is ever formatted: [`StoredCredentials`]'s `Debug` hides it,
//!   and no error here quotes the file's content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

/// The file name of the default store, under `loopwright/` in the user's
/// config directory.
pub const TOKEN_FILE: &str = "mcp-tokens.json";

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// Reading or writing the file failed.
    #[error("token store {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not a token store (its content is never quoted).
    #[error("token store {path} is not valid JSON of stored credentials: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where the parse failed.
        message: String,
    },
    /// No config directory could be found (neither `XDG_CONFIG_HOME` nor
    /// `HOME` is set).
    #[error("no config directory for the token store: set XDG_CONFIG_HOME or HOME")]
    NoConfigDir,
}

/// Keeps OAuth credentials (tokens, the client id they were issued to, the
/// issuer) per server URL. Implement it to keep them in a keychain or a
/// database.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use loopwright_mcp::oauth::{MemoryTokenStore, TokenStore};
/// let store = MemoryTokenStore::default();
/// assert!(store.load("https://mcp.example.com/mcp").await.unwrap().is_none());
/// # }
/// ```
#[async_trait]
pub trait TokenStore: Send + Sync + std::fmt::Debug {
    /// The credentials stored for `server_url`.
    async fn load(&self, server_url: &str) -> Result<Option<StoredCredentials>, TokenStoreError>;
    /// Store `credentials` for `server_url`, replacing what was there.
    async fn save(&self, server_url: &str, credentials: StoredCredentials) -> Result<(), TokenStoreError>;
    /// Forget `server_url`'s credentials; true when there were some.
    async fn clear(&self, server_url: &str) -> Result<bool, TokenStoreError>;
}

/// Credentials in memory only (tests, short-lived programs).
#[derive(Debug, Default, Clone)]
pub struct MemoryTokenStore {
    entries: Arc<Mutex<BTreeMap<String, StoredCredentials>>>,
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, server_url: &str) -> Result<Option<StoredCredentials>, TokenStoreError> {
        Ok(self.entries.lock().ok().and_then(|m| m.get(server_url).cloned()))
    }

    async fn save(&self, server_url: &str, credentials: StoredCredentials) -> Result<(), TokenStoreError> {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(server_url.to_owned(), credentials);
        }
        Ok(())
    }

    async fn clear(&self, server_url: &str) -> Result<bool, TokenStoreError> {
        Ok(self
            .entries
            .lock()
            .is_ok_and(|mut m| m.remove(server_url).is_some()))
    }
}

/// Credentials in one JSON file (see the module docs). Concurrent writers
/// in one process are serialised; across processes the last write wins
/// (each write is whole).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let store = loopwright_mcp::oauth::FileTokenStore::new(dir.path().join("tokens.json"));
/// assert!(store.path().ends_with("tokens.json"));
/// ```
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl FileTokenStore {
    /// A store in `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The default store: `$XDG_CONFIG_HOME/loopwright/mcp-tokens.json`, else
    /// `~/.config/loopwright/mcp-tokens.json`.
    pub fn default_location() -> Result<Self, TokenStoreError> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })
            .ok_or(TokenStoreError::NoConfigDir)?;
        Ok(Self::new(base.join("loopwright").join(TOKEN_FILE)))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every access and refresh token in the file, read without blocking
    /// on the runtime's lock (for log redaction); empty when there is no
    /// file or it cannot be read.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = loopwright_mcp::oauth::FileTokenStore::new(dir.path().join("none.json"));
    /// assert!(store.tokens_for_redaction().is_empty());
    /// ```
    pub fn tokens_for_redaction(&self) -> Vec<String> {
        let Ok(bytes) = std::fs::read(&self.path) else {
            return Vec::new();
        };
        let Ok(serde_json::Value::Object(entries)) = serde_json::from_slice(&bytes) else {
            return Vec::new();
        };
        entries
            .values()
            .filter_map(|entry| entry.get("token_response"))
            .flat_map(|token| {
                ["access_token", "refresh_token"].map(|k| token.get(k).and_then(serde_json::Value::as_str))
            })
            .flatten()
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    }

    async fn read_all(&self) -> Result<BTreeMap<String, StoredCredentials>, TokenStoreError> {
        let io = |source| TokenStoreError::Io {
            path: self.path.clone(),
            source,
        };
        let bytes = match tokio::fs::read(&self.path).await {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(io(e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| TokenStoreError::Corrupt {
            path: self.path.clone(),
            message: format!("line {}, column {}", e.line(), e.column()),
        })
    }

    async fn write_all(&self, entries: &BTreeMap<String, StoredCredentials>) -> Result<(), TokenStoreError> {
        let path = self.path.clone();
        let bytes = serde_json::to_vec_pretty(entries).map_err(|e| TokenStoreError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        tokio::task::spawn_blocking(move || {
            write_private(&path, &bytes).map_err(|source| TokenStoreError::Io { path, source })
        })
        .await
        .map_err(|e| TokenStoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?
    }
}

/// Write `bytes` to `path` through a 0600 temporary file renamed over it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, server_url: &str) -> Result<Option<StoredCredentials>, TokenStoreError> {
        let _guard = self.lock.lock().await;
        Ok(self.read_all().await?.remove(server_url))
    }

    async fn save(&self, server_url: &str, credentials: StoredCredentials) -> Result<(), TokenStoreError> {
        let _guard = self.lock.lock().await;
        let mut all = self.read_all().await?;
        all.insert(server_url.to_owned(), credentials);
        self.write_all(&all).await
    }

    async fn clear(&self, server_url: &str) -> Result<bool, TokenStoreError> {
        let _guard = self.lock.lock().await;
        let mut all = self.read_all().await?;
        let had = all.remove(server_url).is_some();
        if had {
            self.write_all(&all).await?;
        }
        Ok(had)
    }
}

/// One server's entry of a [`TokenStore`] as rmcp's per-server
/// [`CredentialStore`].
#[derive(Debug, Clone)]
pub(crate) struct ServerEntry {
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) url: String,
}

fn to_auth(e: TokenStoreError) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for ServerEntry {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.store.load(&self.url).await.map_err(to_auth)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store.save(&self.url, credentials).await.map_err(to_auth)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.clear(&self.url).await.map(|_| ()).map_err(to_auth)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[tokio::test]
    async fn the_file_is_private_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/tokens.json");
        let store = FileTokenStore::new(&path);
        let creds = StoredCredentials::new("client-1".into(), None, vec!["read".into()], Some(1))
            .with_issuer(Some("https://as.example".into()));
        store.save("https://mcp.example/mcp", creds).await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let back = store.load("https://mcp.example/mcp").await.unwrap().unwrap();
        assert_eq!(
            (back.client_id.as_str(), back.issuer.as_deref()),
            ("client-1", Some("https://as.example"))
        );
        assert!(store.clear("https://mcp.example/mcp").await.unwrap());
        assert!(!store.clear("https://mcp.example/mcp").await.unwrap());
    }

    #[tokio::test]
    async fn a_corrupt_file_is_an_error_that_does_not_quote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "{\"secret-token-123\": ").unwrap();
        let e = FileTokenStore::new(&path).load("x").await.unwrap_err();
        assert!(!e.to_string().contains("secret-token-123"), "{e}");
        assert!(e.to_string().contains("line 1"), "{e}");
    }
}
