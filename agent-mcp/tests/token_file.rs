//! The OAuth token file (`FileTokenStore`) against a hostile file system:
//! links planted where it writes, a link at the file itself, a FIFO or a
//! device in its place. Tokens never land outside the file, the file is
//! 0600, and nothing blocks or reads without end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use loopwright_mcp::oauth::{FileTokenStore, TOKEN_FILE, TokenStore};
use rmcp::transport::auth::{OAuthTokenResponse, StoredCredentials};

/// Guard against a hang only (a FIFO opened blocking waits for ever).
const HANG_GUARD: Duration = Duration::from_secs(20);
const SERVER: &str = "https://mcp.example/mcp";
const ACCESS_TOKEN: &str = "access-token-that-must-stay-home";

fn credentials() -> StoredCredentials {
    let token: OAuthTokenResponse = serde_json::from_value(serde_json::json!({
        "access_token": ACCESS_TOKEN, "token_type": "bearer", "refresh_token": "refresh-token-too"
    }))
    .unwrap();
    StoredCredentials::new("client-1".into(), Some(token), vec!["read".into()], Some(1))
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every file under `dir` that holds the access token.
fn files_with_token(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(ACCESS_TOKEN)))
        .collect()
}

#[tokio::test]
async fn links_planted_at_the_temporary_names_never_receive_the_tokens() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let path = home.path().join(TOKEN_FILE);
    // The name a writer keyed on the process id would use, and the other
    // obvious guesses, each a link to a file an attacker reads.
    let guesses = [
        format!(".{TOKEN_FILE}.{}.tmp", std::process::id()),
        format!(".{TOKEN_FILE}.tmp"),
        format!("{TOKEN_FILE}.tmp"),
        format!("{TOKEN_FILE}~"),
    ];
    for (i, name) in guesses.iter().enumerate() {
        std::os::unix::fs::symlink(outside.path().join(format!("stolen-{i}")), home.path().join(name))
            .unwrap();
    }
    let store = FileTokenStore::new(&path);
    store.save(SERVER, credentials()).await.unwrap();
    store
        .save("https://other.example/mcp", credentials())
        .await
        .unwrap();

    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "tokens written outside"
    );
    assert_eq!(files_with_token(home.path()), std::slice::from_ref(&path));
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(mode(&path), 0o600);
    for name in &guesses {
        assert!(
            std::fs::symlink_metadata(home.path().join(name))
                .unwrap()
                .is_symlink()
        );
    }
    // Nothing else was left behind (no temporary file).
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), guesses.len() + 1);
    assert!(store.load(SERVER).await.unwrap().is_some());
}

#[tokio::test]
async fn a_link_at_the_token_file_is_refused_and_its_target_left_alone() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let path = home.path().join(TOKEN_FILE);
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "{}").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let dangling = home.path().join("dangling.json");
    std::os::unix::fs::symlink(outside.path().join("new"), &dangling).unwrap();

    let store = FileTokenStore::new(&path);
    let err = store.save(SERVER, credentials()).await.unwrap_err().to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    let err = store.load(SERVER).await.unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
    let err = FileTokenStore::new(&dangling)
        .save(SERVER, credentials())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("symbolic link"), "{err}");

    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "{}");
    assert_eq!(mode(&victim), 0o644);
    assert!(!outside.path().join("new").exists());
    assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
}

/// `f` on its own thread, failing the test (not waiting) when it blocks:
/// a runtime would wait for a blocked read when dropped.
fn off_thread<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(HANG_GUARD)
        .unwrap_or_else(|_| panic!("{what} blocked"))
}

#[test]
fn a_fifo_or_a_device_as_the_token_file_is_refused_at_once() {
    let home = tempfile::tempdir().unwrap();
    let fifo = home.path().join(TOKEN_FILE);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for (path, what) in [(fifo.clone(), "a FIFO"), ("/dev/zero".into(), "a device")] {
        let store = FileTokenStore::new(&path);
        let loading = store.clone();
        let err = off_thread("reading the token file", move || {
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            runtime.block_on(loading.load(SERVER)).map_err(|e| e.to_string())
        })
        .unwrap_err();
        assert!(
            err.contains(&path.display().to_string())
                && err.contains(&format!("not a regular file ({what})")),
            "{err}"
        );
        // The redaction list is read before every run: it must not block
        // either (empty: no tokens from such a file).
        let tokens = off_thread("the redaction read", move || store.tokens_for_redaction());
        assert!(tokens.is_empty());
    }
}

#[tokio::test]
async fn a_token_file_over_the_limit_is_refused_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(TOKEN_FILE);
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(loopwright_mcp::oauth::MAX_TOKEN_FILE_BYTES + 1)
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = FileTokenStore::new(&path)
        .load(SERVER)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("larger than 1 MiB"),
        "{err}"
    );
}

/// What a subscriber wrote, shared with the writer it makes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_token_file_others_can_read_is_made_private_with_one_warning() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join(TOKEN_FILE);
    FileTokenStore::new(&path)
        .save(SERVER, credentials())
        .await
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // With one dispatcher registered, tracing-core asks the registering
    // thread's default, so a callsite another test's thread hits first is
    // cached "never" for this subscriber. A second live dispatcher makes it
    // ask every registered one.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let store = FileTokenStore::new(&path);
    // The redaction list reads it without touching it (no logging yet then).
    assert!(store.tokens_for_redaction().contains(&ACCESS_TOKEN.to_owned()));
    assert_eq!(mode(&path), 0o644);
    let loaded = store.load(SERVER).await.unwrap().unwrap();
    assert_eq!(loaded.client_id, "client-1");
    assert_eq!(mode(&path), 0o600);
    store.load(SERVER).await.unwrap().unwrap();
    let logged = captured.text();
    assert_eq!(logged.matches("tightened to 0600").count(), 1, "{logged}");
    assert!(
        logged.contains(&format!("the token file {} had mode 0644", path.display())),
        "{logged}"
    );
    assert!(!logged.contains(ACCESS_TOKEN), "{logged}");
}

#[tokio::test]
async fn a_token_file_of_another_user_is_refused_and_left_alone() {
    let home = tempfile::tempdir().unwrap();
    // As root: a file given to `nobody`; otherwise a file root owns.
    let path = if nix::unistd::geteuid().is_root() {
        let path = home.path().join(TOKEN_FILE);
        FileTokenStore::new(&path)
            .save(SERVER, credentials())
            .await
            .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        path
    } else {
        std::path::PathBuf::from("/etc/passwd")
    };
    let (owner, before) = {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&path).unwrap();
        (meta.uid(), meta.mode() & 0o7777)
    };
    let store = FileTokenStore::new(&path);
    let err = store.load(SERVER).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "token store {} is owned by uid {owner}, not by this user (mode {before:04o})",
            path.display()
        )),
        "{err}"
    );
    assert!(store.save(SERVER, credentials()).await.is_err());
    assert_eq!(mode(&path), before);
    assert!(store.tokens_for_redaction().is_empty());
}
