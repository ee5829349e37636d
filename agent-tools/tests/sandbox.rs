//! Sandbox escape attempts in `Limited` mode, and what stays allowed.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use common::{Tools, err, ok};
use serde_json::json;

/// A temp dir holding `ws/` (the workspace root) and `outside/` (with a
/// secret file and a subdirectory).
struct Layout {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    tools: Tools,
}

fn layout() -> Layout {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    std::fs::write(outside.join("secret.txt"), "top secret\n").unwrap();
    std::fs::write(ws.join("inside.txt"), "hello\n").unwrap();
    let tools = Tools::limited(&ws);
    let ws = tools.ws.root().to_path_buf();
    let outside = std::fs::canonicalize(&outside).unwrap();
    Layout {
        _tmp: tmp,
        ws,
        outside,
        tools,
    }
}

fn assert_denied(message: &str, ws: &std::path::Path) {
    assert!(
        message.contains("outside the workspace root"),
        "not a denial: {message}"
    );
    assert!(
        message.contains(&ws.display().to_string()),
        "root not named: {message}"
    );
}

#[tokio::test]
async fn parent_dir_paths_are_denied() {
    let l = layout();
    for path in [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "./../ws/../outside/secret.txt",
    ] {
        let msg = err(&l.tools.read, json!({"file_path": path})).await;
        assert_denied(&msg, &l.ws);
        assert!(msg.contains(path), "path not named: {msg}");
        assert!(!msg.contains("top secret"));
    }
    let msg = err(
        &l.tools.write,
        json!({"file_path": "../outside/new.txt", "content": "x"}),
    )
    .await;
    assert_denied(&msg, &l.ws);
    assert!(!l.outside.join("new.txt").exists());
}

#[tokio::test]
async fn absolute_paths_outside_are_denied() {
    let l = layout();
    let secret = l.outside.join("secret.txt");
    assert_denied(&err(&l.tools.read, json!({"file_path": secret})).await, &l.ws);
    assert_denied(
        &err(&l.tools.read, json!({"file_path": "/etc/passwd"})).await,
        &l.ws,
    );
    let edit = json!({"file_path": secret, "old_string": "top", "new_string": "no"});
    assert_denied(&err(&l.tools.edit, edit).await, &l.ws);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret\n");
    let target = l.outside.join("abs.txt");
    assert_denied(
        &err(&l.tools.write, json!({"file_path": target, "content": "x"})).await,
        &l.ws,
    );
    assert!(!target.exists());
    // Absolute paths inside the root are fine.
    let text = ok(&l.tools.read, json!({"file_path": l.ws.join("inside.txt")})).await;
    assert!(text.contains("hello"));
}

#[tokio::test]
async fn symlinked_file_pointing_outside_is_denied() {
    let l = layout();
    symlink(l.outside.join("secret.txt"), l.ws.join("link.txt")).unwrap();
    assert_denied(&err(&l.tools.read, json!({"file_path": "link.txt"})).await, &l.ws);
    let msg = err(
        &l.tools.write,
        json!({"file_path": "link.txt", "content": "pwned"}),
    )
    .await;
    assert_denied(&msg, &l.ws);
    let edit = json!({"file_path": "link.txt", "old_string": "top", "new_string": "no"});
    assert_denied(&err(&l.tools.edit, edit).await, &l.ws);
    assert_eq!(
        std::fs::read_to_string(l.outside.join("secret.txt")).unwrap(),
        "top secret\n"
    );
    // Grep over the root does not follow the link either.
    let found = ok(
        &l.tools.grep,
        json!({"pattern": "secret", "output_mode": "content"}),
    )
    .await;
    assert!(!found.contains("top secret"), "{found}");
}

#[tokio::test]
async fn symlinked_directory_pointing_outside_is_denied() {
    let l = layout();
    symlink(&l.outside, l.ws.join("linkdir")).unwrap();
    assert_denied(
        &err(&l.tools.read, json!({"file_path": "linkdir/secret.txt"})).await,
        &l.ws,
    );
    assert_denied(
        &err(&l.tools.glob, json!({"pattern": "*", "path": "linkdir"})).await,
        &l.ws,
    );
    assert_denied(
        &err(&l.tools.grep, json!({"pattern": "secret", "path": "linkdir"})).await,
        &l.ws,
    );
    assert_denied(
        &err(&l.tools.bash, json!({"command": "pwd", "cwd": "linkdir"})).await,
        &l.ws,
    );
    // Walking the root does not descend into it.
    let listed = ok(&l.tools.glob, json!({"pattern": "**/*.txt"})).await;
    assert!(!listed.contains("secret"), "{listed}");
}

#[tokio::test]
async fn dot_dot_through_a_symlinked_directory_is_resolved_physically() {
    let l = layout();
    // Lexically `sub/link/../secret.txt` is `sub/secret.txt` (inside), but
    // `link` is `outside/deep`, so the file really opened is `outside/secret.txt`.
    symlink(l.outside.join("deep"), l.ws.join("sub/link")).unwrap();
    let msg = err(&l.tools.read, json!({"file_path": "sub/link/../secret.txt"})).await;
    assert_denied(&msg, &l.ws);
    assert!(
        msg.contains(&l.outside.join("secret.txt").display().to_string()),
        "{msg}"
    );
    assert!(!msg.contains("top secret"));
}

#[tokio::test]
async fn new_file_under_a_symlinked_parent_is_denied() {
    let l = layout();
    symlink(&l.outside, l.ws.join("linkdir")).unwrap();
    for path in ["linkdir/new.txt", "linkdir/a/b/new.txt"] {
        let msg = err(&l.tools.write, json!({"file_path": path, "content": "x"})).await;
        assert_denied(&msg, &l.ws);
    }
    assert!(!l.outside.join("new.txt").exists());
    assert!(!l.outside.join("a").exists());
}

#[tokio::test]
async fn dangling_symlink_pointing_outside_is_denied() {
    let l = layout();
    symlink(l.outside.join("not-yet.txt"), l.ws.join("dangling")).unwrap();
    let msg = err(&l.tools.write, json!({"file_path": "dangling", "content": "x"})).await;
    assert_denied(&msg, &l.ws);
    assert!(!l.outside.join("not-yet.txt").exists());
}

#[tokio::test]
async fn symlink_loops_are_an_error_not_a_hang() {
    let l = layout();
    symlink(l.ws.join("loop_b"), l.ws.join("loop_a")).unwrap();
    symlink(l.ws.join("loop_a"), l.ws.join("loop_b")).unwrap();
    let msg = err(&l.tools.read, json!({"file_path": "loop_a"})).await;
    assert!(msg.contains("symbolic links"), "{msg}");
}

#[tokio::test]
async fn paths_inside_stay_allowed() {
    let l = layout();
    std::fs::create_dir_all(l.ws.join("real/dir")).unwrap();
    symlink(l.ws.join("real/dir"), l.ws.join("inlink")).unwrap();
    ok(
        &l.tools.write,
        json!({"file_path": "inlink/via-link.txt", "content": "a\n"}),
    )
    .await;
    assert!(l.ws.join("real/dir/via-link.txt").exists());
    ok(
        &l.tools.write,
        json!({"file_path": "new/nested/dir/f.txt", "content": "b\n"}),
    )
    .await;
    assert!(l.ws.join("new/nested/dir/f.txt").exists());
    let text = ok(&l.tools.read, json!({"file_path": "sub/../inside.txt"})).await;
    assert!(text.contains("hello"));
    // A not-yet-existing directory followed by `..` stays lexical on top of the root.
    ok(
        &l.tools.write,
        json!({"file_path": "ghost/../ok.txt", "content": "c"}),
    )
    .await;
    assert!(l.ws.join("ok.txt").exists());
    let msg = err(
        &l.tools.write,
        json!({"file_path": "ghost/../../escape.txt", "content": "c"}),
    )
    .await;
    assert_denied(&msg, &l.ws);
}

#[tokio::test]
async fn full_mode_allows_paths_outside() {
    let l = layout();
    let tools = Tools::new(loopwright_tools::Workspace::full(&l.ws).unwrap());
    let text = ok(&tools.read, json!({"file_path": l.outside.join("secret.txt")})).await;
    assert!(text.contains("top secret"));
    let text = ok(&tools.read, json!({"file_path": "../outside/secret.txt"})).await;
    assert!(text.contains("top secret"));
}

#[tokio::test]
async fn relative_and_chained_symlinks_are_followed() {
    let l = layout();
    // `ws/sub/rel -> ../../outside` (relative to the link's directory).
    symlink("../../outside", l.ws.join("sub/rel")).unwrap();
    assert_denied(
        &err(&l.tools.read, json!({"file_path": "sub/rel/secret.txt"})).await,
        &l.ws,
    );
    // A chain: ws/one -> ws/two -> outside/secret.txt.
    symlink(l.ws.join("two"), l.ws.join("one")).unwrap();
    symlink(l.outside.join("secret.txt"), l.ws.join("two")).unwrap();
    assert_denied(&err(&l.tools.read, json!({"file_path": "one"})).await, &l.ws);
    // A relative link that stays inside is fine.
    symlink("../inside.txt", l.ws.join("sub/back")).unwrap();
    assert!(
        ok(&l.tools.read, json!({"file_path": "sub/back"}))
            .await
            .contains("hello")
    );
}
