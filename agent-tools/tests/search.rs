//! Glob, Grep and Read on a generated tree of 10,000 files: caps and
//! `.gitignore` (without a git repository) are honoured.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs::File;
use std::time::{Duration, SystemTime};

use common::{Tools, err, ok};
use loopwright_tools::{MAX_GLOB_RESULTS, MAX_GREP_FILES, MAX_GREP_LINES, MAX_GREP_OUTPUT_BYTES};
use serde_json::json;

const DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const TOTAL: usize = DIRS * FILES_PER_DIR;

/// A tree of `dNN/fMM.txt` (10,000 files, each with one `needle` line),
/// plus ignored files that also contain the needle, and a 10,000-line file.
/// Each test makes its own, so it is removed when the test ends.
fn tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in 0..DIRS {
        let dir = root.join(format!("d{d:02}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            std::fs::write(
                dir.join(format!("f{f:02}.txt")),
                format!("alpha\nneedle {d} {f}\nomega\n"),
            )
            .unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "ignored/\n*.log\n").unwrap();
    std::fs::create_dir(root.join("ignored")).unwrap();
    std::fs::write(root.join("ignored/hidden.txt"), "needle ignored\n").unwrap();
    std::fs::write(root.join("d00/trace.log"), "needle in a log\n").unwrap();
    let big: String = (0..10_000).map(|i| format!("row {i} needle\n")).collect();
    std::fs::write(root.join("big.txt"), big).unwrap();
    tmp
}

fn tools() -> (tempfile::TempDir, Tools) {
    let tree = tree();
    let tools = Tools::limited(tree.path());
    (tree, tools)
}

#[tokio::test]
async fn glob_is_capped_with_a_note_and_skips_ignored_files() {
    let (_tree, t) = tools();
    let text = ok(&t.glob, json!({"pattern": "**/*.txt"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), MAX_GLOB_RESULTS + 1, "{}", lines.len());
    let left_out = TOTAL + 1 - MAX_GLOB_RESULTS;
    assert_eq!(
        *lines.last().unwrap(),
        format!(
            "[{left_out} more files not shown ({} matched); use a narrower pattern or path]",
            TOTAL + 1
        )
    );
    assert!(!text.contains("ignored/"), "gitignored directory listed");
    assert_eq!(
        ok(&t.glob, json!({"pattern": "**/*.log"})).await,
        "No files found"
    );
    assert_eq!(
        ok(&t.glob, json!({"pattern": "ignored/*"})).await,
        "No files found"
    );
    let text = ok(&t.glob, json!({"pattern": "*.txt", "path": "d07"})).await;
    assert_eq!(text.lines().count(), FILES_PER_DIR);
    assert!(text.lines().all(|l| l.starts_with("d07/f")), "{text}");
    // `*` does not cross directories.
    assert_eq!(ok(&t.glob, json!({"pattern": "*.txt"})).await, "big.txt");
}

#[tokio::test]
async fn grep_files_with_matches_is_capped_and_skips_ignored_files() {
    let (_tree, t) = tools();
    let text = ok(&t.grep, json!({"pattern": "needle"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), MAX_GREP_FILES + 1);
    let matched = TOTAL + 1;
    assert!(
        lines.last().unwrap().starts_with(&format!(
            "[{} more files not shown ({matched} files matched)",
            matched - MAX_GREP_FILES
        )),
        "{}",
        lines.last().unwrap()
    );
    assert!(!text.contains("ignored") && !text.contains(".log"), "{text}");
}

#[tokio::test]
async fn grep_content_is_capped_in_lines() {
    let (_tree, t) = tools();
    let text = ok(
        &t.grep,
        json!({"pattern": "needle \\d+ 7$", "output_mode": "content"}),
    )
    .await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), DIRS, "one match per directory, under the cap");
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with(" 7") && l.contains(".txt:2:needle")),
        "{text}"
    );

    let text = ok(&t.grep, json!({"pattern": "needle", "output_mode": "content"})).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), MAX_GREP_LINES + 1);
    assert!(text.len() <= MAX_GREP_OUTPUT_BYTES + 200, "{}", text.len());
    let left_out = 10_000 + TOTAL - MAX_GREP_LINES;
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with(&format!("[{left_out} more lines not shown")),
        "{}",
        lines.last().unwrap()
    );
}

#[tokio::test]
async fn grep_count_glob_context_and_case() {
    let (_tree, t) = tools();
    let text = ok(
        &t.grep,
        json!({"pattern": "NEEDLE", "path": "d03", "output_mode": "count", "case_insensitive": true}),
    )
    .await;
    assert_eq!(text.lines().count(), FILES_PER_DIR);
    assert!(
        text.lines()
            .all(|l| l.starts_with("d03/f") && l.ends_with(".txt:1")),
        "{text}"
    );
    assert_eq!(
        ok(&t.grep, json!({"pattern": "NEEDLE", "path": "d03"})).await,
        "No matches found"
    );

    let text = ok(
        &t.grep,
        json!({"pattern": "needle", "path": "d04", "glob": "f1?.txt"}),
    )
    .await;
    assert_eq!(text.lines().count(), 10, "{text}");

    let text = ok(
        &t.grep,
        json!({"pattern": "needle 5 5$", "path": "d05/f05.txt", "output_mode": "content", "context": 1}),
    )
    .await;
    assert_eq!(
        text,
        "d05/f05.txt-1-alpha\nd05/f05.txt:2:needle 5 5\nd05/f05.txt-3-omega"
    );

    // An explicitly named ignored file is still searched.
    let text = ok(
        &t.grep,
        json!({"pattern": "needle", "path": "ignored/hidden.txt"}),
    )
    .await;
    assert_eq!(text, "ignored/hidden.txt");
    assert!(
        err(&t.grep, json!({"pattern": "(unclosed"}))
            .await
            .contains("invalid regular expression")
    );
}

#[tokio::test]
async fn read_on_the_tree_stays_within_its_caps() {
    let (_tree, t) = tools();
    let text = ok(&t.read, json!({"file_path": "big.txt"})).await;
    assert_eq!(
        text.lines().filter(|l| l.contains('\t')).count(),
        loopwright_tools::DEFAULT_READ_LIMIT
    );
    assert!(text.ends_with("[showing lines 1-2000 of 10000; use offset=2001 to read on]"));
    let text = ok(&t.read, json!({"file_path": "big.txt", "offset": 9999})).await;
    assert_eq!(text, "  9999\trow 9998 needle\n 10000\trow 9999 needle");
    let text = ok(&t.read, json!({"file_path": "d42/f17.txt"})).await;
    assert_eq!(text, "     1\talpha\n     2\tneedle 42 17\n     3\tomega");
}

#[tokio::test]
async fn glob_lists_newest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let base = SystemTime::now() - Duration::from_secs(3600);
    for (name, age) in [("old.rs", 300), ("new.rs", 0), ("mid.rs", 100)] {
        let file = File::create(tmp.path().join(name)).unwrap();
        file.set_modified(base - Duration::from_secs(age)).unwrap();
    }
    let t = Tools::limited(tmp.path());
    assert_eq!(
        ok(&t.glob, json!({"pattern": "*.rs"})).await,
        "new.rs\nmid.rs\nold.rs"
    );
    // An absolute pattern under the root works too.
    let absolute = t.ws.root().join("n*.rs");
    assert_eq!(ok(&t.glob, json!({"pattern": absolute})).await, "new.rs");
}
