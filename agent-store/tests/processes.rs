//! Two processes appending to one conversation at once, on SQLite and on
//! PostgreSQL: one wins, the other gets a conflict, reloads and retries; no
//! turn is lost. The writers are this test binary run again as children
//! (the `child_writer` test does the child's part when `CHILD_ENV` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use loopwright_core::Message;
use loopwright_store::Store;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

const CHILD_ENV: &str = "LOOPWRIGHT_STORE_TEST_CHILD";
/// The child's protocol lines hold this, then the message (the test harness
/// prints its own lines too).
const MARK: &str = "STORE-CHILD ";
const TURNS_EACH: usize = 25;
/// A guard against a hung child, never a measure.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

fn turn(writer: &str, n: usize) -> Vec<Message> {
    vec![
        Message::user(format!("{writer} asks {n}")),
        Message::assistant(format!("{writer} answer {n}")),
    ]
}

/// The child's part: `once URL NAME` or `many URL NAME`.
#[test]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.splitn(3, ' ').collect();
    let [mode, name, url] = parts.as_slice() else {
        panic!("bad {CHILD_ENV}: {spec}");
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = loopwright_store::open(url).await.unwrap();
        match *mode {
            "once" => once(&*store, name).await,
            "many" => many(&*store, name).await,
            other => panic!("unknown mode {other}"),
        }
    });
}

/// Load, say so, wait for "go", append at the loaded version; on a
/// conflict, reload and append again.
async fn once(store: &dyn Store, name: &str) {
    let loaded = store
        .load_conversation("shared")
        .await
        .unwrap()
        .map_or(0, |c| c.version);
    println!("{MARK}loaded {loaded}");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "go");
    match store.append_turn("shared", loaded, &turn(name, 0)).await {
        Ok(version) => println!("{MARK}ok {version}"),
        Err(error) if error.is_conflict() => {
            println!("{MARK}conflict");
            let reloaded = store
                .load_conversation("shared")
                .await
                .unwrap()
                .map_or(0, |c| c.version);
            let version = store
                .append_turn("shared", reloaded, &turn(name, 0))
                .await
                .unwrap();
            println!("{MARK}retried {version}");
        }
        Err(error) => panic!("{error}"),
    }
}

/// Say "ready", wait for "go", then append `TURNS_EACH` turns, reloading
/// and retrying on every conflict.
async fn many(store: &dyn Store, name: &str) {
    println!("{MARK}ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "go");
    let mut conflicts = 0;
    for n in 0..TURNS_EACH {
        loop {
            let version = store
                .load_conversation("shared")
                .await
                .unwrap()
                .map_or(0, |c| c.version);
            match store.append_turn("shared", version, &turn(name, n)).await {
                Ok(_) => break,
                Err(error) if error.is_conflict() => conflicts += 1,
                Err(error) => panic!("{error}"),
            }
        }
    }
    println!("{MARK}done {conflicts}");
}

struct Writer {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Writer {
    fn spawn(mode: &str, name: &str, url: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "processes::child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{mode} {name} {url}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    /// The child's next protocol line.
    async fn next(&mut self) -> String {
        let read = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                // The harness may have started the line ("test child_writer ... ").
                if let Some(at) = line.find(MARK) {
                    return line[at + MARK.len()..].to_owned();
                }
            }
            panic!("the child ended without a line");
        };
        tokio::time::timeout(CHILD_TIMEOUT, read)
            .await
            .expect("the child answered")
    }

    async fn go(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn finish(mut self) {
        while self.lines.next_line().await.unwrap().is_some() {}
        let status = tokio::time::timeout(CHILD_TIMEOUT, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "the child failed: {status}");
    }
}

/// Both children load version 1 before either writes, then both write:
/// exactly one gets version 2, the other a conflict, and its retry version 3.
async fn one_wins_the_other_retries(url: &str) {
    let store = loopwright_store::open(url).await.unwrap();
    store.append_turn("shared", 0, &turn("parent", 0)).await.unwrap();
    let mut a = Writer::spawn("once", "a", url);
    let mut b = Writer::spawn("once", "b", url);
    assert_eq!(a.next().await, "loaded 1");
    assert_eq!(b.next().await, "loaded 1");
    // Both hold version 1 now: release them together.
    tokio::join!(a.go(), b.go());
    let (first_a, first_b) = tokio::join!(a.next(), b.next());
    let mut outcomes = [first_a.clone(), first_b.clone()];
    outcomes.sort();
    assert_eq!(outcomes, ["conflict", "ok 2"], "a: {first_a}, b: {first_b}");
    let loser = if first_a == "conflict" { &mut a } else { &mut b };
    assert_eq!(loser.next().await, "retried 3");
    a.finish().await;
    b.finish().await;

    let chat = store.load_conversation("shared").await.unwrap().unwrap();
    assert_eq!(chat.version, 3);
    let texts: Vec<String> = chat.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts.len(), 6);
    assert_eq!(texts[..2], ["parent asks 0", "parent answer 0"]);
    let winner = if first_a == "ok 2" { "a" } else { "b" };
    let loser = if winner == "a" { "b" } else { "a" };
    assert_eq!(
        texts[2..4],
        [format!("{winner} asks 0"), format!("{winner} answer 0")]
    );
    assert_eq!(
        texts[4..],
        [format!("{loser} asks 0"), format!("{loser} answer 0")]
    );
}

/// Two children open a fresh database at once (concurrent first opens run
/// the migrations once), then, released together, append `TURNS_EACH`
/// turns each with retries: every turn is there, whole, each writer's in
/// its order.
async fn racing_writers_lose_nothing(url: &str) {
    let a = Writer::spawn("many", "a", url);
    let b = Writer::spawn("many", "b", url);
    let (mut a, mut b) = (a, b);
    assert_eq!(
        tokio::join!(a.next(), b.next()),
        ("ready".to_owned(), "ready".to_owned())
    );
    tokio::join!(a.go(), b.go());
    let (done_a, done_b) = tokio::join!(a.next(), b.next());
    assert!(
        done_a.starts_with("done ") && done_b.starts_with("done "),
        "{done_a} / {done_b}"
    );
    eprintln!("conflicts met: a {done_a}, b {done_b}");
    a.finish().await;
    b.finish().await;

    let store = loopwright_store::open(url).await.unwrap();
    let chat = store.load_conversation("shared").await.unwrap().unwrap();
    assert_eq!(chat.version, 2 * TURNS_EACH as u64);
    for writer in ["a", "b"] {
        let asks: Vec<String> = chat
            .messages
            .iter()
            .map(|m| m.text())
            .filter(|t| t.starts_with(&format!("{writer} asks ")))
            .collect();
        let expected: Vec<String> = (0..TURNS_EACH).map(|n| format!("{writer} asks {n}")).collect();
        assert_eq!(asks, expected, "{writer}'s turns, each once, in order");
    }
    for pair in chat.messages.chunks(2) {
        let ask = pair[0].text();
        let answer = pair[1].text();
        assert_eq!(ask.replace(" asks ", " answer "), answer, "a turn is whole");
    }
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite:{}", dir.path().join("shared.db").display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_processes_one_wins_the_other_retries() {
    let dir = tempfile::tempdir().unwrap();
    one_wins_the_other_retries(&sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_racing_processes_lose_no_turn() {
    let dir = tempfile::tempdir().unwrap();
    racing_writers_lose_nothing(&sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_processes_one_wins_the_other_retries() {
    let db = loopwright_test_support::database();
    one_wins_the_other_retries(db.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_racing_processes_lose_no_turn() {
    let db = loopwright_test_support::database();
    racing_writers_lose_nothing(db.url()).await;
}
