//! Skills in the agent loop: the model sees the catalog in its system
//! prompt, loads a skill and reads one of its reference files, and the
//! results it gets back are what the files hold.
#![cfg(feature = "skills")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use loopwright_config::skills::{Skills, SkillsSource};
use loopwright_core::{Agent, ContentPart, ToolSet};
use loopwright_testing::{ScriptedModel, ScriptedStep};

const SKILL: &str = "---
name: release-notes
description: Writes release notes from a changelog. Use it for release notes.
---
Group the changes by kind. Follow the template in references/template.md.
";

const TEMPLATE: &str = "## Added\n## Fixed\n";

#[tokio::test]
async fn the_model_loads_a_skill_and_reads_its_reference_file() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("release-notes");
    std::fs::create_dir_all(folder.join("references")).unwrap();
    std::fs::write(folder.join("SKILL.md"), SKILL).unwrap();
    std::fs::write(folder.join("references/template.md"), TEMPLATE).unwrap();
    let skills = Skills::discover([dir.path()]);
    let catalog = skills.catalog().unwrap();

    let model = ScriptedModel::new(vec![
        ScriptedStep::tool_calls(&[("c1", "load_skill", r#"{"name": "release-notes"}"#)]),
        ScriptedStep::tool_calls(&[(
            "c2",
            "read_skill_file",
            r#"{"name": "release-notes", "path": "references/template.md"}"#,
        )]),
        ScriptedStep::text("Notes written."),
    ]);
    let tools = ToolSet::builder().source(SkillsSource::new(skills)).build();
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools(tools)
        .system("You write documentation.")
        .build();
    let result = agent.run("Write the release notes for 1.2.").await.unwrap();
    assert_eq!(result.text, "Notes written.");

    let requests = model.requests();
    let system = requests[0].system.clone().unwrap();
    assert!(system.starts_with("You write documentation.\n\n"), "{system}");
    assert!(
        system.ends_with(&format!("## TOOL skills INSTRUCTIONS\n\n{catalog}")),
        "{system}"
    );
    assert!(
        !system.contains("Group the changes"),
        "the body is not in the catalog: {system}"
    );
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["load_skill", "read_skill_file"]);

    let results: Vec<(bool, String)> = result
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some((r.is_error, r.text())),
            _ => None,
        })
        .collect();
    let canonical = folder.canonicalize().unwrap();
    assert_eq!(
        results,
        [
            (
                false,
                format!(
                    "Group the changes by kind. Follow the template in references/template.md.\n\n---\n\
                     Skill folder: {}\nFiles of the skill (read one with read_skill_file, its path as listed):\n\
                     - references/template.md",
                    canonical.display()
                )
            ),
            (false, TEMPLATE.to_owned()),
        ]
    );
}
