//! The stdio transport's process side: spawning a server in its own process
//! group and ending the whole group.
//!
//! rmcp speaks JSON-RPC over the child's stdout/stdin (its async-rw
//! transport); this module owns only the process. Invariants:
//! - the child leads a new process group, so signals reach grandchildren;
//! - its stderr is read line by line into `tracing`, never inherited;
//! - its environment is [`scoped_env`](crate::scoped_env), never the host's;
//! - [`StdioProcess::close`] is idempotent, and dropping a `StdioProcess`
//!   SIGKILLs the group, so no process outlives its owner.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use crate::config::StdioConfig;
use crate::env::{process_lookup, scoped_env};
use crate::error::McpError;

/// After stdin is closed, how long a well-behaved server gets to exit on its own.
pub const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(500);
/// After SIGTERM, how long the group gets to exit before SIGKILL.
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);
/// How often the group is polled while waiting for it to exit.
const EXIT_POLL: Duration = Duration::from_millis(20);

/// A running stdio server process (the leader of its own process group).
pub(crate) struct StdioProcess {
    server: String,
    pgid: Option<Pid>,
    child: Mutex<Option<Box<dyn ChildWrapper>>>,
    /// A close has started (later calls return at once).
    closed: AtomicBool,
    /// The whole group is known to be gone; until then, dropping this
    /// (even in the middle of a close whose future was dropped) kills it.
    ended: AtomicBool,
    /// How long the server gets to exit after its stdin closes.
    stdin_grace: Duration,
}

/// The pipes rmcp talks over.
pub(crate) struct StdioPipes {
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
}

impl std::fmt::Debug for StdioProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioProcess")
            .field("server", &self.server)
            .field("pgid", &self.pgid)
            .finish()
    }
}

/// Start `config` (already resolved) for server `server`.
pub(crate) fn spawn(
    server: &str,
    config: &StdioConfig,
    stdin_grace: Duration,
) -> Result<(StdioProcess, StdioPipes), McpError> {
    let env = scoped_env(&config.env, &process_lookup);
    let mut cmd = CommandWrap::with_new(&config.command, |c| {
        c.args(&config.args)
            .env_clear()
            .envs(&env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(dir) = &config.cwd {
            c.current_dir(dir);
        }
    });
    cmd.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let mut child = cmd.spawn().map_err(|source| McpError::Spawn {
        server: server.to_string(),
        command: config.command.clone(),
        source,
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
        return Err(McpError::Connect {
            server: server.to_string(),
            message: "child process has no stdin/stdout pipe".into(),
        });
    };
    if let Some(stderr) = child.stderr().take() {
        tokio::spawn(forward_stderr(server.to_string(), stderr));
    }
    let process = StdioProcess {
        server: server.to_string(),
        pgid,
        child: Mutex::new(Some(child)),
        closed: AtomicBool::new(false),
        ended: AtomicBool::new(false),
        stdin_grace,
    };
    Ok((process, StdioPipes { stdout, stdin }))
}

/// Log each stderr line of a server; ends when the pipe closes.
async fn forward_stderr(server: String, stderr: ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => tracing::info!(target: "agent_mcp::stderr", server = %server, "{line}"),
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(server = %server, error = %e, "stderr of mcp server unreadable");
                break;
            }
        }
    }
}

impl StdioProcess {
    /// The process group id (the leader's pid).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    /// End the server and its whole group: (stdin is closed by the caller
    /// dropping rmcp's transport first) wait for the stdin grace
    /// ([`STDIN_CLOSE_GRACE`] unless configured), SIGTERM the group, wait
    /// [`SIGTERM_GRACE`], SIGKILL the group. Idempotent. If this future is
    /// dropped before the group is gone, dropping the process kills it.
    pub(crate) async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let child = match self.child.lock() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Some(mut child) = child else { return };
        let Some(pgid) = self.pgid else {
            let _ = child.start_kill();
            return;
        };
        if !wait_group(&mut child, pgid, self.stdin_grace).await {
            tracing::debug!(server = %self.server, "mcp server still running after stdin closed; SIGTERM");
            let _ = killpg(pgid, Signal::SIGTERM);
            if !wait_group(&mut child, pgid, SIGTERM_GRACE).await {
                tracing::warn!(server = %self.server, "mcp server ignored SIGTERM; SIGKILL");
                let _ = killpg(pgid, Signal::SIGKILL);
                wait_group(&mut child, pgid, SIGTERM_GRACE).await;
            }
        }
        self.ended.store(true, Ordering::SeqCst);
    }
}

/// Wait until the leader is reaped and no process is left in the group;
/// true when that happened within `limit`.
async fn wait_group(child: &mut Box<dyn ChildWrapper>, pgid: Pid, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        // Reap the leader so its zombie does not count as a member.
        let _ = child.try_wait();
        if killpg(pgid, None).is_err() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(EXIT_POLL).await;
    }
}

impl Drop for StdioProcess {
    fn drop(&mut self) {
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        if let Some(pgid) = self.pgid {
            // No await in drop: skip the graceful steps, end the group now.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}
