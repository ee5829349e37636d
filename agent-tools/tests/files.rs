//! Read, Write and Edit on real files.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use base64::Engine as _;
use common::{Tools, call, err, image_of, ok};
use loopwright_tools::{DEFAULT_READ_LIMIT, MAX_LINE_CHARS, MAX_READ_OUTPUT_BYTES};
use serde_json::json;

fn setup() -> (tempfile::TempDir, Tools) {
    let tmp = tempfile::tempdir().unwrap();
    let tools = Tools::limited(tmp.path());
    (tmp, tools)
}

#[tokio::test]
async fn read_numbers_lines_like_cat_n() {
    let (tmp, t) = setup();
    std::fs::write(tmp.path().join("a.txt"), "first\nsecond\r\n\nfourth").unwrap();
    let text = ok(&t.read, json!({"file_path": "a.txt"})).await;
    assert_eq!(text, "     1\tfirst\n     2\tsecond\n     3\t\n     4\tfourth");
    let text = ok(&t.read, json!({"file_path": "a.txt", "offset": 2, "limit": 2})).await;
    assert!(
        text.starts_with("     2\tsecond\n     3\t\n[showing lines 2-3 of 4; use offset=4"),
        "{text}"
    );
    let msg = err(&t.read, json!({"file_path": "a.txt", "offset": 9})).await;
    assert!(msg.contains("past the end") && msg.contains("4 lines"), "{msg}");
}

#[tokio::test]
async fn read_defaults_to_2000_lines_and_cuts_long_lines() {
    let (tmp, t) = setup();
    let body: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(tmp.path().join("long.txt"), body).unwrap();
    let text = ok(&t.read, json!({"file_path": "long.txt"})).await;
    let numbered = text.lines().filter(|l| l.contains('\t')).count();
    assert_eq!(numbered, DEFAULT_READ_LIMIT);
    assert!(text.contains("  2000\tline 2000\n"));
    assert!(!text.contains("line 2001"));
    assert!(
        text.ends_with("[showing lines 1-2000 of 5000; use offset=2001 to read on]"),
        "{}",
        &text[text.len() - 80..]
    );

    let wide = "x".repeat(MAX_LINE_CHARS + 500);
    std::fs::write(tmp.path().join("wide.txt"), format!("{wide}\nshort\n")).unwrap();
    let text = ok(&t.read, json!({"file_path": "wide.txt"})).await;
    let first = text.lines().next().unwrap();
    assert!(
        first.ends_with("… [500 more characters cut]"),
        "{}",
        &first[first.len() - 40..]
    );
    assert!(first.len() < MAX_LINE_CHARS + 100);
    assert!(text.contains("     2\tshort"));
}

#[tokio::test]
async fn read_output_stays_under_its_byte_cap() {
    let (tmp, t) = setup();
    let body: String = (1..=2000)
        .map(|i| format!("{i:04} {}\n", "y".repeat(200)))
        .collect();
    std::fs::write(tmp.path().join("fat.txt"), body).unwrap();
    let text = ok(&t.read, json!({"file_path": "fat.txt"})).await;
    assert!(text.len() <= MAX_READ_OUTPUT_BYTES + 200, "{}", text.len());
    let note = text.lines().last().unwrap();
    assert!(note.contains("(output size cap reached); use offset="), "{note}");
    // Reading on from the note's offset continues where the output stopped.
    let last_shown: usize = text
        .lines()
        .rev()
        .nth(1)
        .unwrap()
        .trim_start()
        .split('\t')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(note.contains(&format!("use offset={}", last_shown + 1)), "{note}");
    assert!(last_shown < 2000);
}

#[tokio::test]
async fn read_refuses_binary_and_directories_and_reports_missing_files() {
    let (tmp, t) = setup();
    std::fs::write(tmp.path().join("blob.bin"), [0x7f, b'E', b'L', b'F', 0, 1, 2, 0]).unwrap();
    let msg = err(&t.read, json!({"file_path": "blob.bin"})).await;
    assert!(msg.contains("binary"), "{msg}");
    std::fs::create_dir(tmp.path().join("dir")).unwrap();
    assert!(
        err(&t.read, json!({"file_path": "dir"}))
            .await
            .contains("is a directory")
    );
    let msg = err(&t.read, json!({"file_path": "nope.txt"})).await;
    assert!(msg.contains("nope.txt"), "{msg}");
    std::fs::write(tmp.path().join("empty.txt"), "").unwrap();
    assert!(
        ok(&t.read, json!({"file_path": "empty.txt"}))
            .await
            .contains("is empty")
    );
}

#[tokio::test]
async fn read_returns_images_as_image_output() {
    let (tmp, t) = setup();
    // A 1x1 PNG.
    let png = base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
        .unwrap();
    std::fs::write(tmp.path().join("dot.PNG"), &png).unwrap();
    let out = call(&t.read, json!({"file_path": "dot.PNG"})).await.unwrap();
    assert!(!out.is_error);
    let (media_type, data) = image_of(&out).expect("an image part");
    assert_eq!(media_type, "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD.decode(data).unwrap(),
        png
    );
    std::fs::write(tmp.path().join("p.jpg"), b"\xff\xd8\xff").unwrap();
    let out = call(&t.read, json!({"file_path": "p.jpg"})).await.unwrap();
    assert_eq!(image_of(&out).unwrap().0, "image/jpeg");
}

#[tokio::test]
async fn write_creates_parents_and_reports_bytes() {
    let (tmp, t) = setup();
    let text = ok(&t.write, json!({"file_path": "a/b/c.txt", "content": "héllo\n"})).await;
    assert_eq!(text, "Wrote 7 bytes to a/b/c.txt");
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("a/b/c.txt")).unwrap(),
        "héllo\n"
    );
    ok(&t.write, json!({"file_path": "a/b/c.txt", "content": "over"})).await;
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("a/b/c.txt")).unwrap(),
        "over"
    );
    assert!(
        err(&t.write, json!({"file_path": "a", "content": "x"}))
            .await
            .contains("is a directory")
    );
}

const SOURCE: &str = "fn main() {\n    let x = 1;\n    let y = 1;\n    println!(\"{x} {y}\");\n}\n";

#[tokio::test]
async fn edit_replaces_a_unique_string_and_returns_a_diff() {
    let (tmp, t) = setup();
    let path = tmp.path().join("main.rs");
    std::fs::write(&path, SOURCE).unwrap();
    let input = json!({"file_path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"});
    let diff = ok(&t.edit, input).await;
    assert!(diff.starts_with("--- a/main.rs\n+++ b/main.rs\n@@ "), "{diff}");
    assert!(diff.contains("\n-    let x = 1;\n+    let x = 2;\n"), "{diff}");
    assert!(diff.contains("\n     let y = 1;\n"), "context missing: {diff}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        SOURCE.replace("let x = 1;", "let x = 2;")
    );
}

#[tokio::test]
async fn edit_refuses_a_non_unique_string_and_names_the_count() {
    let (tmp, t) = setup();
    let path = tmp.path().join("main.rs");
    std::fs::write(&path, SOURCE).unwrap();
    let input = json!({"file_path": "main.rs", "old_string": " = 1;", "new_string": " = 2;"});
    let msg = err(&t.edit, input).await;
    assert!(msg.contains("occurs 2 times"), "{msg}");
    assert!(msg.contains("replace_all"), "{msg}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SOURCE);
}

#[tokio::test]
async fn edit_reports_a_missing_string() {
    let (tmp, t) = setup();
    let path = tmp.path().join("main.rs");
    std::fs::write(&path, SOURCE).unwrap();
    let input = json!({"file_path": "main.rs", "old_string": "let z = 1;", "new_string": "let z = 2;"});
    let msg = err(&t.edit, input).await;
    assert!(msg.contains("not found in `main.rs`"), "{msg}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SOURCE);
    let same = json!({"file_path": "main.rs", "old_string": "main", "new_string": "main"});
    assert!(err(&t.edit, same).await.contains("the same"));
    let empty = json!({"file_path": "main.rs", "old_string": "", "new_string": "x"});
    assert!(err(&t.edit, empty).await.contains("empty"));
    let missing = json!({"file_path": "gone.rs", "old_string": "a", "new_string": "b"});
    assert!(err(&t.edit, missing).await.contains("gone.rs"));
}

#[tokio::test]
async fn edit_replace_all_replaces_every_occurrence() {
    let (tmp, t) = setup();
    let path = tmp.path().join("main.rs");
    std::fs::write(&path, SOURCE).unwrap();
    let input =
        json!({"file_path": "main.rs", "old_string": " = 1;", "new_string": " = 2;", "replace_all": true});
    let diff = ok(&t.edit, input).await;
    assert_eq!(diff.matches("\n-    let").count(), 2, "{diff}");
    assert_eq!(diff.matches("\n+    let").count(), 2, "{diff}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        SOURCE.replace(" = 1;", " = 2;")
    );
}

#[tokio::test]
async fn edit_keeps_crlf_line_endings() {
    let (tmp, t) = setup();
    let path = tmp.path().join("win.txt");
    std::fs::write(&path, "one\r\ntwo\r\nthree\r\n").unwrap();
    let input = json!({"file_path": "win.txt", "old_string": "one\ntwo", "new_string": "uno\ndos"});
    ok(&t.edit, input).await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "uno\r\ndos\r\nthree\r\n");
}
