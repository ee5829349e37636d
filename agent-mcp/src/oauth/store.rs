//! Where OAuth credentials live between runs: the [`TokenStore`] trait,
//! [`FileTokenStore`] (the default: one JSON file, mode 0600, under the
//! user's config directory) and [`MemoryTokenStore`].
//!
//! Invariants:
//! - entries are keyed by the server's URL (the protected resource) and
//!   carry the issuer that minted them; rmcp uses stored credentials only
//!   with that issuer (a server whose authorization server changed gets a
//!   new sign-in, its old tokens discarded);
//! - the file is this user's own regular file: a symbolic link, a FIFO, a
//!   device, a file larger than [`MAX_TOKEN_FILE_BYTES`] or one owned by
//!   another user is refused with an error naming it; one that others may
//!   read is tightened to 0600 before it is used, with a warning;
//! - the file is written whole, through a temporary file with a random
//!   name created exclusively with mode 0600 and renamed over it; its
//!   directory is created 0700, and the default location's directory is
//!   tightened to 0700 (see `private_file` for the details);
//! - no token is ever formatted: [`StoredCredentials`]'s `Debug` hides it,
//!   and no error here quotes the file's content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

pub use super::private_file::MAX_TOKEN_FILE_BYTES;
use super::private_file::{self, Unsafe};

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
    /// The file belongs to another user: it is not used (someone who can
    /// write its directory could have planted tokens there).
    #[error(
        "token store {path} is owned by uid {owner}, not by this user (mode {mode:04o}): it is not used; \
         remove it and sign in again"
    )]
    ForeignOwner {
        /// The file.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// Its permission bits.
        mode: u32,
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
    /// The directory is the file's own (the default location's): tightened
    /// to 0700 when looser.
    dedicated_dir: bool,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl FileTokenStore {
    /// A store in `path`. Its directory is created 0700 when missing; an
    /// existing one is left as it is (it may be shared).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            dedicated_dir: false,
            lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The default store: `$XDG_CONFIG_HOME/loopwright/mcp-tokens.json`, else
    /// `~/.config/loopwright/mcp-tokens.json`. The `loopwright` directory is
    /// loopwright's own: written into, it is tightened to 0700 when this
    /// user owns it and it is looser (the config directory above it, and
    /// the home, are left alone).
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
        let mut store = Self::new(base.join("loopwright").join(TOKEN_FILE));
        store.dedicated_dir = true;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every access and refresh token in the file, read without blocking
    /// on the runtime's lock (for log redaction); empty when there is no
    /// file or it cannot be read (not a regular file, too large, another
    /// user's). Its mode is left alone here (this runs before logging is
    /// set up, so the warning of a tightening would be lost): the store's
    /// own reads tighten it.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = loopwright_mcp::oauth::FileTokenStore::new(dir.path().join("none.json"));
    /// assert!(store.tokens_for_redaction().is_empty());
    /// ```
    pub fn tokens_for_redaction(&self) -> Vec<String> {
        let Ok(Some(contents)) = private_file::read(&self.path, false) else {
            return Vec::new();
        };
        let Ok(serde_json::Value::Object(entries)) = serde_json::from_slice(&contents.bytes) else {
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
        let path = self.path.clone();
        let read = tokio::task::spawn_blocking(move || private_file::read(&path, true))
            .await
            .map_err(|e| self.io(std::io::Error::other(e.to_string())))?;
        let contents = match read {
            Ok(Some(contents)) => contents,
            Ok(None) => return Ok(BTreeMap::new()),
            Err(Unsafe::Io(e)) => return Err(self.io(e)),
            Err(Unsafe::ForeignOwner { owner, mode }) => {
                return Err(TokenStoreError::ForeignOwner {
                    path: self.path.clone(),
                    owner,
                    mode,
                });
            }
        };
        if let Some(mode) = contents.tightened_from {
            tracing::warn!(
                "the token file {} had mode {mode:04o} (others could read or write it): tightened to 0600; \
                 if someone else could read it, sign out and in again to replace its tokens",
                self.path.display()
            );
        }
        serde_json::from_slice(&contents.bytes).map_err(|e| TokenStoreError::Corrupt {
            path: self.path.clone(),
            message: format!("line {}, column {}", e.line(), e.column()),
        })
    }

    async fn write_all(&self, entries: &BTreeMap<String, StoredCredentials>) -> Result<(), TokenStoreError> {
        let path = self.path.clone();
        let dedicated_dir = self.dedicated_dir;
        let bytes = serde_json::to_vec_pretty(entries).map_err(|e| TokenStoreError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        tokio::task::spawn_blocking(move || private_file::write(&path, &bytes, dedicated_dir))
            .await
            .map_err(|e| self.io(std::io::Error::other(e.to_string())))?
            .map_err(|e| self.io(e))
    }

    fn io(&self, source: std::io::Error) -> TokenStoreError {
        TokenStoreError::Io {
            path: self.path.clone(),
            source,
        }
    }
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
