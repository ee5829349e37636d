//! `loopwright --agent FILE`: a coordinator file with two sub-agent files using
//! different models (Chat Completions and Anthropic Messages, served by a
//! local model server) and an MCP server from the config file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

const COORDINATOR: &str = "---
description: Splits a task between a researcher and a coder.
model: local/coord-model
agents: [researcher.md, coder.md]
maxSteps: 4
---
You coordinate on ${OS}. Team: ${TEAM}. ${UNKNOWN_THING}
";

const RESEARCHER: &str = "---
description: Looks things up with the test server's tools.
model: claude/claude-test
mcp: [test]
tools: [\"test__echo\"]
---
You research.
";

const CODER: &str = "---
name: coder
description: Writes patches.
model: local/coder-model
---
You write code.
";

fn write_files(dir: &Path, server: &ModelServer) -> std::path::PathBuf {
    let config = json!({
        "providers": {
            "local": {"type": "openai-compatible", "baseUrl": server.base_url()},
            "claude": {"type": "anthropic", "apiKey": "test-key", "baseUrl": server.base_url()}
        },
        "mcpServers": {"test": {"command": mcp_test_server()}, "unused": {"command": "/no/such/server"}}
    });
    let path = dir.join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    std::fs::write(dir.join("coordinator.md"), COORDINATOR).unwrap();
    std::fs::write(dir.join("researcher.md"), RESEARCHER).unwrap();
    std::fs::write(dir.join("coder.md"), CODER).unwrap();
    path
}

async fn server() -> ModelServer {
    routed(vec![
        (
            "coord-model",
            vec![
                sse::chat_calls(&[
                    ("call_r", "agent__researcher", json!({"prompt": "find the echo"})),
                    ("call_c", "agent__coder", json!({"prompt": "write the patch"})),
                ]),
                sse::answer("Both done."),
            ],
        ),
        (
            "claude-test",
            vec![
                sse::anthropic_call("toolu_1", "test__echo", json!({"text": "ping"})),
                sse::anthropic_answer("The echo said ping."),
            ],
        ),
        ("coder-model", vec![sse::answer("Patched.")]),
    ])
    .await
}

#[tokio::test]
async fn a_coordinator_file_runs_two_sub_agents_with_their_own_models_and_mcp_tools() {
    let dir = tempfile::tempdir().unwrap();
    let server = server().await;
    let config = write_files(dir.path(), &server);
    let ledger = dir.path().join("ledger.jsonl");
    let out = run_agent(
        &[
            "--config",
            config.to_str().unwrap(),
            "--agent",
            dir.path().join("coordinator.md").to_str().unwrap(),
            "--var",
            "TEAM=search",
            "--events",
            "--accounting",
            ledger.to_str().unwrap(),
            "Fix the echo",
        ],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("UNKNOWN_THING"),
        "an unknown variable is a warning: {stderr}"
    );
    let events = json_lines(&stdout);

    // The coordinator's model saw both sub-agents as tools, its body as the system prompt.
    let coord = server.bodies_for("coord-model");
    assert_eq!(coord.len(), 2);
    let tools: Vec<&str> = coord[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["agent__coder", "agent__researcher"]);
    let system = coord[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Team: search.") && system.contains(std::env::consts::OS),
        "{system}"
    );
    assert!(system.contains("${UNKNOWN_THING}"), "left as is: {system}");

    // The researcher spoke Anthropic's format, saw only test__echo, and got the MCP result.
    let research = server.bodies_for("claude-test");
    assert_eq!(research.len(), 2);
    let research_tools: Vec<&str> = research[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(research_tools, ["test__echo"]);
    assert_eq!(research[0]["messages"][0]["content"][0]["text"], "find the echo");
    assert!(research[1].to_string().contains("ping"));

    // The coordinator's second request carries both sub-agents' answers.
    let second = coord[1].to_string();
    assert!(
        second.contains("The echo said ping.") && second.contains("Patched."),
        "{second}"
    );

    // Nested events, with their paths.
    let nested: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "sub_agent")
        .map(|e| (e["path"].as_str().unwrap(), e["event"]["type"].as_str().unwrap()))
        .collect();
    for path in ["coordinator/researcher", "coordinator/coder"] {
        assert!(nested.contains(&(path, "run_started")), "{nested:?}");
        assert!(nested.contains(&(path, "finished")), "{nested:?}");
    }
    assert!(nested.contains(&("coordinator/researcher", "tool_result")));
    let last = events.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["exit"].as_str()),
        (Some("finished"), Some("completed"))
    );
    // `finished` carries the tree's total: the coordinator's own usage plus
    // each sub-agent's (theirs are in their own `finished` events).
    let input = |e: &Value, field: &str| e[field]["input_tokens"].as_u64().unwrap();
    let children: u64 = events
        .iter()
        .filter(|e| e["type"] == "sub_agent" && e["event"]["type"] == "finished")
        .map(|e| input(&e["event"], "tree_usage"))
        .sum();
    assert!(children > 0 && input(last, "usage") > 0, "{last}");
    assert_eq!(
        input(last, "tree_usage"),
        input(last, "usage") + children,
        "{last}"
    );

    // Accounting: every entry with its agent's path; the MCP call is the researcher's.
    let ledger = std::fs::read_to_string(&ledger).unwrap();
    let entries: Vec<Value> = json_lines(&ledger);
    let mut paths: Vec<&str> = entries
        .iter()
        .map(|e| e["agent_path"].as_str().unwrap())
        .collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(
        paths,
        ["coordinator", "coordinator/coder", "coordinator/researcher"]
    );
    let echo = entries
        .iter()
        .find(|e| e["type"] == "tool" && e["tool"] == "test__echo")
        .expect("the echo call is accounted");
    assert_eq!(echo["agent_path"], "coordinator/researcher");
    let models: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e["type"] == "llm")
        .map(|e| (e["agent_path"].as_str().unwrap(), e["model"].as_str().unwrap()))
        .collect();
    assert!(
        models.contains(&("coordinator/researcher", "claude-test")),
        "{models:?}"
    );
    assert!(
        models.contains(&("coordinator/coder", "coder-model")),
        "{models:?}"
    );
}

#[tokio::test]
async fn list_tools_with_an_agent_file_shows_what_that_agent_sees() {
    let dir = tempfile::tempdir().unwrap();
    let server = server().await;
    let config = write_files(dir.path(), &server);
    for (file, expected) in [
        ("coordinator.md", vec!["agent__coder", "agent__researcher"]),
        ("researcher.md", vec!["test__echo"]),
    ] {
        let out = run_agent(
            &[
                "--config",
                config.to_str().unwrap(),
                "--agent",
                dir.path().join(file).to_str().unwrap(),
                "--list-tools",
            ],
            &[],
            dir.path(),
        )
        .await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let names: Vec<String> = json_lines(&stdout)
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, expected, "{file}");
    }
    // Nothing was asked of a model.
    assert!(server.bodies_for("coord-model").is_empty());
}

#[tokio::test]
async fn agent_file_errors_name_the_file_key_and_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let server = server().await;
    let config = write_files(dir.path(), &server);
    let cases = [
        (
            "bad-key.md",
            "---\ndescription: x\nmaxStep: 3\n---\nBody",
            "bad-key.md:3: unknown key `maxStep`",
        ),
        (
            "missing.md",
            "---\nagents:\n  - nowhere.md\n---\nBody",
            "missing.md:3: agents[0]",
        ),
        (
            "no-server.md",
            "---\nmodel: local/coord-model\nmcp: [ghost]\n---\nBody",
            "no-server.md: mcp: no MCP server named ghost",
        ),
    ];
    for (file, text, needle) in cases {
        std::fs::write(dir.path().join(file), text).unwrap();
        let out = run_agent(
            &[
                "--config",
                config.to_str().unwrap(),
                "--agent",
                dir.path().join(file).to_str().unwrap(),
                "go",
            ],
            &[],
            dir.path(),
        )
        .await;
        assert_exit(&out, 2, needle);
    }
}

#[tokio::test]
async fn the_command_lines_model_max_steps_and_system_override_the_root_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let server = routed(vec![
        (
            "override-model",
            vec![
                sse::chat_calls(&[("call_c", "agent__coder", json!({"prompt": "write the patch"}))]),
                sse::answer("Concluded."),
            ],
        ),
        ("coord-model", vec![sse::answer("The file's model answered.")]),
        ("coder-model", vec![sse::answer("Patched.")]),
    ])
    .await;
    let config = write_files(dir.path(), &server);
    let out = run_agent(
        &[
            "--config",
            config.to_str().unwrap(),
            "--agent",
            dir.path().join("coordinator.md").to_str().unwrap(),
            "--model",
            "local/override-model",
            "--max-steps",
            "1",
            "--system",
            "Flag system.",
            "--events",
            "Fix the echo",
        ],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    // Exit 5: the step limit (the file's is 4) ended it.
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    let last = json_lines(&stdout).pop().unwrap();
    assert_eq!(
        (last["exit"].as_str(), last["steps"].as_u64()),
        (Some("max_steps"), Some(2)),
        "{last}"
    );
    assert_eq!(last["text"], "Concluded.");

    // The root used the flag's model and system prompt, not its file's.
    assert!(server.bodies_for("coord-model").is_empty());
    let root = server.bodies_for("override-model");
    assert_eq!(root.len(), 2);
    assert_eq!(root[0]["messages"][0]["role"], "system");
    assert_eq!(root[0]["messages"][0]["content"], "Flag system.");
    // The sub-agent kept its own file's model and prompt.
    let coder = server.bodies_for("coder-model");
    assert_eq!(coder.len(), 1);
    assert_eq!(
        coder[0]["messages"][0]["content"].as_str().map(str::trim),
        Some("You write code.")
    );
}

const LEAD: &str = "---
model: local/lead-model
agents: [mid.md]
---
You lead.
";

const MID: &str = "---
description: Hands the task down.
model: local/mid-model
agents: [leaf.md]
---
You are in the middle.
";

const LEAF: &str = "---
description: Does the task.
model: local/leaf-model
---
You do it.
";

#[tokio::test]
async fn max_depth_limits_how_deep_sub_agents_nest() {
    let dir = tempfile::tempdir().unwrap();
    let server = routed(vec![
        (
            "lead-model",
            vec![
                sse::chat_calls(&[("call_m", "agent__mid", json!({"prompt": "do it"}))]),
                sse::answer("Lead done."),
            ],
        ),
        (
            "mid-model",
            vec![
                sse::chat_calls(&[("call_l", "agent__leaf", json!({"prompt": "do it"}))]),
                sse::answer("Mid done."),
            ],
        ),
        ("leaf-model", vec![sse::answer("Leaf done.")]),
    ])
    .await;
    let config = write_files(dir.path(), &server);
    for (name, text) in [("lead.md", LEAD), ("mid.md", MID), ("leaf.md", LEAF)] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = run_agent(
        &[
            "--config",
            config.to_str().unwrap(),
            "--agent",
            dir.path().join("lead.md").to_str().unwrap(),
            "--max-depth",
            "1",
            "Go",
        ],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "Lead done.");
    // lead -> mid ran (depth 1); mid -> leaf (depth 2) was refused
    // without a model call, and mid's model read why.
    assert!(server.bodies_for("leaf-model").is_empty());
    let mid = server.bodies_for("mid-model");
    assert_eq!(mid.len(), 2);
    let refusal = mid[1]["messages"].to_string();
    assert!(
        refusal.contains("lead/mid/leaf would be 2 levels deep") && refusal.contains("at most 1 deep"),
        "{refusal}"
    );
}
