//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{Tool, ToolSource};
use agent_mcp::{McpServerConfig, McpToolSource};

/// Generous guard against a hang; never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// Config for the in-repo test server.
pub fn test_server(name: &str) -> McpServerConfig {
    McpServerConfig::stdio(name, env!("CARGO_BIN_EXE_mcp-test-server"))
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

/// A fresh, empty file path for a server log.
pub fn temp_log(tag: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("agent-mcp-{tag}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
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
