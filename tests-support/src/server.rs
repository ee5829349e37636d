//! [`TempPostgres`]: a throwaway PostgreSQL server in a temporary directory.
//!
//! Invariant: the server is a foreground `postgres` (no daemon), a child of
//! the spawner thread with a parent-death signal, listening on loopback only;
//! as root, every PostgreSQL program runs as the `postgres` user (they refuse
//! root). Dropping the value stops the server and deletes its directory.

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::{TempDatabase, base_dir, bin_dir, spawner};

/// How long a server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often readiness is checked while it starts.
const READY_POLL: Duration = Duration::from_millis(50);
/// Attempts at a free port (another program may take the one picked before
/// the server binds it).
const PORT_ATTEMPTS: u32 = 3;
/// `pg_ctl stop`'s wait, in seconds.
const STOP_TIMEOUT_SECS: &str = "60";

/// A PostgreSQL server of a test's own, in a temporary directory, for tests
/// that stop and restart it (the other tests share one: [`crate::database`]).
///
/// ```no_run
/// let mut server = loopwright_test_support::TempPostgres::start();
/// let db = server.database();
/// server.stop(); // connections now fail
/// server.restart(); // the same port and data
/// # drop(db);
/// ```
#[derive(Debug)]
pub struct TempPostgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// The `postgres` user's uid and gid when this process is root.
    run_as: Option<(u32, u32)>,
    child: Option<Child>,
}

impl TempPostgres {
    /// Initialises a data directory and starts a server on a free loopback
    /// port with `fsync=off`.
    ///
    /// # Panics
    ///
    /// When PostgreSQL is not installed or the server does not start (the
    /// message holds its log).
    pub fn start() -> Self {
        match Self::try_start() {
            Ok(server) => server,
            Err(error) => panic!("{error}"),
        }
    }

    fn try_start() -> Result<Self, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let bin = bin_dir()?;
        let run_as = postgres_user()?;
        let base = base_dir();
        std::fs::create_dir_all(&base).map_err(|e| format!("could not create {}: {e}", base.display()))?;
        sweep(&base);
        let dir = base.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("could not give {} to the postgres user: {e}", dir.display()))?;
        }
        let mut server = Self {
            dir,
            bin,
            port: 0,
            run_as,
            child: None,
        };
        server.initdb()?;
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            server.port = free_port()?;
            match server.launch() {
                Ok(()) => return Ok(server),
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// A superuser's URL for the `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it listens on (loopback only).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new, empty database on this server, dropped with its value.
    pub fn database(&self) -> TempDatabase {
        TempDatabase::create(&self.url())
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Stops the server (a fast shutdown: open connections are ended) and
    /// waits for it; the data stays for [`restart`](Self::restart).
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let stopped = self
            .command("pg_ctl")
            .args(["stop", "-m", "fast", "-w", "-t", STOP_TIMEOUT_SECS, "-D"])
            .arg(self.data())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !stopped {
            let _ = child.kill();
        }
        let _ = child.wait();
    }

    /// Starts the stopped server again on the same port with the same data.
    ///
    /// # Panics
    ///
    /// When it does not start (the port was taken meanwhile, say).
    pub fn restart(&mut self) {
        if self.is_running() {
            return;
        }
        if let Err(error) = self.launch() {
            panic!("{error}");
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A PostgreSQL program, as the `postgres` user when this process is
    /// root, in the server's directory.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut command = match self.run_as {
            Some((uid, gid)) => {
                let mut command = Command::new("setpriv");
                command
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--init-groups")
                    .arg("--")
                    .arg(program);
                command
            }
            None => Command::new(program),
        };
        command.current_dir(&self.dir).stdin(Stdio::null());
        command
    }

    fn initdb(&self) -> Result<(), String> {
        let log = self.dir.join("initdb.log");
        let output = self
            .command("initdb")
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
                "-D",
            ])
            .arg(self.data())
            .output()
            .map_err(|e| format!("could not run initdb: {e}"))?;
        let _ = std::fs::write(
            &log,
            [output.stdout.as_slice(), output.stderr.as_slice()].concat(),
        );
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }

    /// Starts `postgres` in the foreground from the spawner thread and waits
    /// until it accepts connections.
    fn launch(&mut self) -> Result<(), String> {
        let log_path = self.dir.join("server.log");
        let log =
            File::create(&log_path).map_err(|e| format!("could not create {}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        // setpriv sets the parent-death signal after it changed the user (a
        // change of user clears it), just before it runs postgres.
        let mut command = Command::new("setpriv");
        if let Some((uid, gid)) = self.run_as {
            command
                .arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--init-groups");
        }
        command
            .arg("--pdeathsig=QUIT")
            .arg("--")
            .arg(self.bin.join("postgres"))
            .arg("-D")
            .arg(self.data())
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(&self.dir)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ])
            .args(["-c", "max_connections=300"])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = spawner::spawn(command).map_err(|e| format!("could not start postgres: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if self.ready() {
                return Ok(());
            }
            if !self.is_running() {
                self.child = None;
                return Err(format!("postgres did not start: {}", read_log(&log_path)));
            }
            std::thread::sleep(READY_POLL);
        }
        self.stop();
        Err(format!(
            "postgres did not accept connections within {START_TIMEOUT:?}: {}",
            read_log(&log_path)
        ))
    }

    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args([
                "-q",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-p",
                &self.port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("(no log at {}: {e})", path.display()))
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// The `postgres` user's uid and gid when this process is root (PostgreSQL
/// refuses to run as root); `None` otherwise (it runs as this user).
fn postgres_user() -> Result<Option<(u32, u32)>, String> {
    let me = std::fs::metadata("/proc/self")
        .map_err(|e| format!("/proc/self: {e}"))?
        .uid();
    if me != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                ["postgres", _, uid, gid, ..] => Some((uid.parse().ok()?, gid.parse().ok()?)),
                _ => None,
            }
        })
        .map(Some)
        .ok_or_else(|| {
            "running as root, and there is no `postgres` user to run PostgreSQL as: install Debian's postgresql \
             (`bash scripts/postgres.sh install`)"
                .to_owned()
        })
}

/// Deletes the directories of servers whose test process is gone (and whose
/// server is gone too).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let postmaster = std::fs::read_to_string(entry.path().join("data/postmaster.pid")).ok();
        if postmaster
            .as_deref()
            .and_then(|text| text.lines().next())
            .and_then(|line| line.trim().parse::<u32>().ok())
            .is_some_and(alive)
        {
            continue;
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
