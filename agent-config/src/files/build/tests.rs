//! Building trees of agent files: each file once, cycles joined, models
//! inherited from the root.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use super::*;

/// Write `files` (name, text) under `dir`.
fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// A configuration with the provider `local` (never called: nothing runs).
fn config() -> AgentConfig {
    let text =
        r#"{"providers": {"local": {"type": "openai-compatible", "baseUrl": "http://127.0.0.1:9/v1"}}}"#;
    AgentConfig::parse(text, "a.json", &|_| None).unwrap()
}

async fn build(dir: &Path, root: &str, options: BuildOptions) -> BuiltAgent {
    AgentFile::load(&dir.join(root))
        .unwrap()
        .build_with(&config(), options)
        .await
        .unwrap()
}

fn names(built: &BuiltAgent) -> Vec<&str> {
    built.agents.iter().map(|(name, _)| name.as_str()).collect()
}

async fn tool_names(agent: &Agent) -> Vec<String> {
    let catalog = agent.tools().catalog().await;
    catalog.names().into_iter().map(str::to_owned).collect()
}

#[tokio::test]
async fn a_file_listed_by_two_agents_is_built_once() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("lead.md", "---\nmodel: local/m\nagents: [a.md, b.md]\n---\nLead."),
            ("a.md", "---\ndescription: A.\nagents: [shared.md]\n---\nA."),
            // Reached by another path too: still one file.
            ("b.md", "---\ndescription: B.\nagents: [./shared.md]\n---\nB."),
            // Each build of its body warns once about the unknown variable.
            (
                "shared.md",
                "---\ndescription: Shared.\n---\nShared ${NOT_A_VARIABLE}.",
            ),
        ],
    );
    let built = build(dir.path(), "lead.md", BuildOptions::default()).await;
    assert_eq!(names(&built), ["lead", "a", "b", "shared"]);
    let unknown: Vec<&String> = built
        .warnings
        .iter()
        .filter(|w| w.contains("NOT_A_VARIABLE"))
        .collect();
    assert_eq!(unknown.len(), 1, "{:?}", built.warnings);
    for (name, agent) in &built.agents[1..3] {
        assert_eq!(tool_names(agent).await, ["agent__shared"], "{name}");
    }
}

#[tokio::test]
async fn files_that_list_each_other_are_joined_through_deferred_tools() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            (
                "a.md",
                "---\ndescription: A.\nmodel: local/m\nagents: [b.md]\n---\nA.",
            ),
            ("b.md", "---\ndescription: B.\nagents: [a.md]\n---\nB."),
        ],
    );
    let built = build(dir.path(), "a.md", BuildOptions::default()).await;
    assert_eq!(names(&built), ["a", "b"]);
    assert_eq!(tool_names(&built.agents[0].1).await, ["agent__b"]);
    assert_eq!(tool_names(&built.agents[1].1).await, ["agent__a"]);

    // A file listing itself is a cycle of one.
    write(
        dir.path(),
        &[(
            "me.md",
            "---\ndescription: Me.\nmodel: local/m\nagents: [me.md]\n---\nMe.",
        )],
    );
    let built = build(dir.path(), "me.md", BuildOptions::default()).await;
    assert_eq!(names(&built), ["me"]);
    assert_eq!(tool_names(&built.agent).await, ["agent__me"]);
}

#[tokio::test]
async fn a_file_without_a_model_uses_the_roots() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            (
                "lead.md",
                "---\nmodel: local/lead-model\nagents: [plain.md, own.md]\n---\nLead.",
            ),
            ("plain.md", "---\ndescription: Names no model.\n---\nPlain."),
            (
                "own.md",
                "---\ndescription: Names its own.\nmodel: local/own-model\n---\nOwn.",
            ),
        ],
    );
    let models = |built: &BuiltAgent| -> Vec<(String, String)> {
        built
            .agents
            .iter()
            .map(|(name, agent)| (name.clone(), agent.model().model_id().to_owned()))
            .collect()
    };
    let built = build(dir.path(), "lead.md", BuildOptions::default()).await;
    assert_eq!(
        models(&built),
        [
            ("lead".to_owned(), "lead-model".to_owned()),
            ("plain".to_owned(), "lead-model".to_owned()),
            ("own".to_owned(), "own-model".to_owned()),
        ]
    );
    // The root's model is the application's when it gives one: inherited too.
    let built = build(
        dir.path(),
        "lead.md",
        BuildOptions::default().model(["local/flag-model"]),
    )
    .await;
    assert_eq!(
        models(&built)[..2],
        [
            ("lead".to_owned(), "flag-model".to_owned()),
            ("plain".to_owned(), "flag-model".to_owned()),
        ]
    );
}
