//! [`RestateServer`]: a throwaway Restate server (`restate-server` from npm,
//! pinned in `tests-deps/package.json`) in a temporary directory.
//!
//! Invariant: the server is the `restate-server` binary itself (not `npx` or
//! `node`, so its PID is the server's), a child of the spawner thread with a
//! parent-death signal (`SIGKILL`), listening on three loopback ports only.
//! Its base directory (journal and log) and ports stay the same across
//! [`RestateServer::restart`], so invocations survive a restart. Dropping the
//! value kills the server and deletes the directory; directories of test
//! processes that are gone are deleted the next time a server starts.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::spawner;

/// The environment variable naming a `restate-server` binary to use instead
/// of the one `npm ci --prefix tests-deps` installs.
pub const RESTATE_SERVER_ENV: &str = "LOOPWRIGHT_RESTATE_SERVER";
/// The binary's place under the workspace root.
const NPM_BINARY: &str = "tests-deps/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server";
/// The prefix of the servers' directories in the system's temporary directory.
const DIR_PREFIX: &str = "loopwright-restate-";
/// The node's name; the base directory keeps it, so it never changes.
const NODE_NAME: &str = "loopwright";
/// How long a server may take to be ready.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to exit after `SIGTERM` before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often readiness (or exit) is checked.
const POLL: Duration = Duration::from_millis(50);
/// The connect, read and write timeout of one readiness check.
const HTTP_TIMEOUT: Duration = Duration::from_secs(2);
/// Attempts at free ports (another program may take one before the server
/// binds it).
const PORT_ATTEMPTS: u32 = 3;
/// How much of the log's end an error message holds.
const LOG_TAIL: usize = 8 * 1024;
/// What the node's `/health` body holds once its worker runs.
const WORKER_READY: &str = "\"worker_status\":\"Ready\"";
/// The server's settings besides its ports and directory.
const SETTINGS: [(&str, &str); 8] = [
    ("RESTATE_DISABLE_TELEMETRY", "true"),
    ("RESTATE_LOG_DISABLE_ANSI_CODES", "true"),
    ("RESTATE_LISTEN_MODE", "tcp"),
    ("RESTATE_NODE_NAME", NODE_NAME),
    ("RESTATE_DEFAULT_NUM_PARTITIONS", "4"),
    ("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "100ms"),
    ("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "500ms"),
    ("RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS", "unlimited"),
];

/// A Restate server of a test's own: ingress, admin API and node ports on
/// loopback, retries every 100 ms to 500 ms without end.
///
/// ```no_run
/// let mut server = loopwright_test_support::RestateServer::start().unwrap();
/// println!("{} {}", server.ingress_url(), server.admin_url());
/// server.restart().unwrap(); // same ports, same journal
/// ```
#[derive(Debug)]
pub struct RestateServer {
    dir: PathBuf,
    bin: PathBuf,
    ingress: u16,
    admin: u16,
    node: u16,
    child: Option<Child>,
    /// Settings added to (or over) the harness's own.
    extra: Vec<(String, String)>,
}

impl RestateServer {
    /// Starts a server on free loopback ports in a new temporary directory
    /// and waits until its worker, admin API and ingress are ready.
    ///
    /// # Errors
    ///
    /// When the binary is missing (run `npm ci --prefix tests-deps`) or the
    /// server is not ready within a minute (the message holds its log).
    pub fn start() -> Result<Self, String> {
        Self::start_with(&[])
    }

    /// [`start`](Self::start) with `settings` (`RESTATE_*` environment
    /// variables) added to the harness's own, e.g. a bench's
    /// `RESTATE_LOG_SERVER__ROCKSDB_DISABLE_WAL_FSYNC=true`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub fn start_with(settings: &[(&str, &str)]) -> Result<Self, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let bin = binary()?;
        sweep(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut server = Self {
            dir,
            bin,
            ingress: 0,
            admin: 0,
            node: 0,
            child: None,
            extra: settings
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            // A failed attempt may have written its ports into the metadata.
            let _ = std::fs::remove_dir_all(&server.dir);
            std::fs::create_dir_all(&server.dir)
                .map_err(|e| format!("could not create {}: {e}", server.dir.display()))?;
            [server.ingress, server.admin, server.node] = free_ports()?;
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// The ingress's URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ingress)
    }

    /// The admin API's URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin)
    }

    /// The server process's id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's log so far (all its runs), for failure messages.
    pub fn log(&self) -> String {
        let path = self.log_path();
        std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(no log at {}: {e})", path.display()))
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Stops the server gracefully (`SIGTERM`) and waits for it to exit,
    /// killing it after 30 s; the directory stays for
    /// [`restart`](Self::restart).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let termed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        let deadline = Instant::now() + STOP_TIMEOUT;
        while termed && Instant::now() < deadline {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills the server (`SIGKILL`, a crash) and reaps it; the directory
    /// stays for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server if it runs, then starts it again on the same ports
    /// with the same directory (its journal) and waits until it is ready.
    ///
    /// # Errors
    ///
    /// When it is not ready within a minute (a port was taken meanwhile, say;
    /// the message holds its log).
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.launch()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Spawns the server from the spawner thread (its output appended to the
    /// log) and waits until it is ready.
    fn launch(&mut self) -> Result<(), String> {
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("could not open {}: {e}", log_path.display()))?;
        let log_err: File = log.try_clone().map_err(|e| e.to_string())?;
        let local = |port: u16| format!("127.0.0.1:{port}");
        let mut command = Command::new("setpriv");
        command
            .args(["--pdeathsig=KILL", "--"])
            .arg(&self.bin)
            .arg("--base-dir")
            .arg(&self.dir)
            .arg("--no-logo")
            .envs(SETTINGS)
            .envs(self.extra.iter().map(|(k, v)| (k, v)))
            .env("RESTATE_INGRESS__BIND_ADDRESS", local(self.ingress))
            .env("RESTATE_ADMIN__BIND_ADDRESS", local(self.admin))
            .env("RESTATE_BIND_ADDRESS", local(self.node))
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://{}/", local(self.node)),
            )
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child =
            spawner::spawn(command).map_err(|e| format!("could not start {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if self.ready() {
                return Ok(());
            }
            if !self.is_running() {
                self.child = None;
                return Err(format!(
                    "restate-server exited while starting: {}",
                    self.log_tail()
                ));
            }
            std::thread::sleep(POLL);
        }
        self.kill();
        Err(format!(
            "restate-server was not ready within {START_TIMEOUT:?}: {}",
            self.log_tail()
        ))
    }

    /// The worker runs (the node's `/health` says so), and the admin API's
    /// `/health` and the ingress's `/restate/health` answer 200.
    fn ready(&self) -> bool {
        matches!(get(self.node, "/health"), Ok((200, body)) if body.contains(WORKER_READY))
            && matches!(get(self.admin, "/health"), Ok((200, _)))
            && matches!(get(self.ingress, "/restate/health"), Ok((200, _)))
    }

    fn log_tail(&self) -> String {
        let log = self.log();
        let mut start = log.len().saturating_sub(LOG_TAIL);
        while !log.is_char_boundary(start) {
            start += 1;
        }
        log[start..].to_owned()
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `GET path` from a loopback port over HTTP/1.1 with `Connection: close`:
/// the status and body.
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)?;
    stream.set_read_timeout(Some(HTTP_TIMEOUT))?;
    stream.set_write_timeout(Some(HTTP_TIMEOUT))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {response:.80}")))?;
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    Ok((status, body.to_owned()))
}

/// The binary: [`RESTATE_SERVER_ENV`], else the one npm installed under the
/// workspace root.
fn binary() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(RESTATE_SERVER_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{RESTATE_SERVER_ENV}={} is not a file", path.display()))
        };
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .find(|dir| dir.join("tests-deps/package.json").is_file())
        .ok_or_else(|| format!("no workspace root with tests-deps/ above {}", manifest.display()))?;
    let path = root.join(NPM_BINARY);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "restate-server is not installed ({} is missing): run `npm ci --prefix tests-deps` (Linux x86-64), or set \
             {RESTATE_SERVER_ENV} to a restate-server 1.7 binary",
            path.display()
        ))
    }
}

/// Three distinct free loopback ports (held together while picked).
fn free_ports() -> Result<[u16; 3], String> {
    let bind = || TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"));
    let listeners = [bind()?, bind()?, bind()?];
    let mut ports = [0; 3];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
    }
    Ok(ports)
}

/// Deletes the directories of servers whose test process is gone (its
/// server died with it).
fn sweep(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX)?.split('-').next());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn healthy(server: &RestateServer) {
        assert_eq!(get(server.admin, "/health").unwrap().0, 200, "{}", server.log());
        assert_eq!(
            get(server.ingress, "/restate/health").unwrap().0,
            200,
            "{}",
            server.log()
        );
    }

    #[test]
    fn a_server_starts_restarts_on_its_ports_and_is_cleaned_up() {
        let mut server = RestateServer::start().unwrap_or_else(|e| panic!("{e}"));
        let dir = server.dir.clone();
        let (ingress, admin) = (server.ingress_url(), server.admin_url());
        assert!(ingress.starts_with("http://127.0.0.1:"));
        let first = server.pid().unwrap();
        healthy(&server);

        server.restart().unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(server.pid().unwrap(), first);
        assert!(
            !Path::new(&format!("/proc/{first}")).exists(),
            "the first server is gone"
        );
        assert_eq!((server.ingress_url(), server.admin_url()), (ingress, admin));
        healthy(&server);

        server.kill();
        assert_eq!(server.pid(), None);
        server.restart().unwrap_or_else(|e| panic!("{e}"));
        healthy(&server);

        let last = server.pid().unwrap();
        drop(server);
        assert!(
            !Path::new(&format!("/proc/{last}")).exists(),
            "dropped server is gone"
        );
        assert!(!dir.exists(), "{} was removed", dir.display());
    }
}
