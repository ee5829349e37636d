//! The command on a pseudo-terminal: its controlling terminal and its
//! stderr, as in an interactive shell (stdout stays a pipe).
#![allow(dead_code)]

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::mpsc;

use nix::fcntl::OFlag;
use nix::pty::{PtyMaster, grantpt, posix_openpt, ptsname_r, unlockpt};

use super::{HANG_GUARD, agent_bin};

/// The last words of a question of `--approve ask`, once per question.
pub const QUESTION_END: &str = "[N]o: ";

/// A new pseudo-terminal: its master side and its slave device's path.
fn pty() -> (PtyMaster, CString) {
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname_r(&master).unwrap();
    (master, CString::new(name).unwrap())
}

/// Everything written to the terminal until the agent is gone, answering
/// each question with the next of `answers`.
fn converse(master: PtyMaster, answers: Vec<&'static str>) -> mpsc::Receiver<String> {
    let (done, seen) = mpsc::channel();
    let master = std::fs::File::from(OwnedFd::from(master));
    std::thread::spawn(move || {
        let mut reader = master.try_clone().unwrap();
        let mut writer = master;
        let (mut text, mut asked) = (String::new(), 0);
        let mut answers = answers.into_iter();
        let mut buffer = [0u8; 4096];
        // EIO once the last holder of the slave side is gone.
        while let Ok(n @ 1..) = reader.read(&mut buffer) {
            text.push_str(&String::from_utf8_lossy(&buffer[..n]));
            while text.matches(QUESTION_END).count() > asked {
                asked += 1;
                let answer = answers.next().expect("more questions than answers");
                writer.write_all(format!("{answer}\n").as_bytes()).unwrap();
            }
        }
        done.send(text).unwrap();
    });
    seen
}

/// Run `loopwright ARGS...` in `cwd` on a pseudo-terminal, answering its
/// questions with `answers`; the exit status, stdout and what the terminal
/// showed.
pub async fn on_a_terminal(
    args: &[&str],
    cwd: &Path,
    answers: Vec<&'static str>,
) -> (Option<i32>, String, String) {
    on_a_terminal_with(args, cwd, answers, false).await
}

/// [`on_a_terminal`], with stdout on the terminal too when `stdout_too`
/// (then what the answer printed is in the terminal's text).
pub async fn on_a_terminal_with(
    args: &[&str],
    cwd: &Path,
    answers: Vec<&'static str>,
    stdout_too: bool,
) -> (Option<i32>, String, String) {
    let (master, slave_path) = pty();
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(slave_path.to_str().unwrap())
        .unwrap();
    let agent = agent_bin();
    let mut cmd = tokio::process::Command::new("setsid");
    // `setsid --ctty`: a new session whose controlling terminal (/dev/tty,
    // where questions are asked) is the one on stdin, as in a shell. Not a
    // group leader, setsid execs the agent in place (no fork).
    cmd.args(["--ctty", agent.to_str().unwrap()])
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        // No test reaches the Hugging Face Hub: a run with no model would
        // fetch the embedded one; a test that means it sets its own.
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
        .stdin(slave.try_clone().unwrap())
        .stdout(if stdout_too {
            std::process::Stdio::from(slave.try_clone().unwrap())
        } else {
            std::process::Stdio::piped()
        })
        .stderr(slave.try_clone().unwrap())
        .kill_on_drop(true);
    let seen = converse(master, answers);
    let child = cmd.spawn().expect("agent binary");
    // The agent holds the only slave descriptors now: the terminal's
    // output ends when it is gone.
    drop((cmd, slave));
    let out = tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("agent hung")
        .unwrap();
    let terminal = seen.recv_timeout(HANG_GUARD).unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        terminal,
    )
}
