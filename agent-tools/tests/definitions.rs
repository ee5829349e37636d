//! What the model is told: names, annotations, schemas and descriptions.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use loopwright_core::{ToolSource, toolset::SourceKind};
use loopwright_tools::{Workspace, coding_tools};

#[tokio::test]
async fn six_native_tools_with_annotations_schemas_and_limits_in_descriptions() {
    let tmp = tempfile::tempdir().unwrap();
    let source = coding_tools(Workspace::limited(tmp.path()).unwrap());
    assert_eq!(source.kind(), SourceKind::Native);
    assert_eq!(source.name(), "coding");
    let tools = source.tools().await.unwrap();
    let expected = [
        ("Read", true, vec!["file_path"], "2000"),
        ("Write", false, vec!["file_path", "content"], "bytes"),
        (
            "Edit",
            false,
            vec!["file_path", "old_string", "new_string"],
            "replace_all",
        ),
        ("Bash", false, vec!["command"], "120000 ms"),
        ("Glob", true, vec!["pattern"], "at most 200"),
        ("Grep", true, vec!["pattern"], "500 lines"),
    ];
    assert_eq!(tools.len(), expected.len());
    for (tool, (name, read_only, required, mentions)) in tools.iter().zip(expected) {
        let d = tool.definition();
        assert_eq!(d.name, name);
        assert_eq!(d.annotations.read_only, read_only, "{name}");
        assert_eq!(d.annotations.destructive, !read_only, "{name}");
        assert!(d.description.contains(mentions), "{name}: {}", d.description);
        assert_eq!(d.input_schema["type"], "object");
        let mut got: Vec<&str> = d.input_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        got.sort_unstable();
        let mut want = required.clone();
        want.sort_unstable();
        assert_eq!(got, want, "{name} required fields");
    }
    let grep = tools[5].definition();
    let modes = &grep.input_schema["properties"]["output_mode"];
    let text = modes.to_string();
    for mode in ["content", "files_with_matches", "count"] {
        assert!(text.contains(mode), "{text}");
    }
}
