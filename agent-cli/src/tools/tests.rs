//! The tools a command line gives a run: the MCP servers `--mcp` and
//! `--no-mcp` select, the coding tools kept in `--workspace`, and the
//! skills of `--skills`, the configuration's `skills` and `--no-skills`.
//! No process: the configured servers' commands do not exist, so a server
//! the flags select shows as one that failed to start, and the coding
//! tools are called directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::Path;

use loopwright::ToolContext;
use serde_json::json;

use super::*;
use crate::args::Args;
use crate::args::tests::parse;
use crate::settings::load_config;
use crate::settings::tests::{local, write_config};

/// The servers the tools of `args` tried to start, connected or not.
async fn servers_tried(args: &Args) -> BTreeSet<String> {
    let config = load_config(args).unwrap();
    let tools = build_with(args, &config, Arc::default(), None).await.unwrap();
    let report = tools.set.connection_report().cloned().unwrap_or_default();
    let failed = report.failed.into_iter().map(|f| f.server);
    report.servers.into_iter().chain(failed).collect()
}

#[tokio::test]
async fn mcp_picks_servers_by_name_and_no_mcp_drops_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-server");
    let config = write_config(
        dir.path(),
        json!({"mcpServers": {"a": {"command": missing}, "b": {"command": missing}}}),
    );
    let tried = |extra: &'static [&'static str]| {
        let mut line = vec!["--config", config.to_str().unwrap(), "--list-tools"];
        line.extend(extra);
        let args = parse(&line);
        async move { servers_tried(&args).await }
    };
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(tried(&[]).await, names(&["a", "b"]));
    assert_eq!(tried(&["--mcp", "b"]).await, names(&["b"]));
    assert!(tried(&["--no-mcp"]).await.is_empty());
}

#[tokio::test]
async fn coding_tools_work_inside_the_workspace_and_not_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "inside the workspace").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "outside-secret-5521").unwrap();
    let config = write_config(dir.path(), json!({}));
    let line = [
        "--coding-tools",
        "--workspace",
        workspace.to_str().unwrap(),
        "--events",
        "read",
    ];
    let args = local(&config, &line);
    let loaded = load_config(&args).unwrap();
    let tools = build_with(&args, &loaded, Arc::default(), None).await.unwrap();
    let catalog = tools.set.catalog().await;
    let read = &catalog.get("Read").expect("the coding tools' Read").tool;
    let inside = read
        .call(json!({"file_path": "notes.txt"}), ToolContext::new("c1"))
        .await
        .unwrap();
    assert!(!inside.is_error, "{}", inside.as_text());
    assert!(
        inside.as_text().contains("inside the workspace"),
        "{}",
        inside.as_text()
    );
    let outside = read
        .call(json!({"file_path": "../secret.txt"}), ToolContext::new("c2"))
        .await
        .unwrap();
    assert!(outside.is_error, "{}", outside.as_text());
    assert!(
        !outside.as_text().contains("outside-secret"),
        "{}",
        outside.as_text()
    );
}

/// Write `dir/name/SKILL.md` describing it as `description`.
fn write_skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    let text = format!("---\nname: {name}\ndescription: {description}\n---\nThe steps of {name}.\n");
    std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
}

/// The skills a run of `args` offers.
fn skills_of(args: &Args) -> Arc<Skills> {
    skills(args, &load_config(args).unwrap())
}

fn names(skills: &Skills) -> Vec<&str> {
    skills.all().iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn skills_come_from_the_flags_then_the_config_and_no_skills_offers_none() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(&dir.path().join("first"), "shared", "First shared.");
    write_skill(&dir.path().join("team"), "shared", "Team shared.");
    write_skill(&dir.path().join("team"), "team-only", "From the team.");
    // `team` is relative to the configuration file's directory.
    let teamed = write_config(dir.path(), json!({"skills": ["team"]}));
    // The configuration's directories replace the defaults.
    let from_config = skills_of(&local(&teamed, &["--no-mcp", "Go"]));
    assert_eq!(names(&from_config), ["shared", "team-only"]);
    // A --skills directory comes first: its `shared` wins, the other is said.
    let first = dir.path().join("first");
    let line = ["--no-mcp", "--skills", first.to_str().unwrap(), "Go"];
    let flagged = skills_of(&local(&teamed, &line));
    assert_eq!(names(&flagged), ["shared", "team-only"]);
    assert_eq!(flagged.get("shared").unwrap().description, "First shared.");
    let clash = format!(
        "skill shared of {} is left out: {} has the same name (the earlier directory wins)",
        dir.path().join("team/shared/SKILL.md").display(),
        first.join("shared/SKILL.md").display()
    );
    let warnings: Vec<String> = flagged.warnings().iter().map(|w| w.to_string()).collect();
    assert!(warnings.contains(&clash), "{warnings:?}");
    // --no-skills: no catalog and no skill tools.
    let args = local(&teamed, &["--no-mcp", "--no-skills", "Go"]);
    let loaded = load_config(&args).unwrap();
    let none = skills(&args, &loaded);
    assert!(none.is_empty() && none.warnings().is_empty());
    let catalog = build_with(&args, &loaded, none, None)
        .await
        .unwrap()
        .set
        .catalog()
        .await;
    assert!(catalog.tools().is_empty(), "{:?}", catalog.names());
    assert!(
        catalog
            .instructions()
            .is_none_or(|i| !i.contains("available_skills")),
        "{:?}",
        catalog.instructions()
    );
}
