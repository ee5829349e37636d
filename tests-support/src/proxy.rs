//! [`Balancer`]: a loopback TCP load balancer for tests that fail a backend
//! over to another (a killed server's clients reconnect through it to a live
//! one).
//!
//! Invariant: bytes pass unchanged in both directions (HTTP/1.1, HTTP/2
//! prior knowledge, anything), each client connection paired with one backend
//! connection: the first backend, in round-robin order, that accepts it. A
//! side that ends (end of stream) ends the other's writing half; a side that
//! fails ends both connections; a client no backend accepts is closed. The
//! backend list's lock is never held across I/O. Dropping the balancer stops
//! accepting and closes every connection it forwards.

use std::collections::HashMap;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long connecting to one backend may take before the next is tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause after a failed `accept` (out of file descriptors, say), so the
/// loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(10);

/// A TCP load balancer on a loopback port, forwarding each connection to a
/// backend that accepts it.
///
/// ```no_run
/// use std::net::SocketAddr;
/// let a: SocketAddr = "127.0.0.1:9081".parse().unwrap();
/// let b: SocketAddr = "127.0.0.1:9082".parse().unwrap();
/// let balancer = loopwright_test_support::Balancer::start(vec![a, b]).unwrap();
/// println!("{}", balancer.url()); // http://127.0.0.1:PORT/
/// balancer.set_backends(vec![b]); // new connections go to b only
/// ```
#[derive(Debug)]
pub struct Balancer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    backends: Mutex<Vec<SocketAddr>>,
    /// The round-robin counter: where the next connection's search starts.
    next: AtomicUsize,
    stopped: AtomicBool,
    /// The connections being forwarded (client and backend side), by id, so
    /// that a drop closes them.
    open: Mutex<HashMap<u64, [TcpStream; 2]>>,
    next_id: AtomicU64,
}

impl Shared {
    fn backends(&self) -> MutexGuard<'_, Vec<SocketAddr>> {
        self.backends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open(&self) -> MutexGuard<'_, HashMap<u64, [TcpStream; 2]>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Balancer {
    /// Listens on a free loopback port and forwards to `backends`.
    ///
    /// # Errors
    ///
    /// When no loopback port can be bound or the accepting thread cannot be
    /// started.
    pub fn start(backends: Vec<SocketAddr>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            backends: Mutex::new(backends),
            ..Shared::default()
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("loopwright-balancer".into())
            .spawn(move || accept_loop(&listener, &accepting))?;
        Ok(Self {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its URL, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Replaces the backends for new connections; connections already
    /// forwarded stay with their backend.
    pub fn set_backends(&self, backends: Vec<SocketAddr>) {
        *self.shared.backends() = backends;
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag; a wake that
        // fails leaves the thread (blocked in accept) unjoined.
        let woken = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT).is_ok();
        if let Some(accept) = self.accept.take()
            && woken
        {
            let _ = accept.join();
        }
        for pair in std::mem::take(&mut *self.shared.open()).into_values() {
            for stream in pair {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        match client {
            Ok(client) => {
                let shared = Arc::clone(shared);
                let spawned = std::thread::Builder::new()
                    .name("loopwright-balancer-conn".into())
                    .spawn(move || forward(client, &shared));
                // A thread that cannot start drops its client (closed).
                drop(spawned);
            }
            Err(_) => std::thread::sleep(ACCEPT_ERROR_PAUSE),
        }
    }
}

/// Connects `client` to a backend and copies both ways until both end.
fn forward(client: TcpStream, shared: &Arc<Shared>) {
    let Some(backend) = connect_backend(shared) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = backend.set_nodelay(true);
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let (Ok(client_copy), Ok(backend_copy)) = (client.try_clone(), backend.try_clone()) else {
        return;
    };
    shared.open().insert(id, [client_copy, backend_copy]);
    if shared.stopped.load(Ordering::SeqCst) {
        shared.open().remove(&id);
        return;
    }
    let (Ok(client_read), Ok(backend_write)) = (client.try_clone(), backend.try_clone()) else {
        shared.open().remove(&id);
        return;
    };
    let upstream = std::thread::Builder::new()
        .name("loopwright-balancer-up".into())
        .spawn(move || pipe(client_read, backend_write));
    pipe(backend, client);
    if let Ok(upstream) = upstream {
        let _ = upstream.join();
    }
    shared.open().remove(&id);
}

/// The first backend, from the round-robin position on, that accepts a
/// connection.
fn connect_backend(shared: &Shared) -> Option<TcpStream> {
    let backends = shared.backends().clone();
    if backends.is_empty() {
        return None;
    }
    let start = shared.next.fetch_add(1, Ordering::Relaxed) % backends.len();
    backends
        .iter()
        .cycle()
        .skip(start)
        .take(backends.len())
        .find_map(|addr| TcpStream::connect_timeout(addr, CONNECT_TIMEOUT).ok())
}

/// Copies `from` to `to`: at the end of `from`, ends `to`'s writing; on an
/// error, ends both connections.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    match io::copy(&mut from, &mut to) {
        Ok(_) => {
            let _ = to.shutdown(Shutdown::Write);
        }
        Err(_) => {
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::io::{Read, Write};

    use super::*;

    /// A backend that answers each connection with its name, then echoes;
    /// with the count of connections it accepted.
    fn echo(name: &'static str) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    stream.write_all(name.as_bytes()).unwrap();
                    let mut reader = stream.try_clone().unwrap();
                    let _ = io::copy(&mut reader, &mut stream);
                    let _ = stream.shutdown(Shutdown::Write);
                });
            }
        });
        (addr, accepted)
    }

    /// An address that refuses connections for as long as its guard lives:
    /// the local port of an open connection, where nothing listens. (A
    /// dropped listener's port is not enough: a child another test forks in
    /// the meantime may hold the listening socket until it execs.)
    fn dead() -> (SocketAddr, [TcpStream; 2]) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client.local_addr().unwrap(), [client, server])
    }

    /// Sends `message`, ends the sending half and reads the whole answer
    /// (empty when the balancer closed the connection).
    fn exchange(balancer: &Balancer, message: &str) -> String {
        let mut stream = TcpStream::connect(balancer.addr()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = stream.write_all(message.as_bytes());
        let _ = stream.shutdown(Shutdown::Write);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    #[test]
    fn connections_reach_live_backends_in_turn() {
        let ((a, _), (b, _)) = (echo("a:"), echo("b:"));
        let ((dead1, _guard1), (dead2, _guard2)) = (dead(), dead());
        let balancer = Balancer::start(vec![a, b]).unwrap();
        assert!(balancer.url().starts_with("http://127.0.0.1:"));
        let mut answers: Vec<String> = (0..4).map(|i| exchange(&balancer, &format!("m{i}"))).collect();
        answers.sort();
        assert_eq!(answers, ["a:m0", "a:m2", "b:m1", "b:m3"]);

        balancer.set_backends(vec![dead1, a, dead2]);
        for i in 0..4 {
            assert_eq!(exchange(&balancer, &format!("n{i}")), format!("a:n{i}"));
        }

        balancer.set_backends(vec![dead1]);
        assert_eq!(exchange(&balancer, "x"), "");
        balancer.set_backends(Vec::new());
        assert_eq!(exchange(&balancer, "x"), "");
    }

    #[test]
    fn a_dropped_balancer_closes_its_connections_and_stops_accepting() {
        let (a, accepted) = echo("a:");
        let balancer = Balancer::start(vec![a]).unwrap();
        let addr = balancer.addr();
        let mut open = TcpStream::connect(addr).unwrap();
        open.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut greeting = [0; 2];
        open.read_exact(&mut greeting).unwrap();
        assert_eq!(&greeting, b"a:");

        drop(balancer);
        let mut rest = Vec::new();
        let _ = open.read_to_end(&mut rest);
        assert!(rest.is_empty(), "the connection was closed");
        // Nothing forwards a new connection (the port itself may be another
        // program's by now).
        if let Ok(mut late) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            late.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            let _ = late.read(&mut [0; 2]);
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "only the first connection reached the backend"
        );
    }
}
