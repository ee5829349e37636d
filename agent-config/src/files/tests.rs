#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn parse(text: &str) -> Result<AgentFile, AgentFileError> {
    AgentFile::parse(text, Path::new("agents/lead.md"))
}

/// The error's message for a frontmatter holding `yaml`.
fn error(yaml: &str) -> String {
    parse(&format!("---\n{yaml}---\nBody\n"))
        .expect_err(yaml)
        .to_string()
}

#[test]
fn every_key_is_read_and_relative_paths_resolved() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("helper.md"), "Help.").unwrap();
    std::fs::write(dir.path().join("verdict.json"), r#"{"type": "object"}"#).unwrap();
    let text = "---
name: lead-agent
description: Leads.
model: [openai/gpt-4.1, anthropic/claude-sonnet-4-5]
reasoning: {effort: high, budgetTokens: 4000}
temperature: 0.2
topP: 0.9
maxOutputTokens: 2048
maxSteps: 7
toolTimeout: 30s
mcp: [fs, github]
tools: [\"fs__*\", Read]
codingTools: true
agents: [helper.md]
input:
  type: object
  properties: {file: {type: string}}
output: verdict.json
---
Lead on ${OS}.
";
    let path = dir.path().join("lead.md");
    std::fs::write(&path, text).unwrap();
    let file = AgentFile::load(&path).unwrap();
    assert_eq!(file.name, "lead-agent");
    assert_eq!(file.description.as_deref(), Some("Leads."));
    assert_eq!(file.model, ["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"]);
    assert_eq!(file.reasoning.unwrap().budget(), Some(4000));
    assert_eq!((file.temperature, file.top_p), (Some(0.2), Some(0.9)));
    assert_eq!((file.max_output_tokens, file.max_steps), (Some(2048), Some(7)));
    assert_eq!(file.tool_timeout, Some(Duration::from_secs(30)));
    assert_eq!(file.mcp, ["fs", "github"]);
    assert_eq!(file.tools, Some(vec!["fs__*".to_owned(), "Read".to_owned()]));
    assert_eq!(file.coding_tools, Some(true));
    assert_eq!(file.agents, [dir.path().join("helper.md")]);
    assert_eq!(file.input.unwrap()["properties"]["file"]["type"], "string");
    assert_eq!(file.output, Some(serde_json::json!({"type": "object"})));
    assert_eq!(file.body, "Lead on ${OS}.\n");
}

#[test]
fn defaults_the_name_from_the_stem_and_a_file_without_frontmatter_is_a_body() {
    let file = parse("Just a prompt.\n---\nnot frontmatter").unwrap();
    assert_eq!(file.name, "lead");
    assert_eq!(file.body, "Just a prompt.\n---\nnot frontmatter");
    assert_eq!((file.description, file.model.len()), (None, 0));
    let file = parse("---\nmodel: a/b, c/d\n---\n").unwrap();
    assert_eq!(file.model, ["a/b", "c/d"]);
    assert_eq!(file.body, "");
    let empty = parse("---\n---\nHi").unwrap();
    assert_eq!(empty.body, "Hi");
}

#[test]
fn unknown_keys_name_the_file_the_key_path_and_the_line() {
    let e = error("description: x\ncolour: blue\n");
    assert!(
        e.starts_with("agents/lead.md:3: unknown key `colour` (known: name, description,"),
        "{e}"
    );
    let e = error("reasoning:\n  effrot: high\n");
    assert_eq!(
        e,
        "agents/lead.md:3: unknown key `reasoning.effrot` (known: effort, budgetTokens)"
    );
}

#[test]
fn wrong_types_name_the_file_the_key_path_and_the_line() {
    let cases = [
        (
            "description: x\nmaxSteps: ten\n",
            "agents/lead.md:3: maxSteps: expected an unsigned integer, got \"ten\"",
        ),
        (
            "model: 3\n",
            "agents/lead.md:2: model: expected a provider/model string or a list of them, got a number",
        ),
        (
            "tools: Read\n",
            "agents/lead.md:2: tools: expected a list of strings, got a string",
        ),
        (
            "mcp:\n  - fs\n  - 4\n",
            "agents/lead.md:4: mcp[1]: expected a string, got a number",
        ),
        (
            "codingTools: \"yes\"\n",
            "agents/lead.md:2: codingTools: expected true or false, got \"yes\"",
        ),
        (
            "temperature: hot\n",
            "agents/lead.md:2: temperature: expected a number, got \"hot\"",
        ),
        ("toolTimeout: soon\n", "agents/lead.md:2: toolTimeout:"),
        ("reasoning: {effort: lots}\n", "agents/lead.md:2: reasoning:"),
        (
            "input: [a]\n",
            "agents/lead.md:2: input: expected a JSON Schema mapping, got an array",
        ),
        (
            "output: 5\n",
            "agents/lead.md:2: output: expected a JSON Schema mapping or a file path, got a number",
        ),
        (
            "description: [a]\n",
            "agents/lead.md:2: description: expected a string, got an array",
        ),
        (
            "name: two words\n",
            "agents/lead.md:2: name: `two words` must be letters, digits",
        ),
        (
            "- a\n- b\n",
            "agents/lead.md:2: (frontmatter): expected a mapping of keys, got an array",
        ),
    ];
    for (yaml, expected) in cases {
        let e = error(yaml);
        assert!(
            e.starts_with(expected),
            "{yaml:?}:\n  got      {e}\n  expected {expected}"
        );
    }
}

#[test]
fn missing_and_unreadable_files_name_the_key_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.md"), "Here.").unwrap();
    std::fs::write(dir.path().join("bad.json"), "{not json").unwrap();
    let path = dir.path().join("lead.md");
    let check = |yaml: &str, expected: &str| {
        std::fs::write(&path, format!("---\n{yaml}---\nBody")).unwrap();
        let e = AgentFile::load(&path).unwrap_err().to_string();
        let expected = format!("{}:{expected}", path.display());
        assert!(e.starts_with(&expected), "got {e}\nexpected {expected}");
    };
    check(
        "agents:\n  - here.md\n  - gone.md\n",
        &format!(
            "4: agents[1]: {}: no such agent file",
            dir.path().join("gone.md").display()
        ),
    );
    check(
        "description: x\noutput: nowhere.json\n",
        &format!("3: output: {}:", dir.path().join("nowhere.json").display()),
    );
    check(
        "output: bad.json\n",
        &format!("2: output: {}: not JSON", dir.path().join("bad.json").display()),
    );
    let e = AgentFile::load(&dir.path().join("absent.md")).unwrap_err();
    assert!(matches!(e, AgentFileError::Read { .. }), "{e}");
}

#[test]
fn yaml_errors_and_an_open_frontmatter_are_reported() {
    let e = error("description: x\nmodel: [a, b\nmaxSteps: 3\n");
    assert!(
        e.starts_with("agents/lead.md:") && e.contains("invalid YAML"),
        "{e}"
    );
    let line: usize = e.split(':').nth(1).unwrap().parse().unwrap();
    assert!((3..=5).contains(&line), "{e}");
    let e = parse("---\ndescription: x\nBody without a fence")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "agents/lead.md: the frontmatter opened on line 1 is never closed with a `---` line"
    );
    let e = error("description: x\ndescription: y\n");
    assert!(
        e.starts_with("agents/lead.md:") && e.contains("invalid YAML"),
        "duplicate keys: {e}"
    );
}

#[test]
fn the_system_prompt_replaces_variables_and_warns_about_unknown_ones() {
    let file = parse("---\nmaxSteps: 4\n---\n${TEAM} on ${OS}: ${MAX_STEPS} steps. ${WHO}?").unwrap();
    let (text, warnings) = file.system_prompt(&PromptVars::new().max_steps(4).var("TEAM", "search"));
    assert_eq!(
        text,
        format!("search on {}: 4 steps. ${{WHO}}?", std::env::consts::OS)
    );
    assert_eq!(
        warnings,
        ["agents/lead.md: unknown prompt variable ${WHO} left as is"]
    );
}
