//! Every tool honours a cancelled context.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Tools;
use loopwright_core::{CancellationToken, Tool, ToolContext, ToolError};
use serde_json::json;

#[tokio::test]
async fn a_cancelled_call_does_nothing_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
    let t = Tools::limited(tmp.path());
    let token = CancellationToken::new();
    token.cancel();
    let calls: [(&dyn Tool, serde_json::Value); 6] = [
        (&t.read, json!({"file_path": "a.txt"})),
        (&t.write, json!({"file_path": "b.txt", "content": "x"})),
        (
            &t.edit,
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        ),
        (&t.bash, json!({"command": "touch c.txt"})),
        (&t.glob, json!({"pattern": "*"})),
        (&t.grep, json!({"pattern": "one"})),
    ];
    for (tool, input) in calls {
        let ctx = ToolContext::new("c").with_cancellation(token.clone());
        let result = tool.call(input, ctx).await;
        assert!(
            matches!(result, Err(ToolError::Cancelled)),
            "{}: {result:?}",
            tool.definition().name
        );
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!tmp.path().join("b.txt").exists());
    assert!(!tmp.path().join("c.txt").exists());
}
