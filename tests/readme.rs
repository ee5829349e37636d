//! The READMEs cannot drift from the code: README.md's "The library"
//! example is the facade's compiled documentation example (src/lib.rs), line
//! for line, and the configuration examples (README.md's and agent-mcp's)
//! parse without an error or a warning into what their prose says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The lines of the first fenced block after `heading` in README.md.
fn readme_block(heading: &str) -> Vec<String> {
    block(include_str!("../README.md"), heading)
}

/// The lines of the first fenced block after `heading` in `readme`.
fn block(readme: &str, heading: &str) -> Vec<String> {
    let after = &readme[readme.find(heading).expect("heading")..];
    let body = after.split("```").nth(1).expect("a fenced block");
    body.lines().skip(1).map(str::to_owned).collect()
}

/// The visible lines of the first `no_run` example in src/lib.rs.
fn lib_example() -> Vec<String> {
    include_str!("../src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
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
fn the_readme_configuration_parses_without_warnings() {
    let text = readme_block("The configuration file").join("\n");
    let config =
        agent_sdk::config::AgentConfig::parse(&text, "README.md", &|name| Some(format!("value-of-{name}")))
            .expect("README.md's configuration");
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    assert!(config.mcp_failures.is_empty(), "{:?}", config.mcp_failures);
    assert_eq!(config.providers.providers.len(), 3);
    let names: Vec<_> = config.mcp_servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let github = config.mcp_servers.iter().find(|s| s.name == "github").unwrap();
    assert!(github.resources, "README.md's github server offers its resources");
    let d = &config.defaults;
    assert_eq!(d.model, ["anthropic/claude-sonnet-4-5", "work/gpt-4.1"]);
    assert_eq!(d.tool_timeout, Some(std::time::Duration::from_secs(30)));
    assert_eq!(d.context_window_buffer_tokens, Some(4096));
    assert_eq!(d.reasoning, Some(agent_sdk::ReasoningEffort::Medium.into()));
    let work = &config.providers.providers["work"];
    assert_eq!(work.options, Some(serde_json::json!({"service_tier": "flex"})));
    assert!(config.accounting_file.is_some());
    assert_eq!(config.skills.map(|dirs| dirs.len()), Some(2));
}

#[test]
fn the_mcp_readme_configuration_means_what_its_prose_says() {
    let text = block(include_str!("../agent-mcp/README.md"), "## Config formats").join("\n");
    let value: serde_json::Value = serde_json::from_str(&text).expect("agent-mcp README's JSON");
    let servers = agent_sdk::mcp::parse_mcp_servers(&value).expect("agent-mcp README's servers");
    let kind = |name: &str| {
        let server = servers.iter().find(|s| s.name == name).expect(name);
        (server.transport.kind(), server.enabled)
    };
    assert_eq!(kind("fs"), ("stdio", true));
    assert_eq!(kind("github"), ("stdio", true));
    assert_eq!(kind("api"), ("http", true));
    assert_eq!(kind("old"), ("sse", true));
    assert_eq!(kind("time"), ("stdio", false));
    assert_eq!(kind("remote"), ("http", true));
    let with_resources: Vec<_> = servers
        .iter()
        .filter(|s| s.resources)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(with_resources, ["api"]);
    assert_eq!(servers.len(), 6);
}

#[cfg(feature = "files")]
#[test]
fn the_readme_agent_file_parses_into_what_its_prose_says() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["researcher.md", "coder.md"] {
        std::fs::write(dir.path().join(sub), "---\ndescription: x\n---\nHelp.").unwrap();
    }
    let text = readme_block("## Agents as files, agents as tools").join("\n");
    let path = dir.path().join("lead.md");
    std::fs::write(&path, text).unwrap();
    let file = agent_sdk::files::AgentFile::load(&path).expect("README.md's agent file");
    assert_eq!(file.name, "lead");
    assert_eq!(file.model.len(), 2);
    assert_eq!(file.agents.len(), 2);
    assert_eq!(
        (file.mcp.as_slice(), file.max_steps),
        (&["github".to_owned()][..], Some(12))
    );
    let (prompt, warnings) =
        file.system_prompt(&agent_sdk::files::PromptVars::new().var("REPO", "agent-sdk"));
    assert!(prompt.contains("the repository is agent-sdk."), "{prompt}");
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[cfg(feature = "skills")]
#[test]
fn the_readme_skill_is_a_valid_skill() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("release-notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("SKILL.md"), readme_block("## Skills").join("\n")).unwrap();
    let skills = agent_sdk::skills::Skills::discover([dir.path()]);
    assert!(skills.warnings().is_empty(), "{:?}", skills.warnings());
    let skill = skills.get("release-notes").expect("README.md's skill");
    assert!(skill.description.starts_with("Writes release notes"));
    assert!(skill.body.contains("references/template.md"), "{}", skill.body);
}
