//! Skills in a run of the built `loopwright` against a local model server:
//! the catalog in the request the model got, `load_skill` working, the
//! default `./.agents/skills`, invalid skills and clashes reported. Which
//! directories `--skills`, the config's `skills` and `--no-skills` give is
//! unit-tested in src/ (`tools::tests`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

/// Write `dir/name/SKILL.md` describing it as `description`.
fn write_skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    let text = format!("---\nname: {name}\ndescription: {description}\n---\nThe steps of {name}.\n");
    std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
}

/// The system prompt of a Chat Completions request body (empty without one).
fn system(body: &Value) -> String {
    let first = &body["messages"][0];
    match first["role"].as_str() {
        Some("system") => first["content"].as_str().unwrap().to_owned(),
        _ => String::new(),
    }
}

/// The tool names a request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skills_directory_puts_the_catalog_in_the_request_and_load_skill_answers() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(&skills, "pdf-reader", "Reads PDF files.");
    std::fs::create_dir_all(skills.join("pdf-reader/references")).unwrap();
    std::fs::write(skills.join("pdf-reader/references/forms.md"), "Forms.").unwrap();
    write_skill(&skills, "broken", "\"\"");
    let server = ModelServer::start(vec![
        tool_call("load_skill", json!({"name": "pdf-reader"})).into(),
        answer("Loaded.").into(),
    ])
    .await;
    let config = write_config(dir.path(), &server, json!({}));
    let skills_arg = skills.to_str().unwrap();
    let events = local_events(
        &config,
        &["--no-mcp", "--skills", skills_arg, "Read a.pdf"],
        dir.path(),
    )
    .await;

    let bodies = server.bodies();
    let prompt = system(&bodies[0]);
    assert!(
        prompt.ends_with(
            "<available_skills>\n<skill>\n<name>pdf-reader</name>\n<description>Reads PDF files.</description>\n\
             </skill>\n</available_skills>"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("call the load_skill tool"), "{prompt}");
    assert!(
        !prompt.contains("The steps of"),
        "no body in the catalog: {prompt}"
    );
    assert_eq!(offered(&bodies[0]), ["load_skill", "read_skill_file"]);

    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["tool"] == "load_skill")
        .expect("a load_skill result");
    let text = result["output"][0]["text"].as_str().unwrap();
    assert_eq!(result["is_error"], false, "{text}");
    assert!(text.starts_with("The steps of pdf-reader.\n"), "{text}");
    assert!(text.ends_with("\n- references/forms.md"), "{text}");
    // The model got the same text back.
    assert!(
        bodies[1].to_string().contains("The steps of pdf-reader."),
        "{}",
        bodies[1]
    );
    let broken = skills.join("broken/SKILL.md");
    let warned = events.iter().any(|e| {
        e["type"] == "warning"
            && e["message"].as_str().is_some_and(|m| {
                m.contains(&format!("{}:3: description: must not be empty", broken.display()))
            })
    });
    assert!(warned, "{events:#?}");
}

/// Run a prompt with `flags` (and `--no-mcp`) in `cwd`, which must exit 0:
/// the names in the catalog the model got, its system prompt, the tools
/// offered, and stderr.
async fn run(
    server: &ModelServer,
    config: &Path,
    flags: &[&str],
    cwd: &Path,
) -> (Vec<String>, String, Vec<String>, String) {
    let mut args = vec!["--no-mcp"];
    args.extend_from_slice(flags);
    args.push("Go");
    let out = run_local(config, &args, &[], cwd).await;
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let body = server.bodies().pop().unwrap();
    let prompt = system(&body);
    let names = prompt
        .split("<name>")
        .skip(1)
        .map(|s| s.split('<').next().unwrap_or_default().to_owned())
        .collect();
    (names, prompt, offered(&body), stderr)
}

/// What only a process shows of where skills come from: the default
/// directories are the working directory's and HOME's `.agents/skills`, and
/// a clash between directories is a warning on stderr. Which directories a
/// command line and a configuration name, and `--no-skills`, are unit tests
/// (`tools::tests` in src/).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_skills_directories_are_read_and_a_clash_is_warned_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    // The default directory (HOME is the working directory too: searched once).
    write_skill(
        &dir.path().join(".agents/skills"),
        "local-skill",
        "From the project.",
    );
    write_skill(&dir.path().join("first"), "shared", "First shared.");
    write_skill(&dir.path().join("team"), "shared", "Team shared.");
    write_skill(&dir.path().join("team"), "team-only", "From the team.");
    let server = ModelServer::start(vec![answer("Done.").into()]).await;
    let plain = write_config(dir.path(), &server, json!({}));
    let teamed = dir.path().join("teamed.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    config["skills"] = json!(["team"]);
    std::fs::write(&teamed, config.to_string()).unwrap();

    let (names, ..) = run(&server, &plain, &[], dir.path()).await;
    assert_eq!(names, ["local-skill"]);
    let first = dir.path().join("first");
    let (names, prompt, _, stderr) = run(
        &server,
        &teamed,
        &["--skills", first.to_str().unwrap()],
        dir.path(),
    )
    .await;
    assert_eq!(names, ["shared", "team-only"]);
    assert!(
        prompt.contains("<description>First shared.</description>"),
        "{prompt}"
    );
    let clash = format!(
        "warning: skill shared of {} is left out: {} has the same name (the earlier directory wins)",
        dir.path().join("team/shared/SKILL.md").display(),
        first.join("shared/SKILL.md").display()
    );
    assert!(stderr.contains(&clash), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_file_and_list_tools_get_the_skills_whatever_the_files_tool_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    write_skill(&skills, "notes", "Takes notes.");
    let server = ModelServer::start(vec![]).await;
    let config = write_config(dir.path(), &server, json!({}));
    let lead = dir.path().join("lead.md");
    std::fs::write(
        &lead,
        "---\nmodel: local/test\ntools: [\"nothing-*\"]\n---\nLead.\n",
    )
    .unwrap();
    for agent in [&["--agent", lead.to_str().unwrap()][..], &[]] {
        let mut args = vec!["--config", config.to_str().unwrap(), "--no-mcp", "--list-tools"];
        args.extend_from_slice(agent);
        args.extend(["--skills", skills.to_str().unwrap()]);
        let out = run_agent(&args, &[], dir.path()).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let tools: Vec<(String, String)> = json_lines(&stdout)
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_owned(),
                    t["source"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let skills_source = |name: &str| (name.to_owned(), "skills".to_owned());
        assert_eq!(
            tools,
            [skills_source("load_skill"), skills_source("read_skill_file")],
            "{agent:?}"
        );
    }
}
