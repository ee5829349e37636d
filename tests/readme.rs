//! The READMEs cannot drift from the code: README.md's "The library"
//! example is the facade's compiled documentation example (src/lib.rs), line
//! for line, the install snippet is the one tests-consumer/ builds;
//! agent-testing/README.md's replay test is the compiled one and
//! agent-evals/README.md's eval dataset loads; agent-config/README.md's configuration example parses
//! without an error or a warning into what its prose says, and its agent file
//! and skill load (loopwright-mcp checks its own README).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The front page: what it is, install, the library, the crates.
const README: &str = include_str!("../README.md");
/// loopwright-testing's README: record and replay.
const TESTING_README: &str = include_str!("../agent-testing/README.md");
/// loopwright-evals' README: datasets and the eval command.
const EVALS_README: &str = include_str!("../agent-evals/README.md");
/// loopwright-config's README: the configuration file, agent files, skills.
const CONFIG_README: &str = include_str!("../agent-config/README.md");

/// The lines of the first fenced block after `heading` in README.md.
fn readme_block(heading: &str) -> Vec<String> {
    block(README, heading)
}

/// The lines of the first fenced block after `heading` in `readme`.
fn block(readme: &str, heading: &str) -> Vec<String> {
    let after = &readme[readme.find(heading).expect("heading")..];
    let body = after.split("```").nth(1).expect("a fenced block");
    body.lines().skip(1).map(str::to_owned).collect()
}

/// The visible lines of the first `no_run` example in src/lib.rs.
fn lib_example() -> Vec<String> {
    doc_example(include_str!("../src/lib.rs"), "//!")
}

/// The visible lines of the first `no_run` example in `source`'s doc
/// comments starting with `marker` (`//!`, `///`).
fn doc_example(source: &str, marker: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(marker))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .skip_while(|l| !l.starts_with("```no_run"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .filter(|l| !l.starts_with("# ") && *l != "#")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_library_example_is_the_compiled_one() {
    let readme = readme_block("## The library");
    let lib = lib_example();
    assert!(lib.len() >= 10, "{lib:?}");
    assert_eq!(readme, lib);
}

#[test]
fn the_readme_guardrails_are_the_compiled_ones_and_the_configuration_parses() {
    let readme = readme_block("### Guardrails");
    let doc = doc_example(include_str!("../agent-core/src/guardrail/mod.rs"), "//!");
    assert!(doc.len() >= 10, "{doc:?}");
    assert_eq!(readme, doc);
    let text = block(README, "The same from a configuration file").join("\n");
    let config = loopwright::config::AgentConfig::parse(&text, "README.md", &|_| None)
        .expect("README.md's guardrails");
    let rails = config.defaults.guardrails.expect("guardrails");
    assert_eq!(rails.guards.len(), 3);
    assert_eq!(
        rails.checkpoint,
        Some(loopwright::guardrail::Checkpoint::Sentence)
    );
}

#[test]
fn the_readme_replay_test_is_the_compiled_one() {
    let readme = block(TESTING_README, "The same test from Rust:");
    let compiled = doc_example(include_str!("../src/lib.rs"), "///");
    assert!(compiled.len() >= 10, "{compiled:?}");
    assert_eq!(readme, compiled);
}

#[cfg(feature = "eval")]
#[test]
fn the_readme_eval_dataset_loads() {
    let text = block(TESTING_README, "## Record and replay");
    let yaml = block(EVALS_README, "Evals score an agent").join("\n");
    assert!(!text.is_empty());
    let dataset = loopwright::eval::Dataset::parse(&yaml, "agent-evals/README.md".as_ref())
        .expect("agent-evals/README.md's dataset");
    assert_eq!(dataset.judge.as_deref(), Some("anthropic/claude-haiku-4-5"));
    let kinds: usize = dataset.cases.iter().map(|c| c.expectations.len()).sum();
    assert_eq!(kinds, 7);
    assert_eq!(
        dataset.cases[0].messages()[0].text(),
        "What time is it in Lisbon?"
    );
}

#[test]
fn the_readme_configuration_parses_without_warnings() {
    let text = block(CONFIG_README, "The configuration file").join("\n");
    let config = loopwright::config::AgentConfig::parse(&text, "agent-config/README.md", &|name| {
        Some(format!("value-of-{name}"))
    })
    .expect("agent-config/README.md's configuration");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(config.mcp_failures.is_empty(), "{:?}", config.mcp_failures);
    assert_eq!(config.providers.providers.len(), 3);
    let names: Vec<_> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let github = config.mcp_servers.iter().find(|s| s.name == "github").unwrap();
    assert!(
        github.resources,
        "agent-config/README.md's github server offers its resources"
    );
    let d = &config.defaults;
    assert_eq!(d.model, ["anthropic/claude-sonnet-4-5", "work/gpt-4.1"]);
    assert_eq!(d.tool_timeout, Some(std::time::Duration::from_secs(30)));
    assert_eq!(d.context_window_buffer_tokens, Some(4096));
    assert_eq!(d.reasoning, Some(loopwright::ReasoningEffort::Medium.into()));
    let work = &config.providers.providers["work"];
    assert_eq!(work.options, Some(serde_json::json!({"service_tier": "flex"})));
    assert!(config.accounting_file.is_some());
    assert_eq!(config.skills.map(|dirs| dirs.len()), Some(2));
    assert_eq!(d.compaction.compaction().unwrap().keep_turns, 3);
    assert_eq!(
        d.tool_search.tool_search().unwrap().always_on,
        ["github__search_*"]
    );
    assert!(!config.tool_overrides.is_empty());
    let fs = config.mcp_servers.iter().find(|s| s.name == "fs").unwrap();
    let read =
        loopwright::ToolDefinition::new("read_file", "Read a file.", serde_json::json!({"type": "object"}));
    let shown = fs.tool_overrides.apply(read);
    assert_eq!(
        (shown.name.as_str(), shown.description.as_str()),
        ("fs_read", "[Filesystem] Read a file.")
    );
    assert_eq!(shown.provider_options["openai"]["strict"], true);
}

#[test]
fn the_readme_install_snippet_is_the_one_the_consumer_crate_builds() {
    // tests-consumer/ depends on this crate as an application does; .ci/run
    // builds and runs it against the newest rmcp 3.x and reqwest 0.13.
    let after = &README[README.find("## Install").expect("heading")..];
    let body = after
        .split("```rust,ignore\n")
        .nth(1)
        .expect("the install snippet");
    let readme: Vec<String> = body
        .split("```")
        .next()
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let consumer: Vec<String> = include_str!("../tests-consumer/src/readme.rs")
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(readme.len() >= 5, "{readme:?}");
    assert_eq!(readme, consumer);
}

#[cfg(feature = "files")]
#[test]
fn the_readme_agent_file_parses_into_what_its_prose_says() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["researcher.md", "coder.md"] {
        std::fs::write(dir.path().join(sub), "---\ndescription: x\n---\nHelp.").unwrap();
    }
    let text = block(CONFIG_README, "## Agents as files, agents as tools").join("\n");
    let path = dir.path().join("lead.md");
    std::fs::write(&path, text).unwrap();
    let file = loopwright::files::AgentFile::load(&path).expect("agent-config/README.md's agent file");
    assert_eq!(file.name, "lead");
    assert_eq!(file.model.len(), 2);
    assert_eq!(file.agents.len(), 2);
    assert_eq!(
        (file.mcp.as_slice(), file.max_steps),
        (&["github".to_owned()][..], Some(12))
    );
    let (prompt, warnings) =
        file.system_prompt(&loopwright::files::PromptVars::new().var("REPO", "loopwright"));
    assert!(prompt.contains("the repository is loopwright."), "{prompt}");
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[cfg(feature = "skills")]
#[test]
fn the_readme_skill_is_a_valid_skill() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("release-notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        block(CONFIG_README, "## Skills").join("\n"),
    )
    .unwrap();
    let skills = loopwright::skills::Skills::discover([dir.path()]);
    assert!(skills.warnings().is_empty(), "{:?}", skills.warnings());
    let skill = skills
        .get("release-notes")
        .expect("agent-config/README.md's skill");
    assert!(skill.description.starts_with("Writes release notes"));
    assert!(skill.body.contains("references/template.md"), "{}", skill.body);
}
