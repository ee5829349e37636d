//! No server outlives its test process: a child test process that started
//! the shared server (and a server of its own) is SIGKILLed, and both servers
//! are gone after it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "LOOPWRIGHT_TEST_SUPPORT_CHILD";
/// A guard against a hung check, never a measure.
const GONE_WITHIN: Duration = Duration::from_secs(30);

/// The child's part: start both kinds of server, say where, then wait to be
/// killed.
#[test]
fn child_holds_servers() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let db = loopwright_test_support::database();
    let own = loopwright_test_support::TempPostgres::start();
    println!("\nSERVERS {} {}", port_of(db.url()), own.port());
    std::thread::sleep(Duration::from_secs(600));
}

fn port_of(url: &str) -> u16 {
    let after_host = url.rsplit_once(':').unwrap().1;
    after_host.split('/').next().unwrap().parse().unwrap()
}

/// Whether a server on `port` accepts connections, or a `postgres` process
/// for that port is alive (not a zombie).
fn alive(port: u16) -> bool {
    let accepting =
        std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).is_ok();
    let needle = format!("\0-p\0{port}\0");
    let process = std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        let zombie = std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        });
        cmdline.contains("postgres") && cmdline.contains(&needle) && !zombie
    });
    accepting || process
}

#[test]
fn servers_end_with_their_test_process() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_servers",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        // The shared server must be the child's own, not the test command's.
        .env_remove(loopwright_test_support::SERVER_ENV)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ports = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("SERVERS ") {
            let parsed: Vec<u16> = rest.split(' ').map(|p| p.parse().unwrap()).collect();
            ports = Some(parsed);
            break;
        }
    }
    let ports = ports.expect("the child started its servers");
    assert!(ports.iter().all(|&port| alive(port)), "both servers run");

    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let deadline = Instant::now() + GONE_WITHIN;
    while ports.iter().any(|&port| alive(port)) {
        assert!(
            Instant::now() < deadline,
            "a server outlived its test process: {ports:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
