#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use loopwright_core::{ToolContext, ToolOutput, ToolSource};
use serde_json::json;

use super::*;

/// Write `dir/folder/SKILL.md` with `text`; returns the folder.
fn write_skill(dir: &Path, folder: &str, text: &str) -> PathBuf {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(SKILL_FILE), text).unwrap();
    folder
}

/// A valid `SKILL.md` for `name`.
fn skill_text(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nInstructions of {name}.\n")
}

#[test]
fn the_catalog_lists_names_and_descriptions_escaped_and_no_body() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "pdf-reader",
        &skill_text("pdf-reader", "Reads PDF files."),
    );
    write_skill(
        dir.path(),
        "csv-tools",
        &skill_text("csv-tools", "'Joins <a> & \"b\" tables.'"),
    );
    let skills = Skills::discover([dir.path()]);
    assert!(skills.warnings().is_empty(), "{:?}", skills.warnings());
    assert_eq!(
        skills.catalog().unwrap(),
        "Skills are folders of instructions, scripts and resources for particular tasks. When a task matches \
a skill's description below, call the load_skill tool with the skill's name before you start, and follow the \
instructions it returns. When those instructions refer to files of the skill (such as references/... or \
scripts/...), read them with the read_skill_file tool, giving the skill's name and the file's path relative to \
the skill's folder.

<available_skills>
<skill>
<name>csv-tools</name>
<description>Joins &lt;a&gt; &amp; &quot;b&quot; tables.</description>
</skill>
<skill>
<name>pdf-reader</name>
<description>Reads PDF files.</description>
</skill>
</available_skills>"
    );
}

#[test]
fn every_key_is_read() {
    let text = "---
name: full
description: Does it all.
license: Apache-2.0
compatibility: Needs python3 and network access.
metadata:
  author: someone
  version: \"2.1\"
allowed-tools: Read  Bash(git:*)
---
Body.
";
    let skill = Skill::parse(text, Path::new("skills/full")).unwrap();
    assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(
        skill.compatibility.as_deref(),
        Some("Needs python3 and network access.")
    );
    assert_eq!(
        skill.metadata.iter().collect::<Vec<_>>(),
        [
            (&"author".to_owned(), &"someone".to_owned()),
            (&"version".to_owned(), &"2.1".to_owned())
        ]
    );
    assert_eq!(skill.allowed_tools, ["Read", "Bash(git:*)"]);
    assert_eq!(
        (skill.dir.as_path(), skill.body.as_str()),
        (Path::new("skills/full"), "Body.\n")
    );
}

#[test]
fn the_earlier_directory_wins_a_clash_and_the_clash_is_a_warning() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(first.path(), "shared", &skill_text("shared", "First."));
    write_skill(first.path(), "only-first", &skill_text("only-first", "Mine."));
    write_skill(second.path(), "shared", &skill_text("shared", "Second."));
    write_skill(second.path(), "only-second", &skill_text("only-second", "Yours."));
    let missing = first.path().join("no-such-dir");
    // The same directory twice is searched once; a missing one has nothing
    // but a warning naming it.
    let skills = Skills::discover([first.path(), second.path(), first.path(), &missing]);
    let names: Vec<&str> = skills.all().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["only-first", "shared", "only-second"]);
    assert_eq!(skills.get("shared").unwrap().description, "First.");
    let warnings: Vec<String> = skills.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            format!(
                "skill shared of {} is left out: {} has the same name (the earlier directory wins)",
                second.path().join("shared/SKILL.md").display(),
                first.path().join("shared/SKILL.md").display()
            ),
            format!(
                "skills directory {} does not exist (check the path given to --skills or in `skills`)",
                missing.display()
            )
        ]
    );
    let reversed = Skills::discover([second.path(), first.path()]);
    assert_eq!(reversed.get("shared").unwrap().description, "Second.");
}

#[test]
fn a_directory_that_cannot_be_listed_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let skills = Skills::discover([&file]);
    let warning = skills.warnings()[0].to_string();
    assert!(
        warning.starts_with(&format!("skills directory {}: ", file.display())),
        "{warning}"
    );
}

#[test]
fn each_invalid_skill_is_left_out_with_a_warning_naming_its_file_line_and_fault() {
    let long_name = "a".repeat(MAX_NAME_CHARS + 1);
    let long_description = "d".repeat(MAX_DESCRIPTION_CHARS + 1);
    let long_compatibility = "c".repeat(MAX_COMPATIBILITY_CHARS + 1);
    let head = |name: &str| format!("---\nname: {name}\ndescription: Fine.\n");
    let cases: Vec<(&str, String, String)> = vec![
        ("no-frontmatter", "Just instructions.\n".into(), ":1: no YAML frontmatter".into()),
        ("unclosed", "---\nname: unclosed\n".into(), ":1: the frontmatter opened on line 1 is never closed".into()),
        ("bad-yaml", "---\nname: [bad-yaml\n---\n".into(), ":3: invalid YAML (column 1): while parsing a flow sequence".into()),
        ("not-a-mapping", "---\n- a\n---\n".into(), ":2: (frontmatter): expected a mapping of keys, got an array".into()),
        ("unknown-key", head("unknown-key") + "version: 1\n---\n", ":4: version: unknown key (a SKILL.md has only name, description, license, compatibility, metadata, allowed-tools)".into()),
        ("no-name", "---\ndescription: Fine.\n---\n".into(), ":2: name: required".into()),
        ("name-not-a-string", "---\nname: 7\ndescription: Fine.\n---\n".into(), ":2: name: expected a string, got a number".into()),
        (&long_name, head(&long_name) + "---\n", format!(":2: name: `{long_name}` is 65 characters; at most 64")),
        ("Bad_Name", head("Bad_Name") + "---\n", ":2: name: `Bad_Name` may hold only lowercase letters a-z, digits and `-` (found `B`)".into()),
        ("-lead", head("-lead") + "---\n", ":2: name: `-lead` must not start or end with `-`".into()),
        ("trail-", head("trail-") + "---\n", ":2: name: `trail-` must not start or end with `-`".into()),
        ("dou--ble", head("dou--ble") + "---\n", ":2: name: `dou--ble` must not hold `--`".into()),
        ("folder-name", head("other-name") + "---\n", ":2: name: `other-name` must be the name of the skill's folder, `folder-name`".into()),
        ("no-description", "---\nname: no-description\n---\n".into(), ":2: description: required: what the skill does and when to use it".into()),
        ("empty-description", "---\nname: empty-description\ndescription: \"  \"\n---\n".into(), ":3: description: must not be empty".into()),
        ("long-description", format!("---\nname: long-description\ndescription: {long_description}\n---\n"), ":3: description: 1025 characters; at most 1024".into()),
        ("long-compatibility", head("long-compatibility") + &format!("compatibility: {long_compatibility}\n---\n"), ":4: compatibility: 501 characters; at most 500".into()),
        ("metadata-number", head("metadata-number") + "metadata:\n  author: me\n  version: 1.0\n---\n", ":6: metadata.version: expected a string, got a number (quote it: \"1.0\")".into()),
        ("metadata-list", head("metadata-list") + "metadata: [a, b]\n---\n", ":4: metadata: expected a mapping of strings to strings, got an array".into()),
        ("tools-list", head("tools-list") + "allowed-tools: [Read, Bash]\n---\n", ":4: allowed-tools: expected a string of tool names separated by spaces, got an array".into()),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (folder, text, _) in &cases {
        write_skill(dir.path(), folder, text);
    }
    write_skill(dir.path(), "valid", &skill_text("valid", "Still found."));
    let lower = dir.path().join("lower-case");
    std::fs::create_dir(&lower).unwrap();
    std::fs::write(lower.join("skill.md"), skill_text("lower-case", "Misnamed.")).unwrap();

    let skills = Skills::discover([dir.path()]);
    let names: Vec<&str> = skills.all().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["valid"]);
    let warnings: Vec<String> = skills.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), cases.len() + 1, "{warnings:#?}");
    for (folder, _, expected) in &cases {
        let file = dir.path().join(folder).join(SKILL_FILE);
        let prefix = format!("skill left out: {}", file.display());
        let warning = warnings
            .iter()
            .find(|w| w.starts_with(&format!("{prefix}:")))
            .unwrap_or_else(|| panic!("no warning for {folder}: {warnings:#?}"));
        assert!(
            warning[prefix.len()..].starts_with(expected.as_str()),
            "{folder}: expected `{expected}` after the file in `{warning}`"
        );
    }
    let misnamed = format!(
        "skill left out: {}:1: a skill's file must be named SKILL.md, in upper case",
        lower.join("skill.md").display()
    );
    assert!(warnings.contains(&misnamed), "{warnings:#?}");
}

/// A skills directory with skill `guide`: a reference, a binary asset, a
/// large file, a symlink inside and two leading out; and a file outside.
struct Fixture {
    _root: tempfile::TempDir,
    skills: SkillsSource,
    folder: PathBuf,
}

/// What the file outside the skill holds.
const SECRET: &str = "the content of a file outside the skill";

fn fixture() -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    let dir = root.path().join("skills");
    let folder = write_skill(
        &dir,
        "guide",
        "---\nname: guide\ndescription: Guides.\n---\n\nRead references/a.md.\n\n",
    );
    std::fs::create_dir_all(folder.join("references/deep")).unwrap();
    std::fs::create_dir_all(folder.join("assets")).unwrap();
    std::fs::create_dir_all(folder.join(".git")).unwrap();
    std::fs::write(folder.join("references/a.md"), "Reference A.\n").unwrap();
    std::fs::write(folder.join("references/deep/b.md"), "").unwrap();
    std::fs::write(folder.join("assets/logo.png"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    std::fs::write(folder.join("assets/big.txt"), "é".repeat(MAX_SKILL_FILE_BYTES)).unwrap();
    std::fs::write(folder.join(".git/config"), "hidden").unwrap();
    std::os::unix::fs::symlink(folder.join("references/a.md"), folder.join("alias.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), folder.join("out-link")).unwrap();
    std::os::unix::fs::symlink(&outside, folder.join("out-dir")).unwrap();
    let skills = Skills::discover([&dir]);
    assert!(skills.warnings().is_empty(), "{:?}", skills.warnings());
    Fixture {
        folder: folder.canonicalize().unwrap(),
        skills: SkillsSource::new(skills),
        _root: root,
    }
}

impl Fixture {
    async fn call(&self, tool: &str, input: serde_json::Value) -> ToolOutput {
        let tools = self.skills.tools().await.unwrap();
        let tool = tools.iter().find(|t| t.definition().name == tool).unwrap();
        tool.call(input, ToolContext::new("call")).await.unwrap()
    }

    async fn read(&self, path: &str) -> ToolOutput {
        self.call(READ_SKILL_FILE, json!({"name": "guide", "path": path}))
            .await
    }
}

#[tokio::test]
async fn load_skill_returns_the_body_and_the_files_and_names_the_skills_for_an_unknown_name() {
    let f = fixture();
    let tools = f.skills.tools().await.unwrap();
    for tool in &tools {
        assert!(
            tool.definition().annotations.read_only,
            "{}",
            tool.definition().name
        );
    }
    let loaded = f.call(LOAD_SKILL, json!({"name": "guide"})).await;
    assert!(!loaded.is_error);
    assert_eq!(
        loaded.as_text(),
        format!(
            "Read references/a.md.\n\n---\nSkill folder: {}\nFiles of the skill (read one with read_skill_file, \
             its path as listed):\n- alias.md\n- assets/big.txt\n- assets/logo.png\n- out-dir\n- out-link\n\
             - references/a.md\n- references/deep/b.md",
            f.folder.display()
        )
    );
    let unknown = f.call(LOAD_SKILL, json!({"name": "nope"})).await;
    assert!(unknown.is_error);
    assert_eq!(
        unknown.as_text(),
        "no skill named `nope`; the available skills are: guide"
    );
    let unknown = f
        .call(READ_SKILL_FILE, json!({"name": "nope", "path": "a"}))
        .await;
    assert_eq!(
        (
            unknown.is_error,
            unknown.as_text().starts_with("no skill named `nope`")
        ),
        (true, true)
    );
}

#[tokio::test]
async fn read_skill_file_reads_inside_the_folder_and_describes_binary_and_large_files() {
    let f = fixture();
    for path in ["references/a.md", "alias.md", "./references/deep/../a.md"] {
        let out = f.read(path).await;
        if path.contains("..") {
            assert!(out.is_error, "{path}");
            continue;
        }
        assert_eq!(
            (out.is_error, out.as_text()),
            (false, "Reference A.\n".to_owned()),
            "{path}"
        );
    }
    assert_eq!(
        f.read("references/deep/b.md").await.as_text(),
        "(`references/deep/b.md` is empty)"
    );
    // A FIFO would block its reader for good: refused.
    let status = std::process::Command::new("mkfifo")
        .arg(f.folder.join("assets/pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let fifo = tokio::time::timeout(std::time::Duration::from_secs(20), f.read("assets/pipe"))
        .await
        .expect("reading a FIFO hung");
    assert_eq!(
        (fifo.is_error, fifo.as_text()),
        (true, "`assets/pipe` is not a regular file".to_owned())
    );
    let binary = f.read("assets/logo.png").await;
    assert_eq!(
        (binary.is_error, binary.as_text()),
        (
            false,
            "(`assets/logo.png` is a binary file of 7 bytes; its content is not shown)".to_owned()
        )
    );
    let big = f.read("assets/big.txt").await.as_text();
    let (text, note) = big.rsplit_once('\n').unwrap();
    assert!(
        text.len() <= MAX_SKILL_FILE_BYTES && text.chars().all(|c| c == 'é'),
        "{}",
        text.len()
    );
    assert_eq!(
        note,
        format!(
            "[`assets/big.txt` is cut here: the first {} of its {} bytes are shown]",
            text.len(),
            2 * MAX_SKILL_FILE_BYTES
        )
    );
    let dir = f.read("references").await;
    assert_eq!(
        (dir.is_error, dir.as_text().contains("is a directory")),
        (true, true)
    );
}

#[tokio::test]
async fn read_skill_file_refuses_every_way_out_of_the_folder() {
    let f = fixture();
    let inside_but_absolute = f.folder.join("references/a.md");
    let cases = [
        ("../guide/references/a.md", "holds `..`: refused"),
        ("references/../../outside/secret.txt", "holds `..`: refused"),
        ("/etc/hostname", "is an absolute path: refused"),
        (
            inside_but_absolute.to_str().unwrap(),
            "is an absolute path: refused",
        ),
        (
            "out-link",
            "leads outside the skill's folder through a symbolic link: refused",
        ),
        (
            "out-dir/secret.txt",
            "leads outside the skill's folder through a symbolic link: refused",
        ),
    ];
    for (path, expected) in cases {
        let out = f.read(path).await;
        assert!(out.is_error, "{path}: {}", out.as_text());
        let text = out.as_text();
        assert!(
            text.starts_with(&format!("`{path}` {expected}")),
            "{path}: {text}"
        );
        assert!(!text.contains(SECRET), "{path}: {text}");
    }
}

#[tokio::test]
async fn the_file_list_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let folder = write_skill(dir.path(), "many", &skill_text("many", "Many files."));
    for i in 0..MAX_LISTED_FILES + 5 {
        std::fs::write(folder.join(format!("f{i:04}.txt")), "x").unwrap();
    }
    let source = SkillsSource::new(Skills::discover([dir.path()]));
    let tools = source.tools().await.unwrap();
    let loaded = tools[0]
        .call(json!({"name": "many"}), ToolContext::new("c"))
        .await
        .unwrap()
        .as_text();
    let listed = loaded.lines().filter(|l| l.starts_with("- f")).count();
    assert_eq!(listed, MAX_LISTED_FILES);
    assert!(
        loaded.ends_with(&format!(
            "- ... (more files: only the first {MAX_LISTED_FILES} are listed)"
        )),
        "{loaded}"
    );
}
