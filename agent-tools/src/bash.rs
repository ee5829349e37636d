//! The `Bash` tool: run a shell command in its own process group.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use loopwright_types::schema::input_schema_for;
use loopwright_types::{Tool, ToolAnnotations, ToolContext, ToolDefinition, ToolError, ToolOutput};
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use crate::caps::HeadTail;
use crate::util::parse_input;
use crate::workspace::Workspace;

/// Timeout when the model gives none (long enough for a build or a test run).
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest timeout the model may ask for (a hung command must end some time).
pub const MAX_BASH_TIMEOUT: Duration = Duration::from_secs(600);
/// Bytes kept from the start of stdout and of stderr (where errors and
/// headers are).
pub const BASH_HEAD_BYTES: usize = 12 * 1024;
/// Bytes kept from the end of stdout and of stderr (where summaries are).
pub const BASH_TAIL_BYTES: usize = 12 * 1024;
/// How long output is still read after the process group was killed, for
/// pipes held open by a process that left the group (`setsid`).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 8192;

fn description() -> String {
    format!(
        "Run a shell command with `sh -c` and return its exit code, stdout and \
stderr. The working directory is the workspace root unless `cwd` is given (it must be inside the \
workspace). Default timeout {} ms, maximum {} ms; on timeout the command and \
every process it started are killed. Processes left running in the background are killed when the \
command ends, so do not start servers meant to outlive the call. stdin is empty: do not run \
interactive programs. Long output is cut in the middle (the start and end are kept), so filter \
with grep/head/tail when you expect a lot. Prefer Read, Edit, Write, Glob and Grep over cat, sed, \
echo >, find and grep.",
        DEFAULT_BASH_TIMEOUT.as_millis(),
        MAX_BASH_TIMEOUT.as_millis()
    )
}

/// Input of [`BashTool`].
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct BashInput {
    /// The command line, run with `sh -c`.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Working directory, absolute or relative to the workspace root.
    #[serde(default)]
    pub cwd: Option<String>,
}

/// The `Bash` tool.
///
/// The command runs through `sh -c` in its own process group; on timeout, on
/// cancellation, when the call's future is dropped and when the command ends,
/// the whole group is killed with `SIGKILL`, so background children do not
/// outlive the call (a process that starts its own session with `setsid`
/// leaves the group and is not reached).
///
/// In [`WorkspaceMode::Limited`](crate::WorkspaceMode::Limited) only the
/// working directory is checked: the shell itself can reach anything the
/// process can. Confine it with approvals or an OS sandbox.
///
/// ```
/// use loopwright_types::Tool;
/// let ws = std::sync::Arc::new(loopwright_tools::Workspace::limited(std::env::temp_dir()).unwrap());
/// assert!(loopwright_tools::BashTool::new(ws).definition().annotations.destructive);
/// ```
#[derive(Debug)]
pub struct BashTool {
    workspace: Arc<Workspace>,
    definition: ToolDefinition,
}

impl BashTool {
    /// The tool, working in `workspace`.
    pub fn new(workspace: Arc<Workspace>) -> Self {
        let definition = ToolDefinition::new("Bash", description(), input_schema_for::<BashInput>())
            .with_annotations(ToolAnnotations::default().destructive(true).open_world(true));
        Self {
            workspace,
            definition,
        }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Bash enforces its own timeout (`timeout_ms`, default 120 s, at most
    /// 600 s), so the loop waits for it rather than for its shorter default.
    fn timeout_for(&self, input: &Value) -> Option<Duration> {
        Some(bash_timeout(input.get("timeout_ms").and_then(Value::as_u64)))
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let input: BashInput = parse_input(input)?;
        let cwd = match &input.cwd {
            None => self.workspace.root().to_path_buf(),
            Some(dir) => match self.workspace.resolve(dir) {
                Ok(p) if p.is_dir() => p,
                Ok(p) => {
                    return Ok(ToolOutput::error(format!(
                        "cwd `{}` is not a directory",
                        self.workspace.display(&p)
                    )));
                }
                Err(e) => return Ok(ToolOutput::error(e.to_string())),
            },
        };
        if ctx.cancellation().is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let timeout = bash_timeout(input.timeout_ms);

        let mut command = CommandWrap::with_new("sh", |c| {
            c.arg("-c")
                .arg(&input.command)
                .current_dir(&cwd)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
        });
        command.wrap(ProcessGroup::leader());
        let mut group = match command.spawn() {
            Ok(child) => GroupGuard { child, armed: true },
            Err(e) => return Ok(ToolOutput::error(format!("cannot start `sh`: {e}"))),
        };
        let stdout = group.child.stdout().take().map(collect);
        let stderr = group.child.stderr().take().map(collect);

        let ending = tokio::select! {
            status = group.child.wait() => Ending::Exited(status),
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
            () = ctx.cancellation().cancelled() => Ending::Cancelled,
        };
        // Whatever happened, nothing the command started outlives the call.
        group.kill();
        if !matches!(ending, Ending::Exited(_)) {
            // Reap the leader; the kill makes this prompt.
            let _ = tokio::time::timeout(DRAIN_GRACE, group.child.wait()).await;
        }
        group.armed = false;
        let stdout = finish(stdout).await;
        let stderr = finish(stderr).await;
        if matches!(ending, Ending::Cancelled) {
            return Err(ToolError::Cancelled);
        }
        Ok(report(&ending, timeout, &stdout, &stderr))
    }
}

enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

/// Kills the whole process group when dropped (the call's future was
/// dropped) or when asked.
struct GroupGuard {
    child: Box<dyn ChildWrapper>,
    /// Cleared once the group was killed and the leader reaped.
    armed: bool,
}

impl GroupGuard {
    fn kill(&mut self) {
        // The group may already be gone: nothing left to kill.
        let _ = self.child.start_kill();
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

/// Read a pipe to its end in a task, keeping head and tail.
fn collect<R: AsyncRead + Unpin + Send + 'static>(mut pipe: R) -> JoinHandle<HeadTail> {
    tokio::spawn(async move {
        let mut kept = HeadTail::new(BASH_HEAD_BYTES, BASH_TAIL_BYTES);
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => kept.push(&buf[..n]),
            }
        }
        kept
    })
}

/// The collected output of a pipe, waiting at most [`DRAIN_GRACE`].
async fn finish(task: Option<JoinHandle<HeadTail>>) -> HeadTail {
    let empty = || HeadTail::new(0, 0);
    let Some(mut task) = task else { return empty() };
    match tokio::time::timeout(DRAIN_GRACE, &mut task).await {
        Ok(Ok(kept)) => kept,
        _ => {
            task.abort();
            empty()
        }
    }
}

/// The timeout of one command: the model's `timeout_ms`, else the default,
/// never more than the maximum.
fn bash_timeout(timeout_ms: Option<u64>) -> Duration {
    timeout_ms
        .map_or(DEFAULT_BASH_TIMEOUT, Duration::from_millis)
        .min(MAX_BASH_TIMEOUT)
}

fn report(ending: &Ending, timeout: Duration, stdout: &HeadTail, stderr: &HeadTail) -> ToolOutput {
    let (first, is_error) = match ending {
        Ending::Exited(Ok(status)) => match status.code() {
            Some(code) => (format!("exit code: {code}"), code != 0),
            None => (format!("terminated by signal: {}", signal_of(*status)), true),
        },
        Ending::Exited(Err(e)) => (format!("could not wait for the command: {e}"), true),
        Ending::TimedOut => (
            format!(
                "timed out after {} ms; the command and every process it started were killed",
                timeout.as_millis()
            ),
            true,
        ),
        Ending::Cancelled => ("cancelled".to_owned(), true),
    };
    let text = format!(
        "{first}\nstdout:\n{}\nstderr:\n{}",
        stdout.render(),
        stderr.render()
    );
    if is_error {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    }
}

#[cfg(unix)]
fn signal_of(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    status
        .signal()
        .map_or_else(|| "unknown".to_owned(), |s| s.to_string())
}

#[cfg(not(unix))]
fn signal_of(_status: ExitStatus) -> String {
    "unknown".to_owned()
}
