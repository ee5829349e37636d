//! The one thread every server process is spawned from.
//!
//! Invariant: the thread lives as long as the test process. A parent-death
//! signal fires when the thread that spawned the child ends, not the process:
//! a server spawned from a test's own thread would be shut down as soon as that
//! test's thread ended, while another test still used it.

use std::io;
use std::process::{Child, Command};
use std::sync::{OnceLock, mpsc};

type Request = (Command, mpsc::Sender<io::Result<Child>>);

static SPAWNER: OnceLock<io::Result<mpsc::Sender<Request>>> = OnceLock::new();

/// Spawns `command` from the spawner thread.
pub(crate) fn spawn(command: Command) -> io::Result<Child> {
    let sender = SPAWNER.get_or_init(|| {
        let (sender, requests) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("loopwright-test-postgres".into())
            .spawn(move || {
                // The sender lives in a static, so this loop never ends.
                for (mut command, reply) in requests {
                    let _ = reply.send(command.spawn());
                }
                loop {
                    std::thread::park();
                }
            })
            .map(|_| sender)
    });
    let sender = sender
        .as_ref()
        .map_err(|e| io::Error::new(e.kind(), format!("could not start the spawner thread: {e}")))?;
    let (reply, answer) = mpsc::channel();
    sender
        .send((command, reply))
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))?
}
