//! The embedded model's download (feature `local`) against a local HTTP
//! server that imitates the Hub's resolve URLs (as `HF_ENDPOINT` would
//! point at a mirror): the pinned revision asked for, the file kept in the
//! Hub cache's layout and found there next time, a SHA-256 mismatch
//! refused and the file removed, a cut download resumed with a range (or
//! started again by a server that takes none), and a cache that cannot be
//! written named. No test reaches the internet.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use loopwright_providers::hub::HubFile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A Hub of one file: how it answers, and the requests it saw.
struct Hub {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone, Copy)]
struct Behaviour {
    /// Cut the first download after half the bytes.
    cut_first: bool,
    /// Answer a range with 206 (else the whole file, 200).
    ranges: bool,
    /// Send the resolve URL on to the bytes' storage with a 302, as the
    /// Hub does (to its CDN), keeping the request's range.
    redirect: bool,
}

const RESOLVE: &str = "/org/tiny/resolve/0123abcd/tiny.gguf";
const STORAGE: &str = "/storage/tiny?signature=abc";

async fn hub(bytes: Arc<Vec<u8>>, behaviour: Behaviour) -> Hub {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let served = Arc::new(AtomicUsize::new(0));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let (bytes, log, served) = (bytes.clone(), log.clone(), served.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                log.lock().unwrap().push(head.clone());
                let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
                if behaviour.redirect && path == RESOLVE {
                    let moved =
                        format!("HTTP/1.1 302 Found\r\nlocation: {STORAGE}\r\ncontent-length: 0\r\n\r\n");
                    let _ = socket.write_all(moved.as_bytes()).await;
                    return;
                }
                if path != if behaviour.redirect { STORAGE } else { RESOLVE } {
                    let _ = socket
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                }
                let from = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("range: bytes=")
                            .map(str::to_owned)
                    })
                    .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok())
                    .filter(|_| behaviour.ranges);
                let (status, body) = match from {
                    Some(from) => (
                        format!(
                            "206 Partial Content\r\ncontent-range: bytes {from}-{}/{}",
                            bytes.len() - 1,
                            bytes.len()
                        ),
                        &bytes[from..],
                    ),
                    None => ("200 OK".to_owned(), &bytes[..]),
                };
                let first = served.fetch_add(1, Ordering::SeqCst) == 0;
                let header = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(header.as_bytes()).await;
                let sent = if first && behaviour.cut_first {
                    &body[..body.len() / 2]
                } else {
                    body
                };
                let _ = socket.write_all(sent).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Hub { url, seen }
}

/// The file's bytes, served by a Hub that cuts its first download or not
/// and takes ranges or not.
async fn served(cut_first: bool, ranges: bool) -> (Arc<Vec<u8>>, Hub) {
    let bytes = bytes();
    let behaviour = Behaviour {
        cut_first,
        ranges,
        redirect: false,
    };
    let hub = hub(bytes.clone(), behaviour).await;
    (bytes, hub)
}

fn bytes() -> Arc<Vec<u8>> {
    Arc::new((0..200_000u32).map(|i| (i * 31 % 251) as u8).collect())
}

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn file(sha: &str, size: usize) -> HubFile {
    HubFile {
        repo: "org/tiny",
        revision: "0123abcd",
        file: "tiny.gguf",
        sha256: Box::leak(sha.to_owned().into_boxed_str()),
        size: size as u64,
    }
}

async fn fetch(file: &HubFile, cache: &Path, url: &str) -> Result<std::path::PathBuf, String> {
    loopwright_providers::install_tls_provider();
    let client = reqwest::Client::new();
    let mut told = 0;
    let got = file.fetch(&client, cache, url, &mut |done, _| told = done).await;
    got.map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_file_is_fetched_once_into_the_hub_cache_layout() {
    let (bytes, hub) = served(false, true).await;
    let cache = tempfile::tempdir().unwrap();
    let pinned = file(&sha256(&bytes), bytes.len());
    let path = fetch(&pinned, cache.path(), &hub.url).await.unwrap();
    assert_eq!(
        path,
        cache
            .path()
            .join("models--org--tiny/snapshots/0123abcd/tiny.gguf")
    );
    assert_eq!(
        std::fs::read_link(&path).unwrap(),
        Path::new("../../blobs").join(pinned.sha256)
    );
    assert_eq!(std::fs::read(&path).unwrap(), *bytes);
    assert_eq!(fetch(&pinned, cache.path(), &hub.url).await.unwrap(), path);
    assert_eq!(
        hub.seen.lock().unwrap().len(),
        1,
        "the second time it was in the cache"
    );
}

#[tokio::test]
async fn the_hubs_redirect_to_its_storage_is_followed_and_a_cut_resumed_there() {
    let bytes = bytes();
    let behaviour = Behaviour {
        cut_first: true,
        ranges: true,
        redirect: true,
    };
    let hub = hub(bytes.clone(), behaviour).await;
    let cache = tempfile::tempdir().unwrap();
    let pinned = file(&sha256(&bytes), bytes.len());
    let cut = fetch(&pinned, cache.path(), &hub.url).await.unwrap_err();
    assert!(cut.contains("run again to go on"), "{cut}");
    let path = fetch(&pinned, cache.path(), &hub.url).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), *bytes);
    let seen = hub.seen.lock().unwrap().clone();
    let paths: Vec<&str> = seen
        .iter()
        .map(|h| h.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(paths, [RESOLVE, STORAGE, RESOLVE, STORAGE]);
    assert!(
        seen[3]
            .to_ascii_lowercase()
            .contains(&format!("range: bytes={}-", bytes.len() / 2)),
        "{}",
        seen[3]
    );
}

#[tokio::test]
async fn a_file_whose_digest_differs_is_refused_and_removed() {
    let (bytes, hub) = served(false, true).await;
    let cache = tempfile::tempdir().unwrap();
    let pinned = file(&"0".repeat(64), bytes.len());
    let e = fetch(&pinned, cache.path(), &hub.url).await.unwrap_err();
    assert!(
        e.contains(&sha256(&bytes)) && e.contains("not the pinned") && e.contains("removed"),
        "{e}"
    );
    assert!(
        e.contains("/org/tiny/resolve/0123abcd/tiny.gguf") && e.contains("LOOPWRIGHT_LOCAL_MODEL"),
        "{e}"
    );
    let blobs: Vec<_> = std::fs::read_dir(cache.path().join("models--org--tiny/blobs"))
        .unwrap()
        .collect();
    assert!(blobs.is_empty(), "nothing kept");
    assert!(pinned.cached(cache.path()).is_none());
}

#[tokio::test]
async fn a_cut_download_goes_on_from_where_it_stopped() {
    let (bytes, hub) = served(true, true).await;
    let cache = tempfile::tempdir().unwrap();
    let pinned = file(&sha256(&bytes), bytes.len());
    let e = fetch(&pinned, cache.path(), &hub.url).await.unwrap_err();
    assert!(e.contains("cut after 100000 of 200000 bytes"), "{e}");
    let path = fetch(&pinned, cache.path(), &hub.url).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), *bytes);
    let seen = hub.seen.lock().unwrap();
    assert!(
        seen[1].to_ascii_lowercase().contains("range: bytes=100000-"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_server_that_takes_no_range_sends_the_file_again() {
    let (bytes, hub) = served(true, false).await;
    let cache = tempfile::tempdir().unwrap();
    let pinned = file(&sha256(&bytes), bytes.len());
    assert!(fetch(&pinned, cache.path(), &hub.url).await.is_err());
    let path = fetch(&pinned, cache.path(), &hub.url).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), *bytes);
}

#[tokio::test]
async fn a_cache_that_cannot_be_written_is_named() {
    let (bytes, hub) = served(false, true).await;
    let dir = tempfile::tempdir().unwrap();
    // A file where the cache's folder should be: not writable, even as root.
    let blocked = dir.path().join("hub");
    std::fs::write(&blocked, "a file").unwrap();
    let pinned = file(&sha256(&bytes), bytes.len());
    let e = fetch(&pinned, &blocked, &hub.url).await.unwrap_err();
    assert!(
        e.contains("cannot be written") && e.contains(&blocked.display().to_string()),
        "{e}"
    );
    assert!(e.contains("HF_HOME") && e.contains("HF_ENDPOINT"), "{e}");
    assert!(hub.seen.lock().unwrap().is_empty(), "nothing was fetched");
}
