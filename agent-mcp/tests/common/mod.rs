//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loopwright_core::{Tool, ToolSource};
use loopwright_mcp::{McpServerConfig, McpToolSource};

/// Generous guard against a hang; never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// The connect timeout of a Python MCP server over stdio: the interpreter
/// importing the SDK takes seconds on a loaded 2-core machine (the 10 s
/// default ran out once while the other tests of the binary ran).
pub const PYTHON_START: Duration = Duration::from_secs(45);

/// The in-repo test server: this package's example `mcp-test-server`,
/// which `cargo test` builds before it runs the tests (a single `--test`
/// run does not: build it first).
pub fn test_server_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-test-server");
    assert!(
        path.exists(),
        "{} is missing: `cargo test -p loopwright-mcp` builds it, or `cargo build -p loopwright-mcp --example mcp-test-server`",
        path.display()
    );
    path
}

/// Config for the in-repo test server.
pub fn test_server(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, test_server_bin().to_string_lossy())
}

/// Connect or fail the test.
pub async fn connect(config: McpServerConfig) -> McpToolSource {
    tokio::time::timeout(HANG_GUARD, McpToolSource::connect(config))
        .await
        .expect("connect hung")
        .expect("connect")
}

/// The source's tool with this original name.
pub async fn tool(source: &McpToolSource, name: &str) -> Arc<dyn Tool> {
    source
        .tools()
        .await
        .expect("tools")
        .into_iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Whether a process is gone (absent, or a zombie nobody reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

/// Wait (up to the hang guard) until the process is gone.
pub async fn wait_gone(pid: u32) -> bool {
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while tokio::time::Instant::now() < until {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A free local port: bound, then released, so the server can bind it next.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A path for a server log that does not exist yet, in a private temporary
/// directory that is removed (with the log) when this is dropped.
pub struct TempLog {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for TempLog {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl AsRef<std::path::Path> for TempLog {
    fn as_ref(&self) -> &std::path::Path {
        &self.path
    }
}

/// A fresh log path (the file is not created) that is gone after the test.
pub fn temp_log(tag: &str) -> TempLog {
    let dir = tempfile::Builder::new()
        .prefix(&format!("loopwright-mcp-{tag}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join(format!("{tag}.log"));
    TempLog { _dir: dir, path }
}

/// Wait (up to the hang guard) until the file contains `needle`.
pub async fn wait_for_line(path: &std::path::Path, needle: &str) -> bool {
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while tokio::time::Instant::now() < until {
        if std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// npm `@modelcontextprotocol/server-everything`'s binary (pinned in
/// tests-deps/); the test fails when it is not installed.
pub fn everything_bin() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/node_modules/.bin/mcp-server-everything");
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix tests-deps` (scripts/test.sh does)",
        path.display()
    );
    path
}

/// server-everything over stdio, named `everything`.
pub fn everything_stdio() -> McpServerConfig {
    McpServerConfig::stdio("everything", everything_bin().to_string_lossy()).arg("stdio")
}

/// Start server-everything in `mode` (`streamableHttp`, `sse`) on `port`
/// and wait (hang guard only) until it listens; killed when dropped.
pub async fn start_everything(mode: &str, port: u16) -> tokio::process::Child {
    let server = tokio::process::Command::new(everything_bin())
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_listening(port, "server-everything").await;
    server
}

/// Wait (hang guard only) until something listens on local `port`; the
/// test fails naming `what` when nothing does.
pub async fn wait_listening(port: u16, what: &str) {
    let until = tokio::time::Instant::now() + HANG_GUARD;
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(tokio::time::Instant::now() < until, "{what} never listened");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The in-repo test server running as a network server (`--http 0` or
/// `--ws 0`), killed when dropped.
pub struct NetServer {
    pub child: tokio::process::Child,
    /// The URL it printed (`http://127.0.0.1:PORT/mcp` or `ws://127.0.0.1:PORT/`).
    pub url: String,
}

impl NetServer {
    /// Start it with `mode` (`--http` or `--ws`) on `port` (0: any) plus
    /// `extra` arguments, and wait (hang guard only) for its URL.
    pub async fn start(mode: &str, port: u16, extra: &[&str]) -> Self {
        Self::start_with(mode, port, extra, &[]).await
    }

    /// [`Self::start`] with extra environment variables.
    pub async fn start_with(mode: &str, port: u16, extra: &[&str], env: &[(&str, &str)]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(test_server_bin())
            .envs(env.iter().copied())
            .arg(mode)
            .arg(port.to_string())
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
            .await
            .expect("server never announced its url")
            .unwrap()
            .expect("server exited before listening");
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line}"))
            .to_string();
        Self { child, url }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        let rest = self.url.rsplit_once(':').unwrap().1;
        rest.split('/').next().unwrap().parse().unwrap()
    }

    /// Kill it and wait for it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Call `tool` with `input` under the hang guard.
pub async fn call(tool: &Arc<dyn Tool>, input: serde_json::Value) -> loopwright_core::ToolOutput {
    tokio::time::timeout(
        HANG_GUARD,
        tool.call(input, loopwright_core::ToolContext::new("c")),
    )
    .await
    .expect("call hung")
    .expect("call")
}

/// Live (non-zombie) processes whose parent is this process.
pub fn live_children() -> Vec<u32> {
    let me = std::process::id().to_string();
    live_processes(|pid, fields| {
        let _ = pid;
        fields.get(1) == Some(&me.as_str())
    })
}

/// Live (non-zombie) processes whose environment holds `marker` (a
/// `NAME=value` pair given to an ancestor, inherited by every descendant).
pub fn live_with_marker(marker: &str) -> Vec<u32> {
    live_processes(|pid, _| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes()))
    })
}

/// Live processes for which `keep(pid, stat fields after the name)` holds.
fn live_processes(keep: impl Fn(u32, &[&str]) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && keep(pid, &fields) {
            out.push(pid);
        }
    }
    out
}

/// Start the test server's `slow` tool (600 s) under a cancellation token:
/// the token and the running call.
pub async fn spawn_cancellable_slow(
    source: &McpToolSource,
) -> (
    loopwright_core::CancellationToken,
    tokio::task::JoinHandle<Result<loopwright_core::ToolOutput, loopwright_core::ToolError>>,
) {
    let token = loopwright_core::CancellationToken::new();
    let slow = tool(source, "slow").await;
    let ctx = loopwright_core::ToolContext::new("c").with_cancellation(token.clone());
    let call = tokio::spawn(async move { slow.call(serde_json::json!({"ms": 600_000}), ctx).await });
    (token, call)
}

/// `tests-deps/python/<env>/<rest>`, which must exist.
pub fn py_path(env: &str, rest: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests-deps/python")
        .join(env)
        .join(rest);
    assert!(
        path.exists(),
        "{} is missing: scripts/test.sh installs the Python test servers",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

pub fn python(env: &str) -> String {
    py_path(env, ".venv/bin/python")
}
