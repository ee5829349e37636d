//! The stdio transport's process side: spawning a server in its own process
//! group and ending the whole group.
//!
//! rmcp speaks JSON-RPC over the child's stdout/stdin (its async-rw
//! transport); this module owns only the process. Invariants:
//! - the child leads a new process group, so signals reach grandchildren;
//! - its stderr is read line by line into `tracing`, never inherited;
//! - its environment is [`scoped_env`](crate::scoped_env), never the host's;
//! - [`StdioProcess::close`] is idempotent, and dropping a `StdioProcess`
//!   SIGKILLs the group, so no process outlives its owner;
//! - a close waits on the leader's exit as an event (no polling), so it
//!   returns as soon as the group is gone; only members that outlive their
//!   leader are polled for, every [`GROUP_POLL`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::time::Instant;

use crate::config::StdioConfig;
use crate::env::{process_lookup, scoped_env};
use crate::error::McpError;

/// After stdin is closed, how long a server gets to exit before SIGTERM:
/// longer than exiting takes (1-60 ms measured), shorter than the idle
/// lingering of servers whose shutdown is done.
///
/// The MCP specification asks for "a reasonable time" and names no figure.
/// A server on the Python SDK has returned from main and run its atexit
/// handlers 2 ms after stdin closes, then tears its interpreter down for
/// ~260-380 ms; server-everything keeps Node alive with a 350 ms timer it
/// starts at initialization. A server that saves state on exit gets longer
/// through its configuration (`shutdownTimeout`), or handles SIGTERM.
pub const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(100);
/// After SIGTERM, how long the group gets to exit before SIGKILL (a
/// server's own cleanup on SIGTERM; the MCP Python SDK waits as long).
pub const SIGTERM_GRACE: Duration = Duration::from_secs(2);
/// How often the group is checked once its leader has exited while other
/// members remain (a group's end has no event to wait on; the leader's has).
const GROUP_POLL: Duration = Duration::from_millis(5);

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
            Ok(Some(line)) => tracing::info!(target: "loopwright_mcp::stderr", server = %server, "{line}"),
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

    /// End the server and its whole group ([`end_group`]; stdin is closed by
    /// the caller dropping rmcp's transport first): wait for the stdin grace
    /// ([`STDIN_CLOSE_GRACE`] unless configured), SIGTERM the group, wait
    /// [`SIGTERM_GRACE`], SIGKILL the group. Returns as soon as the group is
    /// gone. Idempotent. If this future is dropped before the group is gone,
    /// dropping the process kills it.
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
        let mut group = ChildGroup { child, pgid };
        match end_group(&mut group, self.stdin_grace).await {
            Ending::Exited => {}
            Ending::Terminated => {
                tracing::debug!(server = %self.server, "mcp server still running after stdin closed; SIGTERM ended it");
            }
            Ending::Killed | Ending::Survived => {
                tracing::warn!(server = %self.server, "mcp server ignored stdin close and SIGTERM; SIGKILL");
            }
        }
        self.ended.store(true, Ordering::SeqCst);
    }
}

/// A process group being ended: what [`end_group`] needs of it.
pub(crate) trait Group: Send {
    /// Resolves once the leader has exited (at once if it already has).
    fn leader_exited(&mut self) -> impl Future<Output = ()> + Send;
    /// Whether any process of the group is still alive.
    fn any_alive(&mut self) -> bool;
    /// Send `signal` to every process of the group.
    fn signal(&mut self, signal: Signal);
}

/// The group of a spawned server.
struct ChildGroup {
    child: Box<dyn ChildWrapper>,
    pgid: Pid,
}

impl Group for ChildGroup {
    async fn leader_exited(&mut self) {
        // Reaps the leader; an error means it is already gone.
        let _ = self.child.wait().await;
    }

    fn any_alive(&mut self) -> bool {
        // Reap the leader so its zombie does not count as a member.
        let _ = self.child.try_wait();
        killpg(self.pgid, None).is_ok()
    }

    fn signal(&mut self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }
}

/// How a group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// On its own, within the stdin grace.
    Exited,
    /// After SIGTERM.
    Terminated,
    /// After SIGKILL.
    Killed,
    /// Still there after SIGKILL and its wait (a process stuck in the kernel).
    Survived,
}

/// The MCP specification's stdio shutdown, from the moment stdin is closed:
/// wait up to `stdin_grace` for the group to exit, then SIGTERM and wait
/// [`SIGTERM_GRACE`], then SIGKILL and wait as long again.
pub(crate) async fn end_group(group: &mut impl Group, stdin_grace: Duration) -> Ending {
    if wait_group(group, stdin_grace).await {
        return Ending::Exited;
    }
    group.signal(Signal::SIGTERM);
    if wait_group(group, SIGTERM_GRACE).await {
        return Ending::Terminated;
    }
    group.signal(Signal::SIGKILL);
    if wait_group(group, SIGTERM_GRACE).await {
        Ending::Killed
    } else {
        Ending::Survived
    }
}

/// Wait until no process is left in the group; true when that happened
/// within `limit`. The leader's exit is awaited as an event; members that
/// outlive it are checked every [`GROUP_POLL`].
async fn wait_group(group: &mut impl Group, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    if tokio::time::timeout_at(deadline, group.leader_exited())
        .await
        .is_err()
    {
        return !group.any_alive();
    }
    loop {
        if !group.any_alive() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep_until(deadline.min(now + GROUP_POLL)).await;
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The escalation's timing on tokio's paused clock, against a group
    //! whose processes exit at given moments (real processes cannot be
    //! timed to the millisecond; the integration tests check them).
    use super::*;

    /// A group whose leader exits at `leader_exit` (never if `None`), or
    /// `on_term` after SIGTERM when set; a member outlives it by `member`.
    struct Scripted {
        start: Instant,
        leader_exit: Option<Instant>,
        on_term: Option<Duration>,
        member: Duration,
        signals: Vec<(Signal, Duration)>,
    }

    impl Scripted {
        fn new(leader_exit: Option<Duration>) -> Self {
            let start = Instant::now();
            Self {
                start,
                leader_exit: leader_exit.map(|d| start + d),
                on_term: None,
                member: Duration::ZERO,
                signals: Vec::new(),
            }
        }
    }

    impl Group for Scripted {
        async fn leader_exited(&mut self) {
            match self.leader_exit {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        }

        fn any_alive(&mut self) -> bool {
            self.leader_exit
                .is_none_or(|at| Instant::now() < at + self.member)
        }

        fn signal(&mut self, signal: Signal) {
            let now = Instant::now();
            self.signals.push((signal, now - self.start));
            let exit = match signal {
                Signal::SIGKILL => Some(now),
                Signal::SIGTERM => self.on_term.map(|d| now + d),
                _ => None,
            };
            if exit.is_some() {
                self.leader_exit = exit;
                self.member = Duration::ZERO;
            }
        }
    }

    const GRACE: Duration = STDIN_CLOSE_GRACE;
    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn a_server_leaving_on_stdin_close_ends_the_close_that_moment() {
        // A poll every 20 ms would have ended it at 20 ms.
        let mut group = Scripted::new(Some(7 * MS));
        assert_eq!(end_group(&mut group, GRACE).await, Ending::Exited);
        assert_eq!(group.start.elapsed(), 7 * MS);
        assert!(group.signals.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_ignoring_stdin_close_is_terminated_after_the_grace() {
        let mut group = Scripted::new(None);
        group.on_term = Some(3 * MS);
        assert_eq!(end_group(&mut group, GRACE).await, Ending::Terminated);
        assert_eq!(group.signals, vec![(Signal::SIGTERM, GRACE)]);
        assert_eq!(group.start.elapsed(), GRACE + 3 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_ignoring_sigterm_is_killed_after_its_grace() {
        let mut group = Scripted::new(None);
        assert_eq!(end_group(&mut group, GRACE).await, Ending::Killed);
        assert_eq!(
            group.signals,
            vec![(Signal::SIGTERM, GRACE), (Signal::SIGKILL, GRACE + SIGTERM_GRACE)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn members_outliving_the_leader_are_waited_for_one_poll_at_most() {
        let mut group = Scripted::new(Some(7 * MS));
        group.member = 12 * MS;
        assert_eq!(end_group(&mut group, GRACE).await, Ending::Exited);
        let elapsed = group.start.elapsed();
        assert!(
            elapsed >= 19 * MS && elapsed <= 19 * MS + GROUP_POLL,
            "{elapsed:?}"
        );
    }
}
